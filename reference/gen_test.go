package reference

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

var inputKinds = []InputKind{Random, Exact}

func allGens(seed uint64) []Gen {
	var gs []Gen
	for _, d := range DTypes {
		for _, k := range inputKinds {
			gs = append(gs, Gen{Seed: seed, Kind: k, DType: d})
		}
	}
	return gs
}

func genName(g Gen) string { return fmt.Sprintf("%v/%v", g.DType, g.Kind) }

func TestGenDeterministic(t *testing.T) {
	for _, g := range allGens(42) {
		t.Run(genName(g), func(t *testing.T) {
			copyOfG := Gen{Seed: 42, Kind: g.Kind, DType: g.DType}
			for _, index := range []uint64{0, 1, 2, 1000, 1 << 40, math.MaxUint64} {
				for rank := range 4 {
					a := g.Bits(rank, 3, index)
					require.Equal(t, a, g.Bits(rank, 3, index))
					require.Equal(t, a, copyOfG.Bits(rank, 3, index))
					require.Equal(t, a, g.DType.FromF32(g.F32(rank, 3, index)))
				}
			}
			a := make([]byte, 1000*g.DType.Size())
			b := make([]byte, len(a))
			g.Fill(a, 1, 0, 77)
			g.Fill(b, 1, 0, 77)
			require.Equal(t, a, b)
		})
	}
}

// equalFraction is the fraction of 4096 elements on which two generator
// calls agree.
func equalFraction(a, b func(index uint64) uint32) float64 {
	const n = 4096
	same := 0
	for i := range uint64(n) {
		if a(i) == b(i) {
			same++
		}
	}
	return float64(same) / n
}

func TestGenInputsDiffer(t *testing.T) {
	for _, g := range allGens(7) {
		t.Run(genName(g), func(t *testing.T) {
			// Random values carry at least 11 random bits, Exact ones pick
			// one of 17 values: chance agreement is ~0.05% and ~6%.
			limit := 0.01
			if g.Kind == Exact {
				limit = 0.10
			}
			base := func(i uint64) uint32 { return g.Bits(0, 0, i) }
			other := g
			other.Seed = 8
			variants := map[string]func(uint64) uint32{
				"seed":          func(i uint64) uint32 { return other.Bits(0, 0, i) },
				"rank":          func(i uint64) uint32 { return g.Bits(1, 0, i) },
				"far rank":      func(i uint64) uint32 { return g.Bits(15, 0, i) },
				"iter":          func(i uint64) uint32 { return g.Bits(0, 1, i) },
				"negative iter": func(i uint64) uint32 { return g.Bits(0, -1, i) },
				"index+1":       func(i uint64) uint32 { return g.Bits(0, 0, i+1) },
			}
			for name, v := range variants {
				require.Less(t, equalFraction(base, v), limit, "changing the %s must change the data", name)
			}
		})
	}
}

// TestGenRandomRange checks the properties the error bound and the checker
// rely on: never zero, subnormal, Inf or NaN; magnitudes in [2^-4, 2^4); and
// that every binade, the sign and every mantissa bit of the dtype vary.
func TestGenRandomRange(t *testing.T) {
	for _, d := range DTypes {
		t.Run(d.String(), func(t *testing.T) {
			g := Gen{Seed: 1, Kind: Random, DType: d}
			mantBits := d.format().precision - 1
			const n = 1 << 14
			const ranks = 8
			var binades [8]int
			setCount := make([]int, mantBits+1) // mantissa bits, then the sign
			for r := range ranks {
				for i := range uint64(n) {
					v := float64(g.F32(r, 0, i))
					require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "element %d rank %d = %v", i, r, v)
					a := math.Abs(v)
					require.GreaterOrEqual(t, a, math.Ldexp(1, RandomMinExp), "element %d rank %d", i, r)
					require.Less(t, a, math.Ldexp(1, RandomMaxExp), "element %d rank %d", i, r)
					binades[math.Ilogb(a)-RandomMinExp]++
					// The float32 must be exactly a dtype value.
					require.Equal(t, v, d.ToF64(g.Bits(r, 0, i)))
					m := math.Float32bits(float32(a)) >> (23 - mantBits)
					for b := range mantBits {
						setCount[b] += int(m >> b & 1)
					}
					if v < 0 {
						setCount[mantBits]++
					}
				}
			}
			total := float64(n * ranks)
			for b, c := range binades {
				require.InDelta(t, 1.0/8, float64(c)/total, 0.01, "binade 2^%d", b+RandomMinExp)
			}
			for b, c := range setCount {
				require.InDelta(t, 0.5, float64(c)/total, 0.02, "bit %d (mantBits = sign)", b)
			}
		})
	}
}

func TestGenExactRange(t *testing.T) {
	for _, d := range DTypes {
		t.Run(d.String(), func(t *testing.T) {
			g := Gen{Seed: 2, Kind: Exact, DType: d}
			counts := map[float32]int{}
			const n = 1 << 14
			for r := range 4 {
				for i := range uint64(n) {
					v := g.F32(r, 0, i)
					require.Equal(t, float32(math.Trunc(float64(v))), v)
					require.GreaterOrEqual(t, v, float32(ExactMin))
					require.LessOrEqual(t, v, float32(ExactMax))
					require.False(t, math.Signbit(float64(v)) && v == 0, "never -0")
					counts[v]++
				}
			}
			require.Len(t, counts, ExactMax-ExactMin+1)
			for v, c := range counts {
				require.InDelta(t, 1.0/17, float64(c)/(4*n), 0.01, "value %v", v)
			}
		})
	}
}

// TestGenRanksIndependent checks that the cheap per-rank mix does not
// correlate ranks: sign agreement and mantissa-bit agreement near 1/2.
func TestGenRanksIndependent(t *testing.T) {
	g := Gen{Seed: 3, Kind: Random, DType: F32}
	const n = 1 << 14
	for _, pair := range [][2]int{{0, 1}, {0, 7}, {3, 4}, {6, 7}} {
		agreeBits := 0
		for i := range uint64(n) {
			a, b := g.Bits(pair[0], 0, i), g.Bits(pair[1], 0, i)
			agreeBits += 32 - bits.OnesCount32((a^b)&0x807fffff)
		}
		require.InDelta(t, 24.0/2, float64(agreeBits-8*n)/n, 0.2, "ranks %v: agreeing sign+mantissa bits per element", pair)
	}
}

// TestFillMatchesBits fills buffers at odd offsets with guard bytes around
// them, small and large (parallel) counts, and a partial trailing element.
func TestFillMatchesBits(t *testing.T) {
	counts := []int{0, 1, 3, 17, fillMinElems + 5, 4*fillMinElems + 3}
	for _, g := range allGens(99) {
		t.Run(genName(g), func(t *testing.T) {
			size := g.DType.Size()
			for _, count := range counts {
				for _, offset := range []int{0, 1, 3} {
					const guard = 16
					const partial = 1 // a byte that is not a whole element
					buf := make([]byte, offset+guard+count*size+partial+guard)
					for i := range buf {
						buf[i] = 0xa5
					}
					start := offset + guard
					dst := buf[start : start+count*size+partial]
					first := uint64(1<<40 + 5)
					g.Fill(dst, 2, 1, first)
					for i := range count {
						want := g.Bits(2, 1, first+uint64(i))
						if got := g.DType.GetBits(dst, i); got != want {
							require.Equal(t, want, got, "count %d offset %d element %d", count, offset, i)
						}
					}
					for i, b := range buf {
						if i < start || i >= start+count*size {
							require.Equal(t, byte(0xa5), b, "count %d offset %d: byte %d outside the elements changed", count, offset, i)
						}
					}
				}
			}
		})
	}
}

// TestFillContiguous checks that filling a range in two calls gives the same
// bytes as one call: element values depend on the index only.
func TestFillContiguous(t *testing.T) {
	for _, g := range allGens(5) {
		size := g.DType.Size()
		whole := make([]byte, 1000*size)
		g.Fill(whole, 0, 0, 500)
		parts := make([]byte, len(whole))
		g.Fill(parts[:333*size], 0, 0, 500)
		g.Fill(parts[333*size:], 0, 0, 833)
		require.Equal(t, whole, parts, genName(g))
	}
}

// TestExactSumsAnyOrder sums Exact inputs of up to 16 ranks in random
// orders and random trees, rounding every partial sum to the dtype (the
// harshest accumulator), and requires the exact integer sum every time.
func TestExactSumsAnyOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range DTypes {
		g := Gen{Seed: 11, Kind: Exact, DType: d}
		for n := 1; n <= 16; n++ {
			for i := range uint64(300) {
				xs := make([]float32, n)
				exact := 0
				for r := range n {
					xs[r] = g.F32(r, 0, i)
					exact += int(xs[r])
				}
				for range 4 {
					rng.Shuffle(n, func(a, b int) { xs[a], xs[b] = xs[b], xs[a] })
					got := sumInDType(d, xs, rng)
					require.Equal(t, float32(exact), got, "%v n=%d element %d", d, n, i)
				}
				spec := CheckSpec{Gen: g, Op: Sum, NRanks: n}
				e := spec.Expect(i)
				require.True(t, e.BitExact)
				require.Equal(t, float64(exact), e.Value)
				require.Equal(t, d.FromF32(float32(exact)), e.Bits)
			}
		}
	}
}

// sumInDType adds xs by repeatedly combining two random partial sums,
// rounding each result to d: every summation tree is reachable.
func sumInDType(d DType, xs []float32, rng *rand.Rand) float32 {
	parts := append([]float32(nil), xs...)
	for len(parts) > 1 {
		i := rng.IntN(len(parts))
		j := rng.IntN(len(parts) - 1)
		if j >= i {
			j++
		}
		s := d.ToF32(d.FromF32(parts[i] + parts[j]))
		parts[i] = s
		parts = append(parts[:j], parts[j+1:]...)
	}
	return parts[0]
}
