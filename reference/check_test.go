package reference

import (
	"fmt"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// expectedBuffer is a correct output of count elements for spec: the
// expected bits, or the rounded reference when compared within a bound.
func expectedBuffer(spec CheckSpec, count int) []byte {
	d := spec.Gen.DType
	buf := make([]byte, count*d.Size())
	r := newReducer(spec)
	parallelRanges(count, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			d.SetBits(buf, j, r.expect(spec.First+uint64(j)).Bits)
		}
	})
	return buf
}

// withProcs runs the test body with GOMAXPROCS set to procs, so Check splits
// work over several goroutines even on a small machine.
func withProcs(t *testing.T, procs int) {
	old := runtime.GOMAXPROCS(procs)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

func TestCheckAcceptsCorrectOutput(t *testing.T) {
	withProcs(t, 4)
	for _, g := range allGens(31) {
		for _, op := range Ops {
			for _, order := range orders {
				for _, n := range []int{1, 3, 8} {
					for _, count := range []int{1, 17, 3*checkChunkElems + 5} {
						spec := CheckSpec{Gen: g, Op: op, NRanks: n, Iter: 1, Order: order, First: 12345}
						name := fmt.Sprintf("%s/%v/%v/np%d/count%d", genName(g), op, order, n, count)
						res := Check(spec, expectedBuffer(spec, count))
						require.Equal(t, uint64(count), res.Checked, name)
						require.Zero(t, res.Wrong, "%s: %v", name, res)
						require.True(t, res.OK())
						require.Empty(t, res.First, name)
						if spec.BitExact() {
							require.Zero(t, res.WorstULP, name)
						} else {
							// Correct rounding of the exact sum: at most half an ulp.
							require.LessOrEqual(t, res.WorstULP, 0.5, name)
						}
					}
				}
			}
		}
	}
}

// TestCheckAcceptsOtherOrders feeds Check the output of simulated
// implementations that sum in other orders and keep partial sums in the
// dtype: within the bound, not bit-identical.
func TestCheckAcceptsOtherOrders(t *testing.T) {
	for _, d := range DTypes {
		g := Gen{Seed: 8, Kind: Random, DType: d}
		spec := CheckSpec{Gen: g, Op: Sum, NRanks: 8, First: 3}
		const count = 5000
		got := make([]byte, count*d.Size())
		differ := 0
		for j := range count {
			xs := inputsF32(g, spec.NRanks, 0, spec.First+uint64(j))
			v := implementations["ring-dtype-acc"](d, xs, j, nil)
			d.SetF32(got, j, v)
			if d.FromF32(v) != straightforward(d, Sum, xs) {
				differ++
			}
		}
		res := Check(spec, got)
		require.Zero(t, res.Wrong, "%v: %v", d, res)
		if d != F32 {
			require.Positive(t, differ, "%v: the ring order must differ from rank order somewhere, or this test shows nothing", d)
			require.Positive(t, res.WorstULP, "%v", d)
		}
		spec.Order = OrderRankAscendingF32
		if d != F32 {
			require.Equal(t, uint64(differ), Check(spec, got).Wrong, "%v: bit-exact comparison must reject every reordered element", d)
		}
	}
}

// plant changes element j of buf and says what Check must report.
type plant struct {
	name   string
	spec   CheckSpec
	change func(d DType, e Expectation) (bits uint32, wrong bool)
	ulp    func(ulp float64) bool // condition on the reported ULP when wrong
}

// outsideBound steps away from the reference one dtype value at a time and
// returns the last value within the bound and the first one outside it.
func outsideBound(d DType, e Expectation) (inside, outside uint32) {
	b := d.FromF64(e.Value)
	for math.Abs(d.ToF64(b+1)-e.Value) <= e.Bound {
		b++
	}
	return b, b + 1
}

func TestCheckFindsPlantedErrors(t *testing.T) {
	withProcs(t, 4)
	exactBF16 := CheckSpec{Gen: Gen{Seed: 1, Kind: Random, DType: BF16}, Op: Sum, NRanks: 8, Order: OrderRankAscendingF32, First: 1 << 20}
	exactInts := CheckSpec{Gen: Gen{Seed: 1, Kind: Exact, DType: F16}, Op: Sum, NRanks: 8, First: 7}
	maxF32 := CheckSpec{Gen: Gen{Seed: 1, Kind: Random, DType: F32}, Op: Max, NRanks: 4}
	boundBF16 := CheckSpec{Gen: Gen{Seed: 1, Kind: Random, DType: BF16}, Op: Sum, NRanks: 8, First: 99}
	boundF16 := CheckSpec{Gen: Gen{Seed: 1, Kind: Random, DType: F16}, Op: Sum, NRanks: 3}
	boundF32 := CheckSpec{Gen: Gen{Seed: 1, Kind: Random, DType: F32}, Op: Sum, NRanks: 16}
	is := func(want float64) func(float64) bool { return func(u float64) bool { return u == want } }
	above := func(lim float64) func(float64) bool { return func(u float64) bool { return u > lim } }
	plants := []plant{
		{"lowest bit flipped", exactBF16, func(_ DType, e Expectation) (uint32, bool) { return e.Bits ^ 1, true }, is(1)},
		{"one ulp up", exactBF16, func(_ DType, e Expectation) (uint32, bool) { return e.Bits + 1, true }, is(1)},
		{"sign flipped", exactBF16, func(_ DType, e Expectation) (uint32, bool) { return e.Bits ^ 0x8000, true }, above(1)},
		{"poison", exactBF16, func(d DType, _ Expectation) (uint32, bool) { return PoisonBits(d), true }, is(math.Inf(1))},
		{"Inf", exactBF16, func(_ DType, e Expectation) (uint32, bool) { return e.Bits&0x8000 | 0x7f80, true }, is(math.Inf(1))},
		{"exact ints: lowest bit flipped", exactInts, func(_ DType, e Expectation) (uint32, bool) { return e.Bits ^ 1, true }, above(0)},
		{"exact ints: poison", exactInts, func(d DType, _ Expectation) (uint32, bool) { return PoisonBits(d), true }, is(math.Inf(1))},
		{"max f32: one ulp down", maxF32, func(_ DType, e Expectation) (uint32, bool) { return e.Bits - 1, true }, above(0)},
		{"max f32: exponent bit flipped", maxF32, func(_ DType, e Expectation) (uint32, bool) { return e.Bits ^ 1<<23, true }, above(1)},
		{"bf16 bound: just inside", boundBF16, func(d DType, e Expectation) (uint32, bool) { in, _ := outsideBound(d, e); return in, false }, nil},
		{"bf16 bound: just outside", boundBF16, func(d DType, e Expectation) (uint32, bool) { _, out := outsideBound(d, e); return out, true }, above(0.5)},
		{"bf16 bound: poison", boundBF16, func(d DType, _ Expectation) (uint32, bool) { return PoisonBits(d), true }, is(math.Inf(1))},
		{"f16 bound: just inside", boundF16, func(d DType, e Expectation) (uint32, bool) { in, _ := outsideBound(d, e); return in, false }, nil},
		{"f16 bound: just outside", boundF16, func(d DType, e Expectation) (uint32, bool) { _, out := outsideBound(d, e); return out, true }, above(0.5)},
		{"f32 bound: just inside", boundF32, func(d DType, e Expectation) (uint32, bool) { in, _ := outsideBound(d, e); return in, false }, nil},
		{"f32 bound: just outside", boundF32, func(d DType, e Expectation) (uint32, bool) { _, out := outsideBound(d, e); return out, true }, above(0.5)},
	}
	const count = 4*checkChunkElems + 3
	for _, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			d := p.spec.Gen.DType
			clean := expectedBuffer(p.spec, count)
			// First element, one in the middle of a chunk, the last one.
			for _, j := range []int{0, 2*checkChunkElems + 17, count - 1} {
				got := append([]byte(nil), clean...)
				index := p.spec.First + uint64(j)
				e := p.spec.Expect(index)
				bits, wrong := p.change(d, e)
				d.SetBits(got, j, bits)
				res := Check(p.spec, got)
				require.Equal(t, uint64(count), res.Checked)
				if !wrong {
					require.Zero(t, res.Wrong, "element %d: %v", j, res)
					continue
				}
				require.Equal(t, uint64(1), res.Wrong, "element %d: %v", j, res)
				require.Len(t, res.First, 1)
				m := res.First[0]
				require.Equal(t, index, m.Index)
				require.Equal(t, bits, m.GotBits)
				require.Equal(t, e.Bits, m.WantBits)
				require.Equal(t, e.Value, m.Want)
				require.True(t, p.ulp(m.ULP), "ULP %v", m.ULP)
				require.Equal(t, index, res.WorstIndex)
				require.Equal(t, m.ULP, res.WorstULP)
			}
		})
	}
}

// TestCheckReportsLowestMismatches plants errors across chunks handled by
// different goroutines and requires the lowest MaxReported, in order, and
// the same Result from one goroutine and from several.
func TestCheckReportsLowestMismatches(t *testing.T) {
	spec := CheckSpec{Gen: Gen{Seed: 4, Kind: Exact, DType: BF16}, Op: Sum, NRanks: 4, First: 1000}
	const count = 16 * checkChunkElems
	got := expectedBuffer(spec, count)
	var planted []uint64
	for k := 19; k >= 0; k-- { // planted from the top, so order is not luck
		j := k*(count/20) + 11
		d := spec.Gen.DType
		d.SetBits(got, j, d.GetBits(got, j)^0x0100)
		planted = append([]uint64{spec.First + uint64(j)}, planted...)
	}
	results := map[int]Result{}
	for _, procs := range []int{1, 3, 8} {
		old := runtime.GOMAXPROCS(procs)
		results[procs] = Check(spec, got)
		runtime.GOMAXPROCS(old)
	}
	for procs, res := range results {
		require.Equal(t, uint64(20), res.Wrong, "GOMAXPROCS %d", procs)
		require.Len(t, res.First, MaxReported)
		for i, m := range res.First {
			require.Equal(t, planted[i], m.Index, "GOMAXPROCS %d mismatch %d", procs, i)
		}
		require.Equal(t, results[1], res, "GOMAXPROCS %d", procs)
	}
}

func TestCheckAllPoisoned(t *testing.T) {
	for _, d := range DTypes {
		spec := CheckSpec{Gen: Gen{Seed: 1, Kind: Random, DType: d}, Op: Sum, NRanks: 2, First: 5}
		got := make([]byte, 1000*d.Size())
		FillPoison(got, d)
		res := Check(spec, got)
		require.Equal(t, uint64(1000), res.Wrong)
		require.Len(t, res.First, MaxReported)
		for i, m := range res.First {
			require.Equal(t, uint64(5+i), m.Index)
			require.True(t, math.IsNaN(m.Got))
			require.Equal(t, PoisonBits(d), m.GotBits)
		}
		require.Equal(t, math.Inf(1), res.WorstULP)
		require.Equal(t, uint64(5), res.WorstIndex)
		require.Contains(t, res.String(), "got NaN")
	}
}

func TestPoison(t *testing.T) {
	for _, d := range DTypes {
		p := PoisonBits(d)
		require.True(t, math.IsNaN(d.ToF64(p)), "%v poison must be a NaN", d)
		// Arithmetic makes quiet NaNs; the poison is a signalling one, so a
		// kernel's NaN result is not mistaken for an unwritten element.
		require.NotEqual(t, d.FromF32(float32(math.NaN())), p)
		quiet := map[DType]uint32{F32: 1 << 22, F16: 1 << 9, BF16: 1 << 6}[d]
		require.Zero(t, p&quiet, "%v poison must be a signalling NaN", d)
		buf := make([]byte, 3*d.Size()+1)
		buf[len(buf)-1] = 0x5a
		FillPoison(buf, d)
		for i := range 3 {
			require.Equal(t, p, d.GetBits(buf, i))
		}
		require.Equal(t, byte(0x5a), buf[len(buf)-1], "a partial trailing element is left alone")
	}
}

func TestResultString(t *testing.T) {
	res := Result{
		Checked: 1048576, Wrong: 3, DType: BF16,
		First:    []Mismatch{{Index: 7, Got: 1.5, Want: 1.25, GotBits: 0x3fc0, WantBits: 0x3fa0, ULP: 2}},
		WorstULP: 2, WorstIndex: 7,
	}
	require.Equal(t, "3 of 1048576 wrong; first [7] got 1.5 (0x3fc0) want 1.25 (0x3fa0); worst 2 ulp at 7", res.String())
	ok := Result{Checked: 10, DType: F32, WorstULP: 0.25, WorstIndex: 3}
	require.Equal(t, "0 of 10 wrong; worst 0.25 ulp at 3", ok.String())
	f32 := Result{Checked: 1, Wrong: 1, DType: F32, First: []Mismatch{{Got: 1, GotBits: 0x3f800000}}}
	require.Contains(t, f32.String(), "(0x3f800000)")
}

func TestCheckRejectsBadInput(t *testing.T) {
	spec := CheckSpec{Gen: Gen{DType: F32}, NRanks: 2}
	require.Panics(t, func() { Check(spec, make([]byte, 6)) }, "partial element")
	spec.NRanks = 0
	require.Panics(t, func() { Check(spec, make([]byte, 8)) }, "no ranks")
	spec.NRanks, spec.Op = 2, Op(9)
	require.Panics(t, func() { Check(spec, make([]byte, 8)) }, "unknown op")
	spec.Op, spec.Gen.DType = Sum, DType(9)
	require.Panics(t, func() { Check(spec, make([]byte, 8)) }, "unknown dtype")
	empty := Check(CheckSpec{Gen: Gen{DType: BF16}, NRanks: 2}, nil)
	require.Zero(t, empty.Checked)
	require.True(t, empty.OK())
}

// TestCheckAgreesWithStraightforward builds outputs with the plain
// rank-order reduction of the public generator's inputs, not with the code
// Check shares with Expect.
func TestCheckAgreesWithStraightforward(t *testing.T) {
	// 17 ranks cross a hash word in every scheme (8 fields a word at most).
	for _, g := range allGens(77) {
		for _, op := range Ops {
			for _, order := range orders {
				for _, n := range []int{5, 17} {
					spec := CheckSpec{Gen: g, Op: op, NRanks: n, Iter: 3, Order: order, First: 1 << 33}
					if !spec.BitExact() {
						continue
					}
					d := g.DType
					const count = 2000
					got := make([]byte, count*d.Size())
					for j := range count {
						d.SetBits(got, j, straightforward(d, op, inputsF32(g, spec.NRanks, spec.Iter, spec.First+uint64(j))))
					}
					res := Check(spec, got)
					require.Zero(t, res.Wrong, "%s/%v/%v np%d: %v", genName(g), op, order, n, res)
					require.Equal(t, uint64(count), res.Checked)
				}
			}
		}
	}
}

// TestCheckManyRanks covers the limit of the packed fixed-point sums: at
// maxPackedRanks the fast path runs, above it the per-element path.
func TestCheckManyRanks(t *testing.T) {
	for _, n := range []int{maxPackedRanks, maxPackedRanks + 1} {
		for _, d := range []DType{F16, BF16} {
			spec := CheckSpec{Gen: Gen{Seed: 2, Kind: Random, DType: d}, Op: Sum, NRanks: n}
			const count = 9
			got := make([]byte, count*d.Size())
			for j := range count {
				xs := inputsF32(spec.Gen, n, 0, uint64(j))
				sum := 0.0
				for _, x := range xs {
					sum += float64(x)
				}
				d.SetBits(got, j, d.FromF64(sum))
			}
			res := Check(spec, got)
			require.Zero(t, res.Wrong, "%v np%d: %v", d, n, res)
			require.LessOrEqual(t, res.WorstULP, 0.5, "%v np%d", d, n)
			// (n-1)u > 1 here, so only a NaN is outside the bound.
			d.SetBits(got, 5, PoisonBits(d))
			require.Equal(t, uint64(1), Check(spec, got).Wrong, "%v np%d", d, n)
		}
	}
}
