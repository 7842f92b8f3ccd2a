package runner

import (
	"fmt"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/report"
)

// sampleCalls enqueues one more repetition of cfg.Iters plain calls with an
// event before the first and after every call, so that single slow calls
// show in the benchmark's distribution (a repetition's mean hides them).
// Each event record adds its own small cost to the call it follows.
func (r *run) sampleCalls(one func() error) ([]backend.Event, error) {
	evs := make([]backend.Event, 0, r.cfg.Iters+1)
	for i := 0; i <= r.cfg.Iters; i++ {
		ev, err := r.b.Record()
		if err != nil {
			return evs, fmt.Errorf("record event: %w", err)
		}
		evs = append(evs, ev)
		if i == r.cfg.Iters {
			break
		}
		if err := one(); err != nil {
			return evs, err
		}
	}
	return evs, nil
}

// callTimes turns completed events into the microseconds between
// neighbours; nil for fewer than two events.
func callTimes(evs []backend.Event) ([]float64, error) {
	if len(evs) < 2 {
		return nil, nil
	}
	out := make([]float64, 0, len(evs)-1)
	for i := 1; i < len(evs); i++ {
		d, err := evs[i].Since(evs[i-1])
		if err != nil {
			return nil, err
		}
		out = append(out, float64(d.Nanoseconds())/1e3)
	}
	return out, nil
}

func destroyEvents(evs []backend.Event) {
	for _, ev := range evs {
		_ = ev.Destroy()
	}
}

// aggregateTimes is the case's time from every rank's measurements: per
// repetition, the ranks' per-call times combined with cfg.Agg, then the
// median over repetitions. Where a rank has no repetitions (it failed
// before timing) the ranks that timed are combined by their medians. The
// distribution is kept (returned) only for benchmark runs.
func aggregateTimes(rs []rankResult, cfg *Config) (float64, *report.Timing) {
	agg := cfg.Agg
	if agg == "" {
		agg = report.DefaultAgg
	}
	reps := make([][]float64, 0, len(rs))
	var calls [][]float64
	var medians []float64
	for _, res := range rs {
		reps = append(reps, res.RepUS)
		if len(res.CallUS) > 0 {
			calls = append(calls, res.CallUS)
		}
		if res.TimeUS > 0 {
			medians = append(medians, res.TimeUS)
		}
	}
	if len(calls) != len(rs) {
		calls = nil // a partial sample would combine fewer ranks than the rest
	}
	t := report.BuildTiming(agg, cfg.Iters, reps, calls)
	if t == nil {
		return agg.Of(medians), nil
	}
	if !cfg.Bench {
		return t.P50US, nil
	}
	return t.P50US, t
}

// repSpan is one timed repetition: events before and after it.
type repSpan struct{ a, b backend.Event }

// enqueueReps enqueues cfg.Reps repetitions, each the unit rep (cfg.Iters
// calls) between two events. On an error it returns the repetitions
// enqueued before it; the caller destroys them (destroySpans) either way.
func (r *run) enqueueReps(rep callUnit) ([]repSpan, error) {
	var spans []repSpan
	for i := 0; i < r.cfg.Reps; i++ {
		var sp repSpan
		var err error
		if sp.a, err = r.b.Record(); err != nil {
			return spans, err
		}
		err = rep.enqueue()
		if err == nil {
			sp.b, err = r.b.Record()
		}
		if err != nil {
			_ = sp.a.Destroy()
			return spans, err
		}
		spans = append(spans, sp)
	}
	return spans, nil
}

func destroySpans(spans []repSpan) {
	for _, sp := range spans {
		_ = sp.a.Destroy()
		_ = sp.b.Destroy()
	}
}

// perCallUS is each completed repetition's time per call in microseconds.
func (r *run) perCallUS(spans []repSpan) ([]float64, error) {
	out := make([]float64, 0, len(spans))
	for _, sp := range spans {
		d, err := sp.b.Since(sp.a)
		if err != nil {
			return nil, err
		}
		out = append(out, float64(d.Nanoseconds())/1e3/float64(r.cfg.Iters))
	}
	return out, nil
}

// timeAgain times cfg.Reps repetitions of cfg.Iters calls of one (made
// the case's way: in graph modes captured once and replayed once per
// repetition) after a case's own timing, for a second figure of the same
// calls launched another way; what names them in errors. It returns each
// repetition's time per call and whether all went well; failures are
// recorded in res (a failed sync also sets res.Fatal).
func (r *run) timeAgain(s *caseState, way callWay, one func() error, what string, res *rankResult) ([]float64, bool) {
	fail := func(format string, args ...any) ([]float64, bool) {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "error", Detail: fmt.Sprintf(format, args...)})
		return nil, false
	}
	rep, err := way.unit(r, s, r.cfg.Iters, r.repeat(one))
	if err != nil {
		return fail("capture %d %s: %v", r.cfg.Iters, what, err)
	}
	defer rep.release()
	spans, err := r.enqueueReps(rep)
	defer destroySpans(spans)
	if err != nil {
		_ = r.sync(s.c, "the "+what, s.launch.Blocks)
		return fail("%s: %v", what, err)
	}
	if err := r.sync(s.c, "the "+what, s.launch.Blocks); err != nil {
		res.Fatal = fatalText(err)
		return fail("%s: %v", what, err)
	}
	per, err := r.perCallUS(spans)
	if err != nil {
		return fail("timing %s: %v", what, err)
	}
	return per, true
}
