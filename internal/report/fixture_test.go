package report

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// checkGolden compares got with testdata/name, or rewrites the file with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/report -update to create it")
	require.Equal(t, string(want), string(got), "golden file %s differs; rerun with -update if the change is intended", path)
}

// fixtureReport is a hand-built 4-rank run: passing cases with and without an
// NCCL comparison, a case failing on two ranks (one NaN from a poisoned
// output), a guard failure without a Reason, skips with one and with several
// reasons in a block, a variant skipped entirely, and variants interleaved so
// the blocks must regroup them. Its timing values are already at WriteJSON's
// rounding, so a JSON round trip gives it back unchanged.
func fixtureReport() *Report {
	const ranks = 4
	timed := func(c Case, us, ncclUS float64) Case {
		c.TimeUS = us
		c.AlgBW = roundSignificant(AlgbwGBps(c.Bytes, us), 5)
		c.BusBW = roundSignificant(Busbw(AlgbwGBps(c.Bytes, us), ranks), 5)
		if ncclUS > 0 {
			c.NCCLTimeUS = ncclUS
			c.Speedup = roundSignificant(ncclUS/us, 5)
			// Only nccl ran in this job: NCCL's best mode is nccl.
			c.NCCLBestVariant, c.NCCLBestTimeUS = "nccl", ncclUS
			c.SpeedupVsBest = c.Speedup
		}
		c.Iters = 20
		return c
	}
	multicastGate := "multimem needs --multimem or ARTEST_MULTIMEM=1 (multicast objects are off by default)"
	r := &Report{
		Header: Header{
			Tool:        "artest",
			Version:     "0.1.0",
			GitRevision: "0123456789ab",
			Command:     []string{"artest", "--sizes", "1K:1M:x1024", "--variants", "oneshot,twoshot,multimem,nccl", "--note", "it's a test"},
			Start:       time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC),
			Hosts:       []string{"gpu-a", "gpu-a", "gpu-b", "gpu-b"},
			Ranks:       ranks,
			Backend:     "cuda",
			Seed:        42,
			Input:       "random",
			Iters:       20,
			Warmup:      5,
			Inject:      []string{"skip-last"},
			Versions:    map[string]string{"go": "go1.26.8", "nccl": "2.27.3", "cuda_driver": "12080", "mpi": "Open MPI 4.1.4"},
			Devices:     []string{"rank 0: NVIDIA H200 [0000:18:00.0]", "rank 1: NVIDIA H200 [0000:2a:00.0]", "rank 2: NVIDIA H200 [0000:18:00.0]", "rank 3: NVIDIA H200 [0000:2a:00.0]"},
			Topology:    map[string]any{"nvlink": []any{"NV18", "NV18"}, "gpus": float64(4)},
		},
		Cases: []Case{
			timed(Case{ID: "oneshot/f32/sum/1KiB/oop/np4", Variant: "oneshot", DType: "f32", Op: "sum", Bytes: 1024, Count: 256, Mode: "oop", Ranks: ranks, Verdict: Pass, Seconds: 0.012}, 6.125, 11.5),
			timed(Case{ID: "oneshot/bf16/max/1MiB/inplace/np4", Variant: "oneshot", DType: "bf16", Op: "max", Bytes: 1 << 20, Count: 1 << 19, Mode: "inplace", Ranks: ranks, Verdict: Pass, Seconds: 0.034}, 21.75, 0),
			timed(Case{ID: "twoshot/f32/sum/1MiB/oop/np4", Variant: "twoshot", DType: "f32", Op: "sum", Bytes: 1 << 20, Count: 1 << 18, Mode: "oop", Ranks: ranks, Verdict: Pass, Seconds: 0.041}, 18.5, 19.25),
			timed(Case{
				ID: "oneshot/f16/sum/4KiB/oop/np4", Variant: "oneshot", DType: "f16", Op: "sum", Bytes: 4096, Count: 2048, Mode: "oop", Ranks: ranks,
				Verdict: Fail, Reason: "5 wrong elements on ranks 1, 3 (skip-last injected)", Wrong: 5, Seconds: 0.02,
				Failures: []RankFailure{
					{Rank: 1, Kind: "mismatch", Detail: "last element not written", Wrong: 1, WorstULP: math.Inf(1), Mismatches: []Mismatch{
						{Index: 2047, Got: math.NaN(), Want: 10, GotBits: 0x7e00, WantBits: 0x4900, ULP: math.Inf(1)},
					}},
					{Rank: 3, Kind: "mismatch", Detail: "values off by more than the bound", Wrong: 4, WorstULP: 3, Mismatches: []Mismatch{
						{Index: 0, Got: 1.5, Want: 1.501953125, GotBits: 0x3e00, WantBits: 0x3e02, ULP: 2},
						{Index: 7, Got: -2, Want: -2.00390625, GotBits: 0xc000, WantBits: 0xc002, ULP: 2, Iter: 3},
						{Index: 9, Got: 0.25, Want: 0.250732421875, GotBits: 0x3400, WantBits: 0x3403, ULP: 3},
					}},
				},
			}, 7.5, 12),
			{ID: "oneshot/f32/sum/4B/oop/np4", Variant: "oneshot", DType: "f32", Op: "sum", Bytes: 4, Count: 1, Mode: "oop", Ranks: ranks, Verdict: Skipped, Reason: "oneshot needs a multiple of 16 bytes", Seconds: 0},
			{ID: "oneshot/f32/sum/12B/oop/np4", Variant: "oneshot", DType: "f32", Op: "sum", Bytes: 12, Count: 3, Mode: "oop", Ranks: ranks, Verdict: Skipped, Reason: "oneshot needs a multiple of 16 bytes", Seconds: 0},
			{ID: "oneshot/f32/sum/1KiB/graph/np4", Variant: "oneshot", DType: "f32", Op: "sum", Bytes: 1024, Count: 256, Mode: "graph", Ranks: ranks, Verdict: Skipped, Reason: "CUDA graphs need the cuda backend", Seconds: 0},
			{
				ID: "twoshot/f32/min/1KiB/oop/np4", Variant: "twoshot", DType: "f32", Op: "min", Bytes: 1024, Count: 256, Mode: "oop", Ranks: ranks,
				Verdict: Fail, Wrong: 0, Seconds: 0.5,
				Failures: []RankFailure{{Rank: 2, Kind: "guard", Detail: "4 guard bytes after the output changed"}},
			},
			{ID: "twoshot/f32/sum/4B/oop/np4", Variant: "twoshot", DType: "f32", Op: "sum", Bytes: 4, Count: 1, Mode: "oop", Ranks: ranks, Verdict: Skipped, Reason: "twoshot needs at least one element per rank", Seconds: 0},
			{ID: "multimem/f32/sum/1KiB/oop/np4", Variant: "multimem", DType: "f32", Op: "sum", Bytes: 1024, Count: 256, Mode: "oop", Ranks: ranks, Verdict: Skipped, Reason: multicastGate},
			{ID: "multimem/f32/sum/1MiB/oop/np4", Variant: "multimem", DType: "f32", Op: "sum", Bytes: 1 << 20, Count: 1 << 18, Mode: "oop", Ranks: ranks, Verdict: Skipped, Reason: multicastGate},
			{ID: "multimem/bf16/sum/1MiB/oop/np4", Variant: "multimem", DType: "bf16", Op: "sum", Bytes: 1 << 20, Count: 1 << 19, Mode: "oop", Ranks: ranks, Verdict: Skipped, Reason: multicastGate},
			timed(Case{ID: "nccl/f32/sum/1GiB/oop/np4", Variant: "nccl", DType: "f32", Op: "sum", Bytes: 1 << 30, Count: 1 << 28, Mode: "oop", Ranks: ranks, Verdict: Pass, Seconds: 1.25}, 2812.5, 0),
		},
		Summary: Summary{ExitCode: 1},
	}
	r.Tally()
	return r
}

// failingWriter fails every write, to check that writers report it.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

func render(t *testing.T, write func(*bytes.Buffer) error) []byte {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, write(&buf))
	return buf.Bytes()
}
