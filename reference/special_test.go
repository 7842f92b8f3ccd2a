package reference

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func specialGen(seed uint64, d DType) Gen { return Gen{Seed: seed, Kind: Special, DType: d} }

// isSubnormal: exponent bits 0, mantissa not 0.
func isSubnormal(d DType, bits uint32) bool {
	return d.ToF64(bits) != 0 && math.Abs(d.ToF64(bits)) < d.ToF64(specialValuesOf(d).minNormal)
}

// The table's values are what their names say, for every dtype.
func TestSpecialValues(t *testing.T) {
	for _, d := range DTypes {
		t.Run(d.String(), func(t *testing.T) {
			v := specialValuesOf(d)
			f := d.format()
			val := d.ToF64
			require.Equal(t, math.Ldexp(1, f.minExp), val(v.minNormal))
			require.Equal(t, 1.0, val(v.one))
			require.Equal(t, math.Ldexp(1, f.maxExp), val(v.topLow))
			spacing := math.Ldexp(1, f.maxExp-f.precision+1)
			require.Equal(t, 2*math.Ldexp(1, f.maxExp)-spacing, val(v.max), "the largest finite value")
			require.Equal(t, val(v.max)-spacing, val(v.maxLess))
			require.Equal(t, spacing/2, val(v.halfULP))
			require.Equal(t, spacing/4, val(v.quarterULP))
			require.True(t, math.IsInf(val(v.inf), 1))
			require.True(t, math.IsInf(val(v.max+1), 1), "max is the largest finite value")
			require.Equal(t, v.inf, d.FromF64(val(v.max)+val(v.halfULP)), "max + half the spacing is a tie that rounds to Inf")
			require.Equal(t, v.max, d.FromF64(val(v.max)+val(v.quarterULP)))
			require.Equal(t, v.maxLess, d.FromF64(val(v.max)-val(v.halfULP)), "a tie that rounds to the even neighbour below")
			require.Equal(t, v.max, d.FromF64(val(v.max)-val(v.quarterULP)))
			if d != F32 {
				// Overflows the dtype but not fp32: the sums a kernel
				// that accumulates in fp32 rounds once at the end.
				require.False(t, math.IsInf(float64(float32(val(v.max))+float32(val(v.halfULP))), 0))
			}

			seen := map[uint32]bool{}
			for _, s := range v.subs {
				require.True(t, isSubnormal(d, s), "%#x", s)
				require.Zero(t, s&d.signBit())
				require.False(t, seen[s], "%#x twice", s)
				seen[s] = true
			}
			all := map[DType]int{F16: 1<<10 - 1, BF16: 1<<7 - 1}
			if n, ok := all[d]; ok {
				require.Len(t, v.subs, n, "every positive subnormal of %s", d)
			} else {
				require.Contains(t, v.subs, uint32(0x00010000), "f32 0x80010000 is a negative one")
			}

			var quiet, signalling, negative int
			for _, n := range v.nans {
				require.True(t, d.isNaN(n), "%#x", n)
				require.NotEqual(t, PoisonBits(d), n, "%#x is the poison pattern", n)
				require.NotEqual(t, PoisonBits(d)|d.quietBit(), n|d.quietBit(), "%#x is poison once quiet", n)
				if n&d.quietBit() != 0 {
					quiet++
				} else {
					signalling++
				}
				if n&d.signBit() != 0 {
					negative++
				}
			}
			require.Positive(t, quiet)
			require.Positive(t, signalling)
			require.Positive(t, negative)
			require.True(t, d.isNaN(v.quietNaN) && v.quietNaN&d.quietBit() != 0)
		})
	}
}

func TestGenSpecialDeterministic(t *testing.T) {
	for _, d := range DTypes {
		g := specialGen(42, d)
		for _, index := range []uint64{0, 1, 2, 1000, 1 << 40, math.MaxUint64} {
			for rank := range 17 {
				a := g.Bits(rank, 3, index)
				require.Equal(t, a, specialGen(42, d).Bits(rank, 3, index))
				if !d.isNaN(a) {
					require.Equal(t, a, d.FromF32(g.F32(rank, 3, index)))
				} else {
					require.True(t, math.IsNaN(float64(g.F32(rank, 3, index))))
				}
			}
		}
		// Fill writes what Bits returns, from any first element, in parallel
		// pieces too.
		withProcs(t, 4)
		for _, first := range []uint64{0, 77} {
			n := 3*fillMinElems + 5
			buf := make([]byte, n*d.Size())
			g.Fill(buf, 2, 5, first)
			for j := 0; j < n; j += 97 {
				require.Equal(t, g.Bits(2, 5, first+uint64(j)), d.GetBits(buf, j), "%v element %d", d, j)
			}
		}
		// The seed and the iteration move the layout.
		other := specialGen(43, d)
		require.Less(t, equalFraction(func(i uint64) uint32 { return g.Bits(0, 0, i) }, func(i uint64) uint32 { return other.Bits(0, 0, i) }), 0.5)
		require.Less(t, equalFraction(func(i uint64) uint32 { return g.Bits(0, 0, i) }, func(i uint64) uint32 { return g.Bits(0, 1, i) }), 0.5)
	}
}

// specialSweep is n elements of every rank's special inputs.
func specialSweep(g Gen, ranks, iter int, n uint64, each func(index uint64, in []uint32)) {
	in := make([]uint32, ranks)
	for i := range n {
		for r := range in {
			in[r] = g.Bits(r, iter, i)
		}
		each(i, in)
	}
}

// 64 KiB of special inputs holds, on rank 0 alone, every subnormal bit
// pattern of the dtype (both signs), both zeros, both infinities, every
// NaN of the table, and the words of two adjacent elements that read as
// -0.0 and 0x80010000 in the wider float; at 2 ranks, the results that
// sentinel kernels get wrong.
func TestSpecialCoverage(t *testing.T) {
	for _, d := range DTypes {
		t.Run(d.String(), func(t *testing.T) {
			g := specialGen(9, d)
			v := specialValuesOf(d)
			n := uint64(64<<10) / uint64(d.Size())
			rank0 := map[uint32]bool{}
			words := map[uint64]bool{}
			var prev uint32
			type meet struct{ a, b uint32 }
			meets := map[meet]bool{}
			results := map[uint32]int{}
			nanResults := 0
			specialSweep(g, 2, 0, n, func(i uint64, in []uint32) {
				rank0[in[0]] = true
				if i%2 == 1 {
					words[uint64(in[0])<<(8*d.Size())|uint64(prev)] = true
				}
				prev = in[0]
				meets[meet{in[0], in[1]}] = true
				e := specialExpect(d, Sum, v, in)
				if e.NaN {
					nanResults++
				} else {
					results[e.Bits]++
				}
			})
			for _, s := range v.subs {
				require.True(t, rank0[s], "%s %s on rank 0", d, d.Describe(s))
				require.True(t, rank0[s|v.sign], "%s %s on rank 0", d, d.Describe(s|v.sign))
			}
			for _, x := range append([]uint32{0, v.sign, v.inf, v.inf | v.sign, v.max, v.max | v.sign, v.minNormal, v.topLow}, v.nans...) {
				require.True(t, rank0[x], "%s %s on rank 0", d, d.Describe(x))
			}
			neg := uint64(v.sign) << (8 * d.Size()) // (+0, -0): the wider float's -0.0
			require.True(t, words[neg], "%s: +0 then -0", d)
			require.True(t, words[uint64(v.sign|v.subs[0])<<(8*d.Size())], "%s: +0 then the smallest negative subnormal", d)
			if d != F32 {
				require.True(t, words[0x80010000], "%s: the f32 word 0x80010000", d)
			}
			for _, m := range []meet{
				{v.sign, v.sign}, {0, v.sign}, {v.sign, 0}, {v.inf, v.inf | v.sign}, {v.max, v.max}, {v.max, v.halfULP},
				{v.max | v.sign, v.max | v.sign},
			} {
				require.True(t, meets[m], "%s: rank 0 %s meets rank 1 %s", d, d.Describe(m.a), d.Describe(m.b))
			}
			// The sums: -0, +0, both infinities and NaNs, and a good share
			// of each.
			for _, r := range []uint32{v.sign, 0, v.inf, v.inf | v.sign} {
				require.Greater(t, results[r], int(n/200), "%s: sums that are %s", d, d.Describe(r))
			}
			require.Greater(t, nanResults, int(n/100), d)
		})
	}
}

// sumOrder is one way an implementation sums N inputs: an order of the
// ranks, and whether partial sums are rounded to the dtype after every
// add (NCCL's ring keeps them in the output type) or kept in fp32 and
// rounded once.
type sumOrder struct {
	name    string
	perm    func(n int, rng *rand.Rand) []int
	inDType bool
	tree    bool
}

func ascending(n int, _ *rand.Rand) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

func descending(n int, rng *rand.Rand) []int {
	p := ascending(n, rng)
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		p[i], p[j] = p[j], p[i]
	}
	return p
}

func shuffled(n int, rng *rand.Rand) []int { return rng.Perm(n) }

var sumOrders = []sumOrder{
	{"fp32 ascending", ascending, false, false},
	{"fp32 descending", descending, false, false},
	{"fp32 shuffled", shuffled, false, false},
	{"fp32 tree", shuffled, false, true},
	{"dtype ascending", ascending, true, false},
	{"dtype descending", descending, true, false},
	{"dtype shuffled", shuffled, true, false},
	{"dtype tree", shuffled, true, true},
}

func (o sumOrder) sum(d DType, in []uint32, rng *rand.Rand) uint32 {
	xs := make([]float32, len(in))
	for i, r := range o.perm(len(in), rng) {
		xs[i] = d.ToF32(in[r])
	}
	add := func(a, b float32) float32 {
		s := a + b
		if o.inDType {
			s = d.ToF32(d.FromF32(s))
		}
		return s
	}
	for len(xs) > 1 {
		if !o.tree {
			xs = append([]float32{add(xs[0], xs[1])}, xs[2:]...)
			continue
		}
		var next []float32
		for i := 0; i+1 < len(xs); i += 2 {
			next = append(next, add(xs[i], xs[i+1]))
		}
		if len(xs)%2 == 1 {
			next = append(next, xs[len(xs)-1])
		}
		xs = next
	}
	return d.FromF32(xs[0])
}

// specialElements is how many elements the order tests sweep: 128 tiles
// (each pattern 8 times) with -short, 64 KiB of bf16 without.
func specialElements() uint64 {
	if testing.Short() {
		return 1024
	}
	return 32768
}

// Every special element's sum has one right result: every order and
// tree, in fp32 or in the dtype, gives bits the expectation accepts
// (doc.go). This is what lets Check compare the sums of variants of
// unknown order bit for bit.
func TestSpecialSumsHaveOneResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range DTypes {
		v := specialValuesOf(d)
		for _, n := range []int{1, 2, 3, 4, 5, 8, 16} {
			g := specialGen(uint64(n), d)
			specialSweep(g, n, 1, specialElements(), func(i uint64, in []uint32) {
				e := specialExpect(d, Sum, v, in)
				for _, o := range sumOrders {
					got := o.sum(d, in, rng)
					require.True(t, e.Accepts(d, got), "%s np%d element %d, %s: got %s, want %s %s; inputs %s",
						d, n, i, o.name, d.Describe(got), d.Describe(e.Bits), e.acceptText(d), DescribeInputs(d, in))
				}
			})
		}
	}
}

// extremeOrder is one way an implementation takes max or min: the
// operator on two float32 values, and an order.
type extremeOrder struct {
	name  string
	apply func(isMax bool, acc, x float32) float32
	perm  func(n int, rng *rand.Rand) []int
}

// fmax is C's fmax and CUDA's fmaxf: a NaN operand is missing data.
func fmax(isMax bool, acc, x float32) float32 {
	switch {
	case acc != acc:
		return x
	case x != x:
		return acc
	case isMax:
		return max(acc, x)
	}
	return min(acc, x)
}

// propagate is IEEE 754-2019 maximum (Go's max): a NaN operand gives NaN.
func propagate(isMax bool, acc, x float32) float32 {
	if isMax {
		return max(acc, x)
	}
	return min(acc, x)
}

// selectNew is the example plugin's acc = x > acc ? x : acc.
func selectNew(isMax bool, acc, x float32) float32 {
	if isMax && x > acc || !isMax && x < acc {
		return x
	}
	return acc
}

var extremeOrders = []extremeOrder{
	{"fmaxf ascending", fmax, ascending},
	{"fmaxf shuffled", fmax, shuffled},
	{"maximum ascending", propagate, ascending},
	{"maximum shuffled", propagate, shuffled},
	{"x > acc ? x : acc ascending", selectNew, ascending},
	{"x > acc ? x : acc descending", selectNew, descending},
}

func (o extremeOrder) reduce(d DType, isMax bool, in []uint32, rng *rand.Rand) uint32 {
	p := o.perm(len(in), rng)
	acc := d.ToF32(in[p[0]])
	for _, r := range p[1:] {
		acc = o.apply(isMax, acc, d.ToF32(in[r]))
	}
	return d.FromF32(acc)
}

// Max and min accept both NaN conventions and either zero where IEEE 754
// leaves them open, in any order; an implementation whose NaN handling
// loses numbers (acc > x ? acc : x lets a NaN accumulator take the next
// number) is caught.
func TestSpecialExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, d := range DTypes {
		v := specialValuesOf(d)
		for _, op := range []Op{Max, Min} {
			isMax := op == Max
			for _, n := range []int{1, 2, 3, 8} {
				g := specialGen(uint64(10+n), d)
				caught := 0
				specialSweep(g, n, 0, specialElements(), func(i uint64, in []uint32) {
					e := specialExpect(d, op, v, in)
					for _, o := range extremeOrders {
						got := o.reduce(d, isMax, in, rng)
						require.True(t, e.Accepts(d, got), "%s %s np%d element %d, %s: got %s, want %s; inputs %s",
							d, op, n, i, o.name, d.Describe(got), e.acceptText(d), DescribeInputs(d, in))
					}
					lossy := extremeOrder{"acc > x ? acc : x", func(isMax bool, acc, x float32) float32 {
						if isMax && acc > x || !isMax && acc < x {
							return acc
						}
						return x
					}, ascending}
					if !e.Accepts(d, lossy.reduce(d, isMax, in, rng)) {
						caught++
					}
				})
				if n >= 3 {
					require.Positive(t, caught, "%s %s np%d: the lossy NaN handling is caught", d, op, n)
				}
			}
		}
	}
}

func TestSpecialExpectCases(t *testing.T) {
	d := BF16
	v := specialValuesOf(d)
	nan := v.nans[3] // signalling
	for _, tc := range []struct {
		op   Op
		in   []uint32
		want Expectation
	}{
		{Sum, []uint32{0x8000, 0x8000}, Expectation{BitExact: true, Bits: 0x8000}},
		{Sum, []uint32{0x0000, 0x8000}, Expectation{BitExact: true, Bits: 0x0000}},
		{Sum, []uint32{0x8000, 0x0000, 0x8000}, Expectation{BitExact: true, Bits: 0x0000}},
		{Sum, []uint32{0x3f80, 0xbf80, 0x8000}, Expectation{BitExact: true, Bits: 0x0000}},
		{Sum, []uint32{0x8001, 0x8000}, Expectation{BitExact: true, Bits: 0x8001}},
		{Sum, []uint32{0x8001, 0x8002}, Expectation{BitExact: true, Bits: 0x8003}},
		{Sum, []uint32{v.max, v.halfULP}, Expectation{BitExact: true, Bits: v.inf}},
		{Sum, []uint32{v.max | v.sign, v.max | v.sign, v.maxLess | v.sign}, Expectation{BitExact: true, Bits: v.inf | v.sign}},
		{Sum, []uint32{v.inf, v.inf | v.sign}, Expectation{BitExact: true, NaN: true, Bits: v.quietNaN}},
		{Sum, []uint32{v.one, nan}, Expectation{BitExact: true, NaN: true, Bits: v.quietNaN}},
		{Max, []uint32{0x8000, 0x0000}, Expectation{BitExact: true, Bits: 0x0000, EitherZero: true}},
		{Min, []uint32{0x0000, 0x8000}, Expectation{BitExact: true, Bits: 0x8000, EitherZero: true}},
		{Max, []uint32{0x8000, 0x8000}, Expectation{BitExact: true, Bits: 0x8000}},
		{Max, []uint32{nan, 0xbf80}, Expectation{BitExact: true, Bits: 0xbf80, OrNaN: true}},
		{Min, []uint32{nan, 0x8000, 0x0000}, Expectation{BitExact: true, Bits: 0x8000, OrNaN: true, EitherZero: true}},
		{Max, []uint32{nan, nan}, Expectation{BitExact: true, NaN: true, Bits: v.quietNaN}},
		{Min, []uint32{v.inf, v.inf | v.sign}, Expectation{BitExact: true, Bits: v.inf | v.sign}},
	} {
		got := specialExpect(d, tc.op, v, tc.in)
		if got.NaN {
			require.True(t, math.IsNaN(got.Value))
		} else {
			require.Equal(t, d.ToF64(got.Bits), got.Value)
		}
		got.Value = 0 // a NaN is not equal to itself
		require.Equal(t, tc.want, got, "%v %s", tc.op, DescribeInputs(d, tc.in))
	}
}

func TestExpectationAccepts(t *testing.T) {
	d := F16
	poison := PoisonBits(d)
	nanOnly := Expectation{BitExact: true, NaN: true, Bits: 0x7e00}
	require.True(t, nanOnly.Accepts(d, 0x7e00))
	require.True(t, nanOnly.Accepts(d, 0xffff), "any sign and payload")
	require.True(t, nanOnly.Accepts(d, 0x7c01), "a signalling NaN")
	require.False(t, nanOnly.Accepts(d, poison), "an unwritten output")
	require.True(t, nanOnly.Accepts(d, poison|d.quietBit()), "arithmetic that ORs a NaN's bits with a number's yields it too")
	require.False(t, nanOnly.Accepts(d, 0x7c00), "Inf is no NaN")
	require.False(t, nanOnly.Accepts(d, 0x0000))

	zero := Expectation{BitExact: true, Bits: 0x8000}
	require.True(t, zero.Accepts(d, 0x8000))
	require.False(t, zero.Accepts(d, 0x0000), "a dropped -0")
	either := Expectation{BitExact: true, Bits: 0x0000, EitherZero: true}
	require.True(t, either.Accepts(d, 0x0000))
	require.True(t, either.Accepts(d, 0x8000))
	require.False(t, either.Accepts(d, 0x0001))
	require.False(t, either.Accepts(d, 0x7e00))

	orNaN := Expectation{BitExact: true, Bits: 0x3c00, OrNaN: true}
	require.True(t, orNaN.Accepts(d, 0x3c00))
	require.True(t, orNaN.Accepts(d, 0xfe00))
	require.False(t, orNaN.Accepts(d, 0x3c01))
	require.False(t, orNaN.Accepts(d, poison))

	require.Equal(t, "a NaN (any sign and payload)", nanOnly.acceptText(d))
	require.Equal(t, "+0 (0x0000) or -0 (0x8000)", either.acceptText(d))
	require.Equal(t, "1 (0x3c00) or a NaN (any sign and payload)", orNaN.acceptText(d))
	require.Equal(t, "", zero.acceptText(d))
}

func TestDescribe(t *testing.T) {
	for _, tc := range []struct {
		d    DType
		bits uint32
		want string
	}{
		{BF16, 0x0000, "+0 (0x0000)"},
		{BF16, 0x8000, "-0 (0x8000)"},
		{BF16, 0x7f80, "+Inf (0x7f80)"},
		{BF16, 0xff80, "-Inf (0xff80)"},
		{BF16, 0x7fc0, "NaN (0x7fc0)"},
		{BF16, 0x7f81, "sNaN (0x7f81)"},
		{BF16, 0xff95, "-sNaN (0xff95)"},
		{BF16, 0x3fc0, "1.5 (0x3fc0)"},
		{F16, 0x8001, "-5.960464477539063e-08 (0x8001)"},
		{F32, 0x80010000, "-9.183549615799121e-41 (0x80010000)"},
	} {
		require.Equal(t, tc.want, tc.d.Describe(tc.bits))
	}
	in := make([]uint32, 10)
	require.Equal(t, "rank 0 +0 (0x0000), rank 1 +0 (0x0000), rank 2 +0 (0x0000), rank 3 +0 (0x0000), rank 4 +0 (0x0000), rank 5 +0 (0x0000), "+
		"rank 6 +0 (0x0000), rank 7 +0 (0x0000), and 2 more ranks", DescribeInputs(BF16, in))
}

func TestCheckSpecial(t *testing.T) {
	withProcs(t, 4)
	for _, d := range DTypes {
		for _, op := range Ops {
			for _, order := range orders {
				for _, n := range []int{1, 2, 3, 8} {
					spec := CheckSpec{Gen: specialGen(5, d), Op: op, NRanks: n, Iter: 2, Order: order, First: 3}
					name := fmt.Sprintf("%v/%v/%v/np%d", d, op, order, n)
					require.True(t, spec.BitExact(), name)
					count := 3001
					if n == 3 {
						count = 2*checkChunkElems + 77 // over fillMinElems: on several goroutines
					}
					out := expectedBuffer(spec, count)
					res := Check(spec, out)
					require.Zero(t, res.Wrong, "%s: %v", name, res)
					require.Equal(t, uint64(count), res.Checked)
					// Check and Expect agree element by element, and a
					// poisoned output is wrong everywhere, NaN expectations
					// included.
					FillPoison(out, d)
					res = Check(spec, out)
					require.Equal(t, uint64(count), res.Wrong, name)
				}
			}
		}
	}
}

// The bugs special inputs are for: a sum that starts from a +0
// accumulator, a kernel that replaces -0 in its data by +0 (its sentinel
// is -0), one that flushes subnormals to zero. Each passes Random inputs
// and fails special ones, and the diagnosis names the inputs.
func TestCheckSpecialCatchesSentinelBugs(t *testing.T) {
	for _, d := range []DType{BF16, F16, F32} {
		v := specialValuesOf(d)
		for _, bug := range []struct {
			name string
			sum  func(in []float32) float32
		}{
			{"+0 accumulator", func(in []float32) float32 {
				var acc float32
				for _, x := range in {
					acc += x
				}
				return acc
			}},
			{"-0 sanitised to +0", func(in []float32) float32 {
				acc := in[0] + 0 // +0 for -0, the rest unchanged
				for _, x := range in[1:] {
					acc += x + 0
				}
				return acc
			}},
			{"subnormals flushed", func(in []float32) float32 {
				flush := func(x float32) float32 {
					if x != 0 && math.Abs(float64(x)) < d.ToF64(v.minNormal) {
						return float32(math.Copysign(0, float64(x)))
					}
					return x
				}
				acc := flush(in[0])
				for _, x := range in[1:] {
					acc = flush(acc + flush(x))
				}
				return acc
			}},
		} {
			for _, kind := range []InputKind{Random, Special} {
				const n, count = 2, 4096
				g := Gen{Seed: 3, Kind: kind, DType: d}
				spec := CheckSpec{Gen: g, Op: Sum, NRanks: n, Order: OrderRankAscendingF32}
				out := make([]byte, count*d.Size())
				for i := range count {
					in := []float32{g.F32(0, 0, uint64(i)), g.F32(1, 0, uint64(i))}
					d.SetF32(out, i, bug.sum(in))
				}
				res := Check(spec, out)
				if kind == Random {
					require.Zero(t, res.Wrong, "%s %s on random inputs: %v", d, bug.name, res)
					continue
				}
				require.Positive(t, res.Wrong, "%s %s on special inputs", d, bug.name)
				m := res.First[0]
				require.Len(t, m.Inputs, n)
				for r, b := range m.Inputs {
					require.Equal(t, g.Bits(r, 0, m.Index), b)
				}
				s := res.String()
				require.Contains(t, s, "; inputs: rank 0 "+d.Describe(m.Inputs[0])+", rank 1 "+d.Describe(m.Inputs[1]), s)
				require.Contains(t, s, "got "+d.Describe(m.GotBits), s)
			}
		}
	}
}

// The diagnosis of a dropped -0 reads as the issue states it.
func TestSpecialDiagnosis(t *testing.T) {
	g := specialGen(1, BF16)
	spec := CheckSpec{Gen: g, Op: Sum, NRanks: 2}
	// Find an element where both ranks hold -0 and answer +0 there.
	out := expectedBuffer(spec, 256)
	index := -1
	for i := range 256 {
		if g.Bits(0, 0, uint64(i)) == 0x8000 && g.Bits(1, 0, uint64(i)) == 0x8000 {
			index = i
			break
		}
	}
	require.GreaterOrEqual(t, index, 0)
	BF16.SetBits(out, index, 0x0000)
	res := Check(spec, out)
	require.Equal(t, uint64(1), res.Wrong)
	require.Equal(t, fmt.Sprintf("1 of 256 wrong; first [%d] got +0 (0x0000) want -0 (0x8000); inputs: rank 0 -0 (0x8000), rank 1 -0 (0x8000); worst 0 ulp at %d", index, index), res.String())
	require.Empty(t, res.First[0].Accept)

	// Where a NaN is expected, the poison pattern is wrong and said so.
	for i := range 256 {
		if e := spec.Expect(uint64(i)); e.NaN {
			out = expectedBuffer(spec, 256)
			BF16.SetBits(out, i, PoisonBits(BF16))
			res = Check(spec, out)
			require.Equal(t, uint64(1), res.Wrong)
			require.Equal(t, "a NaN (any sign and payload)", res.First[0].Accept)
			require.True(t, strings.Contains(res.String(), "want a NaN (any sign and payload); inputs: "), res.String())
			return
		}
	}
	t.Fatal("no NaN expected in 256 elements")
}
