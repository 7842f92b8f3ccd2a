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
		{"all", Schedules{Poison: true, Skew: true, Straggler: true, Link: true, Memory: true}, "poison-after-return,skew,straggler,link,memory", ""},
		{"straggler", Schedules{Straggler: true}, "straggler", ""},
		{"straggler,skew", Schedules{Skew: true, Straggler: true}, "skew,straggler", ""},
		{"none", Schedules{}, "none", ""},
		{"skew", Schedules{Skew: true}, "skew", ""},
		{"poison-after-return", Schedules{Poison: true}, "poison-after-return", ""},
		{" skew , poison-after-return ", Schedules{Poison: true, Skew: true}, "poison-after-return,skew", ""},
		{"skew,skew", Schedules{Skew: true}, "skew", ""},
		// link is the straggler with its load reading the peers too.
		{"link", Schedules{Straggler: true, Link: true}, "straggler,link", ""},
		{"all,link", Schedules{Poison: true, Skew: true, Straggler: true, Link: true, Memory: true}, "poison-after-return,skew,straggler,link,memory", ""},
		{"memory", Schedules{Straggler: true, Memory: true}, "straggler,memory", ""},
		{"none,skew", Schedules{}, "", "none combines with no other"},
		{"lazy", Schedules{}, "", `unknown --schedule "lazy" (valid: all, none, poison-after-return, skew, straggler, link, memory)`},
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
		{"one rank", Schedules{Skew: true, Straggler: true}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := 0; i < 100; i++ {
				require.Equal(t, step{skewRank: -1, stragRank: -1}, tc.s.plan(1, id, i, tc.n))
			}
		})
	}
}

// The straggler's draws: seeded, every rank and none in turn, loads in
// range, and not tied to skew's (either may pick any rank).
func TestStragglerPlan(t *testing.T) {
	const n, iters = 4, 2000
	s := Schedules{Skew: true, Straggler: true}
	id := "oneshot/f32/sum/4100B/oop-reg-plain/np4"
	seen := map[int]int{}
	same := 0
	for i := 0; i < iters; i++ {
		st := s.plan(7, id, i, n)
		require.Equal(t, st, s.plan(7, id, i, n))
		seen[st.stragRank]++
		if st.stragRank >= 0 {
			require.GreaterOrEqual(t, st.stragLoad, stragMin)
			require.Less(t, st.stragLoad, stragMin+stragSpan)
		} else {
			require.Zero(t, st.stragLoad)
		}
		if st.stragRank == st.skewRank {
			same++
		}
		// Skew's draws are what they were before the straggler existed.
		skewOnly := Schedules{Skew: true}.plan(7, id, i, n)
		require.Equal(t, skewOnly.skewRank, st.skewRank)
		require.Equal(t, skewOnly.skewDelay, st.skewDelay)
	}
	for r := -1; r < n; r++ {
		require.InDelta(t, iters/(n+1), seen[r], 100, "rank %d straggles in %d of %d iterations", r, seen[r], iters)
	}
	// Independent draws agree about 1 in n+1 times, not always.
	require.InDelta(t, iters/(n+1), same, 100)

	// With link, half the loads read over the links; the rank and the
	// load's length are what they were without it.
	linked, loads := 0, 0
	for i := 0; i < iters; i++ {
		st := Schedules{Skew: true, Straggler: true, Link: true}.plan(7, id, i, n)
		plain := s.plan(7, id, i, n)
		require.Equal(t, plain.stragRank, st.stragRank)
		require.Equal(t, plain.stragLoad, st.stragLoad)
		require.False(t, plain.stragLink)
		if st.stragRank < 0 {
			require.False(t, st.stragLink)
			continue
		}
		loads++
		if st.stragLink {
			linked++
		}
	}
	require.InDelta(t, loads/2, linked, 80, "%d of %d loads over the links", linked, loads)
}

// The host backend's side load runs beside what follows it, and a join
// makes the stream wait for its end.
func TestHostStraggleIsJoined(t *testing.T) {
	h := host.New(t.TempDir())
	defer h.Close()
	require.NoError(t, h.PrepareStraggle())
	a, err := h.Record()
	require.NoError(t, err)
	// The load is long beside the margin a loaded machine's scheduler
	// needs between two stream operations (up to tens of ms beside 2 CPU
	// hogs per core): half of it still tells "beside" from "after".
	const load = 400 * time.Millisecond
	require.NoError(t, h.Straggle(load))
	mid, err := h.Record()
	require.NoError(t, err)
	require.NoError(t, h.JoinStraggle())
	b, err := h.Record()
	require.NoError(t, err)
	require.NoError(t, h.Sync(5*time.Second))
	d, err := mid.Since(a)
	require.NoError(t, err)
	require.Less(t, d, load/2, "nothing waits for the load before the join")
	d, err = b.Since(a)
	require.NoError(t, err)
	require.GreaterOrEqual(t, d, load)
}

// noDelay is a backend without backend.Delayer.
type noDelay struct{ backend.Backend }

func (noDelay) Name() string { return "cuda" }

func TestSchedulesSupported(t *testing.T) {
	h := host.New(t.TempDir())
	s, note := AllSchedules().Supported(h)
	require.Equal(t, Schedules{Poison: true, Skew: true, Straggler: true}, s)
	require.Equal(t, "link off: the host backend's load cannot read its peers; memory off: the host backend's load cannot stream device memory", note)
	var _ backend.Delayer = h

	s, note = AllSchedules().Supported(noDelay{})
	require.Equal(t, Schedules{Poison: true}, s)
	require.Equal(t, "skew off: the cuda backend has no stream-ordered delay; straggler off: the cuda backend has no side load; "+
		"link off: the cuda backend's load cannot read its peers; memory off: the cuda backend's load cannot stream device memory", note)
	var _ backend.Straggler = h
}

// memoryHost is a host backend whose load could stream device memory, with
// the reason it gives.
type memoryHost struct {
	*host.Backend
	why string
}

func (m memoryHost) MemoryLoadReason() string             { return m.why }
func (m memoryHost) StraggleMemory(d time.Duration) error { return m.Straggle(d) }

// The memory load stays on where the backend runs it (ranks that share a
// GPU), and is dropped with the backend's reason elsewhere; it draws about
// half of the straggler's loads, never one the link load took.
func TestMemoryScheduleWhereRanksShareAGPU(t *testing.T) {
	h := host.New(t.TempDir())
	s, note := AllSchedules().Supported(memoryHost{h, ""})
	require.Equal(t, Schedules{Poison: true, Skew: true, Straggler: true, Memory: true}, s)
	require.Equal(t, "link off: the host backend's load cannot read its peers", note)
	s, note = AllSchedules().Supported(memoryHost{h, "each rank has a GPU of its own"})
	require.False(t, s.Memory)
	require.Contains(t, note, "memory off: each rank has a GPU of its own")

	both := Schedules{Straggler: true, Link: true, Memory: true}
	loads, memory, link := 0, 0, 0
	for i := 0; i < 4000; i++ {
		st := both.plan(1, "c", i, 2)
		if st.stragRank < 0 {
			continue
		}
		loads++
		require.False(t, st.stragLink && st.stragMemory, "iteration %d", i)
		if st.stragMemory {
			memory++
			require.Equal(t, backend.LoadMemory, st.loadKind())
		}
		if st.stragLink {
			link++
		}
	}
	require.InDelta(t, 0.5, float64(link)/float64(loads), 0.05, "link takes half the loads")
	require.InDelta(t, 0.25, float64(memory)/float64(loads), 0.05, "memory half of the rest")
	only := Schedules{Straggler: true, Memory: true}
	memory, loads = 0, 0
	for i := 0; i < 4000; i++ {
		if st := only.plan(1, "c", i, 2); st.stragRank >= 0 {
			loads++
			if st.stragMemory {
				memory++
			}
		}
	}
	require.InDelta(t, 0.5, float64(memory)/float64(loads), 0.05, "without link, memory takes half the loads")
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

// The host backend's load cannot read its peers: link is dropped with why,
// and the straggler it turned on stays.
func TestLinkNeedsALinkStraggler(t *testing.T) {
	s, err := ParseSchedules("link")
	require.NoError(t, err)
	got, note := s.Supported(host.New(t.TempDir()))
	require.Equal(t, Schedules{Straggler: true}, got)
	require.Equal(t, "link off: the host backend's load cannot read its peers", note)
}
