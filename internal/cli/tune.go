package cli

import (
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/runner"
	"github.com/artest/artest/internal/tune"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// tuneWord, as the first argument, selects `artest tune`.
const tuneWord = "tune"

// Tune defaults. Sizes: powers of 4 from 1 KiB to 256 MiB, what tensor-
// parallel inference sends, at a step the launch parameters change slowly
// over. Repetitions: fewer than bench's 20, since every candidate of every
// bucket is timed; 10 give a median that a single slow repetition cannot
// move (a guess until H200 runs show the spread).
const (
	tuneFactor = "4"
	tuneReps   = 10
)

// TuneOptions are `artest tune`'s flags, and --tuned (which table the
// launch defaults of an ordinary run come from).
type TuneOptions struct {
	On      bool     `json:"on,omitempty"`
	Blocks  string   `json:"blocks,omitempty"`
	Threads string   `json:"threads,omitempty"`
	Params  []string `json:"params,omitempty"`
	Launch  string   `json:"launch,omitempty"`
	Budget  float64  `json:"budget,omitempty"`
	Header  string   `json:"header,omitempty"`
	GoFile  string   `json:"go,omitempty"`
	Tuned   string   `json:"tuned,omitempty"`
	Merge   []string `json:"merge,omitempty"`

	over     tune.Overrides
	launches []string
	variants []*kernels.Variant
	nccl     *kernels.Variant    // the baseline timed per bucket
	dflt     bool                // the size sweep is the default one
	table    *kernels.TunedTable // --tuned FILE, loaded
	merge    []*tune.Table       // --merge FILEs, loaded
}

func addTuneFlags(fs *flag.FlagSet, o *Options) {
	t := &o.Tune
	fs.StringVar(&t.Blocks, "tune-blocks", "", "tune: block counts to try, e.g. 16,36,132 (default: 8..256, per variant: its Tune in kernels/<variant>/)")
	fs.StringVar(&t.Threads, "tune-threads", "", "tune: threads per block to try, e.g. 256,512 (default 128,256,512)")
	fs.Var(repeatFlag{&t.Params}, "tune-param", "tune: values to try for a variant parameter, NAME=V1,V2 (repeatable), e.g. lanes=4,8,16")
	fs.StringVar(&t.Launch, "launch", "graph", "tune: how calls are timed: graph (CUDA graph replays, as inference runs), plain, or both")
	fs.Float64Var(&t.Budget, "budget", 0, "tune: start no candidate after this many seconds (the JSON table and the summary name the buckets left unfinished); 0: no limit")
	fs.StringVar(&t.Header, "header", "", "tune: write the table as a C++ header (constexpr, with a best() lookup) into FILE.h")
	fs.StringVar(&t.GoFile, "go", "", "tune: write the table as Go (package kernels, var Tuned) into FILE.go, e.g. kernels/tuned.go")
	fs.Var(repeatFlag{&t.Merge}, "merge", "tune: add the buckets of an earlier tune's --json FILE that this run does not measure (e.g. another world size) to the tables written (repeatable)")
	fs.StringVar(&t.Tuned, "tuned", "", "launch defaults from this tuning table (artest tune's --json FILE), or none for the registry's; default: kernels/tuned.go's table on the cuda backend, none on host")
}

// parseTuneWord takes the word tune where parseFlags left it (before,
// between or after the flags).
func parseTuneWord(fs *flag.FlagSet, on *bool) error {
	if fs.NArg() > 0 && fs.Arg(0) == tuneWord {
		*on = true
		return fs.Parse(fs.Args()[1:])
	}
	return nil
}

// applyTune checks the tune flags and, for artest tune, turns the
// selection into the sweep; otherwise it is applyBench.
func (o *Options) applyTune() error {
	t := &o.Tune
	if !t.On {
		for _, name := range []string{"tune-blocks", "tune-threads", "tune-param", "launch", "budget", "header", "go", "merge"} {
			if o.set[name] {
				return exitcode.Usagef("--%s is a flag of artest tune", name)
			}
		}
		if err := o.loadTuned(); err != nil {
			return err
		}
		return o.applyBench()
	}
	if o.set["overlap"] {
		return exitcode.Usagef("--overlap is a flag of artest bench, not of artest tune")
	}
	if o.PDLChain {
		return exitcode.Usagef("--pdl-chain is a flag of artest bench, not of artest tune")
	}
	var err error
	if o.agg, err = report.ParseAgg(o.Agg); err != nil {
		return exitcode.Usagef("--agg: %v", err)
	}
	sweep := o.set["b"] || o.set["minbytes"] || o.set["e"] || o.set["maxbytes"] || o.set["f"] || o.set["stepfactor"]
	switch {
	case o.Bench:
		return exitcode.Usagef("bench and tune exclude each other")
	case o.Stress > 0, o.Quick, len(o.sel.IDs) > 0, len(o.sel.ModeWords) > 0:
		return exitcode.Usagef("tune sweeps its own cases: --stress, --quick, --case and --mode do not apply")
	case o.Blocks > 0 || o.Threads > 0 || len(o.Params) > 0:
		return exitcode.Usagef("tune: give the launch parameters to try as --tune-blocks, --tune-threads and --tune-param")
	case o.JUnit != "" || o.JSONL != "" || o.Plot != "":
		return exitcode.Usagef("tune writes --json (the tuning table), --header and --go; --junit, --jsonl and --plot do not apply")
	case o.Tune.Tuned != "":
		return exitcode.Usagef("--tuned does not apply to tune: every candidate names its launch")
	case o.set["iters"] && o.Iters == 0, o.set["reps"] && o.Reps == 0:
		return exitcode.Usagef("tune needs --iters and --reps above 0: it times calls")
	case sweep && o.set["size"]:
		return exitcode.Usagef("give the sizes either as -b/-e/-f or as --size, not both")
	case t.Budget < 0 || math.IsNaN(t.Budget) || math.IsInf(t.Budget, 0):
		return exitcode.Usagef("--budget %g: want a number of seconds, at least 0 (0: no limit)", t.Budget)
	}
	for _, op := range o.sel.Ops {
		if op != reference.Sum {
			return exitcode.Usagef("tune measures sum (what inference calls), not %s", op)
		}
	}
	switch t.Launch {
	case "graph", "plain":
		t.launches = []string{t.Launch}
	case "both":
		t.launches = []string{"graph", "plain"}
	default:
		return exitcode.Usagef("--launch %q: want graph, plain or both", t.Launch)
	}
	if t.over, err = tune.ParseOverrides(o.variantSet, t.Blocks, t.Threads, t.Params); err != nil {
		return exitcode.Usagef("%v", err)
	}
	t.variants = nil
	names := o.Variants
	if len(names) == 0 {
		names = o.variantSet.Names()
	}
	if t.nccl, err = o.variantSet.Lookup("nccl"); err != nil {
		return err
	}
	for _, n := range names {
		v, err := o.variantSet.Lookup(n)
		if err != nil {
			return exitcode.Usagef("--variant: %v", err)
		}
		if v.Custom {
			t.variants = append(t.variants, v)
		}
	}
	if len(t.variants) == 0 {
		return exitcode.Usagef("tune: no custom variant selected (nccl is always timed as the baseline)")
	}
	if !o.set["size"] {
		factor := o.Factor
		if factor == "" {
			factor = tuneFactor
		}
		if o.sel.Sizes, err = sweepSizes(o.MinBytes, o.MaxBytes, factor); err != nil {
			return err
		}
		t.dflt = !sweep
	}
	sort.Slice(o.sel.Sizes, func(i, j int) bool { return o.sel.Sizes[i] < o.sel.Sizes[j] })
	if len(o.sel.DTypes) == 0 {
		o.sel.DTypes = []reference.DType{reference.BF16}
	}
	if !o.set["size"] {
		o.sel.Sizes = alignSweep(o.sel.Sizes, o.sel.DTypes)
	}
	o.sel.Ops = []reference.Op{reference.Sum}
	// The default-launch cases of the sweep: what sizes the world's
	// buffers (runner.Capacity); the candidates use the same sizes.
	o.sel.ModeWords = []string{"oop", "reg", "aligned"}
	if len(t.launches) == 1 {
		o.sel.ModeWords = append(o.sel.ModeWords, t.launches[0])
	}
	if len(o.Variants) > 0 {
		o.sel.Variants = []string{"nccl"}
		for _, v := range t.variants {
			o.sel.Variants = append(o.sel.Variants, v.Name)
		}
	}
	if !o.set["reps"] {
		o.Reps = tuneReps
	}
	t.merge = nil
	for _, path := range t.Merge {
		m, err := tune.ReadTable(path)
		if err != nil {
			return exitcode.Usagef("--merge: %v", err)
		}
		t.merge = append(t.merge, m)
	}
	return nil
}

// checkTuneBackend refuses a tune that would write a table measured on the
// host backend, which an auto backend chose because the machine has no GPU:
// its times are goroutines', and --go kernels/tuned.go would replace the
// GPU table the cuda backend's defaults come from. With --backend host the
// user asked for the host model, and the file says which backend measured
// it.
func (o *Options) checkTuneBackend(backendName string) error {
	if !o.Tune.On || backendName != "host" || o.Backend == "host" || o.List {
		return nil
	}
	var files []string
	for _, p := range []pathFlag{{flag: "--json", path: o.JSON}, {flag: "--header", path: o.Tune.Header}, {flag: "--go", path: o.Tune.GoFile}} {
		if p.path != "" {
			files = append(files, p.flag+" "+p.path)
		}
	}
	if len(files) == 0 {
		return nil
	}
	return exitcode.Envf("tune: no GPU here (the backend is host), and a table measured on the host backend is written only with --backend host; nothing was written to %s", strings.Join(files, ", "))
}

// tuneOnHost caps the default sweep at --host-max-size, as the default
// matrix is (host times mean nothing; the sweep shows the plumbing).
func (o *Options) tuneOnHost() {
	if !o.Tune.On || !o.Tune.dflt {
		return
	}
	o.capSizesToHostMax()
}

// planOptions is the sweep for a world of ranks ranks.
func (o *Options) planOptions(ranks int) tune.PlanOptions {
	return tune.PlanOptions{
		Ranks: ranks, DTypes: o.sel.DTypes, Sizes: o.sel.Sizes, Launches: o.Tune.launches,
		Variants: o.Tune.variants, NCCL: o.Tune.nccl, Overrides: o.Tune.over,
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

// loadTuned reads --tuned FILE (every rank reads it, so a bad file is a
// usage error that the ranks agree on).
func (o *Options) loadTuned() error {
	if o.Tune.Tuned == "" || o.Tune.Tuned == "none" {
		return nil
	}
	t, err := tune.ReadTable(o.Tune.Tuned)
	if err != nil {
		return exitcode.Usagef("--tuned: %v", err)
	}
	tt := t.Tuned()
	o.Tune.table = &tt
	return nil
}

// applyTuned sets where an ordinary run's launch defaults come from:
// --tuned FILE, none, or by default kernels.Tuned on the cuda backend (it
// was measured on GPUs; on the host backend blocks are goroutines).
func (o *Options) applyTuned(cfg *runner.Config, backendName string) {
	switch {
	case o.Tune.On || o.Tune.Tuned == "none":
		return
	case o.Tune.table != nil:
		cfg.Tuned = o.Tune.table
	case backendName == "cuda":
		cfg.Tuned = &kernels.Tuned
	default:
		return
	}
	cfg.Header.Tuned = cfg.Tuned.Provenance.String()
	if cfg.Header.Tuned == "" && len(cfg.Tuned.Entries) > 0 {
		cfg.Header.Tuned = "kernels/tuned.go (no provenance)"
	}
}

// withCaseLaunch adds the launch a case ran with to its rerun flags, where
// the user's flags did not already fix it, so that a repro launches the
// same grid, block size and parameters whatever table a later build has.
func (o *Options) withCaseLaunch(args []string, c report.Case) []string {
	if c.LaunchFrom == "" {
		return args
	}
	if o.Blocks == 0 && c.Blocks > 0 {
		args = append(args, "--blocks", fmt.Sprint(c.Blocks))
	}
	if o.Threads == 0 && c.Threads > 0 {
		args = append(args, "--threads", fmt.Sprint(c.Threads))
	}
	names := make([]string, 0, len(c.Params))
	for k := range c.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, given := o.params[k]; !given {
			args = append(args, "--param", fmt.Sprintf("%s=%d", k, c.Params[k]))
		}
	}
	return args
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
	plan := tune.NewPlan(o.planOptions(c.Size()))
	rank0 := c.Rank() == 0
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
			jc.Progress, jc.Bench = false, false
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
