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
	"github.com/artest/artest/internal/runner"
)

// reportFormats are the report files a run can write, one entry each, in
// the order their flags are checked and listed. Everything else about a
// format follows from this table: its flag (newFlagSet), its own checks
// (checkReportFormats), --list and --list-variants refusing it, the output
// plan resolving and checking its path (outputFiles), a rerun line and a
// bundle's rerun leaving it out (rerunLeftOut, bundleIgnoredFlags: where a
// run writes is the command line's to say), artest tune refusing it unless
// it takes it (tuneRefusedReports), and its writing (planReports).
//
// A format written whole from the finished report is a fileFormat: its
// writer in internal/report (with its test) and one line here.
var reportFormats = []reportFormat{
	jsonFormat{formatFlag{"json", "write the JSON report to FILE"}},
	junitFormat{formatFlag{"junit", "write a JUnit XML report to FILE"}},
	jsonlFormat{formatFlag{"jsonl", "append every finished case to FILE as JSON Lines while running (fsynced: an abort or crash keeps them)"}},
	plotFormat{formatFlag{"plot", "draw time and busbw against size (log-log, one line per variant and launch kind), and each artest variant's gain over the fieldbest (the fastest NCCL mode or plugin), into FILE.svg or FILE.png"}},
	gobenchFormat{formatFlag{"gobench", "write every timed repetition in Go's benchmark format to FILE (benchstat OLD NEW compares two runs)"}},
}

// reportFormat is one report file a run can write: its flag, where the
// flag's value is kept, its own check of that value, and how the run
// writes it. formatFlag gives the defaults of the optional parts.
type reportFormat interface {
	// flagName is the flag without its dashes (json for --json); usage
	// its help.
	flagName() string
	usage() string
	// field is where o keeps the flag's value, the file ("" when not
	// given).
	field(o *Options) *string
	// check is the format's own check of a given path, at parse time: a
	// usage error, or nil.
	check(path string) error
	// stream: the run appends to the file case by case (the output plan
	// checks it holds JSON Lines) instead of replacing it at the end.
	stream() bool
	// inTune: artest tune takes the flag; tune refuses the others.
	inTune() bool
	// plan has the run write path: it sets the runner's field for the
	// format, or returns a writer that rank 0 runs on the finished report
	// once the table is printed (runner.Config.AfterReports).
	plan(cfg *runner.Config, path string, stderr io.Writer) func(*report.Report) error
}

// formatFlag is a format's flag: its name and help. Embedded in a format,
// it gives the defaults: no check of its own, written whole at the end,
// refused by artest tune.
type formatFlag struct{ name, help string }

func (f formatFlag) flagName() string { return f.name }
func (f formatFlag) usage() string    { return f.help }
func (formatFlag) check(string) error { return nil }
func (formatFlag) stream() bool       { return false }
func (formatFlag) inTune() bool       { return false }

// --json: the runner writes it last but one (runner.Config.JSONPath);
// artest tune writes its tuning table there.
type jsonFormat struct{ formatFlag }

func (jsonFormat) field(o *Options) *string { return &o.JSON }
func (jsonFormat) inTune() bool             { return true }
func (jsonFormat) plan(cfg *runner.Config, path string, _ io.Writer) func(*report.Report) error {
	cfg.JSONPath = path
	return nil
}

// --junit: the runner writes it last (runner.Config.JUnitPath).
type junitFormat struct{ formatFlag }

func (junitFormat) field(o *Options) *string { return &o.JUnit }
func (junitFormat) plan(cfg *runner.Config, path string, _ io.Writer) func(*report.Report) error {
	cfg.JUnitPath = path
	return nil
}

// --jsonl: the runner appends every finished case while the run goes on
// (runner.Config.JSONLPath).
type jsonlFormat struct{ formatFlag }

func (jsonlFormat) field(o *Options) *string { return &o.JSONL }
func (jsonlFormat) stream() bool             { return true }
func (jsonlFormat) plan(cfg *runner.Config, path string, _ io.Writer) func(*report.Report) error {
	cfg.JSONLPath = path
	return nil
}

// --plot: bench's figure, drawn once the table is printed; its file name
// says SVG or PNG.
type plotFormat struct{ formatFlag }

func (plotFormat) field(o *Options) *string { return &o.Plot }
func (plotFormat) check(path string) error {
	if _, err := bench.PlotFormat(path); err != nil {
		return exitcode.Usagef("%v", err)
	}
	return nil
}
func (plotFormat) plan(_ *runner.Config, path string, stderr io.Writer) func(*report.Report) error {
	return func(r *report.Report) error {
		err := bench.WritePlot(path, r)
		if errors.Is(err, bench.ErrNothingToPlot) {
			// Not a failure of the run: a run whose cases were all skipped
			// (or failed) has no time to draw. Said once, plot not written.
			fmt.Fprintf(stderr, "artest: %v; no plot written\n", err)
			return nil
		}
		return err
	}
}

// --gobench: the runner writes it after the plot (runner.Config.GoBenchPath).
// artest tune takes it, as it always did: each candidate's run (tune.go's
// Measure) writes it over, so the file holds the last candidate's.
type gobenchFormat struct{ formatFlag }

func (gobenchFormat) field(o *Options) *string { return &o.GoBench }
func (gobenchFormat) inTune() bool             { return true }
func (gobenchFormat) plan(cfg *runner.Config, path string, _ io.Writer) func(*report.Report) error {
	cfg.GoBenchPath = path
	return nil
}

// fileFormat is a report written whole from the finished report by write
// (a writer of internal/report), atomically (report.WriteFileAtomic), once
// the table is printed; its flag's value is kept in Options.Reports.
type fileFormat struct {
	formatFlag
	write func(io.Writer, *report.Report) error
}

func (f fileFormat) field(o *Options) *string {
	if o.Reports == nil {
		o.Reports = map[string]*string{}
	}
	p := o.Reports[f.name]
	if p == nil {
		p = new(string)
		o.Reports[f.name] = p
	}
	return p
}

func (f fileFormat) plan(_ *runner.Config, path string, _ io.Writer) func(*report.Report) error {
	return func(r *report.Report) error {
		return report.WriteFileAtomic(path, func(w io.Writer) error { return f.write(w, r) })
	}
}

// addReportFlags adds every format's flag to fs.
func addReportFlags(fs *flag.FlagSet, o *Options) {
	for _, f := range reportFormats {
		fs.StringVar(f.field(o), f.flagName(), "", f.usage())
	}
}

// reportFlagNames are the formats' flag names, in the table's order.
func reportFlagNames() []string {
	names := make([]string, len(reportFormats))
	for i, f := range reportFormats {
		names[i] = f.flagName()
	}
	return names
}

// withReportFlags adds every format's flag name to set, for the lists of
// flags a rerun leaves out.
func withReportFlags(set map[string]bool) map[string]bool {
	for _, name := range reportFlagNames() {
		set[name] = true
	}
	return set
}

// checkReportFormats runs each given format's own check.
func (o *Options) checkReportFormats() error {
	for _, f := range reportFormats {
		if path := *f.field(o); path != "" {
			if err := f.check(path); err != nil {
				return err
			}
		}
	}
	return nil
}

// reportFiles are the files the formats write, in the table's order.
func (o *Options) reportFiles() []pathFlag {
	var out []pathFlag
	for _, f := range reportFormats {
		if path := *f.field(o); path != "" {
			out = append(out, pathFlag{flag: "--" + f.flagName(), path: path, stream: f.stream()})
		}
	}
	return out
}

// tuneRefusedReports says, when a format artest tune does not take is
// given, which formats tune refuses ("--junit, --jsonl and --plot"); ""
// when none is given.
func (o *Options) tuneRefusedReports() string {
	var refused []string
	given := false
	for _, f := range reportFormats {
		if f.inTune() {
			continue
		}
		refused = append(refused, "--"+f.flagName())
		given = given || *f.field(o) != ""
	}
	if !given {
		return ""
	}
	if len(refused) == 1 {
		return refused[0]
	}
	return strings.Join(refused[:len(refused)-1], ", ") + " and " + refused[len(refused)-1]
}

// planReports has the run write every report given: each format sets its
// runner field or returns a writer. The writers run on rank 0 in the
// table's order once the table is printed (runner.Config.AfterReports),
// before the runner's own files: a writer's failure is said on its own
// line and turns the report's exit code 0 into 4 before the later files
// record it, as the runner does between its files.
func (o *Options) planReports(cfg *runner.Config, stderr io.Writer) func(*report.Report) error {
	var writers []func(*report.Report) error
	for _, f := range reportFormats {
		if path := *f.field(o); path != "" {
			if w := f.plan(cfg, path, stderr); w != nil {
				writers = append(writers, w)
			}
		}
	}
	switch len(writers) {
	case 0:
		return nil
	case 1:
		return writers[0]
	}
	return func(r *report.Report) error {
		// The runner says the error returned; the earlier ones are said
		// here, in order.
		var last error
		for _, w := range writers {
			err := w(r)
			if err == nil {
				continue
			}
			if last != nil {
				fmt.Fprintf(stderr, "artest: %v\n", last)
			}
			last = err
			if r.Summary.ExitCode == exitcode.OK {
				r.Summary.ExitCode = exitcode.Env
			}
		}
		return last
	}
}
