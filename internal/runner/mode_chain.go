package runner

import (
	"fmt"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
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

// chainMode is bench --pdl-chain.
type chainMode struct{ noSteps }

func newChainMode(cfg *Config) timingMode {
	if !cfg.Bench || !cfg.PDLChain {
		return nil
	}
	return chainMode{}
}

// chainFlags are bench's --pdl-chain, into Config.PDLChain.
var chainFlags = []ModeFlag{{
	Name: "pdl-chain", Bool: true,
	Help:  "bench: also time every out-of-place registered case's calls with each allreduce launched with programmatic dependent launch after the previous one (sm_90), and report the gain",
	Bench: "times chained calls",
	Excludes: []ModeExclusion{{"pdl",
		"--pdl puts a producer kernel before every call, --pdl-chain chains the calls themselves"}},
	Set: setBool(func(cfg *Config) *bool { return &cfg.PDLChain }),
}}

// chainName is the mode's word, and its series of chained times.
const (
	chainName   = "pdl-chain"
	chainSeries = "chained"
)

func (chainMode) name() string { return chainName }

// prepareRun says in the header that calls are also timed chained.
func (chainMode) prepareRun(_ *run, h *report.Header) error {
	h.PDLChain = true
	return nil
}

// agreeCase decides whether case s's calls are chained: every rank chains
// or none does, decided where every rank still takes part in each
// collective (a chained launch waits for its peers like any other).
func (chainMode) agreeCase(r *run, s *caseState) (string, error) {
	note, err := comm.AgreeReason(r.c, r.chainSkipReason(s))
	if err != nil {
		return "", fmt.Errorf("agree on chaining: %w", err)
	}
	return note, nil
}

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

// time times cfg.Reps repetitions of cfg.Iters calls, each allreduce
// launched with PDL (plain, or one graph replay per repetition); a case
// that cannot be chained gets its note instead.
func (chainMode) time(r *run, s *caseState, t *timedCalls, res *rankResult) bool {
	if note := s.modeNotes[chainName]; note != "" {
		res.noteMode(chainName, note)
		return true
	}
	l := s.launch
	l.PDL = true
	per, ok := r.timeAgain(s, t.way, func() error { return r.enqueueCall(s, &l, 0) }, "chained calls", res)
	res.addSeries(chainName, chainSeries, per...)
	return ok
}

// merge puts the chained time (each repetition combined across ranks as
// the case's time is, then the median) and the gain, or why the case was
// not chained, into a timed case.
func (chainMode) merge(out *report.Case, rs []rankResult, cfg *Config) {
	if out.TimeUS <= 0 || len(rs) == 0 {
		return
	}
	if note := rs[0].Modes[chainName].Note; note != "" {
		out.ChainNote = note
		return
	}
	if t := aggMedian(rs, cfg, series(chainName, chainSeries)); t > 0 {
		out.ChainTimeUS = t
		out.ChainGainUS = out.TimeUS - t
	}
}
