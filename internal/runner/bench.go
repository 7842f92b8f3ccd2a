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
