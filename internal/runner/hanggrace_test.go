package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
)

// After a hang, the job is aborted by rank 0, which writes the reports
// first; under MPI the first abort ends every other rank, so a rank that
// aborts before rank 0 loses rank 0's reports. Rank 0 can come to its own
// timeout later than the others (here: a longer timeout stands for a rank
// 0 that started waiting later); the others wait for it. With a grace
// shorter than rank 0's lateness the other rank aborts first: the failure
// this protects against.
func TestRankZeroAbortsAHungJobFirst(t *testing.T) {
	const id = "oneshot/f32/sum/4KiB/oop-reg-plain/np2"
	for _, tc := range []struct {
		name     string
		grace    time.Duration // 0: the default
		wantRank int
	}{
		{"default grace", 0, 0},
		{"grace shorter than rank 0's lateness", 300 * time.Millisecond, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Rank 1's stream starts its call 3 s late: both ranks hang
			// until then. Rank 0 notices after 1.5 s, rank 1 after 0.2 s.
			res := runWorld(t, 2, []string{id}, func(rank int, c *Config) {
				c.Iters, c.HangGrace, c.Timeout = 0, tc.grace, 200*time.Millisecond
				c.Inject = Inject{Bits: kernels.InjectDelay, DelayRank: 1, Delay: 3 * time.Second}
				if rank == 0 {
					c.Timeout = 1500 * time.Millisecond
				}
			})
			rank, aborted := res.world.AbortedBy()
			require.True(t, aborted)
			require.Equal(t, tc.wantRank, rank, "the first abort")
			if tc.wantRank == 0 {
				require.Contains(t, res.stderr, "hang in case "+id)
			}
		})
	}
}
