package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/tune"
)

func TestTuneUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--blocks", "8"}, "--tune-blocks"},
		{[]string{"tune", "--op", "max"}, "tune measures sum"},
		{[]string{"tune", "--launch", "eager"}, "want graph, plain or both"},
		{[]string{"tune", "--tune-threads", "100"}, "multiple of 32"},
		{[]string{"tune", "-b", "1K", "--size", "4K"}, "not both"},
		{[]string{"tune", "--variant", "nccl"}, "no custom variant"},
		{[]string{"tune", "--stress", "5"}, "do not apply"},
		{[]string{"bench", "tune"}, "exclude each other"},
		{[]string{"--tune-blocks", "8"}, "is a flag of artest tune"},
		{[]string{"--tuned", "/nonexistent/t.json"}, "--tuned"},
	} {
		_, err := Parse(tc.args)
		require.ErrorContains(t, err, tc.want, "%v", tc.args)
		require.Equal(t, exitcode.Usage, exitcode.Of(err), "%v", tc.args)
	}
	o, err := Parse([]string{"--backend", "host", "tune", "-e", "16K"})
	require.NoError(t, err)
	require.Equal(t, []int64{1 << 10, 4 << 10, 16 << 10}, o.sel.Sizes, "factor 4 from 1K")
	require.Equal(t, tuneReps, o.Reps)
	require.Equal(t, []string{"graph"}, o.Tune.launches)
}

func TestWithCaseLaunch(t *testing.T) {
	o, err := Parse([]string{"--param", "lanes=4"})
	require.NoError(t, err)
	c := report.Case{LaunchFrom: "tuned", Blocks: 8, Threads: 256, Params: map[string]uint32{"lanes": 8, "slots": 4}}
	got := o.withCaseLaunch([]string{"--case", "x"}, c)
	require.Equal(t, []string{"--case", "x", "--blocks", "8", "--threads", "256", "--param", "slots=4"}, got,
		"the user's --param lanes is in the rerun flags already")
	require.Equal(t, []string{"--case", "x"}, o.withCaseLaunch([]string{"--case", "x"}, report.Case{}), "nccl: nothing")
}

// artest tune on 2 in-process host ranks writes the three files; a run
// with --tuned reads the JSON back and launches from it, saying so per case.
func TestTuneThenRunTuned(t *testing.T) {
	dir := t.TempDir()
	js, h, gof := filepath.Join(dir, "t.json"), filepath.Join(dir, "t.h"), filepath.Join(dir, "tuned.go")
	res := runWorld(t, 2, same("--backend", "host", "--shm-dir", dir, "tune", "--size", "4K,64K", "--variant", "oneshot,twoshot",
		"--tune-blocks", "2,4", "--tune-threads", "256", "--json", js, "--header", h, "--go", gof))
	require.Equal(t, []int{0, 0}, res.codes, "%s\n%s", res.stdout[0], res.stderr[0])
	require.Contains(t, res.stdout[0], "# artest tune: 2 ranks, host backend")
	require.Contains(t, res.stdout[0], "# nccl: skipped: ")
	require.Empty(t, res.stdout[1])
	tab, err := tune.ReadTable(js)
	require.NoError(t, err)
	require.Len(t, tab.Buckets, 2)
	for _, b := range tab.Buckets {
		require.True(t, b.Finished)
		require.NotNil(t, b.Best, b.Name())
		require.Equal(t, "skipped", string(b.NCCL.Verdict))
	}
	require.Equal(t, []string{"mpirun", "-np", "2", "artest", "--backend", "host"}, tab.Provenance.Command[:6])
	for _, f := range []string{h, gof} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.Contains(t, string(b), "twoshot")
	}

	// A 3-rank run merged with the 2-rank table: one Go table of both.
	merged := filepath.Join(dir, "merged.go")
	res = runWorld(t, 3, same("--backend", "host", "--shm-dir", dir, "tune", "--size", "4K", "--variant", "oneshot",
		"--tune-blocks", "2", "--tune-threads", "256", "--merge", js, "--go", merged))
	require.Equal(t, []int{0, 0, 0}, res.codes, "%s\n%s", res.stdout[0], res.stderr[0])
	mb, err := os.ReadFile(merged)
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(mb), "{Ranks: 3, "))
	require.Equal(t, 4, strings.Count(string(mb), "{Ranks: 2, "), "oneshot and twoshot, 2 buckets")

	// A table measured on the GPUs is not merged into a host tune's: the
	// written table would mix the two under one backend's label.
	var raw map[string]any
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &raw))
	raw["provenance"].(map[string]any)["backend"] = "cuda"
	gpuTable := filepath.Join(dir, "gpu-table.json")
	b, err = json.Marshal(raw)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(gpuTable, b, 0o644))
	mixed := filepath.Join(dir, "mixed.go")
	res = runWorld(t, 2, same("--backend", "host", "--shm-dir", dir, "tune", "--size", "4K", "--variant", "oneshot",
		"--tune-blocks", "2", "--tune-threads", "256", "--merge", gpuTable, "--go", mixed))
	require.Equal(t, []int{2, 2}, res.codes, "%s\n%s", res.stdout[0], res.stderr[0])
	require.Contains(t, res.stderr[0], "its table was measured on the cuda backend and this tune runs on host")
	require.NoFileExists(t, mixed)

	rep := filepath.Join(dir, "run.json")
	res = runWorld(t, 2, same("--backend", "host", "--shm-dir", dir, "--tuned", js, "--variant", "oneshot,twoshot",
		"--size", "4K,64K", "--dtype", "bf16", "--op", "sum", "--mode", "oop,reg,graph", "--json", rep))
	require.Equal(t, []int{0, 0}, res.codes, "%s\n%s", res.stdout[0], res.stderr[0])
	r := readReport(t, rep)
	require.True(t, strings.HasPrefix(r.Header.Tuned, "artest tune "), r.Header.Tuned)
	require.Len(t, r.Cases, 4)
	tt := tab.Tuned()
	for _, c := range r.Cases {
		e, ok := tt.Lookup(c.Variant, 2, "bf16", true, c.Bytes)
		require.True(t, ok, c.ID)
		require.Equal(t, "tuned", c.LaunchFrom, c.ID)
		require.Equal(t, e.Threads, c.Threads, c.ID)
		require.Equal(t, e.Blocks, c.Blocks, "%s: the bucket's own size launches its grid", c.ID)
	}
	// Without a table (the host default), the registry's launch.
	res = runWorld(t, 2, same("--backend", "host", "--shm-dir", dir, "--variant", "oneshot", "--size", "2K",
		"--dtype", "bf16", "--op", "sum", "--mode", "oop,reg,plain", "--json", rep))
	require.Equal(t, []int{0, 0}, res.codes)
	r = readReport(t, rep)
	require.Empty(t, r.Header.Tuned)
	require.Equal(t, "default", r.Cases[0].LaunchFrom)
	require.Equal(t, 512, r.Cases[0].Threads)
}

// A failing case's repro line carries the launch it ran with.
func TestReproCarriesTheLaunch(t *testing.T) {
	dir := t.TempDir()
	res := runWorld(t, 2, same("--backend", "host", "--shm-dir", dir, "--variant", "oneshot", "--size", "4K",
		"--dtype", "bf16", "--op", "sum", "--mode", "oop,reg,plain", "--inject", "skip-last"))
	require.Equal(t, []int{1, 1}, res.codes, "%s\n%s", res.stdout[0], res.stderr[0])
	require.Regexp(t, `--case oneshot/bf16/sum/4KiB/oop-reg-plain/np2 .* --blocks 4 --threads 512 \(bundle`, res.stderr[0], "the host grid: HostBlocks")
}
