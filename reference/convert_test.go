package reference

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// format16 describes a 16-bit float layout for the independent reference
// below, which works on float64 values with math.Ldexp and never calls the
// code under test.
type format16 struct {
	name      string
	expBits   int // exponent field width
	mantBits  int // stored mantissa bits
	bias      int
	quietBit  uint16
	fromF32   func(float32) uint16
	toF32     func(uint16) float32
	precision int // mantBits + 1
	minExp    int // 1 - bias
	maxExp    int // 2^expBits - 2 - bias
}

func newFormat16(name string, expBits, mantBits int, from func(float32) uint16, to func(uint16) float32) format16 {
	bias := 1<<(expBits-1) - 1
	return format16{
		name: name, expBits: expBits, mantBits: mantBits, bias: bias,
		quietBit: 1 << (mantBits - 1), fromF32: from, toF32: to,
		precision: mantBits + 1, minExp: 1 - bias, maxExp: 1<<expBits - 2 - bias,
	}
}

var (
	bf16Format = newFormat16("bf16", 8, 7, BF16FromF32, BF16ToF32)
	f16Format  = newFormat16("f16", 5, 10, F16FromF32, F16ToF32)
	formats16  = []format16{bf16Format, f16Format}
)

func (f format16) expMask() uint16  { return uint16(1<<f.expBits-1) << f.mantBits }
func (f format16) mantMask() uint16 { return 1<<f.mantBits - 1 }

// isNaN16 reads the bit fields directly.
func (f format16) isNaN16(h uint16) bool {
	return h&f.expMask() == f.expMask() && h&f.mantMask() != 0
}

// decode is the value of bits h, from the IEEE field definitions.
func (f format16) decode(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h&f.expMask()) >> f.mantBits
	m := float64(h & f.mantMask())
	switch e {
	case 1<<f.expBits - 1:
		if m != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	case 0:
		return sign * math.Ldexp(m, f.minExp-f.mantBits)
	}
	return sign * math.Ldexp(1+math.Ldexp(m, -f.mantBits), e-f.bias)
}

// round rounds x to the format by locating the two neighbours with Frexp and
// Floor and choosing between them by distance, ties to the even significand.
func (f format16) round(x float64) float64 {
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	frac, exp := math.Frexp(math.Abs(x)) // |x| = frac * 2^exp, frac in [0.5, 1)
	binade := max(exp-1, f.minExp)
	step := binade - f.mantBits // exponent of the spacing
	scaled := math.Ldexp(frac, exp-step)
	n := math.Floor(scaled)
	switch rem := scaled - n; {
	case rem > 0.5, rem == 0.5 && math.Mod(n, 2) == 1:
		n++
	}
	r := math.Ldexp(n, step)
	if r >= math.Ldexp(1, f.maxExp+1) {
		r = math.Inf(1)
	}
	return math.Copysign(r, x)
}

// checkFromF32 checks the conversion of one float32 bit pattern against the
// reference rounding; decoded is f.decode for every 16-bit pattern.
func (f format16) checkFromF32(in uint32, decoded []float64) error {
	x := math.Float32frombits(in)
	got := f.fromF32(x)
	if math.IsNaN(float64(x)) {
		if !f.isNaN16(got) || got&f.quietBit == 0 || got&0x8000 != uint16(in>>16)&0x8000 {
			return fmt.Errorf("%s(%#08x NaN) = %#04x, want a quiet NaN of the same sign", f.name, in, got)
		}
		return nil
	}
	want := f.round(float64(x))
	if decoded[got] != want || math.Signbit(decoded[got]) != math.Signbit(want) {
		return fmt.Errorf("%s(%#08x = %g) = %#04x = %g, want %g", f.name, in, x, got, decoded[got], want)
	}
	return nil
}

func (f format16) decodeAll() []float64 {
	d := make([]float64, 1<<16)
	for h := range d {
		d[h] = f.decode(uint16(h))
	}
	return d
}

func TestBF16FromF32Table(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
		why  string
	}{
		{0x00000000, 0x0000, "+0"},
		{0x80000000, 0x8000, "-0 keeps its sign"},
		{0x3f800000, 0x3f80, "1.0"},
		{0x3f808000, 0x3f80, "1 + half ulp: tie, to even (down)"},
		{0x3f818000, 0x3f82, "1 + 3 half ulps: tie, to even (up)"},
		{0x3f807fff, 0x3f80, "just below the tie"},
		{0x3f808001, 0x3f81, "just above the tie"},
		{0xbf808001, 0xbf81, "negative, just above the tie"},
		{0x3fffffff, 0x4000, "carry into the exponent"},
		{0x7f7f7fff, 0x7f7f, "just below the overflow tie: largest finite"},
		{0x7f7f8000, 0x7f80, "overflow tie rounds to even, which is Inf"},
		{0x7f7fffff, 0x7f80, "largest float32 overflows to Inf"},
		{0xff7fffff, 0xff80, "most negative float32 overflows to -Inf"},
		{0x7f800000, 0x7f80, "+Inf"},
		{0xff800000, 0xff80, "-Inf"},
		{0x7fc00000, 0x7fc0, "quiet NaN"},
		{0x7f800001, 0x7fc0, "signalling NaN, payload only in dropped bits: stays NaN, quiet"},
		{0xff800001, 0xffc0, "negative signalling NaN"},
		{0x7fffffff, 0x7fff, "NaN with all payload bits: no carry into the sign"},
		{0x7fa00000, 0x7fe0, "signalling NaN keeps its top payload, gains the quiet bit"},
		{0x00000001, 0x0000, "smallest float32 subnormal rounds to 0"},
		{0x00008000, 0x0000, "half the smallest bf16 subnormal: tie, to even 0"},
		{0x00008001, 0x0001, "just above it: smallest bf16 subnormal"},
		{0x00018000, 0x0002, "tie between subnormals 1 and 2: to even 2"},
		{0x007fffff, 0x0080, "largest float32 subnormal rounds up to the smallest normal"},
		{0x80008001, 0x8001, "negative subnormal"},
		{0x00800000, 0x0080, "smallest normal"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%08x", c.in), func(t *testing.T) {
			require.Equal(t, c.want, BF16FromF32(math.Float32frombits(c.in)), "%#04x: %s", c.want, c.why)
		})
	}
}

func TestF16FromF32Table(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
		why  string
	}{
		{0x00000000, 0x0000, "+0"},
		{0x80000000, 0x8000, "-0 keeps its sign"},
		{0x3f800000, 0x3c00, "1.0"},
		{0x3f801000, 0x3c00, "1 + half ulp: tie, to even (down)"},
		{0x3f803000, 0x3c02, "1 + 3 half ulps: tie, to even (up)"},
		{0x3f800fff, 0x3c00, "just below the tie"},
		{0x3f801001, 0x3c01, "just above the tie"},
		{0x477fe000, 0x7bff, "65504, the largest finite"},
		{0x477fefff, 0x7bff, "just below the overflow tie"},
		{0x477ff000, 0x7c00, "65520, the overflow tie: to even, which is Inf"},
		{0x47800000, 0x7c00, "65536 overflows"},
		{0x7f7fffff, 0x7c00, "largest float32 overflows to Inf"},
		{0xff800000, 0xfc00, "-Inf"},
		{0x38800000, 0x0400, "2^-14, the smallest normal"},
		{0x387fc000, 0x03ff, "the largest subnormal"},
		{0x387fe000, 0x0400, "tie between the largest subnormal and the smallest normal: to even"},
		{0x33800000, 0x0001, "2^-24, the smallest subnormal"},
		{0x33000000, 0x0000, "2^-25: tie, to even 0"},
		{0x33000001, 0x0001, "just above 2^-25"},
		{0xb3000001, 0x8001, "negative, just above 2^-25"},
		{0x33c00000, 0x0002, "1.5 * 2^-24: tie, to even 2"},
		{0x00000001, 0x0000, "float32 subnormal underflows to 0"},
		{0x7fc00000, 0x7e00, "quiet NaN"},
		{0x7f800001, 0x7e00, "signalling NaN, payload only in dropped bits: stays NaN"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%08x", c.in), func(t *testing.T) {
			require.Equal(t, c.want, F16FromF32(math.Float32frombits(c.in)), "%#04x: %s", c.want, c.why)
		})
	}
}

func TestToF32Table(t *testing.T) {
	cases := []struct {
		d    DType
		in   uint32
		want uint32
		why  string
	}{
		{BF16, 0x0001, 0x00010000, "smallest bf16 subnormal, 2^-133"},
		{BF16, 0x3f80, 0x3f800000, "1.0"},
		{BF16, 0xff80, 0xff800000, "-Inf"},
		{BF16, 0x7f7f, 0x7f7f0000, "largest finite"},
		{F16, 0x0001, 0x33800000, "smallest f16 subnormal, 2^-24"},
		{F16, 0x03ff, 0x387fc000, "largest f16 subnormal"},
		{F16, 0x7bff, 0x477fe000, "65504"},
		{F16, 0xfc00, 0xff800000, "-Inf"},
		{F16, 0x8000, 0x80000000, "-0"},
		{F32, 0x7f7fffff, 0x7f7fffff, "f32 is the identity"},
	}
	for _, c := range cases {
		require.Equal(t, c.want, math.Float32bits(c.d.ToF32(c.in)), "%v %#x: %s", c.d, c.in, c.why)
	}
}

// TestDecodeExhaustive checks every 16-bit pattern: the float32 value against
// the float64 decoding of the fields, and the round trip back.
func TestDecodeExhaustive(t *testing.T) {
	for _, f := range formats16 {
		t.Run(f.name, func(t *testing.T) {
			for i := range 1 << 16 {
				h := uint16(i)
				got := float64(f.toF32(h))
				want := f.decode(h)
				if f.isNaN16(h) {
					require.True(t, math.IsNaN(got), "%#04x must decode to NaN", h)
					require.Equal(t, h|f.quietBit, f.fromF32(f.toF32(h)), "%#04x: NaN round trip keeps sign and payload, quietened", h)
					continue
				}
				require.Equal(t, want, got, "%#04x", h)
				require.Equal(t, math.Signbit(want), math.Signbit(got), "%#04x sign", h)
				require.Equal(t, h, f.fromF32(f.toF32(h)), "%#04x round trip", h)
			}
		})
	}
}

// TestRoundingMidpoints checks ties to even at every midpoint between
// adjacent values (including the largest finite value and the overflow
// threshold), and the float32 values just either side of each midpoint.
func TestRoundingMidpoints(t *testing.T) {
	for _, f := range formats16 {
		t.Run(f.name, func(t *testing.T) {
			maxFinite := f.expMask() - 1
			for lo := uint16(0); lo <= maxFinite; lo++ {
				hi := lo + 1 // the next value up; maxFinite+1 is Inf
				vlo := f.decode(lo)
				vhi := math.Ldexp(1, f.maxExp+1) // where Inf begins for rounding
				if lo < maxFinite {
					vhi = f.decode(hi)
				}
				mid := (vlo + vhi) / 2
				m32 := float32(mid)
				require.Equal(t, mid, float64(m32), "midpoint of %#04x and %#04x must be a float32", lo, hi)
				even := lo
				if lo&1 == 1 {
					even = hi
				}
				for _, sign := range []uint16{0, 0x8000} {
					s := float32(1)
					if sign != 0 {
						s = -1
					}
					require.Equal(t, even|sign, f.fromF32(s*m32), "tie %g between %#04x and %#04x", s*m32, lo|sign, hi|sign)
					below := s * math.Nextafter32(m32, 0)
					above := s * math.Nextafter32(m32, float32(math.Inf(1)))
					require.Equal(t, lo|sign, f.fromF32(below), "just below the midpoint of %#04x and %#04x", lo|sign, hi|sign)
					require.Equal(t, hi|sign, f.fromF32(above), "just above the midpoint of %#04x and %#04x", lo|sign, hi|sign)
				}
			}
		})
	}
}

// TestFromF32AllInputs converts every float32 bit pattern and compares with a
// float64 rounding: walking the positive float32 values upwards, it keeps the
// 16-bit neighbours lo <= x < lo+1 of the current input and picks by the
// float64 midpoint, ties to the even pattern; negative inputs must give the
// same pattern with the sign bit. (round above is too slow for 2^32 inputs.)
func TestFromF32AllInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("all 2^32 float32 inputs take tens of seconds per format; make test-exhaustive runs them")
	}
	for _, f := range formats16 {
		t.Run(f.name, func(t *testing.T) {
			decoded := f.decodeAll()
			const blockBits = 20
			const blocks = 1 << (31 - blockBits) // the positive half
			var next atomic.Uint32
			var failures atomic.Int64
			errs := make(chan error, 16)
			report := func(err error) {
				if failures.Add(1) <= 10 {
					errs <- err
				}
			}
			var wg sync.WaitGroup
			for range runtime.GOMAXPROCS(0) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						blk := next.Add(1) - 1
						if blk >= blocks || failures.Load() > 10 {
							return
						}
						f.walkBlock(blk<<blockBits, 1<<blockBits, decoded, report)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// walkBlock checks float32 patterns [base, base+n) and their negatives; all
// of them must be non-negative patterns.
func (f format16) walkBlock(base, n uint32, decoded []float64, report func(error)) {
	maxFinite := f.expMask() - 1
	overflow := math.Ldexp(1, f.maxExp+1) // the value "above" maxFinite
	upper := func(lo uint16) float64 {
		if lo == maxFinite {
			return overflow
		}
		return decoded[lo+1]
	}
	x0 := float64(math.Float32frombits(base))
	// The largest positive pattern not above the first input.
	lo := uint16(0)
	for lo < maxFinite && upper(lo) <= x0 {
		lo++
	}
	for b := base; b < base+n; b++ {
		x := float64(math.Float32frombits(b))
		if math.IsNaN(x) {
			for _, in := range []uint32{b, b | 0x80000000} {
				if err := f.checkFromF32(in, decoded); err != nil {
					report(err)
				}
			}
			continue
		}
		for lo < maxFinite && upper(lo) <= x {
			lo++
		}
		var want uint16
		switch mid := (decoded[lo] + upper(lo)) / 2; {
		case x >= overflow:
			want = f.expMask() // Inf
		case x < mid:
			want = lo
		case x > mid:
			want = lo + 1
		case lo&1 == 0:
			want = lo
		default:
			want = lo + 1
		}
		if got := f.fromF32(float32(x)); got != want {
			report(fmt.Errorf("%s(%#08x = %g) = %#04x, want %#04x", f.name, b, x, got, want))
		}
		if got := f.fromF32(float32(-x)); got != want|0x8000 {
			report(fmt.Errorf("%s(%#08x = %g) = %#04x, want %#04x", f.name, b|0x80000000, -x, got, want|0x8000))
		}
	}
}

func fuzzSeeds(f *testing.F) {
	for _, b := range []uint32{
		0x00000000, 0x80000000, 0x3f800000, 0x3f808000, 0x3f801000, 0x3f818000,
		0x7f7fffff, 0x7f7f8000, 0x477ff000, 0x477fefff, 0x7f800000, 0xff800000,
		0x7fc00000, 0x7f800001, 0x00008000, 0x00018000, 0x007fffff, 0x33000000,
		0x33c00000, 0x387fe000, 0x00000001,
	} {
		f.Add(b)
	}
}

func FuzzBF16FromF32(f *testing.F) {
	fuzzSeeds(f)
	decoded := bf16Format.decodeAll()
	f.Fuzz(func(t *testing.T, in uint32) {
		if err := bf16Format.checkFromF32(in, decoded); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzF16FromF32(f *testing.F) {
	fuzzSeeds(f)
	decoded := f16Format.decodeAll()
	f.Fuzz(func(t *testing.T, in uint32) {
		if err := f16Format.checkFromF32(in, decoded); err != nil {
			t.Fatal(err)
		}
		x := math.Float32frombits(in)
		if fast, lib := f16FromF32x4([4]float32{x})[0], uint32(F16FromF32(x)); fast != lib {
			t.Fatalf("f16FromF32x4(%#08x) = %#04x, library %#04x", in, fast, lib)
		}
	})
}

// TestF16FastPaths checks Check's own f16 conversions against the library:
// the decoding table on all 65,536 patterns, rounding on every f32 exponent
// around f16's range with every kept mantissa and the rounding bits that
// decide ties, in both signs.
func TestF16FastPaths(t *testing.T) {
	table := f16Values()
	for i := range 1 << 16 {
		h := uint16(i)
		require.Equal(t, math.Float32bits(F16ToF32(h)), math.Float32bits(table[h]), "f16 table at %#04x", h)
	}
	for e := uint32(100); e <= 150; e++ {
		for top := range uint32(1 << 10) {
			for _, low := range []uint32{0, 1, 0xfff, 0x1000, 0x1001, 0x1fff} {
				for _, sign := range []uint32{0, 1 << 31} {
					in := sign | e<<23 | top<<13 | low
					x := math.Float32frombits(in)
					if fast, lib := f16FromF32x4([4]float32{0, x, 0, 0})[1], uint32(F16FromF32(x)); fast != lib {
						require.Equal(t, lib, fast, "f16FromF32x4(%#08x)", in)
					}
				}
			}
		}
	}
	for _, in := range []uint32{0, 0x80000000, 0x7f800000, 0x7fc00000, 0x00000001, 0x7f7fffff} {
		x := math.Float32frombits(in)
		require.Equal(t, uint32(F16FromF32(x)), f16FromF32x4([4]float32{x, x, x, x})[3], "%#08x", in)
	}
}

// TestFromF64 checks the single-step float64 rounding against the reference
// on values a float32 detour would double-round.
func TestFromF64(t *testing.T) {
	for _, f := range formats16 {
		d := map[string]DType{"bf16": BF16, "f16": F16}[f.name]
		t.Run(f.name, func(t *testing.T) {
			decoded := f.decodeAll()
			for lo := uint16(0x0001); lo < f.expMask()-1; lo += 7 {
				mid := (f.decode(lo) + f.decode(lo+1)) / 2
				for _, x := range []float64{mid, math.Nextafter(mid, 0), math.Nextafter(mid, 2*mid), -mid, f.decode(lo)} {
					got := d.FromF64(x)
					require.Equal(t, f.round(x), decoded[got], "%s.FromF64(%v)", f.name, x)
				}
			}
			// Just above a tie by less than float32 can see: through float32
			// this would round to the tie and then to even.
			one := 1.0 + math.Ldexp(1, -f.precision) + math.Ldexp(1, -40)
			require.Equal(t, f.round(one), decoded[d.FromF64(one)])
			require.Greater(t, f.round(one), 1.0)
			require.True(t, math.IsNaN(float64(d.ToF32(d.FromF64(math.NaN())))))
			require.Equal(t, math.Inf(-1), decoded[d.FromF64(-1e300)])
		})
	}
	require.Equal(t, math.Float32bits(1.5), F32.FromF64(1.5))
}

func TestElementAccess(t *testing.T) {
	for _, d := range DTypes {
		t.Run(d.String(), func(t *testing.T) {
			size := d.Size()
			buf := make([]byte, 4*size+2)
			for i := range buf {
				buf[i] = 0xa5
			}
			// Element 1 of buf[1:], so the element starts at an odd address.
			inner := buf[1 : 1+3*size]
			d.SetF32(inner, 1, -2.5)
			require.Equal(t, float32(-2.5), d.GetF32(inner, 1))
			require.Equal(t, d.FromF32(-2.5), d.GetBits(inner, 1))
			for i, b := range buf {
				if i < 1+size || i >= 1+2*size {
					require.Equal(t, byte(0xa5), b, "byte %d outside the element changed", i)
				}
			}
			// Little endian: the sign bit is in the last byte of the element.
			require.Equal(t, byte(0x80), inner[2*size-1]&0x80)
			d.SetBits(inner, 2, PoisonBits(d))
			require.Equal(t, PoisonBits(d), d.GetBits(inner, 2))
		})
	}
}

func TestULPAndUnitRoundoff(t *testing.T) {
	cases := []struct {
		d    DType
		v    float64
		want float64
	}{
		{BF16, 1, math.Ldexp(1, -7)},
		{BF16, -1.99, math.Ldexp(1, -7)},
		{BF16, 0, math.Ldexp(1, -133)},
		{F16, 1, math.Ldexp(1, -10)},
		{F16, 65504, 32},
		{F16, 1e-7, math.Ldexp(1, -24)},
		{F32, 1, math.Ldexp(1, -23)},
		{F32, 0.75, math.Ldexp(1, -24)},
	}
	for _, c := range cases {
		require.Equal(t, c.want, c.d.ULP(c.v), "%v ULP(%v)", c.d, c.v)
	}
	require.Equal(t, math.Ldexp(1, -8), BF16.UnitRoundoff())
	require.Equal(t, math.Ldexp(1, -11), F16.UnitRoundoff())
	require.Equal(t, math.Ldexp(1, -24), F32.UnitRoundoff())
}
