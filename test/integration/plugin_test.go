//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/repro"
)

// buildPlugin compiles a C plugin with cc into a temporary directory, as a
// kernel author builds the host twin (plugin/README.md).
func buildPlugin(t *testing.T, src string, defines ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "plugin.so")
	args := append([]string{"-std=c11", "-O2", "-fPIC", "-shared", "-ffp-contract=off", "-Wl,--no-undefined", "-I../../plugin", "-o", out, src}, defines...)
	msg, err := exec.Command("cc", args...).CombinedOutput()
	require.NoError(t, err, "cc: %s", msg)
	return out
}

const exampleHost = "../../plugin/example/host_oneshot.c"
const badPlugin = "../../internal/plugin/testdata/bad.c"

// noGoTrace: artest's errors are lines, never a Go stack dump.
func noGoTrace(t *testing.T, o outcome) {
	t.Helper()
	require.NotContains(t, o.stderr, "goroutine ")
	require.NotContains(t, o.stderr, "panic:")
}

// The example passes its quick matrix with the device helpers declared
// (the trace word checked after every check of the output) and, built
// with -DEXAMPLE_NO_DEVICE_INFO, as a plugin without them.
func TestPluginExampleQuickMatrixPasses(t *testing.T) {
	t.Parallel()
	withHelpers := buildPlugin(t, exampleHost)
	without := buildPlugin(t, exampleHost, "-DEXAMPLE_NO_DEVICE_INFO")
	for _, tc := range []struct {
		so     string
		np     int
		checks string
	}{
		{withHelpers, 2, "trace check, device deadlines"},
		{withHelpers, 3, "trace check, device deadlines"},
		{without, 2, "no trace check, host watchdog only"},
	} {
		js := filepath.Join(t.TempDir(), "r.json")
		o := mpirun(t, tc.np, 3*time.Minute, "--plugin", tc.so, "--variant", "example:oneshot", "--quick", "--json", js)
		require.Equal(t, 0, o.code, "np %d\n%s\n%s", tc.np, o.stdout, o.stderr)
		require.Contains(t, o.stdout, "example:oneshot: "+tc.checks+"\n")
		rep := readReport(t, js)
		require.Len(t, rep.Header.Plugins, 1)
		require.Equal(t, tc.so, rep.Header.Plugins[0].Path)
		require.Len(t, rep.Header.Plugins[0].SHA256, 64)
		require.Equal(t, tc.checks, rep.Header.Plugins[0].Checks)
		require.Equal(t, []string{tc.checks}, rep.Header.Plugins[0].VariantChecks)
		require.NotEmpty(t, rep.Cases)
		for _, c := range rep.Cases {
			require.Equal(t, "example:oneshot", c.Variant)
			require.Equal(t, report.Pass, c.Verdict, "%s: %s", c.ID, c.Reason)
		}
	}
}

func TestPluginPlantedBugsAreCaught(t *testing.T) {
	t.Parallel()
	so := buildPlugin(t, exampleHost)
	for _, tc := range []struct {
		bug  string
		args []string
		kind string // the failure kind every failing case shows
		text string // in its detail
	}{
		{"skip-last", []string{"--quick"}, "mismatch", ""},
		{"no-end-barrier", []string{"--stress", "300", "--dtype", "f32"}, "mismatch", ""},
		// The trace check: right values, but the kernel did not say it ran.
		{"no-trace", []string{"--quick", "--dtype", "f32"}, "trace", "the case names example:oneshot (id 0x8336b82b) but no kernel wrote the trace word"},
		// No bug planted: artest's wrong-kernel switch runs its own oneshot
		// in the plugin variant's place, with the same values.
		{"", []string{"--quick", "--dtype", "f32", "--op", "sum", "--inject", "wrong-kernel"}, "trace", "but the kernel that ran wrote oneshot (id 0x51)"},
	} {
		name := tc.bug
		if name == "" {
			name = "inject wrong-kernel"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			js := filepath.Join(dir, "r.json")
			full := []string{"-np", "2", "--oversubscribe", "-x", "ARTEST_EXAMPLE_BUG=" + tc.bug,
				binary(t), "--backend", "host", "--repro-dir", dir,
				"--plugin", so, "--variant", "example:oneshot", "--json", js}
			full = append(full, tc.args...)
			o := run(t, 3*time.Minute, "mpirun", full...)
			require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
			noGoTrace(t, o)
			rep := readReport(t, js)
			found := 0
			for _, c := range rep.Cases {
				for _, f := range c.Failures {
					if f.Kind == tc.kind && strings.Contains(f.Detail, tc.text) {
						found++
					}
				}
			}
			require.Positive(t, found, "the planted bug shows as a %s failure", tc.kind)
			// The repro bundle names the plugin and its sum; its rerun
			// line loads it again.
			bundles, err := filepath.Glob(filepath.Join(dir, "artest-repro-*.json"))
			require.NoError(t, err)
			require.NotEmpty(t, bundles)
			b, err := repro.Read(bundles[0])
			require.NoError(t, err)
			require.Equal(t, rep.Header.Plugins, b.Header.Plugins)
			require.Contains(t, b.Command, "--plugin "+so)
		})
	}
}

// The planted hang: the last rank never tells its peers it reached the
// start barrier. With the device helpers its peers give up at
// --device-timeout, and the diagnosis names the block, the wait point and
// the rank (exit 3) long before the host watchdog; without them (the
// example built with -DEXAMPLE_NO_DEVICE_INFO) only the host watchdog
// ends it, naming the call.
func TestPluginHangIsDiagnosed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		defines []string
		args    []string
		within  time.Duration
		want    []string // regular expressions
		not     string
	}{
		{"device deadline", nil, []string{"--device-timeout", "1s", "--timeout", "60s"}, 30 * time.Second,
			[]string{`hang in case example:oneshot/f32/sum/4B/oop-reg-plain/np2: on rank 0, a kernel block of .* gave up waiting after the device timeout 1s`,
				`rank 0 block 0 gave up after \d+\.\ds in example:oneshot at "start barrier" waiting for rank 1 \(word 0, want 1\)`},
			"has not returned"},
		{"host watchdog", []string{"-DEXAMPLE_NO_DEVICE_INFO"}, []string{"--device-timeout", "1s", "--timeout", "3s"}, 60 * time.Second,
			[]string{`hang in case example:oneshot/f32/sum/4B/oop-reg-plain/np2: rank 0 saw no completion of .* within 3s`,
				`plugin example \(.*\): allreduce of example:oneshot \(f32 sum, 1 elements\) has not returned`},
			"gave up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			so := buildPlugin(t, exampleHost, tc.defines...)
			dir := t.TempDir()
			jl := filepath.Join(dir, "r.jsonl")
			full := []string{"-np", "2", "--oversubscribe", "-x", "ARTEST_EXAMPLE_BUG=hang",
				binary(t), "--backend", "host", "--repro-dir", dir, "--plugin", so, "--variant", "example:oneshot",
				"--quick", "--dtype", "f32", "--op", "sum", "--jsonl", jl}
			start := time.Now()
			o := run(t, 2*time.Minute, "mpirun", append(full, tc.args...)...)
			took := time.Since(start)
			require.Equal(t, 3, o.code, "%s\n%s", o.stdout, o.stderr)
			require.Less(t, took, tc.within)
			noGoTrace(t, o)
			for _, w := range tc.want {
				require.Regexp(t, w, o.stderr)
			}
			require.NotContains(t, o.stderr, tc.not)
			// The hung case is in the report, with the diagnosis.
			f, err := os.Open(jl)
			require.NoError(t, err)
			defer f.Close()
			rep, _, err := report.ReadJSONL(f)
			require.NoError(t, err)
			require.NotEmpty(t, rep.Cases)
			hung := rep.Cases[len(rep.Cases)-1]
			require.Equal(t, report.Hung, hung.Verdict)
			require.Regexp(t, tc.want[len(tc.want)-1], hung.Reason)
		})
	}
}

// The planted calls that never return: the last rank's call spins forever
// outside artest's deadline ("spin") or blocks in a sleep, as a call that
// waits for its own hung kernel does ("spin-sync"). Behind it the last
// rank's stream never drains: in a stress batch its launches block once
// the stream's queue is full, its main thread never comes back to wait,
// and only the watchdog, on a goroutine of its own, ends the job: exit 3
// once the stream finished nothing within --timeout while the main thread
// waited in a launch (within --timeout plus the grace, 10 s, in any case),
// one line per rank naming the case, the calls in flight and the call it
// is in, and every report written with the hung case. A quick case's stream times out first and
// its diagnosis names the plugin's call.
func TestPluginCallThatNeverReturnsEndsTheJob(t *testing.T) {
	t.Parallel()
	const within = 40 * time.Second // --timeout 2s, the grace of 10 s, start-up and abort on a busy machine
	for _, tc := range []struct {
		name, bug, mode string
		stress          bool
		want            []string // regular expressions on stderr
	}{
		{"spin, stress, plain", "spin", "oop-reg-plain", true, []string{
			`artest: watchdog: rank 1: .*; case example:oneshot/f32/sum/4KiB/oop-reg-plain/np2; main thread inside .* for \d`,
			`artest: watchdog: rank 0: .*; case example:oneshot/f32/sum/4KiB/oop-reg-plain/np2; main thread inside .*; \d+ call\(s\) enqueued since the stream last finished`,
			`its stream finished nothing within --timeout 2s while the main thread waited inside a call`,
		}},
		{"spin-sync, stress, graph", "spin-sync", "oop-reg-graph", true, []string{
			`artest: watchdog: rank 1: .*; case example:oneshot/f32/sum/4KiB/oop-reg-graph/np2; main thread inside the replay of a graph of \d+ call\(s\)`,
			`artest: watchdog: rank 0: `,
		}},
		{"spin, quick, graph", "spin", "oop-reg-graph", false, []string{
			`hang in case example:oneshot/f32/sum/4KiB/oop-reg-graph/np2: rank \d saw no completion of .* within 2s`,
			`plugin example \(.*\): allreduce of example:oneshot \(f32 sum, 1024 elements\) has not returned`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			so := buildPlugin(t, exampleHost)
			dir := t.TempDir()
			js, ju, jl := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.jsonl")
			args := []string{"-np", "2", "--oversubscribe", "-x", "ARTEST_EXAMPLE_BUG=" + tc.bug,
				binary(t), "--backend", "host", "--repro-dir", dir, "--plugin", so, "--variant", "example:oneshot",
				"--size", "4K", "--dtype", "f32", "--op", "sum", "--mode", tc.mode, "--timeout", "2s",
				"--json", js, "--junit", ju, "--jsonl", jl}
			if tc.stress {
				args = append(args, "--stress", "2000")
			}
			start := time.Now()
			o := run(t, 2*time.Minute, "mpirun", args...)
			took := time.Since(start)
			require.Equal(t, 3, o.code, "%s\n%s", o.stdout, o.stderr)
			require.Less(t, took, within)
			noGoTrace(t, o)
			for _, w := range tc.want {
				require.Regexp(t, w, o.stderr)
			}
			f, err := os.Open(js)
			require.NoError(t, err)
			defer f.Close()
			rep, err := report.ReadJSON(f)
			require.NoError(t, err)
			require.Equal(t, 3, rep.Summary.ExitCode)
			require.NotEmpty(t, rep.Cases)
			hung := rep.Cases[len(rep.Cases)-1]
			require.Equal(t, report.Hung, hung.Verdict)
			require.Regexp(t, tc.want[0], "artest: "+strings.ReplaceAll(hung.Reason, "\n  ", "\nartest: "))
			g, err := os.Open(jl)
			require.NoError(t, err)
			defer g.Close()
			streamed, complete, err := report.ReadJSONL(g)
			require.NoError(t, err)
			require.True(t, complete, "the JSON Lines file is closed with the summary")
			require.Equal(t, report.Hung, streamed.Cases[len(streamed.Cases)-1].Verdict)
			xml, err := os.ReadFile(ju)
			require.NoError(t, err)
			require.Contains(t, string(xml), "hang in case example:oneshot/")
			bundles, err := filepath.Glob(filepath.Join(dir, "artest-repro-*.json"))
			require.NoError(t, err)
			require.Len(t, bundles, 1, "the hung case's bundle")
		})
	}
}

// A plugin that declares no control region (control_bytes 0, as the PCIe
// IPC adapter does) gets none, and its calls run: the copy plugin is right
// at one rank.
func TestPluginWithoutControlRegionRuns(t *testing.T) {
	t.Parallel()
	so := buildPlugin(t, badPlugin, "-DCONTROL_BYTES=0")
	o := mpirun(t, 1, time.Minute, "--plugin", so, "--variant", "bad:copy", "--quick", "--dtype", "f32", "--op", "sum")
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.NotContains(t, o.stdout+o.stderr, "no control regions")
	require.Regexp(t, `pass [1-9]\d*, FAIL 0`, o.stdout)
}

func TestPluginBadLibrariesGiveOneLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		path    func(t *testing.T) string
		code    int
		line    string
		timeout string
	}{
		{"missing file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none.so") }, 2, "no such file", ""},
		{"no entry symbol", func(t *testing.T) string { return buildPlugin(t, badPlugin, "-DNO_ENTRY") }, 2, "no artest_plugin_v1", ""},
		{"wrong ABI version", func(t *testing.T) string { return buildPlugin(t, badPlugin, "-DABI=2") }, 2, "ABI version 2", ""},
		{"setup error", func(t *testing.T) string { return buildPlugin(t, badPlugin, "-DSETUP_FAIL") }, 1, "setup returned status 7: no peers today", ""},
		// Setup fails on rank 1 alone: the ranks agree on it at set-up, and
		// every rank's cases of the plugin fail at once with rank 1's
		// error, not as a hang after --timeout (60 s on the host).
		{"setup error on one rank", func(t *testing.T) string { return buildPlugin(t, badPlugin, "-DSETUP_FAIL_RANK=1") }, 1, "setup returned status 7: no peers today on this rank", ""},
		{"allreduce error", func(t *testing.T) string { return buildPlugin(t, badPlugin, "-DCALL_FAIL") }, 1, "allreduce of bad:copy returned status 9: count out of range", ""},
		{"crash", func(t *testing.T) string { return buildPlugin(t, badPlugin, "-DCRASH") }, 1, "allreduce of bad:copy crashed with SIGSEGV", ""},
		{"hang", func(t *testing.T) string { return buildPlugin(t, badPlugin, "-DHANG") }, 3, "allreduce of bad:copy (f32 sum, 16384 elements) has not returned", "2s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			so := tc.path(t)
			jl := filepath.Join(t.TempDir(), "r.jsonl")
			args := []string{"--plugin", so, "--variant", "oneshot,bad:copy", "--quick", "--dtype", "f32", "--op", "sum", "--jsonl", jl}
			if tc.timeout != "" {
				args = append(args, "--timeout", tc.timeout)
			}
			o := mpirun(t, 2, 3*time.Minute, args...)
			require.Equal(t, tc.code, o.code, "%s\n%s", o.stdout, o.stderr)
			noGoTrace(t, o)
			named := 0
			for _, l := range artestLines(o.stderr) {
				if strings.Contains(l, so) && strings.Contains(l, tc.line) {
					named++
				}
			}
			all := o.stdout + o.stderr
			require.True(t, named > 0 || (strings.Contains(all, so) && strings.Contains(all, tc.line)),
				"a line names the plugin and the call\n%s\n%s", o.stdout, o.stderr)
			if tc.code == 2 {
				return // refused before any case
			}
			// Every oneshot case ran before the plugin's and is kept.
			f, err := os.Open(jl)
			require.NoError(t, err)
			defer f.Close()
			rep, _, err := report.ReadJSONL(f)
			require.NoError(t, err)
			kept := 0
			for _, c := range rep.Cases {
				if c.Variant == "oneshot" {
					require.Equal(t, report.Pass, c.Verdict, c.ID)
					kept++
				}
			}
			require.Equal(t, 20, kept, "the oneshot cases of the quick matrix at f32 sum (5 sizes x 4 modes)")
		})
	}
}

// artest's fault switches live in its own kernels: a plugin's cases under
// one are skipped with the reason, never run clean and reported as a pass
// (which would read as the fault going unnoticed).
func TestPluginCasesSkipArtestsFaultSwitches(t *testing.T) {
	t.Parallel()
	so := buildPlugin(t, exampleHost)
	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	o := run(t, 2*time.Minute, "mpirun", "-np", "2", "--oversubscribe", binary(t), "--backend", "host",
		"--plugin", so, "--variant", "example:oneshot,oneshot", "--quick", "--dtype", "f32", "--op", "sum",
		"--inject", "skip-last", "--json", js)
	require.Equal(t, 1, o.code, "artest's oneshot fails the switch:\n%s\n%s", o.stdout, o.stderr)
	noGoTrace(t, o)
	plugin := 0
	for _, c := range readReport(t, js).Cases {
		if c.Variant != "example:oneshot" {
			require.Equal(t, report.Fail, c.Verdict, c.ID)
			continue
		}
		plugin++
		require.Equal(t, report.Skipped, c.Verdict, c.ID)
		require.Equal(t, "--inject skip-last: a switch in artest's own kernels, which a plugin's kernel does not have", c.Reason, c.ID)
	}
	require.Positive(t, plugin)
}

// A plugin that declares staging keeps it to itself: the example built to
// keep state there between calls (a pattern after the largest message it
// takes, checked on every rank at every call; a lost pattern makes the call
// write NaN) passes a case, then twoshot's or ring's 4 MiB case uses the
// shared staging buffers as scratch far past that pattern's offset, and
// the example's next case still passes. With the shared staging it was
// given before, that next case failed (NaN at element 0).
func TestPluginDeclaredStagingIsPrivate(t *testing.T) {
	t.Parallel()
	so := buildPlugin(t, exampleHost, "-DEXAMPLE_STAGING_STATE")
	for _, v := range []string{"twoshot", "ring"} {
		t.Run(v, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "r.json")
			o := mpirun(t, 2, 3*time.Minute, "--plugin", so, "--json", js,
				"--case", "example:oneshot/f32/sum/64KiB/oop-reg-plain/np2",
				"--case", v+"/f32/sum/4MiB/oop-reg-plain/np2",
				"--case", "example:oneshot/f32/sum/64KiB/ip-reg-plain/np2")
			require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
			r := readReport(t, js)
			require.Len(t, r.Cases, 3)
			for _, c := range r.Cases {
				require.Equal(t, "pass", string(c.Verdict), c.ID)
			}
			require.Equal(t, "example:oneshot/f32/sum/64KiB/ip-reg-plain/np2", r.Cases[2].ID, "the plugin's case after the other variant's")
		})
	}
}

// A plugin's own fault switches (artest_faults_v1) are named with --inject
// PLUGIN:NAME: the example's planted bugs, chosen so instead of with its
// environment variable, are caught; every other variant's cases are
// skipped (they have no such switch, and would pass); an unknown name is
// one line and exit 2, listing the plugin's switches.
func TestPluginFaultSwitchesAreNameable(t *testing.T) {
	t.Parallel()
	so := buildPlugin(t, exampleHost)
	for _, tc := range []struct {
		inject string
		args   []string
	}{
		{"example:skip-last", []string{"--quick", "--variant", "example:oneshot,oneshot", "--op", "sum"}},
		{"example:no-end-barrier", []string{"--stress", "300", "--variant", "example:oneshot"}},
	} {
		t.Run(tc.inject, func(t *testing.T) {
			dir := t.TempDir()
			js := filepath.Join(dir, "r.json")
			args := append([]string{"-np", "2", "--oversubscribe", binary(t), "--backend", "host", "--repro-dir", dir,
				"--plugin", so, "--dtype", "f32", "--inject", tc.inject, "--json", js}, tc.args...)
			o := run(t, 3*time.Minute, "mpirun", args...)
			require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
			noGoTrace(t, o)
			failed := 0
			for _, c := range readReport(t, js).Cases {
				if c.Variant != "example:oneshot" {
					require.Equal(t, report.Skipped, c.Verdict, c.ID)
					require.Equal(t, "--inject "+tc.inject+": a switch of another plugin's, which oneshot does not have", c.Reason, c.ID)
					continue
				}
				if c.Verdict == report.Fail {
					require.Equal(t, "mismatch", c.Failures[0].Kind, c.ID)
					failed++
				}
			}
			require.Positive(t, failed, "the planted bug is caught")
			bundles, err := filepath.Glob(filepath.Join(dir, "artest-repro-*.json"))
			require.NoError(t, err)
			require.NotEmpty(t, bundles)
			b, err := repro.Read(bundles[0])
			require.NoError(t, err)
			require.Contains(t, b.Command, "--inject "+tc.inject)
		})
	}
	t.Run("unknown", func(t *testing.T) {
		o := run(t, time.Minute, binary(t), "--backend", "host", "--plugin", so, "--inject", "example:nope")
		require.Equal(t, 2, o.code, "%s\n%s", o.stdout, o.stderr)
		noGoTrace(t, o)
		require.Contains(t, o.stderr, `unknown --inject "example:nope" (valid: `)
		require.Contains(t, o.stderr, "example:skip-last, example:no-end-barrier, example:no-trace")
		require.Equal(t, 1, strings.Count(strings.TrimSpace(o.stderr), "\n")+1, o.stderr)
	})
}
