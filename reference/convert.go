package reference

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/x448/float16"
)

// BF16FromF32 rounds f to the nearest bfloat16, ties to even. Overflow gives
// ±Inf, subnormals round like normals (bf16 shares float32's exponent range),
// and a NaN stays a NaN with its sign and top payload bits and the quiet bit
// set, so truncating the payload can never turn it into an infinity.
func BF16FromF32(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	// Adding 0x7fff plus the lowest kept bit rounds the 16 dropped bits to
	// nearest, ties to even; a carry into the exponent is the right answer,
	// up to and including the step from the largest finite value to Inf.
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToF32 widens a bfloat16 to float32; every bf16 value is exactly
// representable, so this is a shift.
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F16FromF32 rounds f to the nearest IEEE binary16, ties to even (x448/float16;
// convert_test.go checks it against an independent rounding for every float32).
func F16FromF32(f float32) uint16 {
	return float16.Fromfloat32(f).Bits()
}

// F16ToF32 widens an IEEE binary16 to float32 exactly (NaNs come back quiet).
func F16ToF32(h uint16) float32 {
	return float16.Frombits(h).Float32()
}

// FromF32 rounds f to d (nearest, ties to even) and returns its bits in the
// low Size()*8 bits.
func (d DType) FromF32(f float32) uint32 {
	switch d {
	case F32:
		return math.Float32bits(f)
	case F16:
		return uint32(F16FromF32(f))
	case BF16:
		return uint32(BF16FromF32(f))
	}
	panic(fmt.Sprintf("reference: unknown dtype %d", d))
}

// ToF32 decodes bits of type d to float32 exactly.
func (d DType) ToF32(bits uint32) float32 {
	switch d {
	case F32:
		return math.Float32frombits(bits)
	case F16:
		return F16ToF32(uint16(bits))
	case BF16:
		return BF16ToF32(uint16(bits))
	}
	panic(fmt.Sprintf("reference: unknown dtype %d", d))
}

// ToF64 decodes bits of type d to float64 exactly.
func (d DType) ToF64(bits uint32) float64 {
	return float64(d.ToF32(bits))
}

// format describes a binary floating-point format for rounding from float64.
type format struct {
	precision int // significand bits including the hidden one
	minExp    int // exponent of the smallest normal: 2^minExp
	maxExp    int // exponent of the largest binade: values below 2^(maxExp+1)
}

func (d DType) format() format {
	switch d {
	case F32:
		return format{precision: 24, minExp: -126, maxExp: 127}
	case F16:
		return format{precision: 11, minExp: -14, maxExp: 15}
	case BF16:
		return format{precision: 8, minExp: -126, maxExp: 127}
	}
	panic(fmt.Sprintf("reference: unknown dtype %d", d))
}

// FromF64 rounds v to d (nearest, ties to even, in one step: no double
// rounding through float32) and returns its bits.
func (d DType) FromF64(v float64) uint32 {
	if d == F32 {
		// Go's float64 -> float32 conversion is IEEE round to nearest even.
		return math.Float32bits(float32(v))
	}
	if math.IsNaN(v) {
		return d.FromF32(float32(v))
	}
	// The rounded value is exact in float32 (8 or 11 significant bits,
	// exponents inside float32's range), so the last step loses nothing.
	return d.FromF32(float32(d.format().round(v)))
}

// round rounds v to the format, ties to even, saturating to ±Inf past the
// largest finite value.
func (f format) round(v float64) float64 {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return v
	}
	q := f.spacing(v)
	r := math.RoundToEven(v/q) * q // v/q and *q scale by powers of two: exact
	if math.Abs(r) >= math.Ldexp(1, f.maxExp+1) {
		return math.Copysign(math.Inf(1), v)
	}
	return r
}

// spacing is the distance between adjacent values of the format in the
// binade of v (the subnormal spacing below the smallest normal).
func (f format) spacing(v float64) float64 {
	e := math.Ilogb(v)
	if v == 0 || e < f.minExp {
		e = f.minExp
	}
	if e > f.maxExp {
		e = f.maxExp
	}
	return math.Ldexp(1, e-f.precision+1)
}

// ULP is the spacing of d's values at magnitude |v|: the unit in which
// Mismatch.ULP is counted. Below the smallest normal it is the subnormal
// spacing; at or past the largest binade it is that binade's spacing.
func (d DType) ULP(v float64) float64 {
	return d.format().spacing(v)
}

// UnitRoundoff is u = 2^-precision: round to nearest is off by at most u|x|.
func (d DType) UnitRoundoff() float64 {
	return math.Ldexp(1, -d.format().precision)
}

// GetBits returns the bits of element i of buf (little endian).
func (d DType) GetBits(buf []byte, i int) uint32 {
	switch d {
	case F32:
		return binary.LittleEndian.Uint32(buf[4*i:])
	case F16, BF16:
		return uint32(binary.LittleEndian.Uint16(buf[2*i:]))
	}
	panic(fmt.Sprintf("reference: unknown dtype %d", d))
}

// SetBits stores the low Size()*8 bits of bits as element i of buf.
func (d DType) SetBits(buf []byte, i int, bits uint32) {
	switch d {
	case F32:
		binary.LittleEndian.PutUint32(buf[4*i:], bits)
	case F16, BF16:
		binary.LittleEndian.PutUint16(buf[2*i:], uint16(bits))
	default:
		panic(fmt.Sprintf("reference: unknown dtype %d", d))
	}
}

// GetF32 returns element i of buf as float32 (exact).
func (d DType) GetF32(buf []byte, i int) float32 {
	return d.ToF32(d.GetBits(buf, i))
}

// SetF32 rounds v to d and stores it as element i of buf.
func (d DType) SetF32(buf []byte, i int, v float32) {
	d.SetBits(buf, i, d.FromF32(v))
}

// bitsString formats dtype bits with the dtype's width, e.g. 0x3fc0.
func (d DType) bitsString(bits uint32) string {
	if d.Size() == 4 {
		return fmt.Sprintf("0x%08x", bits)
	}
	return fmt.Sprintf("0x%04x", bits)
}

// signBit is d's sign bit.
func (d DType) signBit() uint32 {
	if d.Size() == 4 {
		return 1 << 31
	}
	return 1 << 15
}

// quietBit is the top mantissa bit, set in a quiet NaN and clear in a
// signalling one.
func (d DType) quietBit() uint32 {
	switch d {
	case F32:
		return 1 << 22
	case F16:
		return 1 << 9
	case BF16:
		return 1 << 6
	}
	panic(fmt.Sprintf("reference: unknown dtype %d", d))
}

// isNaN reports whether bits are a NaN of d: all exponent bits set and a
// nonzero mantissa.
func (d DType) isNaN(bits uint32) bool {
	inf := d.FromF32(float32(math.Inf(1)))
	return bits&^d.signBit() > inf
}

// Describe is an element's value and bits as diagnoses print them, e.g.
// "-0 (0x8000)", "+Inf (0x7f80)", "sNaN (0x7f81)", "1.5 (0x3fc0)": zeros
// with their sign, since a dropped sign is what special inputs look for,
// and a NaN as quiet or signalling.
func (d DType) Describe(bits uint32) string {
	v := d.ToF64(bits)
	var s string
	switch {
	case d.isNaN(bits) && bits&d.quietBit() == 0:
		s = "sNaN"
	case d.isNaN(bits):
		s = "NaN"
	case v == 0 && bits&d.signBit() != 0:
		s = "-0"
	case v == 0:
		s = "+0"
	default:
		s = strconv.FormatFloat(v, 'g', -1, 64)
	}
	if d.isNaN(bits) && bits&d.signBit() != 0 {
		s = "-" + s
	}
	return s + " (" + d.bitsString(bits) + ")"
}

// DescribeInputs lists every rank's input of one element, e.g. "rank 0 -0
// (0x8000), rank 1 -0 (0x8000)": the first 8 ranks, then how many more.
func DescribeInputs(d DType, inputs []uint32) string {
	const most = 8
	parts := make([]string, 0, min(len(inputs), most)+1)
	for r, b := range inputs {
		if r == most {
			parts = append(parts, fmt.Sprintf("and %d more ranks", len(inputs)-most))
			break
		}
		parts = append(parts, fmt.Sprintf("rank %d %s", r, d.Describe(b)))
	}
	return strings.Join(parts, ", ")
}
