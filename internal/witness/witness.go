// Package witness is the end-barrier witness's judgement, in pure
// functions: given every rank's stamps of a stress case (when each
// iteration's call returned on that rank, and the straggler loads every
// rank planned), it finds the iterations where one rank returned long
// before another finished, leaves out those a load or a late host can
// explain, and warns when the leads recur. The runner takes the stamps
// through its backend and hands them here; nothing here needs a backend.
package witness

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/artest/artest/internal/report"
)

// The witness's base threshold: a lead of more than this (plus the two
// ranks' clock uncertainty) between one rank's return and another's finish
// counts. With an end barrier every rank's call returns within the
// barrier's release (a few microseconds on a GPU) of the last; without one,
// a rank returns while a straggling peer still reads, tens to hundreds of
// microseconds early under the straggler schedule. The host backend's
// "kernels" are goroutines that the OS may park for milliseconds between a
// call's end and the stamp after it.
// On 2 H200, one rank per GPU, correct pull kernels led by at most 27.5 us
// and oneshot without its end barrier by up to 73 us
// (docs/results/2026-11-26-h200-x2-stress.md).
const (
	baseCUDA = 30 * time.Microsecond
	baseHost = 50 * time.Millisecond
)

// A case warns only when its leads past the threshold recur: in at least
// minOver iterations and minShare of those compared. Correct
// kernels pass the threshold now and then (a slowed rank's exit, a host
// thread held off): with event stamps in at most 1 of about 1100
// iterations compared on 2 H100, the example plugin's bug in every one
// (docs/results/2026-11-26-h100-h200-event-witness.md).
const (
	minOver  = 3
	minShare = 0.01
)

// In captured graphs on two ranks, one per GPU, the iterations beside the
// straggler's SM load are compared too, past a higher threshold
// (loadBaseCUDA plus the two ranks' clock uncertainty, about 57
// us), and warn from a smaller share (loadMinShare, and at least
// minOver iterations). Not at more ranks, where the lead is the spread of
// more ranks' ends, nor in plain calls beside the load, where a correct
// kernel's loaded rank is held to the load's end or starved after its end
// barrier. On 2 H200 correct kernels' graph cases passed it in at most
// 0.05% of iterations, the missing end barriers in 0.4% or more, and on 4
// H200 correct vLLM in 0.69%
// (docs/results/2026-11-26-h200-x2-x4-witness-graph-loads.md).
const (
	loadBaseCUDA = 50 * time.Microsecond
	loadMinShare = 0.0025
)

// linkDrain is how long after its deadline a link load may still hold its
// GPU's kernel ends: its last reads in flight over the links (a few
// microseconds; a margin, not measured).
const linkDrain = 10 * time.Microsecond

// hostLate bounds how soon after its rank's host began to enqueue it a
// stamp may run and still be taken for the moment its call returned. A
// stamp enqueued one at a time (plain mode) runs at once on a stream that
// has drained: when the host fell behind the GPU (a rank's thread held
// off between the call's launch and the stamp's), the stamp marks the
// host's delay, not the call's end, and its rank looks like the last to
// finish. Launching a kernel on an idle stream takes a few microseconds;
// 20 us is a margin above that, chosen, not measured: on 2 H200 at
// --stress 10000 it left out 37 of 530,000 iterations
// (docs/results/2026-11-26-h200-witness-shared-catch.md).
// A rank that really is still reading ran its stamp long after enqueuing
// it (its call was still running), so a missing end barrier keeps its
// leads.
const hostLate = 20 * time.Microsecond

// SharedGPUSilent is why ranks sharing one GPU get the leads without a
// warning. Kernel stamps there wait for each other's blocks and the
// straggler's load, captured event stamps follow the copies
// (stampAfterCopies), and plain event stamps follow the call, where a
// correct kernel's rank slowed on its own SMs leads too: at 2 ranks on one
// H200 the example plugin's correct kernel passed the threshold in up to
// 121 of 2000 iterations, the missing end barriers in 113 to 549
// (docs/results/2026-11-26-h100-h200-event-witness.md): too close to call.
const SharedGPUSilent = "ranks share a GPU: a slowed rank's correct exit there leads as far as a missing end barrier, so a lead says nothing"

// Stamps are one rank's stamps of a stress case: when each
// iteration's call returned, on the host's wall clock (Unix ns).
type Stamps struct {
	// Ends are the stream clock's readings, Walls the same moments on the
	// host's wall clock, known to within UncertaintyNs (the largest
	// uncertainty of the clock syncs they were interpolated between).
	Ends          []int64 `json:"ends"`
	Walls         []int64 `json:"walls"`
	UncertaintyNs int64   `json:"uncertainty_ns"`
	// Domain names the stream clock (one GPU's timer), Host the wall
	// clock's host (backend.ClockSync).
	Domain string `json:"domain"`
	Host   string `json:"host"`
	// Stamps names what the stamps are (backend.ClockSync).
	Stamps string `json:"stamps,omitempty"`
	// Shared: this rank shares its GPU with another rank.
	Shared bool `json:"shared,omitempty"`
	// Loads are the straggler loads every rank planned alike, one per
	// iteration that ran one.
	Loads []Load `json:"loads,omitempty"`
	// Enqueued is when the host began to enqueue each stamp (Unix ns on
	// its wall clock), 0 for a stamp in a captured graph (its replay
	// enqueues every stamp at once).
	Enqueued []int64 `json:"enqueued,omitempty"`
}

// Load is one iteration's straggler load: which rank ran it, how
// long, and whether it read its peers over the links.
type Load struct {
	Iter int   `json:"iter"`
	Rank int   `json:"rank"`
	Ns   int64 `json:"ns"`
	Link bool  `json:"link,omitempty"`
	// Memory: the load streamed the GPU's memory, which every rank
	// sharing it reads: like a link load it holds correct kernels' ends
	// too.
	Memory bool `json:"memory,omitempty"`
	// Stamped: in the loaded rank's own stamps, its load's start and end
	// were stamped on the stamp clock (backend.LoadStamper), and
	// CallAfterStartNs and CallAfterEndNs are its call's stamp less them:
	// a call whose stamp comes just after its load's end may have been
	// held by the load, whatever its kernel does.
	Stamped          bool  `json:"stamped,omitempty"`
	CallAfterStartNs int64 `json:"call_after_start_ns,omitempty"`
	CallAfterEndNs   int64 `json:"call_after_end_ns,omitempty"`
}

// Merge compares the ranks' stamps, iteration by iteration: nil
// unless every rank stamped every iteration on one host. Ranks on one clock
// (one GPU's timer) compare their stamps exactly; otherwise each rank's
// stamps move to the host's wall clock, and the threshold widens by the
// two ranks' offset uncertainty. early, when set, is the variant's reason
// that a rank may return before its peers finish: the leads are reported
// without a warning, as they are for ranks that share a GPU.
func Merge(rs []*Stamps, backendName, early string) *report.Witness {
	return MergeRows(rs, backendName, early, false, nil)
}

// Row is one iteration as Merge judged it: its lead, the
// ranks that returned first and finished last, the straggler load beside
// it (Ns 0: none) and why it was not compared ("link", "load", "host"; ""
// when it was). WriteRows prints them.
type Row struct {
	Iter        int
	Lead        time.Duration
	First, Last int
	Load        Load
	Skipped     string
}

// MergeRows is Merge that also hands each iteration's row to
// row (when not nil); graph: the case's calls were replays of a captured
// graph, whose iterations beside a side load two ranks compare too.
func MergeRows(rs []*Stamps, backendName, early string, graph bool, row func(Row)) *report.Witness {
	if len(rs) < 2 {
		return nil
	}
	n := -1
	oneDomain, shared := true, false
	for _, r := range rs {
		if r == nil || rs[0] == nil || (n >= 0 && len(r.Ends) != n) || len(r.Walls) != len(r.Ends) || r.Host != rs[0].Host {
			return nil
		}
		n = len(r.Ends)
		oneDomain = oneDomain && r.Domain == rs[0].Domain
		shared = shared || r.Shared
	}
	if n == 0 {
		return nil
	}
	base := baseCUDA
	// The host backend's stamps run on its stream's goroutine right after
	// its call, whenever they were enqueued: no host-late stamps there.
	checkHostLate := backendName != "host"
	switch {
	case backendName == "host":
		base = baseHost
	case (oneDomain || shared) && early == "":
		early = SharedGPUSilent
	}
	at := func(r, i int) int64 {
		if oneDomain {
			return rs[r].Ends[i]
		}
		return rs[r].Walls[i]
	}
	unc := func(r int) time.Duration {
		if oneDomain {
			return 0
		}
		return time.Duration(rs[r].UncertaintyNs)
	}
	w := &report.Witness{Iterations: n, Iteration: -1, LoadIteration: -1, SameClock: oneDomain, Stamps: rs[0].Stamps}
	// Beside a side load, only graph replays of two ranks on GPUs compare
	// (see loadBaseCUDA).
	w.LoadCompared = graph && backendName != "host" && len(rs) == 2
	var worstLoadThreshold time.Duration
	// A load holds the kernel ends of its GPU, so its rank's stamps come
	// late whatever the kernel does: the iterations it ran beside are not
	// compared at the base threshold (a side load's, in graph replays of
	// two ranks, past the load threshold: loadBaseCUDA). A link load congests the links a correct kernel's end
	// barrier signals over (correct kernels led by up to 130 us on 2
	// H200). The SM load starves the loaded rank's blocks, a correct
	// kernel's too: after its end barrier it exits about when the load
	// ends, so its lead grows with the load's length, as a missing end
	// barrier's does (on 2 H200 the example plugin's correct kernel led by
	// up to 84.3 us beside loads of 175 to 200 us,
	// docs/results/2026-11-26-h200-x2-nccl-graph-registration-sm-load.md).
	// Nothing waits for a load before the batch's end, so it may also run
	// beside later calls, and a rank's loads run one after another on
	// its side stream: a load starts no earlier than the one before it
	// on that rank ended. Each load is taken to start at the later of
	// that end and the latest stamp of its own iteration (it was forked
	// before the call, so it started by then unless it queued), and an
	// iteration whose first stamp came before a load could have ended
	// (plus a drain, for a link load) is not compared either: on 2 H200
	// correct kernels led by up to 86 us in the iteration after a link load
	// that had queued behind a load of the same rank
	// (docs/results/2026-11-26-h200-witness-shared-catch.md).
	loads := map[int]Load{}
	for _, l := range rs[0].Loads {
		if l.Rank >= 0 && l.Rank < len(rs) {
			loads[l.Iter] = l
		}
	}
	// The loaded rank's own record holds its load's stamps.
	for r := range rs {
		for _, l := range rs[r].Loads {
			if l.Rank == r && l.Stamped {
				loads[l.Iter] = l
			}
		}
	}
	sideFree := make([]int64, len(rs))
	linkUntil, sideUntil := int64(math.MinInt64), int64(math.MinInt64)
	var worstThreshold time.Duration
	for i := 0; i < n; i++ {
		first, last := 0, 0
		for r := range rs {
			if at(r, i) < at(first, i) {
				first = r
			}
			if at(r, i) > at(last, i) {
				last = r
			}
		}
		earliest, latest := at(first, i), at(last, i)
		lead := time.Duration(latest - earliest)
		threshold := base + unc(first) + unc(last)
		l, loaded := loads[i]
		emit := func(skipped string) {
			if row != nil {
				r := Row{Iter: i, Lead: lead, First: first, Last: last, Skipped: skipped, Load: Load{Rank: -1}}
				if loaded {
					r.Load = l
				}
				row(r)
			}
		}
		skip := ""
		if loaded {
			end := max(sideFree[l.Rank], latest) + l.Ns
			sideFree[l.Rank] = end
			if l.Link || l.Memory {
				linkUntil, skip = max(linkUntil, end+linkDrain.Nanoseconds()), "link"
			} else {
				sideUntil, skip = max(sideUntil, end), "load"
			}
		}
		switch {
		case skip != "":
		case earliest <= linkUntil:
			skip = "link"
		case earliest <= sideUntil:
			skip = "load"
		}
		if skip != "" {
			emit(skip)
			if skip == "load" && w.LoadCompared {
				t := loadBaseCUDA + unc(first) + unc(last)
				w.LoadSkipped++
				if lead > t {
					w.LoadOver++
				}
				if us := float64(lead.Nanoseconds()) / 1e3; w.LoadIteration < 0 || us > w.LoadMaxLeadUS {
					w.LoadMaxLeadUS, w.LoadIteration, w.LoadFirst, w.LoadLast = us, i, first, last
					worstLoadThreshold = t
				}
				continue
			}
			n, most, over := &w.LinkSkipped, &w.LinkMaxLeadUS, &w.LinkOver
			if skip == "load" {
				n, most, over = &w.LoadSkipped, &w.LoadMaxLeadUS, &w.LoadOver
			}
			*n++
			*most = max(*most, float64(lead.Nanoseconds())/1e3)
			if lead > threshold {
				*over++
			}
			continue
		}
		if checkHostLate && hostLateStamp(rs[last], i, hostLate+unc(last)) {
			// The last rank's stamp may mark its host's delay: the lead
			// is not known.
			emit("host")
			w.HostSkipped++
			continue
		}
		emit("")
		if lead > threshold {
			w.Over++
		}
		if us := float64(lead.Nanoseconds()) / 1e3; w.Iteration < 0 || us > w.MaxLeadUS {
			w.MaxLeadUS, w.Iteration, w.First, w.Last = us, i, first, last
			worstThreshold = threshold
		}
	}
	w.ThresholdUS = float64(worstThreshold.Nanoseconds()) / 1e3
	if w.LoadCompared {
		w.LoadThresholdUS = float64(worstLoadThreshold.Nanoseconds()) / 1e3
	}
	if w.LoadIteration < 0 {
		w.LoadIteration = 0
	}
	w.Silent = early
	compared := n - w.LinkSkipped - w.LoadSkipped - w.HostSkipped
	switch {
	case early != "":
	case w.Over >= max(minOver, int(math.Ceil(minShare*float64(compared)))):
		w.Warning = report.WitnessWarning(w)
	case w.LoadCompared && w.LoadOver >= max(minOver, int(math.Ceil(loadMinShare*float64(w.LoadSkipped)))):
		w.Warning = report.WitnessLoadWarning(w)
	}
	return w
}

// hostLateStamp: s's stamp of iteration i ran within margin of when its
// host began to enqueue it (see hostLate).
func hostLateStamp(s *Stamps, i int, margin time.Duration) bool {
	if i >= len(s.Enqueued) || i >= len(s.Walls) || s.Enqueued[i] == 0 {
		return false
	}
	return s.Walls[i]-s.Enqueued[i] < margin.Nanoseconds()
}

// WriteRows appends case id's rows to the file $ARTEST_WITNESS_DUMP
// names, one line each: the case, the iteration, the lead in ns, the
// first and last rank, the loaded rank (-1: none), the load's ns and
// kind ("link" or "side"), why it was not compared at the base threshold
// ("-" when it was; "load" ones are compared past the load threshold in
// graph replays of two ranks), and
// the loaded rank's call stamp less its load's start and end in ns ("- -"
// where the load was not stamped).
// A diagnostic for choosing the witness's thresholds from a run's own
// leads; rank 0 writes it, and a file it cannot write is said on stderr
// (the run goes on).
func WriteRows(path, id string, rows []Row) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("ARTEST_WITNESS_DUMP %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	for _, r := range rows {
		kind, skipped := "side", r.Skipped
		if r.Load.Link {
			kind = "link"
		} else if r.Load.Memory {
			kind = "memory"
		}
		if skipped == "" {
			skipped = "-"
		}
		after := "- -"
		if r.Load.Stamped {
			after = fmt.Sprintf("%d %d", r.Load.CallAfterStartNs, r.Load.CallAfterEndNs)
		}
		fmt.Fprintf(w, "%s %d %d %d %d %d %d %s %s %s\n", id, r.Iter, r.Lead.Nanoseconds(), r.First, r.Last, r.Load.Rank, r.Load.Ns, kind, skipped, after)
	}
	if err := errors.Join(w.Flush(), f.Close()); err != nil {
		return fmt.Errorf("ARTEST_WITNESS_DUMP %s: %w", path, err)
	}
	return nil
}
