package tune

import (
	"bytes"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

func timed(variant string, blocks int, us float64) Result {
	return Result{Variant: variant, Launch: Launch{Blocks: blocks, Threads: 512}, Verdict: report.Pass, TimeUS: us}
}

func TestChooseBest(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cands     []Result
		nccl      *Result
		want      string // best variant and blocks
		perVar    int
		speedup   float64
		wantNoBst bool
	}{
		{name: "fastest per variant and overall",
			cands: []Result{timed("oneshot", 36, 5), timed("oneshot", 16, 4), timed("twoshot", 36, 6), timed("twoshot", 64, 3.5)},
			nccl:  &Result{Variant: "nccl", Verdict: report.Pass, TimeUS: 7}, want: "twoshot 64", perVar: 2, speedup: 2},
		{name: "a tie keeps the earlier (the registry default comes first)",
			cands: []Result{timed("oneshot", 36, 4), timed("oneshot", 16, 4)}, want: "oneshot 36", perVar: 1},
		{name: "wrong results and skips are disqualified",
			cands: []Result{{Variant: "ring", Launch: Launch{Blocks: 8}, Verdict: report.Fail, TimeUS: 1},
				{Variant: "ring", Launch: Launch{Blocks: 4}, Verdict: report.Skipped}, timed("oneshot", 36, 9)},
			nccl: &Result{Variant: "nccl", Verdict: report.Skipped, Reason: "no nccl"}, want: "oneshot 36", perVar: 1},
		{name: "nothing timed", cands: []Result{{Variant: "ring"}}, wantNoBst: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := Bucket{Candidates: tc.cands, NCCL: tc.nccl}
			b.Choose()
			if tc.wantNoBst {
				require.Nil(t, b.Best)
				return
			}
			require.NotNil(t, b.Best)
			require.Equal(t, tc.want, b.Best.Variant+" "+strconv.Itoa(b.Best.Blocks))
			require.Len(t, b.BestPerVariant, tc.perVar)
			require.InDelta(t, tc.speedup, b.Speedup, 1e-9)
		})
	}
}

func sampleTable() *Table {
	t := &Table{Provenance: Provenance{Date: time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC), Revision: "abc123",
		Hosts: []string{"node", "node"}, GPUs: []string{"GPU 0 NVIDIA H200", "GPU 1 NVIDIA H200"}, Driver: "13.0", NCCL: "2.28.9",
		Backend: "cuda", Ranks: 2, Command: []string{"mpirun", "-np", "2", "artest", "tune"}}}
	t.Buckets = []Bucket{
		{DType: "bf16", Launch: "graph", Bytes: 1 << 10, Finished: true,
			Candidates: []Result{timed("oneshot", 1, 4.5), {Variant: "ring", Launch: Launch{Blocks: 1, Threads: 256,
				Params: map[string]uint32{"lanes": 1, "slot-bytes": 1024, "slots": 4}}, Verdict: report.Pass, TimeUS: 6}},
			NCCL: &Result{Variant: "nccl", Verdict: report.Pass, TimeUS: 9}},
		{DType: "bf16", Launch: "graph", MinBytes: 1 << 10, Bytes: 1 << 20, Finished: true,
			Candidates: []Result{timed("oneshot", 64, 20), {Variant: "ring", Launch: Launch{Blocks: 8, Threads: 512,
				Params: map[string]uint32{"lanes": 8, "slot-bytes": 65536, "slots": 8}}, Verdict: report.Pass, TimeUS: 15}},
			NCCL: &Result{Variant: "nccl", Verdict: report.Pass, TimeUS: 30}},
		{DType: "bf16", Launch: "graph", MinBytes: 1 << 20, Bytes: 16 << 20,
			Candidates: []Result{timed("oneshot", 132, 100), {Variant: "twoshot"}}},
	}
	t.Finish("the budget of 1m0s ran out")
	return t
}

func TestFinishAndTuned(t *testing.T) {
	tb := sampleTable()
	require.Equal(t, []string{"bf16 graph 16MiB: the budget of 1m0s ran out"}, tb.Unfinished)
	tt := tb.Tuned()
	require.Equal(t, "2026-11-22T01:02:03Z", tt.Provenance.Date)
	require.Equal(t, "node", tt.Provenance.Machine)
	require.Equal(t, "mpirun -np 2 artest tune", tt.Provenance.Command)
	// The unfinished bucket is left out; every variant's best is in.
	require.Len(t, tt.Entries, 4)
	var best []string
	for _, e := range tt.Entries {
		if e.Best {
			best = append(best, e.Variant)
		}
		require.Equal(t, 2, e.Ranks)
	}
	require.Equal(t, []string{"oneshot", "ring"}, best)
	require.Equal(t, 30.0, tt.Entries[3].NCCLTimeUS)
}

// Merging a 4-rank run into a 2-rank one gives one table of both world
// sizes; a bucket both measured keeps this run's.
func TestMerge(t *testing.T) {
	two, four := sampleTable(), sampleTable()
	four.Provenance.Ranks = 4
	four.Provenance.Command = []string{"mpirun", "-np", "4", "artest", "tune"}
	four.Buckets[0].Candidates[0].TimeUS = 1
	two.Merge(four)
	two.Merge(sampleTable()) // the same world size again: nothing new
	two.Finish("")
	require.Len(t, two.Buckets, 6)
	tt := two.Tuned()
	require.Equal(t, "mpirun -np 2 artest tune; mpirun -np 4 artest tune; mpirun -np 2 artest tune", tt.Provenance.Command)
	e2, ok := tt.Lookup("oneshot", 2, "bf16", true, 1<<10)
	require.True(t, ok)
	require.Equal(t, 4.5, e2.TimeUS)
	e4, ok := tt.Lookup("oneshot", 4, "bf16", true, 1<<10)
	require.True(t, ok)
	require.Equal(t, 1.0, e4.TimeUS)
	var b bytes.Buffer
	require.NoError(t, WriteText(&b, two))
	require.Regexp(t, `(?m)^4\s+bf16\s+graph\s+1KiB\s+oneshot`, b.String())
}

func TestJSONRoundTrip(t *testing.T) {
	tb := sampleTable()
	path := filepath.Join(t.TempDir(), "t.json")
	require.NoError(t, tb.WriteJSON(path))
	back, err := ReadTable(path)
	require.NoError(t, err)
	require.Equal(t, tb.Tuned(), back.Tuned())
	require.Equal(t, 3, len(back.Buckets))
	require.Equal(t, 15.0, back.Buckets[1].Best.TimeUS)

	_, err = ReadTable(filepath.Join(t.TempDir(), "missing.json"))
	require.Error(t, err)
}
