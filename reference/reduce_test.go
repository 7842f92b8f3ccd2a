package reference

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

var orders = []Order{OrderUnknown, OrderRankAscendingF32}

// inputsF32 is every rank's input for one element, through the public
// generator and the dtype decoding only.
func inputsF32(g Gen, n, iter int, index uint64) []float32 {
	xs := make([]float32, n)
	for r := range xs {
		xs[r] = g.DType.ToF32(g.Bits(r, iter, index))
	}
	return xs
}

// straightforward is the order-aware reduction written plainly: float32
// accumulation in rank order, one rounding to the dtype at the end.
func straightforward(d DType, op Op, xs []float32) uint32 {
	acc := xs[0]
	for _, x := range xs[1:] {
		switch op {
		case Sum:
			acc += x
		case Max:
			acc = max(acc, x)
		case Min:
			acc = min(acc, x)
		}
	}
	return d.FromF32(acc)
}

func TestExpectMatchesStraightforward(t *testing.T) {
	for _, g := range allGens(21) {
		for _, op := range Ops {
			for _, order := range orders {
				for _, n := range []int{1, 2, 3, 5, 8, 16} {
					spec := CheckSpec{Gen: g, Op: op, NRanks: n, Iter: 2, Order: order}
					if !spec.BitExact() {
						continue // TestBoundedExpectation
					}
					name := fmt.Sprintf("%s/%v/%v/np%d", genName(g), op, order, n)
					for i := range uint64(500) {
						want := straightforward(g.DType, op, inputsF32(g, n, 2, i))
						e := spec.Expect(i)
						require.True(t, e.BitExact, name)
						require.Equal(t, want, e.Bits, "%s element %d", name, i)
						require.Equal(t, g.DType.ToF64(want), e.Value, "%s element %d", name, i)
						require.Zero(t, e.Bound)
					}
				}
			}
		}
	}
}

// TestBoundedExpectation checks a Random sum in an unknown order: the value
// is the exact sum (big.Float), the bound is the documented formula, and the
// bits are the value rounded once.
func TestBoundedExpectation(t *testing.T) {
	for _, d := range DTypes {
		g := Gen{Seed: 5, Kind: Random, DType: d}
		u := d.UnitRoundoff()
		for _, n := range []int{1, 2, 8, 16} {
			spec := CheckSpec{Gen: g, Op: Sum, NRanks: n, Iter: 1}
			require.False(t, spec.BitExact())
			for i := range uint64(300) {
				xs := inputsF32(g, n, 1, i)
				exact := new(big.Float).SetPrec(512)
				abs := 0.0
				for _, x := range xs {
					exact.Add(exact, big.NewFloat(float64(x)))
					abs += math.Abs(float64(x))
				}
				ref, acc := exact.Float64()
				require.Equal(t, big.Exact, acc, "the float64 sum of %d inputs must be exact", n)
				e := spec.Expect(i)
				require.False(t, e.BitExact)
				require.Equal(t, ref, e.Value, "%v np%d element %d", d, n, i)
				require.Equal(t, float64(n-1)*u*abs+u*math.Abs(ref), e.Bound, "%v np%d element %d", d, n, i)
				require.Equal(t, d.FromF64(ref), e.Bits)
			}
		}
	}
}

// implementations are summation orders a correct allreduce might use; the
// bound must hold for each of them.
var implementations = map[string]func(d DType, xs []float32, chunk int, rng *rand.Rand) float32{
	"rank-ascending-f32": func(d DType, xs []float32, _ int, _ *rand.Rand) float32 {
		return d.ToF32(straightforward(d, Sum, xs))
	},
	// A ring reduce-scatter keeps the partial sum in the dtype; the chunk
	// decides which rank starts.
	"ring-dtype-acc": func(d DType, xs []float32, chunk int, _ *rand.Rand) float32 {
		n := len(xs)
		acc := xs[(chunk+1)%n]
		for s := 2; s <= n; s++ {
			acc = d.ToF32(d.FromF32(acc + xs[(chunk+s)%n]))
		}
		return acc
	},
	"random-tree-dtype-acc": func(d DType, xs []float32, _ int, rng *rand.Rand) float32 {
		return sumInDType(d, xs, rng)
	},
	"pairwise-f32": func(d DType, xs []float32, _ int, _ *rand.Rand) float32 {
		parts := append([]float32(nil), xs...)
		for len(parts) > 1 {
			var next []float32
			for i := 0; i+1 < len(parts); i += 2 {
				next = append(next, parts[i]+parts[i+1])
			}
			if len(parts)%2 == 1 {
				next = append(next, parts[len(parts)-1])
			}
			parts = next
		}
		return d.ToF32(d.FromF32(parts[0]))
	},
}

func TestBoundHoldsForEveryOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, d := range DTypes {
		g := Gen{Seed: 6, Kind: Random, DType: d}
		for _, n := range []int{2, 3, 8, 16} {
			spec := CheckSpec{Gen: g, Op: Sum, NRanks: n}
			for name, impl := range implementations {
				worst := 0.0
				for i := range uint64(2000) {
					xs := inputsF32(g, n, 0, i)
					e := spec.Expect(i)
					got := float64(impl(d, xs, int(i), rng))
					err := math.Abs(got - e.Value)
					require.LessOrEqual(t, err, e.Bound, "%v np%d %s element %d: got %v want %v", d, n, name, i, got, e.Value)
					worst = max(worst, err/e.Bound)
				}
				t.Logf("%v np%d %s: worst error %.2f of the bound", d, n, name, worst)
			}
		}
	}
}
