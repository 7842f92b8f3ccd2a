package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/runner"
	"github.com/artest/artest/internal/tune"
)

// planOptions is the sweep for a world of ranks ranks.
func (o *Options) planOptions(ranks int) tune.PlanOptions {
	return tune.PlanOptions{
		Ranks: ranks, DTypes: o.sel.DTypes, Sizes: o.sel.Sizes, Launches: o.Tune.launches,
		Variants: o.Tune.variants, NCCL: o.Tune.nccl, Overrides: o.Tune.over, Input: o.input,
	}
}

// listTune prints the plan: per bucket, the candidates and what the
// deduplication saved, so a budget can be chosen before a GPU is held.
func listTune(e Env, o *Options) int {
	if e.Comm.Rank() != 0 {
		return exitcode.OK
	}
	p := tune.NewPlan(o.planOptions(e.Comm.Size()))
	fmt.Fprintf(e.Stdout, "# artest tune plan: %d ranks, %d jobs (candidates and one nccl per bucket)\n", e.Comm.Size(), len(p.Jobs))
	for _, b := range p.Table.Buckets {
		per := map[string]int{}
		var order []string
		for _, c := range b.Candidates {
			if per[c.Variant] == 0 {
				order = append(order, c.Variant)
			}
			per[c.Variant]++
		}
		var parts []string
		for _, v := range order {
			parts = append(parts, fmt.Sprintf("%s %d", v, per[v]))
		}
		fmt.Fprintf(e.Stdout, "%-22s %4d candidates of %5d points (%d duplicates, %d over shared memory): %s\n",
			b.Name(), len(b.Candidates), b.Points, b.Duplicates, b.TooMuchShared, strings.Join(parts, ", "))
	}
	return exitcode.OK
}

// provenance is the tuning table's record of this run.
func provenance(h report.Header, o *Options) tune.Provenance {
	return tune.Provenance{
		Date: h.Start, Version: h.Version, Revision: h.GitRevision, Hosts: h.Hosts, GPUs: h.Devices,
		Driver: h.Versions["cuda_driver"], NCCL: h.Versions["nccl"], Backend: h.Backend, Ranks: h.Ranks,
		Command: append([]string{"mpirun", "-np", fmt.Sprint(h.Ranks)}, h.Command...),
		Warmup:  o.Warmup, Iters: o.Iters, Reps: o.Reps, Agg: string(o.agg), BudgetS: o.Tune.Budget,
	}
}

// runTune sweeps the plan through the runner, one case per candidate, and
// has rank 0 write the table. The exit code: 1 when a candidate computed
// wrong results (it is disqualified; the table is still written), 4 when a
// file could not be written, else 0 (unfinished buckets are reported).
func runTune(e Env, o *Options, c comm.Comm, be backend.Backend, w *backend.World, cfg *runner.Config) int {
	rank0 := c.Rank() == 0
	// One table, one backend's times: a merged table measured elsewhere
	// would be written out under this run's backend label.
	for i, m := range o.Tune.merge {
		if mb := m.Provenance.Backend; mb != "" && mb != be.Name() {
			if rank0 {
				fmt.Fprintf(e.Stderr, "artest: --merge %s: its table was measured on the %s backend and this tune runs on %s: a table holds one backend's times (merge it in a tune on %s, or leave it out)\n",
					o.Tune.Merge[i], mb, be.Name(), mb)
			}
			return exitcode.Usage
		}
	}
	plan := tune.NewPlan(o.planOptions(c.Size()))
	plan.Table.Provenance = provenance(cfg.Header, o)
	h := tune.Hooks{
		Rank0:  rank0,
		Budget: time.Duration(o.Tune.Budget * float64(time.Second)),
		Agree: func(d tune.Decision) (tune.Decision, error) {
			buf := []byte{byte(d)}
			err := c.Bcast(buf, 0)
			return tune.Decision(buf[0]), err
		},
		Measure: func(j tune.Job) (report.Case, string) {
			jc := *cfg
			jc.Cases = []cases.Case{j.Case}
			jc.Blocks, jc.Threads, jc.Params, jc.Tuned = j.Launch.Blocks, j.Launch.Threads, j.Launch.Params, nil
			jc.Stdout, jc.JSONPath, jc.JUnitPath, jc.JSONLPath = io.Discard, "", "", ""
			jc.Progress, jc.Bench, jc.Quiet = false, false, true // tune prints a line per bucket
			var got report.Case
			var stopped string
			jc.AfterReports = func(r *report.Report) error {
				if len(r.Cases) > 0 {
					got = r.Cases[0]
				}
				stopped = r.Summary.Error
				return nil
			}
			runner.Run(c, be, w, &jc)
			return got, stopped
		},
		BucketDone: func(b *tune.Bucket) {
			// A hang aborts the job (exit 3) before the end: keep what the
			// finished buckets measured.
			if o.JSON != "" {
				snap := *plan.Table
				snap.Buckets = append([]tune.Bucket(nil), plan.Table.Buckets...)
				snap.Finish("the sweep was still running (or was aborted) when this was written")
				if err := snap.WriteJSON(o.JSON); err != nil {
					fmt.Fprintf(e.Stderr, "artest: tune: write %s: %v\n", o.JSON, err)
				}
			}
			if !o.Progress {
				return
			}
			line := fmt.Sprintf("# tune %s: %d candidates", b.Name(), len(b.Candidates))
			if b.Best != nil {
				line += fmt.Sprintf(", best %s %s %.2f us", b.Best.Variant, b.Best.Launch, b.Best.TimeUS)
			}
			fmt.Fprintln(e.Stderr, line)
		},
	}
	stop, err := plan.Run(h)
	code := exitcode.OK
	if err != nil {
		fmt.Fprintf(e.Stderr, "artest: tune: %v\n", err)
		return exitcode.Env
	}
	if rank0 {
		t := plan.Table
		if t.Failed > 0 {
			code = exitcode.Wrong
		}
		for _, m := range o.Tune.merge {
			t.Merge(m)
		}
		t.Finish(stop)
		if stop != "" {
			fmt.Fprintf(e.Stderr, "artest: tune stopped early: %s\n", stop)
		}
		note := func(what string, err error) {
			if err != nil {
				fmt.Fprintf(e.Stderr, "artest: tune: write %s: %v\n", what, err)
				code = exitcode.Env
			}
		}
		_ = tune.WriteText(e.Stdout, t)
		if o.JSON != "" {
			note(o.JSON, t.WriteJSON(o.JSON))
		}
		tt := t.Tuned()
		if o.Tune.Header != "" {
			note(o.Tune.Header, report.WriteFileAtomic(o.Tune.Header, func(w io.Writer) error { return tune.WriteHeader(w, tt, o.variantSet) }))
		}
		if o.Tune.GoFile != "" {
			src, err := tune.GoSource(tt, o.variantSet)
			if err == nil {
				err = report.WriteFileAtomic(o.Tune.GoFile, func(w io.Writer) error { _, err := w.Write(src); return err })
			}
			note(o.Tune.GoFile, err)
		}
	}
	buf := []byte{byte(code)}
	if err := c.Bcast(buf, 0); err != nil {
		return exitcode.Env
	}
	return int(buf[0])
}
