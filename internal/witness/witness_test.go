package witness

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func stamps(domain string, offset, unc int64, ends ...int64) *Stamps {
	walls := make([]int64, len(ends))
	for i, e := range ends {
		walls[i] = e - offset
	}
	return &Stamps{Ends: ends, Walls: walls, UncertaintyNs: unc, Domain: domain, Host: "h"}
}

func TestMergeWitness(t *testing.T) {
	const us = 1000
	for _, tc := range []struct {
		name        string
		rs          []*Stamps
		early       string
		nilWitness  bool
		maxLead     float64
		iter, first int
		last, over  int
		warned      bool
	}{
		{name: "one clock, within the threshold",
			rs:      []*Stamps{stamps("gpu0", 0, 0, 100*us, 200*us), stamps("gpu0", 0, 0, 110*us, 205*us)},
			maxLead: 10, iter: 0, first: 0, last: 1},
		{name: "one GPU: the leads are reported, never warned",
			rs:      []*Stamps{stamps("gpu0", 0, 0, 100*us, 200*us), stamps("gpu0", 0, 0, 110*us, 500*us)},
			maxLead: 300, iter: 1, first: 0, last: 1, over: 1},
		{name: "two GPUs, one clock each, within the threshold",
			rs:      []*Stamps{stamps("gpu0", 0, 0, 100*us, 200*us), stamps("gpu1", 0, 0, 110*us, 205*us)},
			maxLead: 10, iter: 0, first: 0, last: 1},
		{name: "two GPUs: a rank returned 50 us before its peer finished, three times",
			rs:      []*Stamps{stamps("gpu0", 0, 0, 100*us, 200*us, 300*us, 400*us), stamps("gpu1", 0, 0, 110*us, 250*us, 350*us, 450*us)},
			maxLead: 50, iter: 1, first: 0, last: 1, over: 3, warned: true},
		{name: "two GPUs: one lead past the threshold is counted, not warned",
			rs:      []*Stamps{stamps("gpu0", 0, 0, 100*us, 200*us, 300*us), stamps("gpu1", 0, 0, 110*us, 250*us, 305*us)},
			maxLead: 50, iter: 1, first: 0, last: 1, over: 1},
		{name: "two clocks: offsets removed, uncertainty widens the threshold",
			// rank 1's clock runs 1 ms ahead: its raw stamps are 1 ms later.
			rs:      []*Stamps{stamps("gpu0", 0, 5*us, 100*us), stamps("gpu1", 1000*us, 5*us, 1135*us)},
			maxLead: 35, iter: 0, first: 0, last: 1},
		{name: "two clocks, past the widened threshold",
			rs:      []*Stamps{stamps("gpu0", 0, 5*us, 100*us, 200*us, 300*us), stamps("gpu1", 1000*us, 5*us, 1145*us, 1245*us, 1345*us)},
			maxLead: 45, iter: 0, first: 0, last: 1, over: 3, warned: true},
		{name: "a variant that may return early: reported, not warned",
			rs:      []*Stamps{stamps("gpu0", 0, 0, 100*us), stamps("gpu1", 0, 0, 400*us)},
			early:   "pushes its data",
			maxLead: 300, iter: 0, first: 0, last: 1, over: 1},
		{name: "a rank without stamps", rs: []*Stamps{stamps("gpu0", 0, 0, 1), {}}, nilWitness: true},
		{name: "a rank without a record", rs: []*Stamps{stamps("gpu0", 0, 0, 1), nil}, nilWitness: true},
		{name: "rank 0 without a record", rs: []*Stamps{nil, stamps("gpu0", 0, 0, 1)}, nilWitness: true},
		{name: "ranks with different counts", rs: []*Stamps{stamps("gpu0", 0, 0, 1, 2), stamps("gpu0", 0, 0, 1)}, nilWitness: true},
		{name: "one rank", rs: []*Stamps{stamps("gpu0", 0, 0, 1)}, nilWitness: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := Merge(tc.rs, "cuda", tc.early)
			if tc.nilWitness {
				require.Nil(t, w)
				return
			}
			require.NotNil(t, w)
			require.InDelta(t, tc.maxLead, w.MaxLeadUS, 1e-9)
			require.Equal(t, tc.iter, w.Iteration)
			require.Equal(t, tc.first, w.First)
			require.Equal(t, tc.last, w.Last)
			require.Equal(t, tc.over, w.Over)
			require.Equal(t, tc.warned, w.Warning != "", w.Warning)
			if tc.warned {
				require.Contains(t, w.Warning, "end-barrier witness: rank 0's call returned")
			}
		})
	}
	// Iterations beside a link load are left out: it holds its GPU's
	// kernel ends whatever the kernel does. Iteration 1 ran a 50 us load;
	// iteration 2 began before it could have ended (400 + 50 + the
	// drain), iteration 3 after.
	a0 := stamps("gpu0", 0, 0, 100*us, 200*us, 420*us, 600*us)
	a1 := stamps("gpu1", 0, 0, 110*us, 400*us, 470*us, 660*us)
	for _, a := range []*Stamps{a0, a1} {
		a.Loads = []Load{{Iter: 1, Rank: 1, Ns: 50 * us, Link: true}}
	}
	w := Merge([]*Stamps{a0, a1}, "cuda", "")
	require.Equal(t, 2, w.LinkSkipped)
	require.Equal(t, 1, w.Over)
	require.Equal(t, 3, w.Iteration)
	require.InDelta(t, 60, w.MaxLeadUS, 1e-9)
	require.Empty(t, w.Warning, "one iteration past the threshold")
	for _, a := range []*Stamps{a0, a1} {
		a.Loads = nil
	}
	w = Merge([]*Stamps{a0, a1}, "cuda", "")
	require.Equal(t, 0, w.LinkSkipped)
	require.InDelta(t, 200, w.MaxLeadUS, 1e-9, "the same stamps, every iteration compared")

	// A rank's loads queue on its side stream: a link load planned after
	// a long side load on the same rank starts when that one ends, and
	// holds the kernel ends past its own iteration's stamps plus its
	// length. Iteration 1 runs a 300 us side load on rank 0 (until about
	// 410 us), iteration 2 a 50 us link load on rank 0 (queued: until
	// about 470 us, not 270), so iteration 3's 60 us lead at 400 us is
	// left out as beside a link load; the same link load on rank 1,
	// which had no load queued, ends by 270 us, and iteration 3 is left
	// out as beside the side load, which still runs. Either way nothing
	// is compared past the threshold.
	b0 := stamps("gpu0", 0, 0, 100*us, 105*us, 200*us, 400*us)
	b1 := stamps("gpu1", 0, 0, 100*us, 110*us, 210*us, 460*us)
	for _, linkRank := range []int{0, 1} {
		for _, a := range []*Stamps{b0, b1} {
			a.Loads = []Load{{Iter: 1, Rank: 0, Ns: 300 * us}, {Iter: 2, Rank: linkRank, Ns: 50 * us, Link: true}}
		}
		w = Merge([]*Stamps{b0, b1}, "cuda", "")
		require.Zero(t, w.Over)
		require.Empty(t, w.Warning)
		if linkRank == 0 {
			require.Equal(t, 2, w.LinkSkipped, "queued behind the side load")
			require.Equal(t, 1, w.LoadSkipped)
		} else {
			require.Equal(t, 1, w.LinkSkipped, "no load queued before it")
			require.Equal(t, 2, w.LoadSkipped, "the side load still runs")
			require.InDelta(t, 60, w.LoadMaxLeadUS, 1e-9)
			require.Equal(t, 1, w.LoadOver)
		}
	}

	// Iterations beside a side load (the SM load starves the loaded
	// rank's blocks, a correct kernel's too) are left out like the link
	// load's, their leads shown: iteration 1 leads by 80 us beside a 100
	// us load, iteration 2 began before it could have ended, iteration 3
	// after.
	c0 := stamps("gpu0", 0, 0, 100*us, 200*us, 250*us, 1000*us)
	c1 := stamps("gpu1", 0, 0, 101*us, 280*us, 260*us, 1001*us)
	for _, a := range []*Stamps{c0, c1} {
		a.Loads = []Load{{Iter: 1, Rank: 1, Ns: 100 * us}}
	}
	w = Merge([]*Stamps{c0, c1}, "cuda", "")
	require.Equal(t, 2, w.LoadSkipped)
	require.Equal(t, 1, w.LoadOver)
	require.InDelta(t, 80, w.LoadMaxLeadUS, 1e-9)
	require.Zero(t, w.Over)
	require.InDelta(t, 1, w.MaxLeadUS, 1e-9, "only iterations 0 and 3 compared")

	// Ranks on two hosts have no common clock: no witness.
	a, b := stamps("g", 0, 0, 1), stamps("g", 0, 0, 1)
	b.Host = "other"
	require.Nil(t, Merge([]*Stamps{a, b}, "cuda", ""))
}

// A stamp that ran right after its host began to enqueue it marks when
// the host got there, not when the call returned: the rank that looks
// last then proves nothing, and the iteration is left out. The same lead
// with the stamp enqueued long before it ran (the call was still running)
// is a lead.
func TestMergeWitnessSkipsHostLateStamps(t *testing.T) {
	const us = 1000
	for _, tc := range []struct {
		name          string
		enqueued      []int64 // rank 1's, per iteration
		skipped, over int
		warned        bool
		maxLead       float64
	}{
		{name: "rank 1's stamp ran 8 us after its host enqueued it", enqueued: []int64{80 * us, 242 * us},
			skipped: 1, maxLead: 10},
		{name: "rank 1's stamp ran 20.5 us after: a lead", enqueued: []int64{80 * us, 229500},
			over: 1, maxLead: 50},
		{name: "rank 1 enqueued its stamp while its call ran", enqueued: []int64{80 * us, 150 * us},
			over: 1, maxLead: 50},
		{name: "captured stamps have no enqueue time", enqueued: []int64{0, 0},
			over: 1, maxLead: 50},
		{name: "no enqueue times recorded", over: 1, maxLead: 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a0 := stamps("gpu0", 0, 0, 100*us, 200*us)
			a1 := stamps("gpu1", 0, 0, 110*us, 250*us)
			a1.Enqueued = tc.enqueued
			// Rank 0's own stamps ran right after their enqueue: a late
			// first rank only shortens the lead, so it is no reason to
			// skip.
			a0.Enqueued = []int64{99 * us, 199 * us}
			w := Merge([]*Stamps{a0, a1}, "cuda", "")
			require.Equal(t, tc.skipped, w.HostSkipped)
			require.Equal(t, tc.over, w.Over)
			require.Equal(t, tc.warned, w.Warning != "", w.Warning)
			require.InDelta(t, tc.maxLead, w.MaxLeadUS, 1e-9)
		})
	}
	// The host backend's stamps run after the call whenever they were
	// enqueued: the rule is not applied there.
	a0 := stamps("host", 0, 0, 100*us, 200*us)
	a1 := stamps("host", 0, 0, 110*us, 250*us)
	a1.Enqueued = []int64{105 * us, 242 * us}
	require.Equal(t, 0, Merge([]*Stamps{a0, a1}, "host", "").HostSkipped)
}

// A warning needs its leads to recur: at least minOver iterations
// and minShare of those compared.
func TestMergeWitnessWarnsOnRecurringLeads(t *testing.T) {
	const us = 1000
	for _, tc := range []struct {
		n, over int
		warned  bool
	}{
		{n: 1000, over: 3}, {n: 1000, over: 9}, {n: 1000, over: 10, warned: true},
		{n: 100, over: 2}, {n: 100, over: 3, warned: true},
	} {
		e0, e1 := make([]int64, tc.n), make([]int64, tc.n)
		for i := range e0 {
			e0[i] = int64(i) * 1000 * us
			e1[i] = e0[i] + 5*us
			if i < tc.over {
				e1[i] = e0[i] + 80*us
			}
		}
		w := Merge([]*Stamps{stamps("gpu0", 0, 0, e0...), stamps("gpu1", 0, 0, e1...)}, "cuda", "")
		require.Equal(t, tc.over, w.Over)
		require.Equal(t, tc.warned, w.Warning != "", "%d of %d over", tc.over, tc.n)
	}
}

// Ranks that share a GPU get the leads, never a warning, whatever their
// stamps.
func TestMergeWitnessSilentWhereRanksShareAGPU(t *testing.T) {
	const us = 1000
	a := stamps("gpu0/events of pid 1", 0, 0, 100*us, 200*us, 300*us, 400*us)
	b := stamps("gpu0/events of pid 2", 0, 0, 190*us, 290*us, 390*us, 490*us)
	w := Merge([]*Stamps{a, b}, "cuda", "")
	require.NotEmpty(t, w.Warning, "two clocks, every iteration 90 us apart")
	a.Shared, b.Shared = true, true
	w = Merge([]*Stamps{a, b}, "cuda", "")
	require.Equal(t, 4, w.Over)
	require.Empty(t, w.Warning)
	require.Equal(t, SharedGPUSilent, w.Silent)

	// Kernel stamps of one GPU read one timer: silent as well.
	a.Shared, b.Shared = false, false
	a.Domain, b.Domain = "gpu0", "gpu0"
	w = Merge([]*Stamps{a, b}, "cuda", "")
	require.Empty(t, w.Warning)
	require.Equal(t, SharedGPUSilent, w.Silent)
}

// MergeRows hands every iteration's row out, the straggler load
// beside it (with the loaded rank's own stamps of it) and why it was left
// out, and WriteRows appends them, one line each.
func TestWitnessRowsDump(t *testing.T) {
	const us = 1000
	a := stamps("gpu0", 0, 0, 100*us, 1000*us, 2000*us)
	b := stamps("gpu1", 0, 0, 110*us, 1090*us, 2005*us)
	a.Loads = []Load{{Iter: 1, Rank: 1, Ns: 50 * us}, {Iter: 2, Rank: 0, Ns: 20 * us, Link: true}}
	// Rank 1 ran iteration 1's load and stamped it: its call's stamp came
	// 60 us after the load began and 10 us after it ended.
	stamped := Load{Iter: 1, Rank: 1, Ns: 50 * us, Stamped: true, CallAfterStartNs: 60 * us, CallAfterEndNs: 10 * us}
	b.Loads = []Load{stamped, {Iter: 2, Rank: 0, Ns: 20 * us, Link: true}}
	var rows []Row
	w := MergeRows([]*Stamps{a, b}, "cuda", "", false, func(r Row) { rows = append(rows, r) })
	require.Equal(t, 1, w.LinkSkipped)
	require.Equal(t, 1, w.LoadSkipped)
	require.Equal(t, []Row{
		{Iter: 0, Lead: 10 * time.Microsecond, First: 0, Last: 1, Load: Load{Rank: -1}},
		{Iter: 1, Lead: 90 * time.Microsecond, First: 0, Last: 1, Load: stamped, Skipped: "load"},
		{Iter: 2, Lead: 5 * time.Microsecond, First: 0, Last: 1, Load: Load{Iter: 2, Rank: 0, Ns: 20 * us, Link: true}, Skipped: "link"},
	}, rows)

	path := filepath.Join(t.TempDir(), "leads.txt")
	require.NoError(t, WriteRows(path, "c1", rows[:1]))
	require.NoError(t, WriteRows(path, "c2", rows[1:]))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "c1 0 10000 0 1 -1 0 side - - -\nc2 1 90000 0 1 1 50000 side load 60000 10000\nc2 2 5000 0 1 0 20000 link link - -\n", string(got))
	require.ErrorContains(t, WriteRows(filepath.Join(path, "x"), "c", rows), "ARTEST_WITNESS_DUMP")
}

// In graph replays of two ranks the iterations beside a side load are
// compared past the higher load threshold, and warn when such leads recur
// in at least minOver of them and loadMinShare; plain calls
// beside the same loads are only shown, and neither three ranks nor the
// host backend compare them.
func TestWitnessComparesLoadsInGraphs(t *testing.T) {
	const us = 1000
	// 400 iterations 1 ms apart, each beside a 100 us load of rank 1;
	// rank 1 finishes lead(i) after rank 0 returned.
	build := func(lead func(i int) int64) []*Stamps {
		var e0, e1 []int64
		var loads []Load
		for i := 0; i < 400; i++ {
			t0 := int64(i+1) * 1000 * us
			e0, e1 = append(e0, t0), append(e1, t0+lead(i))
			loads = append(loads, Load{Iter: i, Rank: 1, Ns: 100 * us})
		}
		a, b := stamps("gpu0", 0, 0, e0...), stamps("gpu1", 0, 0, e1...)
		a.Loads, b.Loads = loads, loads
		return []*Stamps{a, b}
	}
	// A third rank that returns with rank 0.
	three := func(rs []*Stamps) []*Stamps {
		c := stamps("gpu2", 0, 0, rs[0].Ends...)
		c.Loads = rs[0].Loads
		return append(append([]*Stamps(nil), rs...), c)
	}
	// A correct kernel's loaded rank exits up to 45 us late beside the
	// load; a missing end barrier leads by 80 us in 3 iterations.
	correct := build(func(i int) int64 { return int64(i%46) * us })
	buggy := build(func(i int) int64 {
		if i%100 == 7 {
			return 80 * us
		}
		return int64(i%46) * us
	})
	for _, tc := range []struct {
		name            string
		rs              []*Stamps
		graph           bool
		backend, early  string
		compared, warns bool
	}{
		{"graph, correct", correct, true, "cuda", "", true, false},
		{"graph, missing end barrier", buggy, true, "cuda", "", true, true},
		{"plain calls: shown, not compared", buggy, false, "cuda", "", false, false},
		{"host backend: not compared", buggy, true, "host", "", false, false},
		{"three ranks: not compared", three(buggy), true, "cuda", "", false, false},
		{"early by design: silent", buggy, true, "cuda", "pushes its data", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := MergeRows(tc.rs, tc.backend, tc.early, tc.graph, nil)
			require.Equal(t, tc.compared, w.LoadCompared)
			require.Equal(t, 400, w.LoadSkipped)
			require.Equal(t, tc.warns, w.Warning != "", w.Warning)
			if !tc.compared {
				require.Zero(t, w.LoadThresholdUS)
				return
			}
			require.InDelta(t, 50, w.LoadThresholdUS, 1e-9)
			if tc.rs[1].Ends[7]-tc.rs[0].Ends[7] == 80*us {
				require.Equal(t, 4, w.LoadOver)
				require.InDelta(t, 80, w.LoadMaxLeadUS, 1e-9)
				require.Equal(t, 7, w.LoadIteration)
				require.Equal(t, 1, w.LoadLast)
			} else {
				require.Zero(t, w.LoadOver)
			}
			if tc.warns {
				require.Contains(t, w.Warning, "rank 0's call returned 80.0 us before rank 1's finished, beside the straggler's load (iteration 7; 4 of 400 such iterations led by more than 50.0 us)")
			}
		})
	}
}
