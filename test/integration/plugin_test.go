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
	args := append([]string{"-std=c11", "-O2", "-fPIC", "-shared", "-ffp-contract=off", "-I../../plugin", "-o", out, src}, defines...)
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

func TestPluginExampleQuickMatrixPasses(t *testing.T) {
	so := buildPlugin(t, exampleHost)
	for _, np := range []int{2, 3} {
		js := filepath.Join(t.TempDir(), "r.json")
		o := mpirun(t, np, 3*time.Minute, "--plugin", so, "--variant", "example:oneshot", "--quick", "--json", js)
		require.Equal(t, 0, o.code, "np %d\n%s\n%s", np, o.stdout, o.stderr)
		require.Contains(t, o.stdout, "example:oneshot: no trace check, host watchdog only")
		rep := readReport(t, js)
		require.Len(t, rep.Header.Plugins, 1)
		require.Equal(t, so, rep.Header.Plugins[0].Path)
		require.Len(t, rep.Header.Plugins[0].SHA256, 64)
		require.NotEmpty(t, rep.Cases)
		for _, c := range rep.Cases {
			require.Equal(t, "example:oneshot", c.Variant)
			require.Equal(t, report.Pass, c.Verdict, "%s: %s", c.ID, c.Reason)
		}
	}
}

func TestPluginPlantedBugsAreCaught(t *testing.T) {
	so := buildPlugin(t, exampleHost)
	for _, tc := range []struct {
		bug  string
		args []string
	}{
		{"skip-last", []string{"--quick"}},
		{"no-end-barrier", []string{"--stress", "300", "--dtype", "f32"}},
	} {
		t.Run(tc.bug, func(t *testing.T) {
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
			mismatches := 0
			for _, c := range rep.Cases {
				for _, f := range c.Failures {
					if f.Kind == "mismatch" {
						mismatches++
					}
				}
			}
			require.Positive(t, mismatches, "the planted bug shows as wrong values")
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

func TestPluginBadLibrariesGiveOneLine(t *testing.T) {
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
