package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/artest/artest/internal/bench"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
)

// PlotWord, as the first argument, runs `artest plot`: bench's figure
// drawn from a saved report. Like compare it needs no MPI world.
const PlotWord = "plot"

// IsPlot reports whether args (without the program name) ask for
// `artest plot`.
func IsPlot(args []string) bool { return len(args) > 0 && args[0] == PlotWord }

// PlotMain is Plot as the binary runs it: under mpirun only rank 0 draws
// and speaks; the others return the same exit code.
func PlotMain(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	for _, k := range launcherRankVars {
		if r := getenv(k); r != "" && r != "0" {
			return plot(args, io.Discard, io.Discard, false)
		}
	}
	return plot(args, stdout, stderr, true)
}

// Plot runs `artest plot REPORT OUT` (args without the program name and
// the word "plot"): the figure `bench --plot` draws, from a --json report
// or a --jsonl stream, into OUT (.svg or .png). It returns 0 when the
// figure was written, 2 on a usage error or a report it cannot draw (not
// an artest report, no passing timed case), and 4 when OUT cannot be
// written.
func Plot(args []string, stdout, stderr io.Writer) int { return plot(args, stdout, stderr, true) }

func plot(args []string, stdout, stderr io.Writer, write bool) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "artest plot: "+format+"\n", a...)
		return code
	}
	fs := flag.NewFlagSet("artest plot", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printPlotHelp(stdout)
			return exitcode.OK
		}
		return fail(exitcode.Usage, "%v (see artest plot --help)", err)
	}
	if fs.NArg() != 2 {
		return fail(exitcode.Usage, "want a report and a figure, REPORT.json OUT.svg|OUT.png; got %d arguments (see artest plot --help)", fs.NArg())
	}
	in, out := fs.Arg(0), fs.Arg(1)
	if _, err := bench.PlotFormat(out); err != nil {
		return fail(exitcode.Usage, "%s: want a figure file ending in .svg or .png", out)
	}
	// The figure replaces OUT: never the report it is drawn from.
	if a, err := report.Identity(in); err == nil {
		if b, err := report.Identity(out); err == nil && a == b {
			return fail(exitcode.Usage, "%s is the report itself; name another file for the figure", out)
		}
	}
	rep, err := bench.ReadInput(in)
	if err != nil {
		return fail(exitcode.Usage, "%v", err)
	}
	if rep.Incomplete != "" {
		fmt.Fprintf(stderr, "artest plot: %s: %s; drawing the cases it has\n", in, rep.Incomplete)
	}
	if !write {
		return exitcode.OK
	}
	if err := bench.WritePlot(out, rep.Report); err != nil {
		if errors.Is(err, bench.ErrNothingToPlot) {
			return fail(exitcode.Usage, "%s: %v; no figure written", in, err)
		}
		return fail(exitcode.Env, "%v", err)
	}
	fmt.Fprintf(stdout, "artest plot: %s drawn into %s\n", in, out)
	return exitcode.OK
}

func printPlotHelp(w io.Writer) {
	fmt.Fprint(w, strings.TrimLeft(`
usage: artest plot REPORT.json OUT.svg|OUT.png

Draws the figure that artest bench --plot draws (time and busbw against size,
and each artest variant's gain over the fieldbest) from a saved report: the
--json file of a run, or its --jsonl stream (a stream without its summary line
is drawn as far as it goes, with a warning). OUT is replaced whole, never
half-written; it may not be the report itself. No MPI and no GPU are needed:
a results page's report can be drawn again, or looked at as a PNG, anywhere.

exit codes: 0 the figure was written,
            2 usage error, a file that is not an artest report, or a report
              with no passing timed case (nothing to draw),
            4 OUT could not be written
`, "\n"))
}
