package cli

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/repro"
	"github.com/artest/artest/reference"
)

// bundleIgnoredFlags are flags a bundle's args may hold but a rerun never
// takes from it: where the run writes and what it prints are the command
// line's to say, so that a bundle cannot make artest write over a file.
// Every report format's flag is one (withReportFlags).
var bundleIgnoredFlags = withReportFlags(map[string]bool{
	"repro-dir": true, "header": true, "go": true, "progress": true, "quiet": true, "table": true, "list": true, "help": true, "version": true,
})

// bundleCaseFlags are a bundle's flags that belong to its one case: its
// --case and the launch pinned for it. A selection on the command line
// replaces them all.
var bundleCaseFlags = map[string]bool{"case": true, "blocks": true, "threads": true, "param": true}

// givenFlagsOf parses args alone and returns the flags they give, in order.
func givenFlagsOf(args []string) ([]givenFlag, error) {
	o := &Options{}
	fs := newFlagSet(o)
	recordFlags(fs, &o.given)
	var bench bool
	if err := parseFlags(fs, args, &bench); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if bench {
		o.given = append(o.given, givenFlag{name: "bench", value: "true", isBool: true})
	}
	return o.given, nil
}

// parseRepro parses a bundle's flags together with the command line's own
// (cmdline: the flags given beside --repro). A flag given on the command
// line replaces every value the bundle gives it (--inject, --case and the
// other repeatable flags included); a selection on the command line
// (--variant, --size, ...) replaces the bundle's --case. The bundle's output
// flags are dropped, and notes says so. A bundle that contradicts itself
// (its case, its rank count and its flags) is refused.
func parseRepro(path string, cmdline []givenFlag) (*Options, error) {
	b, err := repro.Read(path)
	if err != nil {
		return nil, exitcode.Usagef("--repro: %v", err)
	}
	fromBundle, err := givenFlagsOf(b.Args)
	if err != nil {
		return nil, exitcode.Usagef("--repro %s: the bundle's flags: %v", path, err)
	}
	given := map[string]bool{}
	selects := false
	for _, g := range cmdline {
		given[g.name] = true
		if g.name == "case" || slices.Contains(selectionFlags, g.name) {
			selects = true
		}
	}
	var merged, ignored []string
	var bundleCases []string
	for _, g := range fromBundle {
		if g.name == "case" {
			bundleCases = append(bundleCases, g.value)
		}
		switch {
		case bundleIgnoredFlags[g.name]:
			ignored = append(ignored, "--"+g.name)
			continue
		case given[g.name], selects && bundleCaseFlags[g.name]:
			continue
		}
		merged = append(merged, g.arg()...)
	}
	if err := checkBundle(path, b, bundleCases); err != nil {
		return nil, err
	}
	for _, g := range cmdline {
		if g.name != "repro" {
			merged = append(merged, g.arg()...)
		}
	}
	o, err := Parse(merged)
	if err != nil {
		return nil, err
	}
	o.Repro = path
	if len(ignored) > 0 {
		o.notes = append(o.notes, fmt.Sprintf("--repro %s: ignored the bundle's output flags %s (where a rerun writes comes from the command line only)",
			path, strings.Join(dedup(ignored), ", ")))
	}
	if err := o.checkBundlePlugins(path, b, given["plugin"]); err != nil {
		return nil, err
	}
	return o, nil
}

// arg is the flag as command-line words.
func (g givenFlag) arg() []string {
	if g.isBool {
		return []string{"--" + g.name + "=" + g.value}
	}
	return []string{"--" + g.name, g.value}
}

// checkBundle refuses a bundle whose case, rank count and flags disagree:
// it was edited or damaged, and rerunning it would test something else
// than it says.
func checkBundle(path string, b *repro.Bundle, flagCases []string) error {
	bad := func(format string, args ...any) error {
		return exitcode.Usagef("--repro %s: the bundle contradicts itself: %s", path, fmt.Sprintf(format, args...))
	}
	if len(flagCases) != 1 || flagCases[0] != b.Case {
		return bad("its case is %s but its flags select --case %s", b.Case, strings.Join(flagCases, ","))
	}
	if b.Ranks <= 0 {
		return bad("ranks %d", b.Ranks)
	}
	if _, np, ok := strings.Cut(b.Case[strings.LastIndex(b.Case, "/")+1:], "np"); ok && np != fmt.Sprint(b.Ranks) {
		return bad("its case %s is for np%s but it names %d ranks", b.Case, np, b.Ranks)
	}
	return nil
}

// checkBundlePlugins refuses a rerun whose plugin, loaded from the path
// the bundle names, is not the file the bundle's run loaded (its sha256
// differs): the rerun would test another kernel. A --plugin given on the
// command line is the user's choice: a differing sum is then only noted.
func (o *Options) checkBundlePlugins(path string, b *repro.Bundle, pluginOnCmdline bool) error {
	for _, p := range o.plugins {
		for _, was := range b.Header.Plugins {
			if was.Name != p.Name || was.SHA256 == "" || was.SHA256 == p.SHA256 {
				continue
			}
			msg := fmt.Sprintf("--repro %s: plugin %s (%s) has sha256 %s, the bundle's run loaded %s", path, p.Name, p.Path, short(p.SHA256), short(was.SHA256))
			if !pluginOnCmdline {
				return exitcode.Usagef("%s: the file changed since the failure; rebuild the plugin the bundle's run used, or give --plugin to rerun with this one", msg)
			}
			o.notes = append(o.notes, msg+": rerunning with the --plugin given")
		}
	}
	return nil
}

func short(sum string) string {
	if len(sum) > 12 {
		return sum[:12]
	}
	return sum
}

// rerunEffective are the flags a rerun line always writes, with the value
// this run used (which the backend may have changed from the default), so
// that the line reruns the case the same way on any backend's defaults.
var rerunEffective = map[string]func(o *Options, backendName string) string{
	"backend":        func(_ *Options, b string) string { return b },
	"seed":           func(o *Options, _ string) string { return fmt.Sprint(o.Seed) },
	"input":          func(o *Options, _ string) string { return o.Input },
	"warmup":         func(o *Options, _ string) string { return fmt.Sprint(o.Warmup) },
	"iters":          func(o *Options, _ string) string { return fmt.Sprint(o.Iters) },
	"reps":           func(o *Options, _ string) string { return fmt.Sprint(o.Reps) },
	"timeout":        func(o *Options, _ string) string { return o.Timeout },
	"device-timeout": func(o *Options, _ string) string { return o.DeviceTimeout },
	"stress":         func(o *Options, _ string) string { return fmt.Sprint(o.Stress) },
	"schedule":       func(o *Options, _ string) string { return o.sched.String() },
}

// rerunEffectiveOrder is the order rerunEffective's flags are written in.
var rerunEffectiveOrder = []string{"backend", "seed", "input", "warmup", "iters", "reps", "timeout", "device-timeout", "stress", "schedule"}

// rerunLeftOut are the flags a rerun line drops: where reports go, what is
// printed, and the case selection, which --case ID replaces (the size sweep
// and the host size cap included), and artest tune's own flags (a failing
// tune candidate reruns as an ordinary case with its launch pinned). Every
// report format's flag is one (withReportFlags).
var rerunLeftOut = withReportFlags(map[string]bool{
	"progress": true, "quiet": true, "list": true, "list-variants": true, "table": true,
	"repro": true, "repro-dir": true, "help": true, "version": true,
	"case": true, "variant": true, "coll": true, "dtype": true, "op": true, "size": true, "mode": true, "quick": true, "stress-set": true,
	"b": true, "e": true, "f": true, "minbytes": true, "maxbytes": true, "stepfactor": true, "host-max-size": true,
	"tune-blocks": true, "tune-threads": true, "tune-param": true, "launch": true, "budget": true,
	"header": true, "go": true, "merge": true,
})

// rerunArgs are the flags that rerun case id exactly as this run ran it, on
// the backend it ran on: the effective values of rerunEffective, then every
// other flag given on the command line (or in the bundle being rerun) that
// rerunLeftOut does not drop, in the order given.
func (o *Options) rerunArgs(id, backendName string) []string {
	args := []string{"--backend", backendName, "--case", id}
	for _, name := range rerunEffectiveOrder[1:] {
		if (name == "stress" || name == "schedule") && o.Stress == 0 {
			continue
		}
		value := rerunEffective[name](o, backendName)
		if name == "input" && cases.NamesSpecialInput(id) {
			value = reference.Special.String() // what the case ran with, whatever --input said
		}
		args = append(args, "--"+name, value)
	}
	if o.Bench && !o.set["bench"] {
		args = append(args, "--bench") // given as the word bench
	}
	for _, g := range o.given {
		if _, ok := rerunEffective[g.name]; ok || rerunLeftOut[g.name] {
			continue
		}
		switch {
		case g.isBool && g.value == "true":
			args = append(args, "--"+g.name)
		case g.isBool:
			args = append(args, "--"+g.name+"="+g.value)
		case g.name == "plugin":
			// The bundle may be rerun from another directory.
			path := g.value
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
			args = append(args, "--plugin", path)
		default:
			args = append(args, "--"+g.name, g.value)
		}
	}
	return args
}

// reproRoot is the folder that holds the default run folders.
const reproRoot = "artest-repro"

// reproDir is where repro bundles go: --repro-dir, else the --json file's
// directory, else this run's own folder, artest-repro/<start time> (UTC,
// to the second), which onFail creates at the first failure so that
// bundles do not pile up in the working directory.
func (o *Options) reproDir() string {
	switch {
	case o.ReproDir != "":
		return o.ReproDir
	case o.JSON != "":
		return filepath.Dir(o.JSON)
	}
	if o.runFolder == "" {
		o.runFolder = filepath.Join(reproRoot, time.Now().UTC().Format("20060102T150405Z"))
	}
	return o.runFolder
}

// reproDirDefault reports whether reproDir is the run folder, which may not
// exist yet.
func (o *Options) reproDirDefault() bool { return o.ReproDir == "" && o.JSON == "" }

// reproDirCheckable is the folder the output plan checks for the bundles:
// reproDir, or for the run folder, which is created only at the first
// failure, the nearest of it, artest-repro and "." that exists.
func (o *Options) reproDirCheckable() string {
	dir := o.reproDir()
	if !o.reproDirDefault() {
		return dir
	}
	for _, d := range []string{dir, reproRoot} {
		if _, err := os.Stat(d); err == nil {
			return d
		}
	}
	return "."
}

// reproLaunch is how this run was started, for its rerun lines: the artest
// binary by the absolute path it runs from (exe) unless artest on PATH
// (onPath, "" when there is none) is that same file; --oversubscribe when
// Open MPI exported it to the ranks (mpirun --oversubscribe sets
// OMPI_MCA_rmaps_base_oversubscribe=1 in their environment); and the
// ARTEST_* variables of the environment, which artest and plugins read
// (a plugin's planted bug among them), sorted.
func reproLaunch(environ []string, exe, onPath string) repro.Launch {
	var l repro.Launch
	if exe != "" {
		if abs, err := filepath.Abs(exe); err == nil {
			exe = abs
		}
		if !sameFile(exe, onPath) {
			l.Binary = exe
		}
	}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case name == "OMPI_MCA_rmaps_base_oversubscribe":
			l.Oversubscribe = value == "1" || strings.EqualFold(value, "true")
		case strings.HasPrefix(name, "ARTEST_"):
			l.Env = append(l.Env, kv)
		}
	}
	sort.Strings(l.Env)
	return l
}

// sameFile reports whether paths a and b name the same file.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// thisLaunch is reproLaunch for this process.
func thisLaunch() repro.Launch {
	exe, _ := os.Executable()
	onPath, _ := exec.LookPath("artest")
	return reproLaunch(os.Environ(), exe, onPath)
}

// maxReproBundles bounds the repro lines and bundles of one run.
const maxReproBundles = 20

// onFail (rank 0) prints the one-line rerun command of a failing case and
// writes its repro bundle.
func (o *Options) onFail(stderr io.Writer, ranks int, backendName string, header *report.Header, lost *string) func(report.Case) string {
	written := 0
	launch := thisLaunch()
	// Ranks that shared GPUs ran under MPS (unless --time-slicing): the
	// rerun line must start one too, or it fails for want of a server.
	launch.MPS = header.SharedGPUs != "" && !o.TimeSlicing
	return func(c report.Case) string {
		args := o.withCaseLaunch(o.rerunArgs(c.ID, backendName), c)
		command := launch.Command(ranks, args)
		// A broken kernel fails every case: the first bundles say it all,
		// and a thousand files would bury them.
		if written == maxReproBundles {
			listed := "--table full lists them all"
			if o.JSON != "" {
				listed = "--table full, or the JSON report, lists them all"
			}
			fmt.Fprintf(stderr, "artest: more failing cases: no more repro lines or bundles after %d (%s)\n", maxReproBundles, listed)
		}
		if written++; written > maxReproBundles {
			return command
		}
		b := &repro.Bundle{Case: c.ID, Ranks: ranks, Command: command, Args: args, Header: *header, Result: c}
		const keep = 8 // mismatches per rank failure: the first ones are what a reader looks at
		for i := range b.Result.Failures {
			if f := &b.Result.Failures[i]; len(f.Mismatches) > keep {
				f.Mismatches = f.Mismatches[:keep]
			}
		}
		dir := o.reproDir()
		var err error
		if o.reproDirDefault() {
			err = os.MkdirAll(dir, 0o777)
		}
		path := ""
		if err == nil {
			path, err = repro.Write(dir, b, o.Repro != "")
		}
		if err != nil {
			// The rerun line still stands; the bundle that was to carry the
			// evidence is lost, which is its own line and ends the run
			// with exit 4 (runner.Config.LostEvidence).
			fmt.Fprintf(stderr, "artest: repro %s: %s\n", c.ID, b.Command)
			fmt.Fprintf(stderr, "artest: the repro bundle of %s could not be written in %s: %v\n", c.ID, dir, err)
			if *lost == "" {
				*lost = fmt.Sprintf("the repro bundle of %s could not be written in %s: %v", c.ID, dir, err)
			}
			return command
		}
		fmt.Fprintf(stderr, "artest: repro %s: %s (bundle: %s; rerun: %s)\n", c.ID, b.Command, path,
			launch.Command(ranks, []string{"--repro", path}))
		return command
	}
}
