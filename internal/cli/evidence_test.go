package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/repro"
)

// evidenceCase is a cheap case that --inject skip-last makes fail.
const evidenceCase = "oneshot/f32/sum/4KiB/oop-reg-plain/np2"

// failOnce runs evidenceCase with a fault into dir and returns the bundle
// path the run named on stderr.
func failOnce(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	args := append([]string{"--backend", "host", "--case", evidenceCase, "--iters", "0", "--inject", "skip-last", "--repro-dir", dir}, extra...)
	res := runWorld(t, 2, same(args...))
	require.Equal(t, []int{1, 1}, res.codes, res.stderr[0])
	return bundleNamed(t, res.stderr[0])
}

// bundleNamed is the bundle path of the first "(bundle: PATH;" on stderr.
func bundleNamed(t *testing.T, stderr string) string {
	t.Helper()
	_, rest, ok := strings.Cut(stderr, "(bundle: ")
	require.True(t, ok, "stderr names no bundle:\n%s", stderr)
	path, _, _ := strings.Cut(rest, ";")
	return path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// A rerun of a rerun's bundle, and a second failing run of the same case,
// write new bundles: none replaces another.
func TestBundlesAreNeverWrittenOver(t *testing.T) {
	dir := t.TempDir()
	first := failOnce(t, dir, "--seed", "111")
	firstBody := readFile(t, first)

	second := failOnce(t, dir, "--seed", "222", "--inject", "overrun")
	require.NotEqual(t, first, second, "a second failing run of the case takes a new name")
	require.Equal(t, firstBody, readFile(t, first), "the first run's bundle is kept")
	require.Contains(t, readFile(t, second), `"222"`)

	res := runWorld(t, 2, same("--repro", first, "--seed", "8", "--repro-dir", dir))
	require.Equal(t, []int{1, 1}, res.codes, res.stderr[0])
	rerun := bundleNamed(t, res.stderr[0])
	require.True(t, strings.HasSuffix(rerun, ".rerun-1.json"), rerun)
	rerunBody := readFile(t, rerun)

	res = runWorld(t, 2, same("--repro", rerun, "--repro-dir", dir))
	require.Equal(t, []int{1, 1}, res.codes, res.stderr[0])
	rerun2 := bundleNamed(t, res.stderr[0])
	require.NotContains(t, []string{first, second, rerun}, rerun2)
	require.Equal(t, firstBody, readFile(t, first), "a rerun of a rerun keeps the original")
	require.Equal(t, rerunBody, readFile(t, rerun), "and the bundle it read")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 4, "four failing runs, four bundles, no temporary file left")
}

// Every path the run writes is resolved before the first case: two reports
// on one file, a report on an input of the run, and --jsonl onto a file
// that is not JSON Lines are refused with exit 2, and the file is kept.
func TestOutputPlanRefusesCollisions(t *testing.T) {
	dir := t.TempDir()
	bundle := failOnce(t, dir)
	jsonl := filepath.Join(dir, "history.jsonl")
	res := runWorld(t, 2, same("--backend", "host", "--case", evidenceCase, "--iters", "0", "--jsonl", jsonl))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr[0])
	reportFile := filepath.Join(dir, "report.json")
	res = runWorld(t, 2, same("--backend", "host", "--case", evidenceCase, "--iters", "0", "--json", reportFile))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr[0])
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Symlink(reportFile, link))
	junit := filepath.Join(dir, "new.xml")
	// A program (the artest binary itself, say): a report must not take
	// its place.
	tool := filepath.Join(dir, "tool")
	require.NoError(t, os.WriteFile(tool, []byte("#!/bin/sh\necho hi\n"), 0o755))

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"jsonl and json", []string{"--jsonl", jsonl, "--json", jsonl}, "--json " + jsonl + " writes that file too"},
		{"jsonl and junit", []string{"--jsonl", jsonl, "--junit", jsonl}, "writes that file too"},
		{"json and junit, new file", []string{"--json", junit, "--junit", junit}, "writes that file too"},
		{"json and gobench through a link", []string{"--json", reportFile, "--gobench", link}, "writes that file too"},
		{"a report onto the bundle read", []string{"--repro", bundle, "--json", bundle}, "that file is an input of this run (--repro"},
		{"jsonl onto a JSON report", []string{"--jsonl", reportFile}, "holds something other than an artest JSON Lines stream"},
		{"jsonl onto the bundle", []string{"--jsonl", bundle}, "input of this run"},
		{"json onto a JSONL history", []string{"--json", jsonl}, "a --jsonl history of artest runs; a report would replace it"},
		{"junit onto a JSONL history", []string{"--junit", jsonl}, "a --jsonl history"},
		{"json onto a bundle", []string{"--json", bundle}, "an artest repro bundle; a report would replace it"},
		{"json onto an executable", []string{"--json", tool}, "an executable file"},
		{"gobench onto an executable", []string{"--gobench", tool}, "an executable file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := map[string]string{jsonl: readFile(t, jsonl), reportFile: readFile(t, reportFile), bundle: readFile(t, bundle), tool: readFile(t, tool)}
			args := tc.args
			if args[0] != "--repro" {
				args = append([]string{"--backend", "host", "--case", evidenceCase, "--iters", "0"}, args...)
			}
			if tc.name == "jsonl onto the bundle" {
				args = append([]string{"--repro", bundle}, tc.args...)
			}
			res := runWorld(t, 2, same(args...))
			require.Equal(t, []int{exitcode.Usage, exitcode.Usage}, res.codes, res.stderr[0])
			require.Contains(t, res.stderr[0], tc.want)
			require.Equal(t, 1, strings.Count(strings.TrimSpace(res.stderr[0]), "\n")+1, "one line: %s", res.stderr[0])
			for path, body := range before {
				require.Equal(t, body, readFile(t, path), "%s is kept", path)
			}
			_, err := os.Stat(junit)
			require.True(t, os.IsNotExist(err), "nothing was written")
		})
	}
	// /dev/null takes any number of reports.
	res = runWorld(t, 2, same("--backend", "host", "--case", evidenceCase, "--iters", "0", "--json", "/dev/null", "--junit", "/dev/null"))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr[0])
}

// tune on a machine without a GPU runs on the host backend: it writes no
// table unless --backend host was given, and a table it writes says which
// backend measured it.
func TestTuneWritesNoHostTableUnlessAsked(t *testing.T) {
	dir := t.TempDir()
	gofile := filepath.Join(dir, "tuned.go")
	const committed = "package kernels // the GPU table\n"
	require.NoError(t, os.WriteFile(gofile, []byte(committed), 0o644))
	tuneArgs := []string{"--shm-dir", dir, "tune", "--size", "4K", "--variant", "oneshot", "--tune-blocks", "2", "--tune-threads", "256", "--go", gofile}

	res := runWorld(t, 2, same(tuneArgs...)) // --backend auto, no GPU
	require.Equal(t, []int{exitcode.Env, exitcode.Env}, res.codes, res.stderr[0])
	require.Contains(t, res.stderr[0], "a table measured on the host backend is written only with --backend host")
	require.Equal(t, committed, readFile(t, gofile))

	res = runWorld(t, 2, same(append([]string{"--backend", "host"}, tuneArgs...)...))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr[0])
	require.Contains(t, readFile(t, gofile), `Backend:  "host"`)
}

// Paths that cannot take their file are found before the first case, not
// after the sweep or after a case failed.
func TestOutputPlanFindsUnwritableTargetsFirst(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o644))
	missing := filepath.Join(dir, "missing", "t.h")
	tune := []string{"--backend", "host", "--shm-dir", dir, "tune", "--size", "4K", "--variant", "oneshot", "--tune-blocks", "2", "--tune-threads", "256"}
	run := []string{"--backend", "host", "--case", evidenceCase, "--iters", "0", "--inject", "skip-last"}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"tune header into a directory", append(tune, "--header", dir), exitcode.Usage, "is a directory"},
		{"tune header into a missing directory", append(tune, "--header", missing), exitcode.Env, "cannot create a file in"},
		{"tune go into a missing directory", append(tune, "--go", missing), exitcode.Env, "cannot create a file in"},
		{"repro-dir missing", append(run, "--repro-dir", filepath.Join(dir, "none")), exitcode.Usage, "--repro-dir"},
		{"repro-dir is a file", append(run, "--repro-dir", file), exitcode.Usage, "not a directory"},
		{"a path with a line break", append(run, "--json", filepath.Join(dir, "a\nb.json")), exitcode.Usage, "line break"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWorld(t, 2, same(tc.args...))
			require.Equal(t, []int{tc.code, tc.code}, res.codes, res.stderr[0])
			require.Contains(t, res.stderr[0], tc.want)
			require.NotContains(t, res.stdout[0], "tune", "nothing ran")
			require.NotContains(t, res.stderr[0], "repro "+evidenceCase, "no case ran")
		})
	}
}

// chattr sets an inode flag, or skips the test where the file system or
// the user cannot.
func chattr(t *testing.T, flag, path string) {
	t.Helper()
	if out, err := exec.Command("chattr", flag, path).CombinedOutput(); err != nil {
		t.Skipf("chattr %s %s: %v %s (needs root and a file system with inode flags)", flag, path, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", strings.Replace(flag, "+", "-", 1), path).Run() })
}

// An immutable report and an append-only directory pass no trial write
// that the real one would fail: they are refused before the run, and the
// refusal leaves no trial file behind.
func TestOutputPlanRefusesImmutableTargets(t *testing.T) {
	base := t.TempDir()
	immutable := filepath.Join(base, "r.json")
	require.NoError(t, os.WriteFile(immutable, []byte("{}"), 0o644))
	chattr(t, "+i", immutable)
	res := runWorld(t, 2, same("--backend", "host", "--case", evidenceCase, "--iters", "0", "--json", immutable))
	require.Equal(t, []int{exitcode.Env, exitcode.Env}, res.codes, res.stderr[0])
	require.Contains(t, res.stderr[0], "immutable or append-only")

	appendOnly := filepath.Join(base, "append-only")
	require.NoError(t, os.Mkdir(appendOnly, 0o755))
	chattr(t, "+a", appendOnly)
	res = runWorld(t, 2, same("--backend", "host", "--case", evidenceCase, "--iters", "0", "--json", filepath.Join(appendOnly, "r.json")))
	require.Equal(t, []int{exitcode.Env, exitcode.Env}, res.codes, res.stderr[0])
	entries, err := os.ReadDir(appendOnly)
	require.NoError(t, err)
	require.Empty(t, entries, "no .r.json.check-* left behind")
}

// A FIFO report needs a reader: without one the run stops at once (exit 4)
// instead of blocking before its first case; with one, the reader gets the
// report.
func TestFIFOReportNeedsAReader(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	defer func(w time.Duration) { fifoWait = w }(fifoWait)
	fifoWait = 300 * time.Millisecond
	start := time.Now()
	res := runWorld(t, 2, same("--backend", "host", "--case", evidenceCase, "--iters", "0", "--jsonl", fifo))
	require.Equal(t, []int{exitcode.Env, exitcode.Env}, res.codes, res.stderr[0])
	require.Contains(t, res.stderr[0], "a FIFO with no reader")
	require.Less(t, time.Since(start), fifoWait+10*time.Second)

	got := make(chan string, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // opens for reading: the writer's wait ends
		got <- string(b)
	}()
	res = runWorld(t, 2, same("--backend", "host", "--case", evidenceCase, "--iters", "0", "--json", fifo))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr[0])
	select {
	case body := <-got:
		var rep map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &rep), body)
		require.Contains(t, rep, "cases")
	case <-time.After(30 * time.Second):
		t.Fatal("the reader got no report")
	}
}

// writeBundle stores a hand-made bundle and returns its path.
func writeBundle(t *testing.T, dir string, b repro.Bundle) string {
	t.Helper()
	b.Format = repro.FormatVersion
	data, err := json.Marshal(b)
	require.NoError(t, err)
	path := filepath.Join(dir, "hand-made.json")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

// A bundle is data, not a command: its output flags are ignored (and the
// rerun says so), a bundle that contradicts itself is refused with the
// reason, and an unknown flag in it is said to come from the bundle.
func TestBundleIsNotObeyedAsACommand(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	require.NoError(t, os.WriteFile(victim, []byte("precious"), 0o644))
	args := []string{"--backend", "host", "--case", evidenceCase, "--iters", "0", "--json", victim, "--jsonl", victim}
	b := writeBundle(t, dir, repro.Bundle{Case: evidenceCase, Ranks: 2, Args: args})
	res := runWorld(t, 2, same("--repro", b))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr[0])
	require.Equal(t, "precious", readFile(t, victim))
	require.Contains(t, res.stderr[0], "ignored the bundle's output flags --json, --jsonl")

	for _, tc := range []struct {
		name string
		b    repro.Bundle
		want string
	}{
		{"case differs from its flags", repro.Bundle{Case: "twoshot/f32/sum/4KiB/oop-reg-plain/np2", Ranks: 2, Args: []string{"--backend", "host", "--case", evidenceCase}},
			"its case is twoshot/f32/sum/4KiB/oop-reg-plain/np2 but its flags select --case " + evidenceCase},
		{"ranks differ from the case", repro.Bundle{Case: evidenceCase, Ranks: 4, Args: []string{"--backend", "host", "--case", evidenceCase}},
			"is for np2 but it names 4 ranks"},
		{"unknown flag", repro.Bundle{Case: evidenceCase, Ranks: 2, Args: []string{"--backend", "host", "--case", evidenceCase, "--frobnicate", "1"}},
			"the bundle's flags: flag provided but not defined: -frobnicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runWorld(t, 2, same("--repro", writeBundle(t, t.TempDir(), tc.b)))
			require.Equal(t, []int{exitcode.Usage, exitcode.Usage}, res.codes, res.stderr[0])
			require.Contains(t, res.stderr[0], tc.want)
		})
	}
}

// A bundle whose plugin file changed since its run is refused: the rerun
// would test another kernel. A --plugin given beside --repro is the user's
// choice and runs with a note.
func TestBundleRefusesAChangedPlugin(t *testing.T) {
	so := buildExamplePlugin(t)
	id := "example:oneshot/f32/sum/4100B/oop-reg-plain/np2"
	b := repro.Bundle{Case: id, Ranks: 2, Args: []string{"--backend", "host", "--case", id, "--iters", "0", "--plugin", so}}
	b.Header.Plugins = append(b.Header.Plugins, report.Plugin{Name: "example", Path: so, SHA256: strings.Repeat("ab", 32)})
	path := writeBundle(t, t.TempDir(), b)
	_, err := Parse([]string{"--repro", path})
	require.Equal(t, exitcode.Usage, exitcode.Of(err))
	require.ErrorContains(t, err, "the bundle's run loaded abababababab")

	// Parse only: a plugin's state lives in the process, and one process
	// runs one world of it (the integration tests run plugins).
	o, err := Parse([]string{"--repro", path, "--plugin", so})
	require.NoError(t, err)
	require.Len(t, o.notes, 1)
	require.Contains(t, o.notes[0], "rerunning with the --plugin given")
}

// Flags beside --repro replace the bundle's: another --case runs only that
// case, another --inject only that fault, and a selection replaces the
// bundle's case (and the launch pinned for it).
func TestReproFlagsReplaceTheBundles(t *testing.T) {
	dir := t.TempDir()
	bundle := failOnce(t, dir)
	other := "twoshot/f32/sum/4KiB/oop-reg-plain/np2"

	res := runWorld(t, 2, same("--repro", bundle, "--case", other, "--table", "full"))
	require.Equal(t, []int{1, 1}, res.codes, res.stderr[0])
	require.NotContains(t, res.stdout[0], evidenceCase)
	require.Contains(t, res.stdout[0], other)

	res = runWorld(t, 2, same("--repro", bundle, "--inject", "overrun"))
	require.Equal(t, []int{1, 1}, res.codes, res.stderr[0])
	line := res.stderr[0][strings.Index(res.stderr[0], "artest: repro"):]
	line, _, _ = strings.Cut(line, "\n")
	require.Contains(t, line, "--inject overrun")
	require.NotContains(t, line, "skip-last", "the bundle's fault is replaced, not added to")

	res = runWorld(t, 2, same("--repro", bundle, "--variant", "twoshot", "--size", "4K", "--dtype", "f32", "--op", "sum", "--mode", "oop-reg-plain", "--table", "full"))
	require.NotContains(t, res.stderr[0], "drop --case")
	require.Equal(t, []int{1, 1}, res.codes, res.stderr[0])
	require.Contains(t, res.stdout[0], other)
	require.NotContains(t, res.stdout[0], evidenceCase)
}

// Small usage holes: each is one line and exit 2, or does what it says.
func TestUsageHolesAreClosed(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"reps 0 in a test run", []string{"--reps", "0"}, "--reps 0 would time nothing while the default --iters (20; 3 on the host backend) says"},
		{"reps 0 with --iters", []string{"--reps", "0", "--iters", "7"}, "--reps 0 would time nothing while --iters 7 says"},
		{"list with a report", []string{"--quick", "--list", "--json", "x.json"}, "--list prints the selected case IDs and runs nothing: --json"},
		{"tune budget NaN", []string{"tune", "--budget", "NaN"}, "--budget NaN"},
		{"tune budget inf", []string{"tune", "--budget", "+Inf"}, "--budget +Inf"},
		{"repro-dir with a line break", []string{"--repro-dir", "a\nb"}, "line break"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(append([]string{"--backend", "host"}, tc.args...))
			require.Error(t, err)
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
			require.Contains(t, err.Error(), tc.want)
		})
	}

	// Words of one mode axis are alternatives, as the help says.
	o, err := Parse([]string{"--mode", "oop,ip", "--variant", "oneshot", "--size", "4K", "--dtype", "f32", "--op", "sum"})
	require.NoError(t, err)
	res := runWorld(t, 2, same("--backend", "host", "--mode", "oop,ip", "--variant", "oneshot", "--size", "4K", "--dtype", "f32", "--op", "sum", "--list"))
	require.Contains(t, res.stdout[0], "/oop-")
	require.Contains(t, res.stdout[0], "/ip-")
	require.NotNil(t, o)
	var help strings.Builder
	printHelp(&help)
	require.Contains(t, help.String(), "words of one axis are alternatives (oop,ip: both)")

	// A -f sweep makes only sizes its dtypes can hold.
	o, err = Parse([]string{"bench", "-b", "4", "-e", "64", "-f", "1.3"})
	require.NoError(t, err)
	for _, s := range o.sel.Sizes {
		require.Zero(t, s%2, "size %d is not a whole number of bf16 elements", s)
	}
	res = runWorld(t, 2, same("--backend", "host", "bench", "-b", "4", "-e", "64", "-f", "1.3", "--iters", "1", "--reps", "1", "--variant", "oneshot"))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr[0])
}
