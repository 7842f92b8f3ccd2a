//go:build integration

package integration

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// bench --overlap 4 on 2 host ranks times every case again with the
// compute load beside its calls: each timed case has the load's grid, the
// time under load, the load's time alone and beside the calls, and the
// slowdown, and the text output ends with the # overlap: table.
func TestOverlapBench(t *testing.T) {
	t.Parallel()
	js := filepath.Join(t.TempDir(), "b.json")
	o := mpirun(t, 2, time.Minute, "bench", "-b", "4K", "-e", "16K", "-f", "4", "--overlap", "4",
		"--variant", "oneshot", "--json", js)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "# overlap: a compute load of 4 blocks beside every timed repetition")
	r := readReport(t, js)
	require.Equal(t, 4, r.Header.Overlap)
	require.Empty(t, r.Header.OverlapNote)
	require.Len(t, r.Cases, 2*2) // 2 sizes x plain/graph
	for _, c := range r.Cases {
		require.Equal(t, 4, c.OverlapBlocks, c.ID)
		require.Positive(t, c.OverlapTimeUS, c.ID)
		require.Positive(t, c.LoadAloneUS, c.ID)
		require.Positive(t, c.LoadWithAllreduceUS, c.ID)
		require.InDelta(t, c.LoadWithAllreduceUS/c.LoadAloneUS, c.LoadSlowdown, 1e-9, c.ID)
	}
}

// --overlap outside bench is a usage error: one line, exit 2.
func TestOverlapNeedsBench(t *testing.T) {
	t.Parallel()
	o := run(t, time.Minute, binary(t), "--backend", "host", "--overlap", "4")
	require.Equal(t, 2, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Equal(t, []string{"artest: --overlap 4 times calls beside a compute load: run artest bench"}, artestLines(o.stderr))
}
