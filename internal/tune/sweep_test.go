package tune

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

func plan(t *testing.T, names ...string) *Plan {
	t.Helper()
	var vs []*kernels.Variant
	for _, n := range names {
		vs = append(vs, variant(t, n))
	}
	o, err := ParseOverrides(builtins, "2,4", "256", []string{"lanes=1,2", "slot-bytes=1K", "slots=4"})
	require.NoError(t, err)
	return NewPlan(PlanOptions{Ranks: 2, DTypes: []reference.DType{reference.BF16}, Sizes: []int64{4 << 10, 64 << 10},
		Launches: []string{"graph"}, Variants: vs, NCCL: variant(t, "nccl"), Overrides: o})
}

func TestPlanJobs(t *testing.T) {
	p := plan(t, "oneshot", "ring")
	require.Len(t, p.Table.Buckets, 2)
	b := p.Table.Buckets[1]
	require.Equal(t, int64(4<<10), b.MinBytes)
	require.Equal(t, "nccl/bf16/sum/64KiB/oop-reg-graph/np2", b.NCCL.Case)
	// One nccl job first in each bucket, then every candidate once.
	jobs := 0
	for _, j := range p.Jobs {
		if j.Bucket == 1 {
			if jobs == 0 {
				require.Equal(t, -1, j.Cand)
			}
			jobs++
		}
	}
	require.Equal(t, 1+len(b.Candidates), jobs)
	for _, c := range b.Candidates {
		require.Equal(t, "oneshot/bf16/sum/64KiB/oop-reg-graph/np2"[len("oneshot"):], c.Case[len(c.Variant):])
	}
}

// fakeWorld plays rank 0 of a sweep: every job takes a second of a fake
// clock and passes with a time that favours more blocks.
type fakeWorld struct {
	now   time.Time
	ran   []Job
	cases func(Job) report.Case
}

func (f *fakeWorld) hooks(budget time.Duration) Hooks {
	return Hooks{
		Rank0:  true,
		Agree:  func(d Decision) (Decision, error) { return d, nil },
		Budget: budget,
		Now:    func() time.Time { return f.now },
		Measure: func(j Job) (report.Case, string) {
			f.now = f.now.Add(time.Second)
			f.ran = append(f.ran, j)
			if f.cases != nil {
				return f.cases(j), ""
			}
			return report.Case{Verdict: report.Pass, TimeUS: 100 / float64(j.Launch.Blocks+1)}, ""
		},
	}
}

func TestSweepFillsTheTable(t *testing.T) {
	p := plan(t, "oneshot")
	f := &fakeWorld{}
	stop, err := p.Run(f.hooks(0))
	require.NoError(t, err)
	require.Empty(t, stop)
	require.Len(t, f.ran, len(p.Jobs))
	for _, b := range p.Table.Buckets {
		require.True(t, b.Finished, b.Name())
		require.NotNil(t, b.Best)
		require.Equal(t, "oneshot", b.Best.Variant)
		require.True(t, b.NCCL.Timed())
	}
	require.Empty(t, p.Table.Unfinished)
	// 64 KiB at 512 threads needs 8 blocks: the registry default (36, as
	// an upper bound) gives the most blocks, so it wins.
	require.Equal(t, "8x512", p.Table.Buckets[1].Best.Launch.String())
	require.True(t, p.Table.Buckets[1].Best.Default)
}

func TestBudgetStopsStartingCandidates(t *testing.T) {
	p := plan(t, "oneshot")
	f := &fakeWorld{}
	// 4 KiB: nccl, the default 1x512 and 1x256 (2 and 4 blocks give 1).
	require.Len(t, p.Table.Buckets[0].Candidates, 2)
	stop, err := p.Run(f.hooks(1500 * time.Millisecond))
	require.NoError(t, err)
	require.Equal(t, "the budget of 1.5s ran out", stop)
	require.Len(t, f.ran, 2, "jobs start at 0s and 1s")
	require.False(t, p.Table.Buckets[0].Finished)
	require.Equal(t, []string{"bf16 graph 4KiB: the budget of 1.5s ran out", "bf16 graph 64KiB: the budget of 1.5s ran out"}, p.Table.Unfinished)

	p = plan(t, "oneshot")
	f = &fakeWorld{}
	_, err = p.Run(f.hooks(2500 * time.Millisecond))
	require.NoError(t, err)
	require.True(t, p.Table.Buckets[0].Finished)
	require.Equal(t, []string{"bf16 graph 64KiB: the budget of 2.5s ran out"}, p.Table.Unfinished)
}

// A variant the runner skipped is not run again in that bucket; a wrong
// candidate is counted and never chosen.
func TestSkipsAndFailures(t *testing.T) {
	p := plan(t, "oneshot", "ring")
	f := &fakeWorld{cases: func(j Job) report.Case {
		switch {
		case j.Case.Variant.Name == "ring":
			return report.Case{Verdict: report.Skipped, Reason: "no ring here"}
		case j.Launch.Blocks == 4:
			return report.Case{Verdict: report.Fail, Reason: "rank 1 mismatch", TimeUS: 0.1}
		}
		return report.Case{Verdict: report.Pass, TimeUS: 10}
	}}
	_, err := p.Run(f.hooks(0))
	require.NoError(t, err)
	rings := 0
	for _, j := range f.ran {
		if j.Case.Variant.Name == "ring" {
			rings++
		}
	}
	require.Equal(t, 2, rings, "one ring job per bucket, the rest skipped")
	b := p.Table.Buckets[1]
	for _, r := range b.Candidates {
		if r.Variant == "ring" {
			require.Equal(t, report.Skipped, r.Verdict)
			require.Equal(t, "no ring here", r.Reason)
		}
	}
	require.Equal(t, 1, p.Table.Failed)
	require.NotEqual(t, 4, b.Best.Blocks)
}
