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

// bench --sm-budget 2 on 2 host ranks (the host claims 8 multiprocessors):
// every custom grid is capped at 2 blocks, the load gets the other 6, each
// timed case has the pair's span, and a plugin, whose grid artest cannot
// cap, is skipped with that reason.
func TestSMBudgetBench(t *testing.T) {
	t.Parallel()
	js := filepath.Join(t.TempDir(), "b.json")
	o := mpirun(t, 2, time.Minute, "bench", "--size", "4K,64K", "--sm-budget", "2",
		"--variant", "oneshot,ring,example:oneshot", "--plugin", buildPlugin(t, exampleHost), "--json", js)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "# sm-budget: every collective's grid capped at 2 blocks per GPU")
	r := readReport(t, js)
	require.Equal(t, 2, r.Header.SMBudget)
	require.Equal(t, 6, r.Header.Overlap, "the load gets the model's 8 multiprocessors less the budget")
	require.Empty(t, r.Header.OverlapNote)
	timed := 0
	for _, c := range r.Cases {
		if c.Variant == "example:oneshot" {
			require.Equal(t, "skipped", string(c.Verdict), c.ID)
			require.Contains(t, c.Reason, "launches its own grid, which --sm-budget cannot cap", c.ID)
			continue
		}
		require.Equal(t, "pass", string(c.Verdict), c.ID)
		require.LessOrEqual(t, c.Blocks, 2, c.ID)
		require.Equal(t, "--sm-budget 2", c.GridCapFrom, c.ID)
		require.Positive(t, c.PairUS, c.ID)
		require.GreaterOrEqual(t, c.PairUS, c.LoadWithAllreduceUS*0.999, c.ID)
		timed++
	}
	require.Equal(t, 2*2*2, timed) // 2 variants x 2 sizes x plain/graph
}
