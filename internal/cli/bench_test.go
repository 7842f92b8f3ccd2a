package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/reference"
)

func TestParseBench(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		sizes []int64
		reps  int
	}{
		{"subcommand word with a sweep", []string{"bench", "-b", "4", "-e", "64K", "-f", "4"}, []int64{4, 16, 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10}, benchReps},
		{"--bench flag, nccl-tests long names", []string{"--bench", "--minbytes", "1M", "--maxbytes", "4M", "--stepfactor", "2"}, []int64{1 << 20, 2 << 20, 4 << 20}, benchReps},
		{"default sweep", []string{"bench"}, nil, benchReps},
		{"--size instead of a sweep", []string{"bench", "--size", "4K,1M", "--reps", "7"}, []int64{4 << 10, 1 << 20}, 7},
		{"end not on the factor's grid", []string{"bench", "-b", "1K", "-e", "5K", "-f", "2"}, []int64{1 << 10, 2 << 10, 4 << 10}, benchReps},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := Parse(tt.args)
			require.NoError(t, err)
			require.True(t, o.Bench)
			if tt.sizes != nil {
				require.Equal(t, tt.sizes, o.sel.Sizes)
			} else {
				require.Len(t, o.sel.Sizes, 19, "1 KiB to 256 MiB by 2")
				require.True(t, o.benchDefaultSizes)
			}
			require.Equal(t, []reference.DType{reference.BF16}, o.sel.DTypes)
			require.Equal(t, []reference.Op{reference.Sum}, o.sel.Ops)
			require.Equal(t, benchModeWords, o.sel.ModeWords)
			require.Equal(t, tt.reps, o.Reps)
			require.Equal(t, report.AggMax, o.agg)
		})
	}
}

func TestParseBenchKeepsExplicitSelection(t *testing.T) {
	o, err := Parse([]string{"bench", "--dtype", "f32", "--op", "max", "--mode", "ip", "--variant", "oneshot", "--agg", "avg"})
	require.NoError(t, err)
	require.Equal(t, []reference.DType{reference.F32}, o.sel.DTypes)
	require.Equal(t, []reference.Op{reference.Max}, o.sel.Ops)
	require.Equal(t, []string{"ip"}, o.sel.ModeWords)
	require.Equal(t, report.AggAvg, o.agg)

	o, err = Parse([]string{"--agg", "min", "--plot", "x.png"})
	require.NoError(t, err, "--agg and --plot also work outside bench")
	require.False(t, o.Bench)
	require.Equal(t, report.AggMin, o.agg)
}

func TestParseBenchUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"sweep outside bench", []string{"-b", "4"}, "run artest bench"},
		{"stress", []string{"bench", "--stress", "10"}, "--stress and bench exclude each other"},
		{"quick", []string{"bench", "--quick"}, "--quick is not a bench option"},
		{"no iterations", []string{"bench", "--iters", "0"}, "above 0"},
		{"no repetitions", []string{"bench", "--reps", "0"}, "above 0"},
		{"sweep and --size", []string{"bench", "-b", "4", "--size", "8"}, "not both"},
		{"factor 1", []string{"bench", "-f", "1"}, "want a factor above 1"},
		{"factor not a number", []string{"bench", "-f", "x2"}, "want a factor above 1"},
		{"end below begin", []string{"bench", "-b", "1M", "-e", "1K"}, "-e 1K is below -b 1M"},
		{"bad begin", []string{"bench", "-b", "1Q"}, "-b: bad size"},
		{"bad aggregation", []string{"--agg", "median"}, "unknown aggregation"},
		{"plot format", []string{"bench", "--plot", "x.pdf"}, "want a file ending in .svg or .png"},
		{"compare is not a run flag", []string{"bench", "compare"}, "unexpected argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.args)
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
		})
	}
}

func TestBenchOnHostCapsTheDefaultSweep(t *testing.T) {
	o, err := Parse([]string{"bench"})
	require.NoError(t, err)
	o.benchOnHost()
	require.Equal(t, int64(2<<20), o.sel.Sizes[len(o.sel.Sizes)-1], "--host-max-size")
	require.Equal(t, benchHostReps, o.Reps)

	o, err = Parse([]string{"bench", "-e", "8M", "--reps", "2"})
	require.NoError(t, err)
	o.benchOnHost()
	require.Equal(t, int64(8<<20), o.sel.Sizes[len(o.sel.Sizes)-1], "an explicit sweep is not capped")
	require.Equal(t, 2, o.Reps)
}

// The whole bench on 2 in-process ranks of the host backend: the table,
// the JSON with every repetition and sampled call, the plot.
func TestBenchOnHostEndToEnd(t *testing.T) {
	dir := t.TempDir()
	js, svg := filepath.Join(dir, "b.json"), filepath.Join(dir, "b.svg")
	res := runWorld(t, 2, same("--backend", "host", "bench", "-b", "1K", "-e", "16K", "-f", "4", "--variant", "oneshot,twoshot,nccl",
		"--iters", "4", "--json", js, "--plot", svg))
	require.False(t, res.aborted, res.stderr)
	require.Equal(t, []int{0, 0}, res.codes, "stderr: %v\nstdout: %s", res.stderr, res.stdout[0])
	out := res.stdout[0]
	for _, want := range []string{
		"# bench: time is per call, the median over 3 repetitions of 4 back-to-back calls after 1 warm-up call;\n",
		"(--agg max)",
		"# host backend: these times measure Go models",
		"plain launches",
		"CUDA graph replays",
		"# comparison bf16 sum oop-reg, plain launches",
		"# variant nccl: 6 cases, pass 0, FAIL 0, skipped 6\n",
	} {
		require.Contains(t, out, want)
	}

	f, err := os.Open(js)
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	require.True(t, rep.Header.Bench)
	require.Equal(t, 3, rep.Header.Reps)
	require.Equal(t, "max", rep.Header.Agg)
	var timed int
	for _, c := range rep.Cases {
		if c.Variant == "nccl" {
			require.Equal(t, report.Skipped, c.Verdict)
			continue
		}
		require.Equal(t, report.Pass, c.Verdict, c.ID)
		require.NotNil(t, c.Timing, c.ID)
		timed++
		tm := c.Timing
		require.Len(t, tm.RepUS, 3, c.ID)
		require.Len(t, tm.RankUS, 2, c.ID)
		require.Equal(t, c.TimeUS, tm.P50US, c.ID)
		require.LessOrEqual(t, tm.MinUS, tm.P50US)
		require.LessOrEqual(t, tm.P50US, tm.P99US)
		require.LessOrEqual(t, tm.P99US, tm.MaxUS)
		if strings.Contains(c.Mode, "plain") {
			require.Len(t, tm.CallUS, 4, "one sampled repetition of single calls: %s", c.ID)
		} else {
			require.Empty(t, tm.CallUS, "graph replays are not timed call by call: %s", c.ID)
		}
	}
	require.Equal(t, 2*2*3, timed, "oneshot and twoshot, plain and graph, 3 sizes")

	svgBytes, err := os.ReadFile(svg)
	require.NoError(t, err)
	for _, want := range []string{"artest variants", ">oneshot<", ">twoshot<", "graph replays"} {
		require.Contains(t, string(svgBytes), want)
	}
	require.NotContains(t, string(svgBytes), "gain over fieldbest", "nccl was skipped: no fieldbest, no gain panel")
	require.Contains(t, out, "# fieldbest bf16 sum oop-reg, plain launches")
}

func TestNormalRunHasNoTiming(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	res := runWorld(t, 2, same("--backend", "host", "--variant", "oneshot", "--dtype", "f32", "--op", "sum", "--size", "4K",
		"--mode", "oop,reg,plain,aligned", "--reps", "3", "--json", js))
	require.Equal(t, []int{0, 0}, res.codes, "stderr: %v", res.stderr)
	b, err := os.ReadFile(js)
	require.NoError(t, err)
	require.NotContains(t, string(b), `"timing"`)
	var rep report.Report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Equal(t, 3, rep.Header.Reps)
	require.Positive(t, rep.Cases[0].TimeUS)
}

func writeReport(t *testing.T, path string, r *report.Report) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, report.WriteJSON(&buf, r))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
}

// On the cuda backend compare judges times (host times are not: see
// TestCompareJudgesVerdictsOnly).
func TestCompareExitCodes(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, smallUS, largeUS float64) string {
		r := &report.Report{Header: report.Header{Tool: "artest", Ranks: 2, Backend: "cuda"}}
		for _, c := range []struct {
			id    string
			bytes int64
			us    float64
		}{{"oneshot/bf16/sum/4KiB/oop-reg-plain/np2", 4 << 10, smallUS}, {"oneshot/bf16/sum/4MiB/oop-reg-plain/np2", 4 << 20, largeUS}} {
			alg := report.AlgbwGBps(c.bytes, c.us)
			r.Cases = append(r.Cases, report.Case{ID: c.id, Variant: "oneshot", Bytes: c.bytes, Ranks: 2, Verdict: report.Pass,
				TimeUS: c.us, AlgBW: alg, BusBW: report.Busbw(alg, 2)})
		}
		p := filepath.Join(dir, name)
		writeReport(t, p, r)
		return p
	}
	withReps := func(name string, reps ...float64) string {
		r := &report.Report{Header: report.Header{Tool: "artest", Ranks: 2, Backend: "cuda"}}
		us := reps[len(reps)/2]
		alg := report.AlgbwGBps(4<<10, us)
		r.Cases = []report.Case{{ID: "oneshot/bf16/sum/4KiB/oop-reg-plain/np2", Variant: "oneshot", Bytes: 4 << 10, Ranks: 2, Verdict: report.Pass,
			TimeUS: us, AlgBW: alg, BusBW: report.Busbw(alg, 2), Timing: &report.Timing{RepUS: reps}}}
		p := filepath.Join(dir, name)
		writeReport(t, p, r)
		return p
	}
	noisyOld := withReps("noisy-old.json", 6, 8, 10, 12, 14)
	noisyNew := withReps("noisy-new.json", 7, 9, 12, 13, 15)
	shifted := withReps("shifted.json", 11.9, 12, 12, 12.05, 12.1)
	steadyOld := withReps("steady-old.json", 9.9, 9.95, 10, 10, 10.1)
	base := mk("base.json", 10, 100)
	slowSmall := mk("slow-small.json", 12, 100) // +20 % time below 1 MiB
	slowLarge := mk("slow-large.json", 10, 110) // -9 % busbw from 1 MiB
	noise := mk("noise.json", 11, 103)          // +10 % small, -3 % busbw: within the defaults
	notReport := filepath.Join(dir, "other.json")
	require.NoError(t, os.WriteFile(notReport, []byte(`{"hello": 1}`), 0o644))
	otherWorld := filepath.Join(dir, "np8.json")
	writeReport(t, otherWorld, &report.Report{Header: report.Header{Tool: "artest"}, Cases: []report.Case{{ID: "oneshot/bf16/sum/4KiB/oop-reg-plain/np8", TimeUS: 1}}})
	// A NEW report whose cases all fail and none of which OLD has: still
	// nothing in common, not a regression.
	otherFailing := filepath.Join(dir, "np8-failing.json")
	writeReport(t, otherFailing, &report.Report{Header: report.Header{Tool: "artest"}, Cases: []report.Case{
		{ID: "oneshot/bf16/sum/4KiB/oop-reg-plain/np8", Verdict: report.Fail, Reason: "rank 1 mismatch"}}})

	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"same report", []string{base, base}, 0, "# 2 compared: 0 SLOWER", ""},
		{"noise within the thresholds", []string{base, noise}, 0, "", ""},
		{"small case slower", []string{base, slowSmall}, 1, "SLOWER: time +20.0%, limit +15% below 1MiB", ""},
		{"large case lost busbw", []string{base, slowLarge}, 1, "SLOWER: busbw -9.1%, limit -5% from 1MiB", ""},
		{"looser thresholds", []string{base, slowLarge, "--max-bw-drop", "10", "--max-slowdown-small=25"}, 0, "", ""},
		{"flags before the files", []string{"--max-slowdown-small", "25", base, slowSmall}, 0, "", ""},
		{"small-below moves the split", []string{"--small-below", "8M", base, slowLarge}, 0, "", ""},
		{"missing file", []string{base, filepath.Join(dir, "nope.json")}, 2, "", "nope.json: no such file"},
		{"not a report", []string{notReport, base}, 2, "", "other.json: not an artest report"},
		{"nothing in common", []string{base, otherWorld}, 2, "", "no case in common"},
		{"nothing in common, NEW fails", []string{base, otherFailing}, 2, "", "no case in common"},
		{"one file", []string{base}, 2, "", "want two reports"},
		{"three files", []string{base, base, base}, 2, "", "want two reports"},
		{"bad flag", []string{"--max-drop", "5", base, base}, 2, "", "flag provided but not defined"},
		{"bad threshold", []string{"--max-bw-drop", "100", base, base}, 2, "", "cannot happen"},
		{"past the limit but noise", []string{noisyOld, noisyNew}, 0, "NOISE: time +20.0% but p=0.60 over 5 and 5 repetitions", ""},
		{"past the limit and significant", []string{steadyOld, shifted}, 1, "SLOWER: time +20.0%", ""},
		{"--alpha 0: limits alone", []string{noisyOld, noisyNew, "--alpha", "0"}, 1, "SLOWER: time +20.0%", ""},
		{"bad alpha", []string{"--alpha", "1", base, base}, 2, "", "--alpha 1: want at least 0 and below 1"},
		{"help", []string{"--help"}, 0, "usage: artest compare OLD.json NEW.json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Compare(tt.args, &out, &errb)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			require.Contains(t, out.String(), tt.stdout)
			require.Contains(t, errb.String(), tt.stderr)
			if tt.code == 2 && tt.name != "help" {
				require.Equal(t, 1, strings.Count(errb.String(), "\n"), "one clear line")
				require.True(t, strings.HasPrefix(errb.String(), "artest compare: "))
			}
		})
	}
}

func TestIsCompare(t *testing.T) {
	require.True(t, IsCompare([]string{"compare", "a", "b"}))
	require.False(t, IsCompare([]string{"--backend", "host", "compare"}))
	require.False(t, IsCompare(nil))
}

// --plot with little to draw: one point (one size, one case), or nothing
// that passed. No stack trace; the exit code and the JSON report's
// exit_code agree.
func TestPlotWithLittleToDraw(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantPlot bool
		wantNote string
	}{
		{"one case", []string{"--case", "oneshot/f32/sum/4KiB/oop-reg-plain/np2"}, true, ""},
		{"one bench size", []string{"bench", "-b", "4K", "-e", "4K", "--variant", "oneshot", "--iters", "2"}, true, ""},
		{"only skipped cases", []string{"--case", "nccl/f32/sum/4KiB/oop-reg-plain/np2"}, false, "nothing to plot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			js, svg := filepath.Join(dir, "r.json"), filepath.Join(dir, "p.svg")
			res := runWorld(t, 2, same(append([]string{"--backend", "host", "--json", js, "--plot", svg}, tt.args...)...))
			require.False(t, res.aborted, res.stderr)
			require.Equal(t, []int{0, 0}, res.codes, res.stderr)
			require.NotContains(t, res.stderr[0], "goroutine")
			rep := readReport(t, js)
			require.Equal(t, res.codes[0], rep.Summary.ExitCode, "the report's exit code is the process's")
			if tt.wantPlot {
				require.FileExists(t, svg)
				require.Empty(t, res.stderr[0])
			} else {
				require.NoFileExists(t, svg)
				lines := strings.Split(strings.TrimSpace(res.stderr[0]), "\n")
				require.Len(t, lines, 1, res.stderr[0])
				require.Contains(t, lines[0], tt.wantNote)
			}
		})
	}
}

// --gobench writes the Go benchmark format, one line per repetition.
func TestBenchWritesGoBenchFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.txt")
	res := runWorld(t, 2, same("--backend", "host", "bench", "-b", "4K", "-e", "8K", "--variant", "oneshot", "--iters", "2", "--reps", "3",
		"--mode", "oop,reg,plain,aligned", "--gobench", path))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var results []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Benchmark") {
			results = append(results, strings.Fields(l)[0])
		}
	}
	require.Equal(t, []string{
		"BenchmarkAllreduce/variant=oneshot/dtype=bf16/op=sum/mode=oop-reg-plain/bytes=4096/ranks=2",
		"BenchmarkAllreduce/variant=oneshot/dtype=bf16/op=sum/mode=oop-reg-plain/bytes=4096/ranks=2",
		"BenchmarkAllreduce/variant=oneshot/dtype=bf16/op=sum/mode=oop-reg-plain/bytes=4096/ranks=2",
		"BenchmarkAllreduce/variant=oneshot/dtype=bf16/op=sum/mode=oop-reg-plain/bytes=8192/ranks=2",
		"BenchmarkAllreduce/variant=oneshot/dtype=bf16/op=sum/mode=oop-reg-plain/bytes=8192/ranks=2",
		"BenchmarkAllreduce/variant=oneshot/dtype=bf16/op=sum/mode=oop-reg-plain/bytes=8192/ranks=2",
	}, results, string(b))
	require.Contains(t, string(b), "backend: host\n")
}
