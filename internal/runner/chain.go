package runner

import (
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/report"
)

// bench --pdl-chain: the case's timed calls again, each allreduce launched
// with programmatic dependent launch after the previous one, as a model
// runs consecutive layers' allreduces when nothing else lies between them
// on the stream. Every custom kernel triggers its dependents right after
// its griddepcontrol.wait (kernels/device/sync.cuh), so call k+1's launch and
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
	if s.chainNote != "" {
		res.ChainNote = s.chainNote
		return true
	}
	l := s.launch
	l.PDL = true
	per, ok := r.timeAgain(s, func() error { return r.enqueueCall(s, &l, 0) }, "chained calls", res)
	res.ChainUS = append(res.ChainUS, per...)
	return ok
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
