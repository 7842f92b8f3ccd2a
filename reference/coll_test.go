package reference

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCollNamesRoundTrip(t *testing.T) {
	for _, c := range Colls {
		got, err := ParseColl(c.String())
		require.NoError(t, err)
		require.Equal(t, c, got)
	}
	for in, want := range map[string]Coll{"all-reduce": AllReduce, "ReduceScatter": ReduceScatter, "allgather": AllGather} {
		got, err := ParseColl(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := ParseColl("gossip")
	require.ErrorContains(t, err, "valid: allreduce, reduce-scatter, all-gather")
}

// The buffers of a collective whose full buffer is count elements over n
// ranks: NCCL's layout, each rank's part one chunk of count/n.
func TestCollLayout(t *testing.T) {
	for _, tc := range []struct {
		c                 Coll
		in, out           int64
		inFirst, outFirst uint64 // of rank 2
		reduces           bool
	}{
		{AllReduce, 12, 12, 0, 0, true},
		{ReduceScatter, 12, 3, 0, 6, true},
		{AllGather, 3, 12, 6, 0, false},
	} {
		require.Equal(t, tc.in, tc.c.InCount(12, 4), tc.c)
		require.Equal(t, tc.out, tc.c.OutCount(12, 4), tc.c)
		require.Equal(t, tc.inFirst, tc.c.InputFirst(12, 4, 2), tc.c)
		require.Equal(t, tc.outFirst, tc.c.OutputFirst(12, 4, 2), tc.c)
		require.Equal(t, tc.reduces, tc.c.Reduces(), tc.c)
		require.Empty(t, tc.c.DividesReason(12, 4), tc.c)
	}
	require.Empty(t, AllReduce.DividesReason(13, 4), "an allreduce takes any count")
	require.Equal(t, "reduce-scatter on 4 ranks needs a count divisible by 4, not 13 elements", ReduceScatter.DividesReason(13, 4))
}

// gathered is a correct all-gather output: rank p's input of iteration
// iter (InputFirst) as chunk p.
func gathered(g Gen, n, iter, chunk int) []byte {
	size := g.DType.Size()
	out := make([]byte, n*chunk*size)
	for p := 0; p < n; p++ {
		g.Fill(out[p*chunk*size:(p+1)*chunk*size], p, iter, AllGather.InputFirst(int64(n*chunk), n, p))
	}
	return out
}

// An all-gather's output is its inputs bit for bit, whatever the dtype,
// input kind, op or order: a right one passes, and a wrong element, a
// poisoned one or chunks of the wrong ranks are found where they are.
func TestCheckGather(t *testing.T) {
	for _, g := range allGens(5) {
		for _, n := range []int{1, 3, 8} {
			for _, chunk := range []int{1, 17, checkChunkElems + 3} {
				name := fmt.Sprintf("%s/np%d/chunk%d", genName(g), n, chunk)
				out := gathered(g, n, 2, chunk)
				spec := CheckSpec{Gen: g, Op: Max, NRanks: n, Iter: 2, Order: OrderUnknown}
				res := CheckCollective(AllGather, spec, n-1, int64(n*chunk), out)
				require.Equal(t, uint64(n*chunk), res.Checked, name)
				require.True(t, res.OK(), "%s: %v", name, res)
				require.Zero(t, res.WorstULP, name)

				d := g.DType
				at := n*chunk - 1
				d.SetBits(out, at, PoisonBits(d))
				res = CheckGather(g, n, 2, out)
				require.Equal(t, uint64(1), res.Wrong, name)
				require.Equal(t, uint64(at), res.First[0].Index, name)
				require.True(t, math.IsInf(res.WorstULP, 1), name)
			}
		}
	}
	g := Gen{Seed: 5, Kind: Random, DType: BF16}
	swapped := gathered(g, 2, 0, 100)
	copy(swapped, gathered(g, 2, 1, 100)[:200]) // rank 0's chunk of another iteration
	res := CheckGather(g, 2, 0, swapped)
	require.Positive(t, res.Wrong)
	require.Less(t, res.First[len(res.First)-1].Index, uint64(100), "only chunk 0 is wrong")
	require.Panics(t, func() { CheckGather(g, 3, 0, make([]byte, 2*10)) }, "10 elements are no 3 chunks")
}

// A reduce-scatter's output is chunk rank of the allreduce: CheckCollective
// checks it as Check does that chunk, and finds it wrong as another
// rank's chunk.
func TestCheckReduceScatterIsAChunkOfTheAllreduce(t *testing.T) {
	g := Gen{Seed: 9, Kind: Random, DType: F16}
	const n, chunk = 4, 1000
	spec := CheckSpec{Gen: g, Op: Sum, NRanks: n, Iter: 3, Order: OrderRankAscendingF32}
	for rank := 0; rank < n; rank++ {
		s := spec
		s.First = uint64(rank * chunk)
		out := expectedBuffer(s, chunk)
		res := CheckCollective(ReduceScatter, spec, rank, n*chunk, out)
		require.True(t, res.OK(), "rank %d: %v", rank, res)
		require.Equal(t, uint64(chunk), res.Checked)
		other := CheckCollective(ReduceScatter, spec, (rank+1)%n, n*chunk, out)
		require.Positive(t, other.Wrong, "rank %d's chunk read as rank %d's", rank, (rank+1)%n)
		require.Equal(t, uint64(((rank+1)%n)*chunk), other.First[0].Index, "indices are the allreduce's")
	}
}

// Every collective's check (the reference the runner uses) accepts what its
// naive model computes from the ranks' inputs, for every dtype and op it
// takes on 2 and 3 ranks, and rejects that output with one element
// changed: a collective described once is checked against its own
// definition, whatever else implements it.
func TestEveryCollectiveChecksItsModel(t *testing.T) {
	names := map[string]bool{}
	for i, desc := range Collectives {
		require.Equal(t, Coll(i), desc.ID, "Collectives is listed by id")
		require.NotEmpty(t, desc.Name)
		require.False(t, names[desc.Name], "%s listed twice", desc.Name)
		names[desc.Name] = true
		require.NotNil(t, desc.Check, desc.Name)
		require.NotNil(t, desc.Model, desc.Name)
		require.NotNil(t, desc.BusFactor, desc.Name)
		require.NotEmpty(t, desc.Bench, desc.Name)
		c, err := ParseColl(desc.Name)
		require.NoError(t, err)
		require.Equal(t, desc.ID, c)
		ops := []Op{Sum}
		if desc.Reduces {
			ops = []Op{Sum, Max, Min}
		}
		for _, n := range []int{2, 3} {
			require.Positive(t, desc.ID.BusFactor(n), "%s on %d ranks", desc.Name, n)
			count := int64(n * 40)
			for _, d := range []DType{F32, F16, BF16} {
				for _, op := range ops {
					g := Gen{Seed: 7, Kind: Exact, DType: d}
					in := make([][]float64, n)
					for r := range in {
						buf := make([]byte, desc.ID.InCount(count, n)*int64(d.Size()))
						g.Fill(buf, r, 3, desc.ID.InputFirst(count, n, r))
						for i := 0; i < len(buf)/d.Size(); i++ {
							in[r] = append(in[r], d.ToF64(d.GetBits(buf, i)))
						}
					}
					for rank := 0; rank < n; rank++ {
						want := desc.Model(in, rank, op)
						require.Len(t, want, int(desc.ID.OutCount(count, n)), "%s: the model's output is OutCount", desc.Name)
						got := make([]byte, len(want)*d.Size())
						for i, v := range want {
							d.SetBits(got, i, d.FromF64(v))
						}
						spec := CheckSpec{Gen: g, Op: op, NRanks: n, Iter: 3, Order: OrderRankAscendingF32}
						res := CheckCollective(desc.ID, spec, rank, count, got)
						require.True(t, res.OK(), "%s %s %s np%d rank %d: %s", desc.Name, d, op, n, rank, res)
						d.SetBits(got, 1, d.FromF64(want[1]+1))
						res = CheckCollective(desc.ID, spec, rank, count, got)
						require.Equal(t, uint64(1), res.Wrong, "%s %s %s np%d rank %d: one element changed", desc.Name, d, op, n, rank)
					}
				}
			}
		}
	}
}
