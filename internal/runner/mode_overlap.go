package runner

import (
	"fmt"
	"math"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/sigblock"
)

// bench --overlap BLOCKS: after a case's normal timing, the same calls are
// timed again with a compute load (backend.Overlapper) of BLOCKS blocks
// running beside them on each rank's device, as a tensor-parallel layer's
// matrix multiplies run beside its allreduce. Per rank:
//
//  1. one unit of load alone, twice (the first warms up): its time sizes
//     the load so that it lasts about one repetition of calls without
//     load (the case's own time x --iters); the ranks take the largest
//     size, so every rank runs the same work;
//  2. that load alone, overlapAloneRuns times: the load's time alone;
//  3. --reps repetitions, each the load started, --iters calls (or one
//     graph replay) between two events, and the load joined: the calls'
//     time under load, and the load's time beside them.
//
// The load's slowdown is its time beside the calls over its time alone.
// Its work is fixed, so a load that outlasts the calls runs its tail
// alone, and one that ends first leaves the last calls unloaded; sizing
// it to the calls' unloaded time keeps both small.

// bench --sm-budget N is the same timing with two differences: the load
// gets the GPU's other multiprocessors (SMs - N blocks; the collective's
// grid is capped at N, launch.go's budgetGrid), and its work is fixed per
// message size (budgetLoadBytesPerUS) instead of sized to the calls, so that the
// pair's span (first start to last end of the calls and the load) compares
// across budgets and variants: the budget with the smallest span is the
// one that finishes a layer's collective and its compute soonest.

// overlapMode is bench --overlap BLOCKS, or bench --sm-budget N.
type overlapMode struct {
	noSteps
	blocks int
	// budget is --sm-budget (0: --overlap) and sms the multiprocessors
	// every rank's GPU has (the fewest, agreed).
	budget, sms int
	// load runs the compute load (nil: the backend cannot; the header
	// says why).
	load backend.Overlapper
}

func newOverlapMode(cfg *Config) timingMode {
	switch {
	case !cfg.Bench:
		return nil
	case cfg.SMBudget > 0:
		return &overlapMode{budget: cfg.SMBudget}
	case cfg.Overlap > 0:
		return &overlapMode{blocks: cfg.Overlap}
	}
	return nil
}

// maxOverlapBlocks bounds --overlap: 65536 blocks of artest_compute keep
// its output (a float per thread) at 64 MiB, and are hundreds of waves on
// any GPU.
const maxOverlapBlocks = 1 << 16

// maxSMBudget bounds --sm-budget: sigblock.MaxBlocks, the most blocks any
// variant's grid has.
const maxSMBudget = sigblock.MaxBlocks

var (
	checkOverlap, setOverlap   = wholeFlag("overlap", "thread blocks", maxOverlapBlocks, func(cfg *Config) *int { return &cfg.Overlap })
	checkSMBudget, setSMBudget = wholeFlag("sm-budget", "blocks", maxSMBudget, func(cfg *Config) *int { return &cfg.SMBudget })
)

// overlapFlags are bench's --overlap BLOCKS, into Config.Overlap, and
// --sm-budget N, into Config.SMBudget (the budget sizes the load itself,
// so not with --overlap).
var overlapFlags = []ModeFlag{{
	Name:  "overlap",
	Help:  "bench: also time every case with a compute load of BLOCKS thread blocks running beside its calls on each rank's GPU (artest_compute, GEMM-like), and report the load's slowdown",
	Bench: "times calls beside a compute load",
	Check: checkOverlap, Set: setOverlap,
}, {
	Name:  "sm-budget",
	Help:  "bench: cap every collective's grid at N blocks per GPU (so at most N multiprocessors; NCCL's through NCCL_MAX_CTAS=N) and time it again beside a compute load of fixed work on the GPU's other multiprocessors: the calls' time, the load's slowdown and the pair's span",
	Bench: "times collectives beside a compute load",
	Excludes: []ModeExclusion{{"overlap",
		"--sm-budget N gives the load the GPU's other multiprocessors"}},
	Check: checkSMBudget, Set: setSMBudget,
}}

// budgetLoadBytesPerUS sizes --sm-budget's load: a message of B bytes gets
// a load whose work takes, on every multiprocessor alone, about --iters x
// B / budgetLoadBytesPerUS us: as long as the calls would take moving the
// message at 100 GB/s. That is below what a good allreduce on NVLink
// reaches (2 H200: 300 GB/s and more from 16 MiB), so at every budget the
// load outlasts the calls and the span shows what the budget costs the
// compute. A choice of workload, not a measurement.
const budgetLoadBytesPerUS = 100e3

// budgetUnits is the load's units per block for a message of bytes under
// --sm-budget: fixed work (budgetLoadBytesPerUS) spread over blocks of the
// sms multiprocessors, given one unit's time unitUS on one block alone.
func budgetUnits(bytes int64, iters, blocks, sms int, unitUS float64) int {
	if blocks <= 0 || sms <= 0 {
		return 1
	}
	allUS := float64(iters) * float64(bytes) / budgetLoadBytesPerUS
	return loadUnits(allUS*float64(sms)/float64(blocks), unitUS)
}

// overlapName is the mode's word; its series are the calls' time under
// load and the load's time alone and beside the calls.
const (
	overlapName       = "overlap"
	overlapSeriesCall = "calls"
	overlapSeriesLoad = "load_alone"
	overlapSeriesWith = "load_with"
	overlapSeriesPair = "pair"
)

func (*overlapMode) name() string { return overlapName }

// prepareRun prepares the load on every rank, or says in the header why
// it cannot run.
func (m *overlapMode) prepareRun(r *run, h *report.Header) error {
	if m.budget > 0 {
		h.SMBudget = m.budget
		sms, why, err := r.agreeSMs()
		if err != nil {
			return err
		}
		switch {
		case why != "":
			h.OverlapNote = "sm-budget load off: " + why
			return nil
		case sms <= m.budget:
			h.OverlapNote = fmt.Sprintf("sm-budget load off: --sm-budget %d leaves none of the GPU's %d multiprocessors to the load", m.budget, sms)
			return nil
		}
		m.sms, m.blocks = sms, sms-m.budget
	}
	load, note, err := r.prepareOverlap(m.blocks)
	if err != nil {
		return err
	}
	m.load, h.OverlapNote, h.Overlap = load, note, m.blocks
	return nil
}

// agreeSMs is the fewest multiprocessors of any rank's GPU, or why the
// backend cannot say.
func (r *run) agreeSMs() (int, string, error) {
	n, why := 0, ""
	if sc, ok := r.b.(backend.SMCounter); ok {
		n = sc.SMs()
	} else {
		why = fmt.Sprintf("the %s backend has no multiprocessors to share", r.b.Name())
	}
	agreed, err := comm.AgreeReason(r.c, why)
	if err != nil || agreed != "" {
		return 0, agreed, err
	}
	n, _, err = comm.AgreeMin(r.c, n, "")
	return n, "", err
}

// time times the case's calls under the load (timeOverlap), where the
// load runs.
func (m *overlapMode) time(r *run, s *caseState, t *timedCalls, res *rankResult) bool {
	if m.load == nil {
		return true
	}
	return r.timeOverlap(s, m, t.rep, res)
}

// merge puts the times under the load into a timed case: the calls' time
// under load, the load's time alone and beside them, and its slowdown
// (beside / alone).
func (m *overlapMode) merge(out *report.Case, rs []rankResult, cfg *Config) {
	if out.TimeUS <= 0 {
		return
	}
	t := aggMedian(rs, cfg, series(overlapName, overlapSeriesCall))
	alone := aggMedian(rs, cfg, series(overlapName, overlapSeriesLoad))
	with := aggMedian(rs, cfg, series(overlapName, overlapSeriesWith))
	if t <= 0 || alone <= 0 || with <= 0 {
		return
	}
	out.OverlapBlocks = m.blocks
	out.OverlapTimeUS = t
	out.LoadAloneUS = alone
	out.LoadWithAllreduceUS = with
	out.LoadSlowdown = with / alone
	if m.budget > 0 {
		out.PairUS = aggMedian(rs, cfg, series(overlapName, overlapSeriesPair))
	}
}

// overlapAloneRuns is how many times the load runs alone (the median is
// kept): a few, since it is one kernel of fixed work.
const overlapAloneRuns = 3

// prepareOverlap checks that every rank can run a load of blocks and
// prepares it. It returns the load, or nil and why not (the header's
// note); the error is a failed collective.
func (r *run) prepareOverlap(blocks int) (backend.Overlapper, string, error) {
	reason := ""
	ov, ok := r.b.(backend.Overlapper)
	if !ok {
		reason = fmt.Sprintf("the %s backend has no compute load", r.b.Name())
	} else if reason = ov.OverlapReason(); reason == "" {
		if err := ov.PrepareOverlap(blocks); err != nil {
			reason = err.Error()
		}
	}
	agreed, err := comm.AgreeReason(r.c, reason)
	if err != nil {
		return nil, "", fmt.Errorf("agree on the overlap load: %w", err)
	}
	if agreed != "" {
		return nil, "overlap off: " + agreed, nil
	}
	return ov, "", nil
}

// overlapSpan is one load's events and, under load, the calls' events.
type overlapSpan struct {
	ls, le backend.Event // around the load, on its side stream
	a, b   backend.Event // around the calls; nil when the load ran alone
}

func destroyOverlapSpans(spans []overlapSpan) {
	for _, sp := range spans {
		for _, ev := range []backend.Event{sp.ls, sp.le, sp.a, sp.b} {
			if ev != nil {
				_ = ev.Destroy()
			}
		}
	}
}

// timeOverlap times the case's calls (the unit rep, cfg.Iters calls)
// under the load ov, and the load alone and beside them, into res's
// overlap series. It reports whether all went well; failures are
// recorded in res.
func (r *run) timeOverlap(s *caseState, m *overlapMode, rep callUnit, res *rankResult) bool {
	ov := m.load
	fail := func(format string, args ...any) bool {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "error", Detail: fmt.Sprintf(format, args...)})
		return false
	}
	// run enqueues n loads of units, each beside calls when withCalls,
	// waits for them and returns their spans (destroyed by the caller).
	run := func(n, units int, withCalls bool, what string) ([]overlapSpan, error) {
		var spans []overlapSpan
		for i := 0; i < n; i++ {
			var sp overlapSpan
			var err error
			if sp.ls, sp.le, err = ov.StartOverlap(units); err != nil {
				return spans, err
			}
			spans = append(spans, sp)
			if withCalls {
				if spans[i].a, err = r.b.Record(); err != nil {
					return spans, err
				}
				if err = rep.enqueue(); err != nil {
					return spans, err
				}
				if spans[i].b, err = r.b.Record(); err != nil {
					return spans, err
				}
			}
			if err := ov.JoinOverlap(); err != nil {
				return spans, err
			}
		}
		return spans, r.sync(s.c, what, s.launch.Blocks)
	}
	us := func(a, b backend.Event) (float64, error) {
		d, err := b.Since(a)
		return float64(d.Nanoseconds()) / 1e3, err
	}

	cal, err := run(2, 1, false, "the overlap load alone")
	defer destroyOverlapSpans(cal)
	if err != nil {
		return fail("overlap load alone: %v", err)
	}
	unitUS, err := us(cal[1].ls, cal[1].le)
	if err != nil {
		return fail("timing the overlap load: %v", err)
	}
	units := loadUnits(res.TimeUS*float64(r.cfg.Iters), unitUS)
	if m.budget > 0 {
		units = budgetUnits(s.bytes, r.cfg.Iters, m.blocks, m.sms, unitUS)
	}
	most, _, err := comm.AgreeMin(r.c, -units, "")
	if err != nil {
		res.Fatal = fmt.Sprintf("agree on the overlap load's size: %v", err)
		return fail("agree on the overlap load's size: %v", err)
	}
	units = -most

	alone, err := run(overlapAloneRuns, units, false, "the overlap load alone")
	defer destroyOverlapSpans(alone)
	if err != nil {
		return fail("overlap load alone: %v", err)
	}
	loaded, err := run(r.cfg.Reps, units, true, "the calls under the overlap load")
	defer destroyOverlapSpans(loaded)
	if err != nil {
		return fail("calls under the overlap load: %v", err)
	}
	for _, sp := range alone {
		t, err := us(sp.ls, sp.le)
		if err != nil {
			return fail("timing the overlap load alone: %v", err)
		}
		res.addSeries(overlapName, overlapSeriesLoad, t)
	}
	for _, sp := range loaded {
		t, err := us(sp.ls, sp.le)
		if err != nil {
			return fail("timing the overlap load beside the calls: %v", err)
		}
		c, err := us(sp.a, sp.b)
		if err != nil {
			return fail("timing the calls under the overlap load: %v", err)
		}
		res.addSeries(overlapName, overlapSeriesWith, t)
		res.addSeries(overlapName, overlapSeriesCall, c/float64(r.cfg.Iters))
		if m.budget > 0 {
			pair, err := pairSpan(sp, us)
			if err != nil {
				return fail("timing the calls and the load together: %v", err)
			}
			res.addSeries(overlapName, overlapSeriesPair, pair)
		}
	}
	return true
}

// pairSpan is the time from the first start to the last end of a load and
// the calls beside it, from the load's start: the calls' events may come
// before it (a negative elapsed time) or after.
func pairSpan(sp overlapSpan, us func(a, b backend.Event) (float64, error)) (float64, error) {
	var t [3]float64 // calls start, load end, calls end, from the load's start
	for i, ev := range []backend.Event{sp.a, sp.le, sp.b} {
		d, err := us(sp.ls, ev)
		if err != nil {
			return 0, err
		}
		t[i] = d
	}
	return max(t[1], t[2]) - min(0, t[0]), nil
}

// loadUnits is how many units of load, each taking unitUS alone, last
// about repUS: at least 1, at most kernels.ComputeMaxUnits.
func loadUnits(repUS, unitUS float64) int {
	if unitUS <= 0 || repUS <= 0 || math.IsNaN(repUS/unitUS) {
		return 1
	}
	return int(min(max(math.Round(repUS/unitUS), 1), kernels.ComputeMaxUnits))
}
