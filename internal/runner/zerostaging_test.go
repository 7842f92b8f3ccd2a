package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels/registry"
)

// runOnLeftovers runs cases ids on n in-process ranks over the host
// backend after filling every rank's staging with bytes no protocol wrote
// (as another variant's data or the links' copy leaves it), keepStaging
// as given, and returns rank 0's report.
func runOnLeftovers(t *testing.T, n int, ids []string, keep bool) *report.Report {
	t.Helper()
	set := registry.Builtins()
	cs, err := cases.Build(set, cases.Selection{IDs: ids}, n)
	require.NoError(t, err)
	world := comm.NewLocalWorld(n)
	dir := t.TempDir()
	js := filepath.Join(t.TempDir(), "r.json")
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			b := host.New(dir)
			defer b.Close()
			w, err := b.Setup(world.Rank(r), Capacity(cs), set)
			if err == nil {
				err = b.Upload(w.Staging[r], bytes.Repeat([]byte{0x5a}, int(w.Capacity)))
			}
			// Every rank's leftovers are in place before any rank runs.
			if _, aerr := comm.AgreeReason(world.Rank(r), errText(err)); err != nil || aerr != nil {
				t.Errorf("rank %d: %v %v", r, err, aerr)
				return
			}
			c := &Config{Variants: set, Cases: cs, Seed: 1, Iters: 2, Reps: 1, Timeout: 10 * time.Second,
				Header: report.Header{Tool: "artest", Ranks: n, Backend: "host"},
				Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, keepStaging: keep}
			if r == 0 {
				c.JSONPath = js
			}
			Run(world.Rank(r), b, w, c)
		}(r)
	}
	wg.Wait()
	f, err := os.Open(js)
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	require.Len(t, rep.Cases, len(ids))
	return rep
}

// oneshot-sentinel takes a nonzero slot for data: staging left by others
// would pass for its peers' pushes. The runner zeroes what a case uses
// before the case's first launch, and every case passes; left as it was,
// the same cases read the leftovers. Only a rank that reads its slot
// before its peer's first push lands reads them, and on a loaded machine
// the host's goroutines sometimes run the other way round (one case in
// about ten runs of the package beside a kernel build): each case must
// fail in at least one of leftoverTries runs.
func TestStagingIsZeroedForSentinelSlots(t *testing.T) {
	const leftoverTries = 5
	ids := []string{"oneshot-sentinel/f32/sum/4KiB/oop-reg-plain/np2", "oneshot-sentinel/bf16/sum/64KiB/ip-reg-graph/np2"}
	for _, c := range runOnLeftovers(t, 2, ids, false).Cases {
		require.Equal(t, report.Pass, c.Verdict, "%s: %s", c.ID, c.Reason)
	}
	failed := map[string]bool{}
	for try := 0; try < leftoverTries && len(failed) < len(ids); try++ {
		for _, c := range runOnLeftovers(t, 2, ids, true).Cases {
			if c.Verdict == report.Fail {
				failed[c.ID] = true
			}
		}
	}
	for _, id := range ids {
		require.True(t, failed[id], "%s: leftovers never read as data in %d runs", id, leftoverTries)
	}
}
