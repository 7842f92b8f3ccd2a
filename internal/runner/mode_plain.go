package runner

import (
	"fmt"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/report"
)

// plainMode is the timing every run has: after the warm-up, cfg.Reps
// repetitions of cfg.Iters calls, each between two events, and in bench
// runs one more repetition of plain launches with an event between every
// two calls (sampleCalls). Its calls are plain ones: a staged input
// copied into the registered buffer, then the allreduce.
type plainMode struct{ noSteps }

func newPlainMode(*Config) timingMode { return plainMode{} }

func (plainMode) name() string { return "plain" }

// prepareRun measures, in bench runs, the links' copy bandwidth that
// bounds the bus bandwidth the tables print (peercopy.go).
func (plainMode) prepareRun(r *run, h *report.Header) error {
	if !r.cfg.Bench {
		return nil
	}
	return r.measurePeerCopy(h)
}

// time times the case's own calls into res.TimeUS, res.RepUS and (bench)
// res.CallUS.
func (plainMode) time(r *run, s *caseState, t *timedCalls, res *rankResult) bool {
	fail := func(format string, args ...any) bool {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "error", Detail: fmt.Sprintf(format, args...)})
		return false
	}
	var err error
	for i := 0; i < r.cfg.Warmup && err == nil; i++ {
		err = t.first.enqueue()
	}
	var spans []repSpan
	if err == nil {
		spans, err = r.enqueueReps(t.rep)
	}
	defer destroySpans(spans)
	var callEvents []backend.Event
	if r.cfg.Bench && err == nil {
		callEvents, err = t.way.sample(r, t.one)
	}
	defer destroyEvents(callEvents)
	if err != nil {
		fail("timed calls: %v", err)
		_ = r.sync(s.c, "the timed calls", s.launch.Blocks)
		return false
	}
	if err := r.sync(s.c, "the timed calls", s.launch.Blocks); err != nil {
		res.Fatal = fatalText(err)
		return fail("timed calls: %v", err)
	}
	per, err := r.perCallUS(spans)
	if err != nil {
		return fail("timing: %v", err)
	}
	res.TimeUS = median(per)
	res.RepUS = per
	if res.CallUS, err = callTimes(callEvents); err != nil {
		return fail("timing single calls: %v", err)
	}
	return true
}

// merge makes the case's time from every rank's repetitions
// (aggregateTimes), with the distribution in bench runs.
func (plainMode) merge(out *report.Case, rs []rankResult, cfg *Config) {
	out.TimeUS, out.Timing = aggregateTimes(rs, cfg)
}

func (plainMode) prepareCalls(*run, *caseState) error { return nil }

// src is the staged input, or nothing when the input is registered.
func (plainMode) src(s *caseState) backend.Ptr {
	if s.c.Mode.Registered {
		return 0
	}
	return s.inOf(s.src)
}

// enqueue enqueues one allreduce call as a user makes it: a staged input
// is copied into the registered buffer first.
func (plainMode) enqueue(r *run, s *caseState, l *backend.Launch, src backend.Ptr) error {
	if src != 0 && l.Variant.StagesOwnInput && !s.c.Mode.Registered {
		l.Src = src // the variant copies its staged input itself
	} else if src != 0 {
		if err := r.b.Copy(s.in, src, s.inBytes); err != nil {
			return fmt.Errorf("stage input: %w", err)
		}
	}
	leave := r.dog.enter(phaseCall, callName(l.Variant))
	err := r.b.Allreduce(l)
	leave()
	if err != nil {
		return fmt.Errorf("launch %s: %w", l.Variant.Name, err)
	}
	r.dog.launched(1)
	r.dog.setBlocks(l.Blocks)
	s.calls++
	return r.concurrentCall(s, l)
}
