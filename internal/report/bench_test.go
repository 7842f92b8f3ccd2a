package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// benchFixture is a hand-built `artest bench` run on 4 ranks: oneshot,
// twoshot and nccl over three sizes with plain launches and graph replays,
// where twoshot fails one case and skips the smallest size, and oneshot's
// graph case at 1 MiB is slower than NCCL's.
func benchFixture() *Report {
	const ranks = 4
	type cell struct {
		variant, mode string
		bytes         int64
		us            float64
	}
	cells := []cell{
		{"oneshot", "oop-reg-plain", 1 << 10, 6.5},
		{"oneshot", "oop-reg-plain", 64 << 10, 8.25},
		{"oneshot", "oop-reg-plain", 1 << 20, 21.75},
		{"oneshot", "oop-reg-graph", 1 << 10, 4.125},
		{"oneshot", "oop-reg-graph", 64 << 10, 6.5},
		{"oneshot", "oop-reg-graph", 1 << 20, 20.5},
		{"twoshot", "oop-reg-plain", 1 << 10, 0},
		{"twoshot", "oop-reg-plain", 64 << 10, 10.5},
		{"twoshot", "oop-reg-plain", 1 << 20, 18.0},
		{"twoshot", "oop-reg-graph", 1 << 10, 0},
		{"twoshot", "oop-reg-graph", 64 << 10, 9.0},
		{"twoshot", "oop-reg-graph", 1 << 20, 16.25},
		{"nccl", "oop-reg-plain", 1 << 10, 11.5},
		{"nccl", "oop-reg-plain", 64 << 10, 14.0},
		{"nccl", "oop-reg-plain", 1 << 20, 19.0},
		{"nccl", "oop-reg-graph", 1 << 10, 9.5},
		{"nccl", "oop-reg-graph", 64 << 10, 12.0},
		{"nccl", "oop-reg-graph", 1 << 20, 17.5},
	}
	r := &Report{
		Header: Header{
			Tool: "artest", Version: "0.1.0", GitRevision: "0123456789ab",
			Command: []string{"artest", "bench", "-b", "1K", "-e", "1M", "-f", "64"},
			Start:   time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC),
			Hosts:   []string{"gpu-a", "gpu-a", "gpu-a", "gpu-a"}, Ranks: ranks, Backend: "cuda",
			Seed: 1, Input: "random", Iters: 20, Warmup: 5, Reps: 20, Agg: "max", Bench: true,
			Versions: map[string]string{"go": "go1.26.8", "nccl": "2.27.3"},
			Devices:  []string{"rank 0: NVIDIA H200", "rank 1: NVIDIA H200", "rank 2: NVIDIA H200", "rank 3: NVIDIA H200"},
		},
	}
	for _, c := range cells {
		size := map[int64]string{1 << 10: "1KiB", 64 << 10: "64KiB", 1 << 20: "1MiB"}[c.bytes]
		k := Case{
			ID: c.variant + "/bf16/sum/" + size + "/" + c.mode + "/np4", Variant: c.variant, DType: "bf16", Op: "sum",
			Bytes: c.bytes, Count: c.bytes / 2, Mode: c.mode, Ranks: ranks, Verdict: Pass, Iters: 20,
		}
		switch {
		case c.us == 0:
			k.Verdict, k.Reason = Skipped, "twoshot needs at least 2 KiB here (fixture reason)"
		default:
			k.TimeUS = c.us
			k.AlgBW = roundSignificant(AlgbwGBps(c.bytes, c.us), 5)
			k.BusBW = roundSignificant(Busbw(AlgbwGBps(c.bytes, c.us), ranks), 5)
			k.Timing = BuildTiming(AggMax, 20, [][]float64{{c.us, c.us + 1, c.us - 0.5}, {c.us - 1, c.us, c.us + 0.25}}, nil)
		}
		r.Cases = append(r.Cases, k)
	}
	// twoshot's plain 64 KiB case fails.
	for i := range r.Cases {
		if r.Cases[i].ID == "twoshot/bf16/sum/64KiB/oop-reg-plain/np4" {
			r.Cases[i].Verdict, r.Cases[i].Wrong, r.Cases[i].Reason = Fail, 3, "rank 2 mismatch: 3 wrong elements"
		}
	}
	r.Summary.ExitCode = 1
	r.Tally()
	return r
}

func TestWriteBenchTableGolden(t *testing.T) {
	got := render(t, func(b *bytes.Buffer) error { return WriteBenchTable(b, benchFixture()) })
	checkGolden(t, "bench.golden", got)
}

func TestWriteBenchTableLayout(t *testing.T) {
	out := string(render(t, func(b *bytes.Buffer) error { return WriteBenchTable(b, benchFixture()) }))
	var rows []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !strings.HasPrefix(l, "#") {
			rows = append(rows, l)
		}
	}
	// 3 variants x 3 sizes, then 2 comparison blocks and 2 fieldbest
	// blocks x 3 sizes.
	require.Len(t, rows, 9+6+6)
	for _, want := range []string{
		"#   each repetition's time is the maximum over ranks (--agg max)",
		"#   FAIL plain: rank 2 mismatch: 3 wrong elements\n",
		"#   skipped, 2 cases in this block: twoshot needs at least 2 KiB here (fixture reason)\n",
		"# comparison bf16 sum oop-reg, CUDA graph replays: time per call (us), max over ranks",
		"# pass 15, FAIL 1, skipped 2\n",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "host backend")
}

func TestWriteBenchTableComparisonRows(t *testing.T) {
	out := string(render(t, func(b *bytes.Buffer) error { return WriteBenchTable(b, benchFixture()) }))
	_, cmp, ok := strings.Cut(out, "# comparison bf16 sum oop-reg, plain launches")
	require.True(t, ok)
	fields := func(size string) []string {
		for _, l := range strings.Split(cmp, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == size {
				return f
			}
		}
		t.Fatalf("no comparison row for %s", size)
		return nil
	}
	tests := []struct {
		size string
		want []string // size, oneshot, twoshot, nccl, best, speedup
	}{
		{"1024", []string{"1024", "6.50", "-", "11.50", "oneshot", "1.77"}},
		// twoshot failed here: no time, never the best.
		{"65536", []string{"65536", "8.25", "-", "14.00", "oneshot", "1.70"}},
		{"1048576", []string{"1048576", "21.75", "18.00", "19.00", "twoshot", "1.06"}},
	}
	for _, tt := range tests {
		t.Run(tt.size, func(t *testing.T) { require.Equal(t, tt.want, fields(tt.size)) })
	}
}

func TestWriteBenchTableSaysHostTimesMeanNothing(t *testing.T) {
	r := benchFixture()
	r.Header.Backend = "host"
	r.Header.Agg = "avg"
	out := string(render(t, func(b *bytes.Buffer) error { return WriteBenchTable(b, r) }))
	require.Contains(t, out, "# host backend: these times measure Go models of the kernels on CPU cores and say nothing about GPUs\n")
	require.Contains(t, out, "the average over ranks (--agg avg)")
}

func TestWriteBenchTableGraphOnly(t *testing.T) {
	r := benchFixture()
	var graph []Case
	for _, c := range r.Cases {
		if strings.Contains(c.Mode, "graph") {
			graph = append(graph, c)
		}
	}
	r.Cases = graph
	out := string(render(t, func(b *bytes.Buffer) error { return WriteBenchTable(b, r) }))
	require.NotContains(t, out, "plain launches")
	require.Contains(t, out, "CUDA graph replays")
}

func TestSplitMode(t *testing.T) {
	tests := []struct{ mode, rest, launch string }{
		{"oop-reg-plain", "oop-reg", "plain"},
		{"ip-stg-graph", "ip-stg", "graph"},
		{"oop-reg-graph-off3", "oop-reg-off3", "graph"},
		{"oop", "oop", "plain"},
		{"", "", "plain"},
	}
	for _, tt := range tests {
		rest, launch := splitMode(tt.mode)
		require.Equal(t, tt.rest, rest, tt.mode)
		require.Equal(t, tt.launch, launch, tt.mode)
	}
}

func TestWriteBenchTableReportsWriteErrors(t *testing.T) {
	require.Error(t, WriteBenchTable(failingWriter{}, benchFixture()))
}
