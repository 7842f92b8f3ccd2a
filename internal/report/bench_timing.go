package report

import (
	"fmt"
	"math"
	"slices"
)

// Agg is how the ranks' times of one repetition become the case's time.
// Every call of an allreduce ends on all ranks at about the same moment (the
// barriers couple them), so the ranks' times differ by launch skew and by
// when each rank's host noticed; the max is the time the slowest rank, and so
// the model that waits for it, sees. nccl-tests averages by default (its -a
// flag); artest takes the max unless --agg says otherwise.
type Agg string

const (
	AggMax Agg = "max"
	AggAvg Agg = "avg"
	AggMin Agg = "min"
)

// DefaultAgg is the aggregation when none is given.
const DefaultAgg = AggMax

// ParseAgg reads --agg.
func ParseAgg(s string) (Agg, error) {
	switch a := Agg(s); a {
	case AggMax, AggAvg, AggMin:
		return a, nil
	case "":
		return DefaultAgg, nil
	}
	return "", fmt.Errorf("unknown aggregation %q (valid: max, avg, min)", s)
}

// Of combines xs (one value per rank); 0 for none.
func (a Agg) Of(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	switch a {
	case AggAvg:
		sum := 0.0
		for _, x := range xs {
			sum += x
		}
		return sum / float64(len(xs))
	case AggMin:
		return slices.Min(xs)
	}
	return slices.Max(xs)
}

// Timing is the distribution behind a benchmarked case's time. Times are
// per call in microseconds. RepUS has one value per repetition (Iters calls
// back to back, divided by Iters), each aggregated across ranks with Agg;
// P50US is the case's TimeUS. CallUS, when present, is one more repetition
// of plain launches with an event between every two calls, so single slow
// calls show (its times include one event record per call).
type Timing struct {
	Agg    string    `json:"agg"`
	Reps   int       `json:"reps"`
	Iters  int       `json:"iters"`
	RepUS  []float64 `json:"rep_us"`
	P50US  float64   `json:"p50_us"`
	P99US  float64   `json:"p99_us"`
	MinUS  float64   `json:"min_us"`
	MaxUS  float64   `json:"max_us"`
	Spread float64   `json:"spread"`  // (max - min) / p50 of RepUS
	RankUS []float64 `json:"rank_us"` // each rank's own median per-call time

	CallUS    []float64 `json:"call_us,omitempty"`
	CallP50US float64   `json:"call_p50_us,omitempty"`
	CallP99US float64   `json:"call_p99_us,omitempty"`
}

// BuildTiming aggregates per-rank measurements: reps[rank][i] is rank's
// per-call time in repetition i, calls[rank][j] its time of single call j
// (nil when not sampled). Ranks are cut to the shortest list so every
// aggregated value combines all ranks. It returns nil when there is nothing
// to aggregate. Values are rounded to 1 ns (spread to 4 decimals), as
// WriteJSON rounds times.
func BuildTiming(agg Agg, iters int, reps, calls [][]float64) *Timing {
	repAgg := aggregateColumns(agg, reps)
	if len(repAgg) == 0 {
		return nil
	}
	t := &Timing{Agg: string(agg), Reps: len(repAgg), Iters: iters, RepUS: repAgg}
	t.P50US = Percentile(repAgg, 50)
	t.P99US = Percentile(repAgg, 99)
	t.MinUS = slices.Min(repAgg)
	t.MaxUS = slices.Max(repAgg)
	if t.P50US > 0 {
		t.Spread = roundDecimals((t.MaxUS-t.MinUS)/t.P50US, 4)
	}
	for _, r := range reps {
		t.RankUS = append(t.RankUS, roundDecimals(Percentile(r, 50), 3))
	}
	if callAgg := aggregateColumns(agg, calls); len(callAgg) > 0 {
		t.CallUS = callAgg
		t.CallP50US = roundDecimals(Percentile(callAgg, 50), 3)
		t.CallP99US = roundDecimals(Percentile(callAgg, 99), 3)
	}
	for _, p := range []*float64{&t.P50US, &t.P99US, &t.MinUS, &t.MaxUS} {
		*p = roundDecimals(*p, 3)
	}
	return t
}

// aggregateColumns combines column i of every row with agg, over the
// columns all rows have; values are rounded to 1 ns.
func aggregateColumns(agg Agg, rows [][]float64) []float64 {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows[0])
	for _, r := range rows {
		n = min(n, len(r))
	}
	out := make([]float64, n)
	col := make([]float64, len(rows))
	for i := range out {
		for r := range rows {
			col[r] = rows[r][i]
		}
		out[i] = roundDecimals(agg.Of(col), 3)
	}
	if n == 0 {
		return nil
	}
	return out
}

// Percentile is the p-th percentile of xs by linear interpolation between
// the closest ranks (numpy's default), so the 50th is the median as the
// runner computes it: the mean of the two middle values of an even count.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	h := (float64(len(s)) - 1) * p / 100
	lo := math.Floor(h)
	hi := math.Ceil(h)
	if lo == hi {
		return s[int(lo)]
	}
	return s[int(lo)] + (h-lo)*(s[int(hi)]-s[int(lo)])
}
