package cli

import (
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/runner"
)

// countingHost is the host backend that counts the stream delays and
// copies the runner enqueues, under cuda's name so that the test reaches
// it through Env.OpenCUDA.
type countingHost struct {
	*host.Backend
	delays, copies, straggles *atomic.Int64
}

func (c countingHost) Name() string { return "cuda" }
func (c countingHost) Delay(d time.Duration) error {
	c.delays.Add(1)
	return c.Backend.Delay(d)
}
func (c countingHost) Straggle(d time.Duration) error {
	c.straggles.Add(1)
	return c.Backend.Straggle(d)
}
func (c countingHost) Copy(dst, src backend.Ptr, n int64) error {
	c.copies.Add(1)
	return c.Backend.Copy(dst, src, n)
}

// noDelayHost is a backend without backend.Delayer (as cuda is today).
type noDelayHost struct{ backend.Backend }

func (noDelayHost) Name() string { return "cuda" }

// The runner enqueues what each schedule says, on the rank the seeded plan
// names, and drops skew on a backend that cannot delay its stream, saying
// so in the header.
func TestSchedulesReachTheBackend(t *testing.T) {
	const id, n, iters = "oneshot/f32/sum/4100B/oop-reg-plain/np2", 2, 30
	for _, tc := range []struct {
		schedule  string
		poison    bool
		skew      bool
		straggler bool
	}{
		{"none", false, false, false},
		{"poison-after-return", true, false, false},
		{"skew", false, true, false},
		{"straggler", false, false, true},
		{"all", true, true, true},
	} {
		t.Run(tc.schedule, func(t *testing.T) {
			delays := make([]atomic.Int64, n)
			copies := make([]atomic.Int64, n)
			straggles := make([]atomic.Int64, n)
			dir := t.TempDir()
			open := func(o *Options, c comm.Comm) (backend.Backend, error) {
				return countingHost{Backend: host.New(dir), delays: &delays[c.Rank()], copies: &copies[c.Rank()], straggles: &straggles[c.Rank()]}, nil
			}
			res := runWorldWith(t, n, same("--backend", "cuda", "--case", id, "--stress", "30", "--seed", "3",
				"--schedule", tc.schedule, "--device-timeout", "30s"), open)
			require.Equal(t, []int{0, 0}, res.codes, "%v", res.stderr)
			s, err := runner.ParseSchedules(tc.schedule)
			require.NoError(t, err)
			for r := 0; r < n; r++ {
				want := 0
				for i := 0; i < iters && tc.skew; i++ {
					if late, d := s.Late(3, id, i, n); late == r {
						require.Positive(t, d)
						want++
					}
				}
				require.EqualValues(t, want, delays[r].Load(), "rank %d's delays", r)
				want = 0
				for i := 0; i < iters && tc.straggler; i++ {
					if slow, d := s.Straggling(3, id, i, n); slow == r {
						require.Positive(t, d)
						want++
					}
				}
				require.EqualValues(t, want, straggles[r].Load(), "rank %d's side loads", r)
				// Each call copies its input in; poison adds one copy.
				perCall := 1
				if tc.poison {
					perCall = 2
				}
				require.EqualValues(t, perCall*iters, copies[r].Load(), "rank %d's copies", r)
			}
		})
	}

	js := filepath.Join(t.TempDir(), "r.json")
	dir := t.TempDir()
	open := func(o *Options, c comm.Comm) (backend.Backend, error) { return noDelayHost{host.New(dir)}, nil }
	res := runWorldWith(t, n, same("--backend", "cuda", "--case", id, "--stress", "5", "--device-timeout", "30s", "--json", js), open)
	require.Equal(t, []int{0, 0}, res.codes, "%v", res.stderr)
	rep := readReport(t, js)
	require.Equal(t, "poison-after-return", rep.Header.Schedules)
	const off = "skew off: the cuda backend has no stream-ordered delay; straggler off: the cuda backend has no side load; " +
		"link off: the cuda backend's load cannot read its peers; memory off: the cuda backend's load cannot stream device memory"
	require.Equal(t, off, rep.Header.ScheduleNote)
	require.Contains(t, res.stdout[0], "stress 5, schedules poison-after-return ("+off+")")
}
