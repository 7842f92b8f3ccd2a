//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// artest bench on 2 host ranks writes the bench table, a JSON report with
// every repetition, and the plot; artest compare, run without mpirun, passes
// a report against itself and against a copy whose times doubled (host
// times are not speed: verdicts alone are judged), and fails the doubled
// copy when both say they ran on the cuda backend.
func TestBenchThenCompare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	js, svg := filepath.Join(dir, "bench.json"), filepath.Join(dir, "bench.svg")
	o := mpirun(t, 2, 3*time.Minute, "bench", "-b", "4", "-e", "64K", "-f", "4", "--variant", "oneshot,twoshot,nccl",
		"--json", js, "--plot", svg)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	for _, want := range []string{
		"# bench: time is per call",
		"the maximum over ranks (--agg max)",
		"# host backend: these times measure Go models",
		"# comparison bf16 sum oop-reg, CUDA graph replays",
	} {
		require.Contains(t, o.stdout, want)
	}
	r := readReport(t, js)
	require.True(t, r.Header.Bench)
	var timed int
	for _, c := range r.Cases {
		if c.Timing != nil {
			timed++
			require.Len(t, c.Timing.RankUS, 2, c.ID)
		}
	}
	require.Equal(t, 2*2*8, timed, "oneshot and twoshot, plain and graph, 8 sizes")
	plot, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.Contains(t, string(plot), "<svg")

	same := run(t, time.Minute, binary(t), "compare", js, js)
	require.Equal(t, 0, same.code, "%s\n%s", same.stdout, same.stderr)
	require.Contains(t, same.stdout, "host times are not speed and are not judged")
	require.Contains(t, same.stdout, " compared by verdict: 0 FAILS, 0 SKIPPED, 0 missing")

	// The same report with every time doubled (and bandwidths halved),
	// and both again with their header's backend set to cuda.
	rewrite := func(name string, scale float64, backend string) string {
		var raw map[string]any
		b, err := os.ReadFile(js)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &raw))
		for _, c := range raw["cases"].([]any) {
			m := c.(map[string]any)
			if us, ok := m["time_us"].(float64); ok {
				m["time_us"] = scale * us
				m["algbw_gbps"] = m["algbw_gbps"].(float64) / scale
				m["busbw_gbps"] = m["busbw_gbps"].(float64) / scale
			}
		}
		raw["header"].(map[string]any)["backend"] = backend
		p := filepath.Join(dir, name)
		b, err = json.Marshal(raw)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	slower := rewrite("slower.json", 2, "host")
	hostSlower := run(t, time.Minute, binary(t), "compare", js, slower)
	require.Equal(t, 0, hostSlower.code, "%s\n%s", hostSlower.stdout, hostSlower.stderr)
	require.NotContains(t, hostSlower.stdout, "SLOWER")
	require.Equal(t, 2*2*8, strings.Count(hostSlower.stdout, "+100.0%"), "the times are shown")
	worse := run(t, time.Minute, binary(t), "compare", rewrite("cuda.json", 1, "cuda"), rewrite("cuda-slower.json", 2, "cuda"))
	require.Equal(t, 1, worse.code, "%s\n%s", worse.stdout, worse.stderr)
	require.Equal(t, 2*2*8, strings.Count(worse.stdout, "SLOWER: time +100.0%"))

	bad := run(t, time.Minute, binary(t), "compare", js, filepath.Join(dir, "missing.json"))
	require.Equal(t, 2, bad.code)
	require.Equal(t, 1, strings.Count(bad.stderr, "\n"), bad.stderr)
}

// artest bench with the example plugin on 2 host ranks: the plugin's
// variant is the fieldbest (nccl does not run on the host backend), the
// table has the fieldbest blocks, every passing own case carries its gain
// in the JSON report, the plot has the plugin family and the gain panel,
// and compare still passes the report against itself.
func TestBenchWithPluginHasFieldBest(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	js, svg := filepath.Join(dir, "bench.json"), filepath.Join(dir, "bench.svg")
	so := buildPlugin(t, exampleHost)
	o := mpirun(t, 2, 3*time.Minute, "bench", "-b", "4K", "-e", "64K", "-f", "4", "--variant", "oneshot,twoshot,nccl,example:oneshot",
		"--plugin", so, "--json", js, "--plot", svg)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	for _, want := range []string{
		"# fieldbest bf16 sum oop-reg, plain launches",
		"# fieldbest bf16 sum oop-reg, CUDA graph replays",
	} {
		require.Contains(t, o.stdout, want)
	}
	r := readReport(t, js)
	var own int
	for _, c := range r.Cases {
		if c.Variant != "oneshot" && c.Variant != "twoshot" {
			require.Empty(t, c.FieldBestVariant, c.ID)
			continue
		}
		require.Equal(t, "example:oneshot", c.FieldBestVariant, c.ID)
		require.Positive(t, c.FieldBestTimeUS, c.ID)
		require.InDelta(t, c.FieldBestTimeUS/c.TimeUS, c.FieldBestGain, 1e-4*c.FieldBestGain, c.ID)
		own++
	}
	require.Equal(t, 2*2*3, own, "oneshot and twoshot, plain and graph, 3 sizes")
	plot, err := os.ReadFile(svg)
	require.NoError(t, err)
	for _, want := range []string{">plugins<", ">example:oneshot<", "gain over fieldbest"} {
		require.Contains(t, string(plot), want)
	}
	same := run(t, time.Minute, binary(t), "compare", js, js)
	require.Equal(t, 0, same.code, "%s\n%s", same.stdout, same.stderr)
}
