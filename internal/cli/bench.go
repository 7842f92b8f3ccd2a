package cli

import (
	"flag"
	"fmt"
	"strconv"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/reference"
)

// benchWord, as the first argument, selects benchmark mode like --bench.
const benchWord = "bench"

// Bench defaults. The sweep covers what tensor-parallel inference sends
// (a few KiB for decode up to hundreds of MiB for long prefills) with the
// factor 2 of nccl-tests' examples. 20 calls per repetition is nccl-tests'
// default -n; 20 repetitions give the median and the spread something to
// stand on. How many are needed is unmeasured.
const (
	benchMinBytes = "1K"
	benchMaxBytes = "256M"
	benchFactor   = "2"
	benchReps     = 20
	// On the host backend times mean nothing; a few repetitions still show
	// the distribution code at work.
	benchHostReps = 3
)

// benchModeWords pick the bench's modes: out of place on a registered
// input, aligned, so that the sweep has two cases per size: plain
// launches and CUDA graph replays.
var benchModeWords = []string{"oop", "reg", "aligned"}

func addBenchFlags(fs *flag.FlagSet, o *Options) {
	fs.BoolVar(&o.Bench, "bench", false, "benchmark mode, like `artest bench`: a size sweep of bf16 sum, out of place, registered, plain and graph, every case checked once then timed")
	for _, name := range []string{"b", "minbytes"} {
		fs.StringVar(&o.MinBytes, name, "", "bench: smallest size of the sweep, as nccl-tests' -b (default "+benchMinBytes+")")
	}
	for _, name := range []string{"e", "maxbytes"} {
		fs.StringVar(&o.MaxBytes, name, "", "bench: largest size of the sweep, as nccl-tests' -e (default "+benchMaxBytes+")")
	}
	for _, name := range []string{"f", "stepfactor"} {
		fs.StringVar(&o.Factor, name, "", "bench: multiply the size by this each step, as nccl-tests' -f (default "+benchFactor+")")
	}
	fs.StringVar(&o.Agg, "agg", string(report.DefaultAgg), "how each repetition's per-call times combine across ranks: max, avg or min")
}

// parseFlags parses args, where the word bench may stand before, between
// or after the flags (artest bench -b 4, artest --backend host bench);
// *bench says whether it did.
func parseFlags(fs *flag.FlagSet, args []string, bench *bool) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 && fs.Arg(0) == benchWord {
		*bench = true
		return fs.Parse(fs.Args()[1:])
	}
	return nil
}

// applyBench checks the bench and plot flags and, in bench mode, turns the
// selection into the sweep. Errors are usage errors.
func (o *Options) applyBench() error {
	var err error
	if o.agg, err = report.ParseAgg(o.Agg); err != nil {
		return exitcode.Usagef("--agg: %v", err)
	}
	if err := o.checkReportFormats(); err != nil {
		return err
	}
	if err := o.checkModeFlags(false); err != nil {
		return err
	}
	sweep := o.set["b"] || o.set["minbytes"] || o.set["e"] || o.set["maxbytes"] || o.set["f"] || o.set["stepfactor"]
	if !o.Bench {
		if sweep {
			return exitcode.Usagef("-b, -e and -f set the size sweep of benchmark mode: run artest bench (or use --size)")
		}
		return nil
	}
	switch {
	case o.Stress > 0:
		return exitcode.Usagef("--stress and bench exclude each other: stress checks every call, bench times them")
	case o.Quick:
		return exitcode.Usagef("--quick is not a bench option: narrow the sweep with -b, -e and -f")
	case o.set["iters"] && o.Iters == 0, o.set["reps"] && o.Reps == 0:
		return exitcode.Usagef("bench needs --iters and --reps above 0: it times calls")
	case sweep && o.set["size"]:
		return exitcode.Usagef("give the sizes either as -b/-e/-f or as --size, not both")
	}
	if !o.set["reps"] {
		o.Reps = benchReps
	}
	if len(o.sel.IDs) > 0 {
		return nil // exactly the cases asked for, benchmarked
	}
	if !o.set["size"] {
		if o.sel.Sizes, err = sweepSizes(o.MinBytes, o.MaxBytes, o.Factor); err != nil {
			return err
		}
		o.benchDefaultSizes = !sweep
	}
	if len(o.sel.DTypes) == 0 {
		o.sel.DTypes = []reference.DType{reference.BF16}
	}
	if !o.set["size"] {
		o.sel.Sizes = alignSweep(o.sel.Sizes, o.sel.DTypes)
	}
	if len(o.sel.Ops) == 0 {
		o.sel.Ops = []reference.Op{reference.Sum}
	}
	if len(o.sel.ModeWords) == 0 {
		o.sel.ModeWords = benchModeWords
	}
	return nil
}

// alignSweep rounds every size of a -b/-e/-f sweep up to a whole number of
// elements of every dtype selected (a factor like 1.3 makes 5 B from 4 B),
// as nccl-tests rounds its sizes to the element size, and drops the
// repeats rounding makes. Sizes given with --size are taken as they are.
func alignSweep(sizes []int64, dtypes []reference.DType) []int64 {
	unit := int64(1)
	for _, d := range dtypes {
		unit = max(unit, int64(d.Size())) // sizes are 1, 2 or 4 bytes: the largest is a multiple of the others
	}
	var out []int64
	for _, s := range sizes {
		s = (s + unit - 1) / unit * unit
		if len(out) == 0 || out[len(out)-1] != s {
			out = append(out, s)
		}
	}
	return out
}

// sweepSizes is nccl-tests' -b/-e/-f sweep: begin, then multiply by the
// factor while the size stays at or below end.
func sweepSizes(minS, maxS, factorS string) ([]int64, error) {
	if minS == "" {
		minS = benchMinBytes
	}
	if maxS == "" {
		maxS = benchMaxBytes
	}
	if factorS == "" {
		factorS = benchFactor
	}
	lo, err := cases.ParseSize(minS)
	if err != nil {
		return nil, exitcode.Usagef("-b: %v", err)
	}
	hi, err := cases.ParseSize(maxS)
	if err != nil {
		return nil, exitcode.Usagef("-e: %v", err)
	}
	if hi < lo {
		return nil, exitcode.Usagef("-e %s is below -b %s", maxS, minS)
	}
	f, err := strconv.ParseFloat(factorS, 64)
	if err != nil || f <= 1 {
		return nil, exitcode.Usagef("-f %q: want a factor above 1, e.g. 2", factorS)
	}
	sizes, err := cases.ParseSizes(fmt.Sprintf("%d:%d:x%s", lo, hi, factorS))
	if err != nil {
		return nil, exitcode.Usagef("-b/-e/-f: %v", err)
	}
	return sizes, nil
}

// benchOnHost adapts bench mode to the host backend: the default sweep
// stops at --host-max-size, as the default matrix does, and the default
// repetitions drop (host times mean nothing).
func (o *Options) benchOnHost() {
	if !o.Bench {
		return
	}
	if !o.set["reps"] {
		o.Reps = benchHostReps
	}
	if o.benchDefaultSizes {
		o.capSizesToHostMax()
	}
}

// capSizesToHostMax drops the selected sizes above --host-max-size (the
// host backend's default sweeps would take minutes above it).
func (o *Options) capSizesToHostMax() {
	limit, _ := cases.ParseSize(o.HostMax)
	kept := o.sel.Sizes[:0]
	for _, b := range o.sel.Sizes {
		if b <= limit {
			kept = append(kept, b)
		}
	}
	o.sel.Sizes = kept
}
