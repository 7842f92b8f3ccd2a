package runner

import (
	"fmt"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/report"
)

// bench --pdl-chain: the case's timed calls again, each allreduce launched
// with programmatic dependent launch after the previous one, as a model
// runs consecutive layers' allreduces when nothing else lies between them
// on the stream. Every custom kernel triggers its dependents right after
// its griddepcontrol.wait (kernels/sync.cuh), so call k+1's launch and
// block scheduling overlap call k's run; its blocks then wait until call k
// has finished. What it saves is launch latency: the chained time beside
// the normal one.

// chainSkipReason says why case s's calls cannot be chained, or "".
func (r *run) chainSkipReason(s *caseState) string {
	switch {
	case !s.c.Mode.Registered:
		// A staged call copies its input in before the kernel: the
		// kernels are not adjacent on the stream, so PDL has nothing
		// to overlap.
		return "staged modes copy the input in between calls"
	case s.c.Mode.InPlace:
		return "in place, each call reduces the previous result: only out-of-place calls are chained"
	}
	if sh, ok := r.b.(backend.Sharer); ok && sh.RanksPerGPU() > 1 {
		// A successor's blocks, resident early, would take the room
		// the co-residency cap keeps for the other ranks' grids.
		return "ranks share GPUs"
	}
	return r.pdlSkipReason(s.launchV)
}

// timeChained times cfg.Reps repetitions of cfg.Iters calls, each
// allreduce launched with PDL (plain, or one graph replay per
// repetition), into res.ChainUS; a case that cannot be chained gets
// res.ChainNote instead. It reports whether all went well; failures are
// recorded in res.
func (r *run) timeChained(s *caseState, res *rankResult) bool {
	fail := func(format string, args ...any) bool {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "error", Detail: fmt.Sprintf(format, args...)})
		return false
	}
	if s.chainNote != "" {
		res.ChainNote = s.chainNote
		return true
	}
	l := s.launch
	l.PDL = true
	one := func() error { return r.enqueueCall(s, &l, 0) }
	var g backend.Graph
	if s.c.Mode.Graph {
		var err error
		if g, err = r.captureCalls(s, one); err != nil {
			return fail("capture %d chained calls: %v", r.cfg.Iters, err)
		}
		defer g.Destroy()
	}
	spans, err := r.enqueueReps(s, g, one)
	defer destroySpans(spans)
	if err != nil {
		_ = r.sync(s.c, "the chained calls", s.launch.Blocks)
		return fail("chained calls: %v", err)
	}
	if err := r.sync(s.c, "the chained calls", s.launch.Blocks); err != nil {
		res.Fatal = fatalText(err)
		return fail("chained calls: %v", err)
	}
	per, err := r.perCallUS(spans)
	if err != nil {
		return fail("timing chained calls: %v", err)
	}
	res.ChainUS = append(res.ChainUS, per...)
	return true
}

// setChainTimes puts the chained time (each repetition combined across
// ranks as the case's time is, then the median) and the gain, or why the
// case was not chained, into a timed --pdl-chain bench case.
func setChainTimes(out *report.Case, rs []rankResult, cfg *Config) {
	if !cfg.PDLChain || out.TimeUS <= 0 || len(rs) == 0 {
		return
	}
	if rs[0].ChainNote != "" {
		out.ChainNote = rs[0].ChainNote
		return
	}
	if t := aggMedian(rs, cfg, func(res *rankResult) []float64 { return res.ChainUS }); t > 0 {
		out.ChainTimeUS = t
		out.ChainGainUS = out.TimeUS - t
	}
}
