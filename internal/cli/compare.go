package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/bench"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
)

// CompareWord, as the first argument, runs `artest compare`. It needs no
// MPI world: cmd/artest calls Compare before initialising MPI.
const CompareWord = "compare"

// IsCompare reports whether args (without the program name) ask for
// `artest compare`.
func IsCompare(args []string) bool { return len(args) > 0 && args[0] == CompareWord }

// launcherRankVars are the environment variables in which MPI launchers
// (Open MPI, MPICH/Hydra, PMIx) give a process its rank.
var launcherRankVars = []string{"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"}

// CompareMain is Compare as the binary runs it: started under mpirun
// (which it does not need), every rank would print the same comparison,
// so only rank 0 prints; the others return the same exit code silently.
func CompareMain(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	for _, k := range launcherRankVars {
		if r := getenv(k); r != "" && r != "0" {
			return Compare(args, io.Discard, io.Discard)
		}
	}
	return Compare(args, stdout, stderr)
}

// Compare runs `artest compare OLD NEW [flags]` (args without the program
// name and the word "compare"): it prints the per-case comparison of two
// reports and returns 0 when no case got slower than the thresholds or
// newly fails, 1 when one did, and 2 on a usage error or a file that is
// not an artest report. With --verdicts-only, or when either report's
// times are not speed (the host backend, ranks that shared GPUs), times are
// not judged: 1 only when a case newly fails, is newly skipped or is
// missing from NEW.
func Compare(args []string, stdout, stderr io.Writer) int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "artest compare: "+format+"\n", a...)
		return exitcode.Usage
	}
	fs, th := compareFlags()
	// Flags may come before, between or after the two files.
	var files []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				printCompareHelp(stdout)
				return exitcode.OK
			}
			return fail("%v (see artest compare --help)", err)
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(files) != 2 {
		return fail("want two reports, OLD.json NEW.json; got %d (see artest compare --help)", len(files))
	}
	t, err := th.thresholds()
	if err != nil {
		return fail("%v", err)
	}
	old, err := bench.ReadInput(files[0])
	if err != nil {
		return fail("%v", err)
	}
	nw, err := bench.ReadInput(files[1])
	if err != nil {
		return fail("%v", err)
	}
	rows := bench.Compare(old.Report, nw.Report, t)
	gate := th.gate(nw, bench.Missing(rows))
	// A NEW run that stopped before its first case has nothing in common
	// with OLD because it is incomplete, not because it is another matrix.
	if s := bench.Summarize(rows); s.Common == 0 && (gate == "" || len(nw.Report.Cases) > 0) {
		return fail("%s and %s have no case in common (same variants, sizes, modes and rank count?)", files[0], files[1])
	}
	if err := bench.WriteComparison(stdout, old, nw, t, rows, gate); err != nil {
		fmt.Fprintf(stderr, "artest compare: %v\n", err)
		return exitcode.Env
	}
	if gate != "" {
		fmt.Fprintf(stderr, "artest compare: %s\n", gate)
		return exitcode.Wrong
	}
	for i := range rows {
		if rows[i].Regression() {
			return exitcode.Wrong
		}
	}
	return exitcode.OK
}

// compareThresholdFlags are the flags' raw values.
type compareThresholdFlags struct {
	smallSlowdown, bwDrop float64 // percent
	smallBelow            string
	alpha                 float64
	// allowSubset: cases of OLD missing from NEW do not fail the gate;
	// allowIncomplete: nor does a NEW run that did not finish.
	allowSubset, allowIncomplete bool
	// verdictsOnly: judge verdicts alone, never times.
	verdictsOnly bool
}

// gate says why NEW as a whole fails the gate, "" when it does not: it did
// not finish (unless --allow-incomplete), or it lacks cases of OLD (unless
// --allow-subset). missing are the IDs of OLD's cases NEW lacks. The line
// names the flags that would accept what it finds.
func (f *compareThresholdFlags) gate(nw *bench.Input, missing []string) string {
	incomplete := nw.Incomplete != "" && !f.allowIncomplete
	lacks := len(missing) > 0 && !f.allowSubset
	if !incomplete && !lacks {
		return ""
	}
	var line string
	var flags []string
	if incomplete {
		line = fmt.Sprintf("NEW %s is incomplete: %s", nw.Path, nw.Incomplete)
		if len(missing) > 0 {
			verb := "are"
			if len(missing) == 1 {
				verb = "is"
			}
			line += fmt.Sprintf("; %s of OLD %s missing from it, first: %s", countCases(len(missing)), verb, missing[0])
		}
		flags = append(flags, "--allow-incomplete")
	} else {
		line = fmt.Sprintf("NEW %s lacks %s of OLD, first: %s", nw.Path, countCases(len(missing)), missing[0])
	}
	if lacks {
		flags = append(flags, "--allow-subset")
	}
	return line + "; to judge only the cases it has, pass " + strings.Join(flags, " and ")
}

// countCases is "1 case" or "N cases".
func countCases(n int) string {
	if n == 1 {
		return "1 case"
	}
	return fmt.Sprintf("%d cases", n)
}

func compareFlags() (*flag.FlagSet, *compareThresholdFlags) {
	d := bench.DefaultThresholds
	th := &compareThresholdFlags{}
	fs := flag.NewFlagSet("artest compare", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Float64Var(&th.smallSlowdown, "max-slowdown-small", 100*d.MaxSlowdown, "percent: a case below --small-below fails the gate when its time grew by more")
	fs.Float64Var(&th.bwDrop, "max-bw-drop", 100*d.MaxBWDrop, "percent: a case from --small-below up fails the gate when its busbw fell by more")
	fs.StringVar(&th.smallBelow, "small-below", cases.FormatSize(d.SmallBelow), "size that splits small (judged by time) from large (judged by busbw) cases")
	fs.BoolVar(&th.allowSubset, "allow-subset", false, "NEW may lack cases OLD has (it ran a narrower selection on purpose): they are listed as only-old but do not fail the gate")
	fs.BoolVar(&th.allowIncomplete, "allow-incomplete", false, "NEW may be a run that did not finish (no summary line in a --jsonl stream, or a summary that says it stopped early or exited with a code other than 0 and 1): its finished cases are judged, and the cases it lacks fail the gate unless --allow-subset")
	fs.BoolVar(&th.verdictsOnly, "verdicts-only", false, "judge correctness alone, for any backend: a case fails the gate when it newly fails (FAILS), passed in OLD and is skipped in NEW (SKIPPED), or is missing from NEW (unless --allow-subset); times are shown, not judged (this is always so when either report ran on the host backend or on shared GPUs)")
	fs.Float64Var(&th.alpha, "alpha", d.Alpha, fmt.Sprintf("significance level: a change past a limit is NOISE, not SLOWER, when both cases kept %d or more timed repetitions (artest bench keeps them) and their Mann-Whitney U test gives p at or above it; 0: the limits alone decide", bench.MinRepetitions))
	return fs, th
}

func (f *compareThresholdFlags) thresholds() (bench.Thresholds, error) {
	// NaN compares false with everything and an infinite limit is never
	// passed: either would turn the gate off without a word.
	for _, v := range []struct {
		flag  string
		value float64
	}{{"--max-slowdown-small", f.smallSlowdown}, {"--max-bw-drop", f.bwDrop}, {"--alpha", f.alpha}} {
		if math.IsNaN(v.value) || math.IsInf(v.value, 0) {
			return bench.Thresholds{}, fmt.Errorf("%s %s: want a finite number", v.flag, formatFlagFloat(v.value))
		}
	}
	if f.smallSlowdown < 0 || f.bwDrop < 0 {
		return bench.Thresholds{}, fmt.Errorf("--max-slowdown-small and --max-bw-drop are percentages, at least 0")
	}
	if f.bwDrop >= 100 {
		return bench.Thresholds{}, fmt.Errorf("--max-bw-drop %s: a drop of 100%% or more cannot happen; want less than 100", strconv.FormatFloat(f.bwDrop, 'g', -1, 64))
	}
	if f.alpha < 0 || f.alpha >= 1 {
		return bench.Thresholds{}, fmt.Errorf("--alpha %s: want at least 0 and below 1, e.g. 0.05", strconv.FormatFloat(f.alpha, 'g', -1, 64))
	}
	small, err := cases.ParseSize(f.smallBelow)
	if err != nil {
		return bench.Thresholds{}, fmt.Errorf("--small-below: %v", err)
	}
	return bench.Thresholds{SmallBelow: small, MaxSlowdown: f.smallSlowdown / 100, MaxBWDrop: f.bwDrop / 100, Alpha: f.alpha, VerdictsOnly: f.verdictsOnly}, nil
}

// formatFlagFloat writes v as a flag value; infinities get their sign.
func formatFlagFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

func printCompareHelp(w io.Writer) {
	fmt.Fprint(w, strings.TrimLeft(`
usage: artest compare OLD.json NEW.json [flags]

Compares two artest reports (--json, or --jsonl streams) case by case, matched by
case ID: old and new time and busbw, and the change. A case is SLOWER when its
time grew by more than --max-slowdown-small percent (sizes below --small-below)
or its busbw fell by more than --max-bw-drop percent (the other sizes), and
FAILS when it fails in NEW but did not in OLD. A change past a limit is NOISE
(not SLOWER) when both cases kept at least 4 timed repetitions (artest bench
keeps them in the JSON) and a Mann-Whitney U test of them gives p >= --alpha.
No MPI is needed.

Times on the host backend are CPU models of the kernels, and times of ranks
that shared GPUs (--share-gpus) mean nothing either: when either report is
such a run, compare says so in one line, shows the times as information
only and judges verdicts alone, as --verdicts-only does for any backend. A
case then fails the gate when it FAILS in NEW only, when it passed in OLD and
is SKIPPED in NEW, or when NEW lacks it (only-old, unless --allow-subset);
it is never SLOWER.

NEW must be a finished run of every case OLD has. It fails the gate (exit 1,
one line on stderr) when it did not finish: a --jsonl stream without its
summary line (the run crashed or was killed), or a summary that says the run
stopped early or exited with a code other than 0 and 1 (3 hang, 4 environment);
and when it lacks cases that OLD has. --allow-incomplete accepts the first,
--allow-subset the second (the missing cases are still listed as only-old): to
judge only the cases a stopped run finished, pass both. An OLD that did not
finish is compared as far as it goes, with a warning. A --jsonl file that
several runs appended to reads as the run whose header line comes last, with
that run's lines only (every line carries its run's id).

`, "\n"))
	fs, _ := compareFlags()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprintf(w, `
exit codes: 0 no case got slower, newly fails or (judged by verdicts alone)
              is newly skipped, and NEW is complete,
            1 a case is SLOWER or FAILS, or NEW did not finish or lacks cases
              of OLD (unless --allow-incomplete, --allow-subset); judged by
              verdicts alone (--verdicts-only, the host backend, shared
              GPUs): a case FAILS or is SKIPPED (passed in OLD, skipped in
              NEW), or NEW did not finish or lacks cases of OLD, never a time,
            2 usage error (a threshold that is NaN or infinite included),
              a missing file, one that is not a regular file of at most
              %d MiB (a device, a FIFO, a directory), or one that is not
              an artest report (a repro bundle: rerun it with --repro)
`, report.MaxReportBytes>>20)
}
