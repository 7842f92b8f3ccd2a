package runner

import (
	"fmt"
	"math"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
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

// overlapAloneRuns is how many times the load runs alone (the median is
// kept): a few, since it is one kernel of fixed work.
const overlapAloneRuns = 3

// prepareOverlap checks that every rank can run the load and prepares it.
// It returns the load, or nil and why not (the header's note); the error
// is a failed collective.
func (r *run) prepareOverlap() (backend.Overlapper, string, error) {
	if !r.cfg.Bench || r.cfg.Overlap <= 0 {
		return nil, "", nil
	}
	reason := ""
	ov, ok := r.b.(backend.Overlapper)
	if !ok {
		reason = fmt.Sprintf("the %s backend has no compute load", r.b.Name())
	} else if reason = ov.OverlapReason(); reason == "" {
		if err := ov.PrepareOverlap(r.cfg.Overlap); err != nil {
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
// under the load into res.OverlapUS, and the load alone and beside them
// into res.LoadAloneUS and res.LoadWithUS. It reports whether all went
// well; failures are recorded in res.
func (r *run) timeOverlap(s *caseState, rep callUnit, res *rankResult) bool {
	fail := func(format string, args ...any) bool {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "error", Detail: fmt.Sprintf(format, args...)})
		return false
	}
	ov := r.ovl
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
		res.LoadAloneUS = append(res.LoadAloneUS, t)
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
		res.LoadWithUS = append(res.LoadWithUS, t)
		res.OverlapUS = append(res.OverlapUS, c/float64(r.cfg.Iters))
	}
	return true
}

// loadUnits is how many units of load, each taking unitUS alone, last
// about repUS: at least 1, at most kernels.ComputeMaxUnits.
func loadUnits(repUS, unitUS float64) int {
	if unitUS <= 0 || repUS <= 0 || math.IsNaN(repUS/unitUS) {
		return 1
	}
	return int(min(max(math.Round(repUS/unitUS), 1), kernels.ComputeMaxUnits))
}

// aggMedian combines each repetition's values of every rank (get) with
// cfg.Agg, as a case's time is, and returns the median over repetitions;
// 0 when some rank has none.
func aggMedian(rs []rankResult, cfg *Config, get func(*rankResult) []float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	agg := cfg.Agg
	if agg == "" {
		agg = report.DefaultAgg
	}
	reps := len(get(&rs[0]))
	for i := range rs {
		reps = min(reps, len(get(&rs[i])))
	}
	if reps == 0 {
		return 0
	}
	per := make([]float64, reps)
	xs := make([]float64, len(rs))
	for k := range per {
		for j := range rs {
			xs[j] = get(&rs[j])[k]
		}
		per[k] = agg.Of(xs)
	}
	return median(per)
}

// setOverlapTimes puts the times under --overlap into a timed bench case:
// the calls' time under load, the load's time alone and beside them, and
// its slowdown (beside / alone).
func setOverlapTimes(out *report.Case, rs []rankResult, cfg *Config) {
	if !cfg.Bench || cfg.Overlap <= 0 || out.TimeUS <= 0 {
		return
	}
	t := aggMedian(rs, cfg, func(r *rankResult) []float64 { return r.OverlapUS })
	alone := aggMedian(rs, cfg, func(r *rankResult) []float64 { return r.LoadAloneUS })
	with := aggMedian(rs, cfg, func(r *rankResult) []float64 { return r.LoadWithUS })
	if t <= 0 || alone <= 0 || with <= 0 {
		return
	}
	out.OverlapBlocks = cfg.Overlap
	out.OverlapTimeUS = t
	out.LoadAloneUS = alone
	out.LoadWithAllreduceUS = with
	out.LoadSlowdown = with / alone
}
