package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/host"
)

func TestParseSchedules(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Schedules
		str  string
		err  string
	}{
		{"all", Schedules{Poison: true, Skew: true}, "poison-after-return,skew", ""},
		{"none", Schedules{}, "none", ""},
		{"skew", Schedules{Skew: true}, "skew", ""},
		{"poison-after-return", Schedules{Poison: true}, "poison-after-return", ""},
		{" skew , poison-after-return ", Schedules{Poison: true, Skew: true}, "poison-after-return,skew", ""},
		{"skew,skew", Schedules{Skew: true}, "skew", ""},
		{"none,skew", Schedules{}, "", "none combines with no other"},
		{"straggler", Schedules{}, "", `unknown --schedule "straggler" (valid: all, none, poison-after-return, skew)`},
		{"", Schedules{}, "", "empty --schedule"},
		{" , ", Schedules{}, "", "empty --schedule"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got, err := ParseSchedules(tc.spec)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.str, got.String())
			// String is a --schedule value that selects the same.
			again, err := ParseSchedules(got.String())
			require.NoError(t, err)
			require.Equal(t, got, again)
		})
	}
}

// The plan is a pure function of seed, case and iteration (every rank
// computes the same without talking), rotates the late rank over every
// rank and none, and keeps its delays in range.
func TestSchedulePlanSeededAndRotating(t *testing.T) {
	const n, iters = 4, 2000
	s := Schedules{Skew: true}
	id := "oneshot/f32/sum/4100B/oop-reg-plain/np4"
	seen := map[int]int{}
	differs := 0
	for i := 0; i < iters; i++ {
		st := s.plan(7, id, i, n)
		require.Equal(t, st, s.plan(7, id, i, n), "iteration %d: same inputs, same plan", i)
		seen[st.skewRank]++
		if st.skewRank >= 0 {
			require.GreaterOrEqual(t, st.skewDelay, skewMin)
			require.Less(t, st.skewDelay, skewMin+skewSpan)
		} else {
			require.Zero(t, st.skewDelay)
		}
		if st != s.plan(8, id, i, n) {
			differs++
		}
	}
	for r := -1; r < n; r++ {
		// n+1 outcomes of 2000 draws: each near 400.
		require.InDelta(t, iters/(n+1), seen[r], 100, "rank %d late in %d of %d iterations", r, seen[r], iters)
	}
	require.Greater(t, differs, iters/2, "another seed, another plan")
	require.NotEqual(t, s.plan(7, id, 0, n), s.plan(7, "twoshot/f32/sum/4100B/oop-reg-plain/np4", 0, n))

	for _, tc := range []struct {
		name string
		s    Schedules
		n    int
	}{
		{"skew off", Schedules{Poison: true}, 4},
		{"one rank", Schedules{Skew: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 100; i++ {
				require.Equal(t, step{skewRank: -1}, tc.s.plan(1, id, i, tc.n))
			}
		})
	}
}

// noDelay is a backend without backend.Delayer.
type noDelay struct{ backend.Backend }

func (noDelay) Name() string { return "cuda" }

func TestSchedulesSupported(t *testing.T) {
	h := host.New(t.TempDir())
	s, note := AllSchedules().Supported(h)
	require.Equal(t, AllSchedules(), s)
	require.Empty(t, note)
	var _ backend.Delayer = h

	s, note = AllSchedules().Supported(noDelay{})
	require.Equal(t, Schedules{Poison: true}, s)
	require.Equal(t, "skew off: the cuda backend has no stream-ordered delay", note)
}

// The host backend's Delay holds the work after it.
func TestHostDelayIsStreamOrdered(t *testing.T) {
	h := host.New(t.TempDir())
	defer h.Close()
	a, err := h.Record()
	require.NoError(t, err)
	require.NoError(t, h.Delay(20*time.Millisecond))
	b, err := h.Record()
	require.NoError(t, err)
	require.NoError(t, h.Sync(5*time.Second))
	d, err := b.Since(a)
	require.NoError(t, err)
	require.GreaterOrEqual(t, d, 20*time.Millisecond)
}
