package tune

import (
	"fmt"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// PlanOptions is what to sweep.
type PlanOptions struct {
	Ranks    int
	DTypes   []reference.DType
	Sizes    []int64  // ascending; each is a bucket's upper bound
	Launches []string // "graph", "plain"
	Variants []*kernels.Variant
	// NCCL, when set, is timed per bucket as the baseline (the nccl
	// variant).
	NCCL      *kernels.Variant
	Overrides Overrides
	// Input is --input: the kind of every timed case's inputs.
	Input reference.InputKind
}

// Job is one case to run: a candidate, or the bucket's NCCL baseline
// (Cand < 0).
type Job struct {
	Bucket int
	Cand   int
	Case   cases.Case
	Launch Launch
}

// Plan is the sweep: the table to fill (on rank 0) and the jobs, the same
// on every rank.
type Plan struct {
	Table *Table
	Jobs  []Job
}

// Modes of the timed cases: out of place on a registered input, aligned,
// as bench times them and as inference frameworks call.
func mode(launch string) cases.Mode { return cases.Mode{Registered: true, Graph: launch == "graph"} }

// NewPlan enumerates every bucket's candidates. A variant that cannot run
// a bucket at all (dtype, world size) is left out of it.
func NewPlan(o PlanOptions) *Plan {
	p := &Plan{Table: &Table{Format: FormatVersion}}
	for _, d := range o.DTypes {
		for _, launch := range o.Launches {
			var prev int64
			for _, size := range o.Sizes {
				if size%int64(d.Size()) != 0 {
					continue
				}
				bi := len(p.Table.Buckets)
				b := Bucket{Ranks: o.Ranks, DType: d.String(), Launch: launch, MinBytes: prev, Bytes: size}
				prev = size
				c := cases.Case{DType: d, Op: reference.Sum, Bytes: size, Mode: mode(launch), Ranks: o.Ranks, Input: o.Input}
				if o.NCCL != nil {
					nc := c
					nc.Variant = o.NCCL
					b.NCCL = &Result{Variant: o.NCCL.Name, Case: nc.ID()}
					p.Jobs = append(p.Jobs, Job{Bucket: bi, Cand: -1, Case: nc})
				}
				for _, v := range o.Variants {
					vc := c
					vc.Variant = v
					if cases.SkipReason(v, vc) != "" {
						continue
					}
					e := Enumerate(v, SpaceFor(v, o.Overrides), o.Ranks, c.Count(), int64(d.Size()))
					b.Points += e.Points
					b.Duplicates += e.Duplicates
					b.TooMuchShared += e.TooMuchShared
					for _, cand := range e.Candidates {
						p.Jobs = append(p.Jobs, Job{Bucket: bi, Cand: len(b.Candidates), Case: vc, Launch: cand.Launch})
						b.Candidates = append(b.Candidates, Result{Variant: v.Name, Launch: cand.Launch, Default: cand.Default, Case: vc.ID()})
					}
				}
				p.Table.Buckets = append(p.Table.Buckets, b)
			}
		}
	}
	return p
}

// Decision is rank 0's word before each job, so that every rank runs, skips
// or stops together.
type Decision byte

const (
	Run  Decision = iota
	Skip          // the variant was skipped earlier in this bucket (same reason)
	Stop          // the budget ran out, or the backend broke
)

// Hooks connect a sweep to the world.
type Hooks struct {
	// Rank0 is whether this rank keeps the table.
	Rank0 bool
	// Agree broadcasts rank 0's decision; every rank returns it.
	Agree func(Decision) (Decision, error)
	// Measure runs one job on every rank; on rank 0 it returns the merged
	// case and, when the backend broke, why (the sweep stops).
	Measure func(Job) (report.Case, string)
	// Budget: no job starts after it ran out; 0: none.
	Budget time.Duration
	Now    func() time.Time
	// BucketDone, on rank 0, is told of every bucket as its last job ends.
	BucketDone func(*Bucket)
}

// Run runs the plan's jobs in order. On rank 0 the table holds every
// result, and the buckets that were finished say so; the returned text
// says why the sweep stopped early ("" when it did not).
func (p *Plan) Run(h Hooks) (string, error) {
	if h.Now == nil {
		h.Now = time.Now
	}
	start := h.Now()
	last := map[int]int{} // bucket -> index of its last job
	for j, job := range p.Jobs {
		last[job.Bucket] = j
	}
	for i := range p.Table.Buckets {
		if _, ok := last[i]; !ok {
			p.Table.Buckets[i].Finished = true // nothing can run there
		}
	}
	skipped := map[[2]string]string{} // (bucket, variant) -> reason
	stop := ""
	for j, job := range p.Jobs {
		b := &p.Table.Buckets[job.Bucket]
		key := [2]string{fmt.Sprint(job.Bucket), job.Case.Variant.Name}
		d := Run
		if h.Rank0 {
			switch {
			case stop != "":
				d = Stop
			case h.Budget > 0 && h.Now().Sub(start) >= h.Budget:
				stop = fmt.Sprintf("the budget of %s ran out", h.Budget)
				d = Stop
			case skipped[key] != "":
				d = Skip
			}
		}
		d, err := h.Agree(d)
		if err != nil {
			return stop, fmt.Errorf("agree on the next candidate: %w", err)
		}
		if d == Stop {
			if stop == "" {
				stop = "rank 0 stopped the sweep"
			}
			break
		}
		if d == Run {
			c, fatal := h.Measure(job)
			if h.Rank0 {
				r := b.result(job)
				r.Verdict, r.Reason, r.TimeUS, r.BusBW = c.Verdict, c.Reason, c.TimeUS, c.BusBW
				if c.Verdict == report.Skipped {
					skipped[key] = c.Reason
				}
				if fatal != "" {
					stop = "the run stopped: " + fatal
				}
			}
		} else if h.Rank0 {
			r := b.result(job)
			r.Verdict, r.Reason = report.Skipped, skipped[key]
		}
		if j == last[job.Bucket] {
			b.Finished = true
			if h.Rank0 && h.BucketDone != nil {
				b.Choose()
				h.BucketDone(b)
			}
		}
	}
	if h.Rank0 {
		p.Table.Provenance.Seconds = h.Now().Sub(start).Seconds()
		p.Table.Finish(stop)
	}
	return stop, nil
}

func (b *Bucket) result(job Job) *Result {
	if job.Cand < 0 {
		return b.NCCL
	}
	return &b.Candidates[job.Cand]
}
