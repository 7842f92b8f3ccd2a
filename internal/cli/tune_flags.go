package cli

import (
	"flag"
	"math"
	"sort"
	"strings"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
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
// move (the spread it guards against is unmeasured).
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
	if err := o.checkModeFlags(true); err != nil {
		return err
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
	case o.tuneRefusedReports() != "":
		return exitcode.Usagef("tune writes --json (the tuning table), --header and --go; %s do not apply", o.tuneRefusedReports())
	case o.Tune.Tuned != "":
		return exitcode.Usagef("--tuned does not apply to tune: every candidate names its launch")
	case o.set["iters"] && o.Iters == 0, o.set["reps"] && o.Reps == 0:
		return exitcode.Usagef("tune needs --iters and --reps above 0: it times calls")
	case sweep && o.set["size"]:
		return exitcode.Usagef("give the sizes either as -b/-e/-f or as --size, not both")
	case t.Budget < 0 || math.IsNaN(t.Budget) || math.IsInf(t.Budget, 0):
		return exitcode.Usagef("--budget %g: want a number of seconds, at least 0 (0: no limit)", t.Budget)
	}
	if err := o.checkReportFormats(); err != nil {
		return err
	}
	for _, op := range o.sel.Ops {
		if op != reference.Sum {
			return exitcode.Usagef("tune measures sum (what inference calls), not %s", op)
		}
	}
	for _, c := range o.sel.Colls {
		if c != reference.AllReduce {
			return exitcode.Usagef("tune tunes the allreduce, not %s: the tuning table holds allreduce launches", c)
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
		switch {
		case v.Custom() && !v.Implements(reference.AllReduce) && len(o.Variants) > 0:
			return exitcode.Usagef("tune tunes the allreduce, which %s does not implement", v.Name)
		case v.Custom() && v.Implements(reference.AllReduce):
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
