package runner

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
)

// After a hang, the job is aborted by rank 0, which writes the reports
// first; under MPI the first abort ends every other rank, so a rank that
// aborts before rank 0 loses rank 0's reports. Rank 0 can come to its own
// timeout later than the others (here: a longer timeout stands for a rank
// 0 that started waiting later); the others wait for it. With a grace
// shorter than rank 0's lateness the other rank aborts first: the failure
// this protects against.
func TestRankZeroAbortsAHungJobFirst(t *testing.T) {
	for _, tc := range []struct {
		name       string
		grace      time.Duration // 0: the default
		wantRank   int
		wantReport bool
	}{
		{"default grace", 0, 0, true},
		{"grace shorter than rank 0's lateness", 300 * time.Millisecond, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const id = "oneshot/f32/sum/4KiB/oop-reg-plain/np2"
			set := registry.Builtins()
			cs, err := cases.Build(set, cases.Selection{IDs: []string{id}}, 2)
			require.NoError(t, err)
			world := comm.NewLocalWorld(2)
			dir := t.TempDir()
			var errb bytes.Buffer
			// Rank 1's stream starts its call 3 s late: both ranks hang
			// until then. Rank 0 notices after 1.5 s, rank 1 after 0.2 s.
			in := Inject{Bits: kernels.InjectDelay, DelayRank: 1, Delay: 3 * time.Second}
			var wg sync.WaitGroup
			for r := 0; r < 2; r++ {
				wg.Add(1)
				go func(r int) {
					defer wg.Done()
					b := host.New(dir)
					defer b.Close()
					w, err := b.Setup(world.Rank(r), Capacity(cs), set)
					if err != nil {
						return
					}
					c := &Config{Variants: set, Cases: cs, Seed: 1, Iters: 0, Reps: 1, Timeout: 200 * time.Millisecond,
						Inject: in, HangGrace: tc.grace,
						Header: report.Header{Tool: "artest", Ranks: 2, Backend: "host"},
						Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
					if r == 0 {
						c.Timeout, c.Stderr = 1500*time.Millisecond, &errb
					}
					Run(world.Rank(r), b, w, c)
				}(r)
			}
			wg.Wait()
			rank, aborted := world.AbortedBy()
			require.True(t, aborted)
			require.Equal(t, tc.wantRank, rank, "the first abort")
			if tc.wantReport {
				require.Contains(t, errb.String(), "hang in case "+id)
			}
		})
	}
}
