package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/repro"
)

// parseRepro parses a bundle's flags followed by the command line's own
// (without --repro), so that flags given on the command line win.
func parseRepro(path string, args []string) (*Options, error) {
	b, err := repro.Read(path)
	if err != nil {
		return nil, exitcode.Usagef("--repro: %v", err)
	}
	merged := append([]string(nil), b.Args...)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--repro" || a == "-repro":
			i++ // and its value
		case strings.HasPrefix(a, "--repro=") || strings.HasPrefix(a, "-repro="):
		default:
			merged = append(merged, a)
		}
	}
	o, err := Parse(merged)
	if err != nil {
		return nil, err
	}
	o.Repro = path
	return o, nil
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
// tune candidate reruns as an ordinary case with its launch pinned).
var rerunLeftOut = map[string]bool{
	"json": true, "junit": true, "jsonl": true, "plot": true, "progress": true, "list": true, "table": true, "gobench": true,
	"repro": true, "repro-dir": true, "help": true, "version": true,
	"case": true, "variant": true, "dtype": true, "op": true, "size": true, "mode": true, "quick": true,
	"b": true, "e": true, "f": true, "minbytes": true, "maxbytes": true, "stepfactor": true, "host-max-size": true,
	"tune-blocks": true, "tune-threads": true, "tune-param": true, "launch": true, "budget": true,
	"header": true, "go": true, "merge": true,
}

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
		args = append(args, "--"+name, rerunEffective[name](o, backendName))
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

// reproDir is where repro bundles go.
func (o *Options) reproDir() string {
	switch {
	case o.ReproDir != "":
		return o.ReproDir
	case o.JSON != "":
		return filepath.Dir(o.JSON)
	}
	return "."
}

// maxReproBundles bounds the repro lines and bundles of one run.
const maxReproBundles = 20

// onFail (rank 0) prints the one-line rerun command of a failing case and
// writes its repro bundle.
func (o *Options) onFail(stderr io.Writer, ranks int, backendName string, header *report.Header) func(report.Case) string {
	written := 0
	return func(c report.Case) string {
		args := o.withCaseLaunch(o.rerunArgs(c.ID, backendName), c)
		command := repro.Command(ranks, args)
		// A broken kernel fails every case: the first bundles say it all,
		// and a thousand files would bury them.
		if written == maxReproBundles {
			fmt.Fprintf(stderr, "artest: more failing cases: no more repro lines or bundles after %d (the JSON report lists them all)\n", maxReproBundles)
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
		path, err := repro.Write(o.reproDir(), b, o.Repro)
		if err != nil {
			fmt.Fprintf(stderr, "artest: repro %s: %s (%v)\n", c.ID, b.Command, err)
			return command
		}
		fmt.Fprintf(stderr, "artest: repro %s: %s (bundle: %s; rerun: %s)\n", c.ID, b.Command, path,
			report.ShellCommand([]string{"mpirun", "-np", fmt.Sprint(ranks), "artest", "--repro", path}))
		return command
	}
}
