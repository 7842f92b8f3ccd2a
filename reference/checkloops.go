package reference

import (
	"encoding/binary"
	"math"
	"sync"
)

// The chunk loops of Check. Sums go four elements at a time through the
// generic kernels of sums.go; everything else, and the tail of each chunk,
// goes one element at a time through the same reducer methods as Expect.

// checkRange checks elements [lo, hi) of got: sums four elements at a time
// in loops specialised by table (sums.go), then the tail of the chunk and
// every element of max and min one at a time.
func (r *reducer) checkRange(got []byte, first uint64, lo, hi int, p *partial) {
	p.checked += uint64(hi - lo)
	if r.special != nil {
		r.checkSpecialRange(got, first, lo, hi, p)
		return
	}
	j := lo
	switch {
	case r.bounded:
		switch f := r.s.fixed; len(f) {
		case 0:
			j = checkBoundedF32(r, got, first, lo, hi, p)
		case 1 << bf16RandomWidth:
			j = checkBounded(r, (*[1 << bf16RandomWidth]uint64)(f), got, first, lo, hi, p)
		case 1 << f16RandomWidth:
			j = checkBounded(r, (*[1 << f16RandomWidth]uint64)(f), got, first, lo, hi, p)
		}
	case r.op == Sum:
		switch v := r.s.vals; len(v) {
		case 0:
			j = checkSumF32Random(r, got, first, lo, hi, p)
		case 1 << exactBits:
			j = checkSum(r, (*[1 << exactBits]float32)(v), got, first, lo, hi, p)
		case 1 << bf16RandomWidth:
			j = checkSum(r, (*[1 << bf16RandomWidth]float32)(v), got, first, lo, hi, p)
		case 1 << f16RandomWidth:
			j = checkSum(r, (*[1 << f16RandomWidth]float32)(v), got, first, lo, hi, p)
		}
	}
	for ; j < hi; j++ {
		index := first + uint64(j)
		h := elemHash(r.key, index)
		gb := r.dtype.GetBits(got, j)
		if r.bounded {
			ref, abs := r.sumF64(h)
			r.checkOneBounded(p, index, gb, ref, abs)
			continue
		}
		if want := r.roundF32(r.accF32(h)); gb != want {
			r.wrongExact(p, index, gb, want)
		}
	}
}

// The chunk loops below return the first element they did not check. Each
// computes element hashes incrementally: key + index*golden advances by
// golden per element.

func checkSum[T valTable](r *reducer, tab T, got []byte, first uint64, lo, hi int, p *partial) int {
	j := lo
	x, step := r.key+(first+uint64(j))*golden, uint64(golden)
	for ; j+4 <= hi; j += 4 {
		a0, a1, a2, a3 := sumVals4(tab, r.n, wymix(x), wymix(x+step), wymix(x+2*step), wymix(x+3*step))
		r.compare4(p, got, first, j, a0, a1, a2, a3)
		x += 4 * step
	}
	return j
}

func checkSumF32Random(r *reducer, got []byte, first uint64, lo, hi int, p *partial) int {
	j := lo
	x, step := r.key+(first+uint64(j))*golden, uint64(golden)
	for ; j+4 <= hi; j += 4 {
		a0, a1, a2, a3 := sumF32Random4(r.n, wymix(x), wymix(x+step), wymix(x+2*step), wymix(x+3*step))
		r.compare4(p, got, first, j, a0, a1, a2, a3)
		x += 4 * step
	}
	return j
}

// compare4 rounds four float32 results to the dtype and compares them with
// got[j:j+4] bit for bit.
func (r *reducer) compare4(p *partial, got []byte, first uint64, j int, a0, a1, a2, a3 float32) {
	var w, g [4]uint32
	switch r.dtype {
	case BF16:
		b := got[2*j : 2*j+8]
		w = [4]uint32{uint32(BF16FromF32(a0)), uint32(BF16FromF32(a1)), uint32(BF16FromF32(a2)), uint32(BF16FromF32(a3))}
		g = [4]uint32{uint32(binary.LittleEndian.Uint16(b)), uint32(binary.LittleEndian.Uint16(b[2:])), uint32(binary.LittleEndian.Uint16(b[4:])), uint32(binary.LittleEndian.Uint16(b[6:]))}
	case F16:
		b := got[2*j : 2*j+8]
		w = f16FromF32x4([4]float32{a0, a1, a2, a3})
		g = [4]uint32{uint32(binary.LittleEndian.Uint16(b)), uint32(binary.LittleEndian.Uint16(b[2:])), uint32(binary.LittleEndian.Uint16(b[4:])), uint32(binary.LittleEndian.Uint16(b[6:]))}
	default:
		b := got[4*j : 4*j+16]
		w = [4]uint32{math.Float32bits(a0), math.Float32bits(a1), math.Float32bits(a2), math.Float32bits(a3)}
		g = [4]uint32{binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:]), binary.LittleEndian.Uint32(b[12:])}
	}
	if (g[0]^w[0])|(g[1]^w[1])|(g[2]^w[2])|(g[3]^w[3]) == 0 {
		return
	}
	for i := range 4 {
		if g[i] != w[i] {
			r.wrongExact(p, first+uint64(j+i), g[i], w[i])
		}
	}
}

func checkBounded[T fixedTable](r *reducer, tab T, got []byte, first uint64, lo, hi int, p *partial) int {
	if r.n > maxPackedRanks {
		return lo
	}
	j := lo
	x, step := r.key+(first+uint64(j))*golden, uint64(golden)
	unit := r.s.unit
	f16 := f16Values()
	for ; j+4 <= hi; j += 4 {
		s0, s1, s2, s3, m0, m1, m2, m3 := fixedSum4(tab, r.n, wymix(x), wymix(x+step), wymix(x+2*step), wymix(x+3*step))
		x += 4 * step
		b := got[2*j : 2*j+8]
		g0, g1, g2, g3 := uint32(binary.LittleEndian.Uint16(b)), uint32(binary.LittleEndian.Uint16(b[2:])), uint32(binary.LittleEndian.Uint16(b[4:])), uint32(binary.LittleEndian.Uint16(b[6:]))
		ref0, ref1, ref2, ref3 := float64(s0)*unit, float64(s1)*unit, float64(s2)*unit, float64(s3)*unit
		u0, ok0 := r.judge(decode16(tab, f16, g0), ref0, float64(m0)*unit)
		u1, ok1 := r.judge(decode16(tab, f16, g1), ref1, float64(m1)*unit)
		u2, ok2 := r.judge(decode16(tab, f16, g2), ref2, float64(m2)*unit)
		u3, ok3 := r.judge(decode16(tab, f16, g3), ref3, float64(m3)*unit)
		if ok0 && ok1 && ok2 && ok3 && max(u0, u1, u2, u3) <= p.worstULP {
			continue
		}
		index := first + uint64(j)
		r.noteBounded(p, index, g0, ref0, u0, ok0)
		r.noteBounded(p, index+1, g1, ref1, u1, ok1)
		r.noteBounded(p, index+2, g2, ref2, u2, ok2)
		r.noteBounded(p, index+3, g3, ref3, u3, ok3)
	}
	return j
}

// decode16 decodes bf16 or f16 bits, whichever tab is for; the choice is a
// constant in each instantiation. f16 goes through a table of all 65,536
// values, so the function stays inlinable.
func decode16[T fixedTable](tab T, f16 *[1 << 16]float32, bits uint32) float64 {
	if len(tab) == 1<<bf16RandomWidth {
		return float64(math.Float32frombits(bits << 16))
	}
	return float64(f16[uint16(bits)])
}

// f16Values is every f16 value as float32, indexed by its bits.
var f16Values = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = F16ToF32(uint16(h))
	}
	return &t
})

// noteBounded records the verdict of judge on one element.
func (r *reducer) noteBounded(p *partial, index uint64, gotBits uint32, ref, ulp float64, ok bool) {
	if !ok {
		r.wrongBounded(p, index, gotBits, ref)
	} else if ulp > p.worstULP {
		p.noteWorst(ulp, index)
	}
}

func checkBoundedF32(r *reducer, got []byte, first uint64, lo, hi int, p *partial) int {
	unit := r.s.unit
	x, step := r.key+(first+uint64(lo))*golden, uint64(golden)
	for j := lo; j < hi; j++ {
		sum, mag := fixedSumF32(r.n, wymix(x))
		x += step
		gb := binary.LittleEndian.Uint32(got[4*j:])
		ref := float64(sum) * unit
		if ulp, ok := r.judge(float64(math.Float32frombits(gb)), ref, float64(mag)*unit); !ok || ulp > p.worstULP {
			r.noteBounded(p, first+uint64(j), gb, ref, ulp, ok)
		}
	}
	return hi
}

// checkOneBounded checks one element against the float64 reference ref.
func (r *reducer) checkOneBounded(p *partial, index uint64, gotBits uint32, ref, abs float64) {
	ulp, ok := r.judge(r.dtype.ToF64(gotBits), ref, abs)
	r.noteBounded(p, index, gotBits, ref, ulp, ok)
}

// judge returns the error of got against the float64 reference ref in ulps
// of ref, and whether it is within the bound. The ulp is a power of two
// built from ref's exponent: a multiply instead of Ilogb and Ldexp.
func (r *reducer) judge(got, ref, abs float64) (ulp float64, ok bool) {
	err := got - ref
	err = math.Float64frombits(math.Float64bits(err) &^ (1 << 63)) // math.Abs, spelled out to stay inlinable
	e := max(math.Float64bits(ref)>>52&0x7ff, r.minBiasedExp)
	return err * math.Float64frombits((r.invULPBase-e)<<52), err <= r.boundAbs*abs+r.boundRef*math.Abs(ref)
}

// f16FromF32x4 is F16FromF32 of four values with the common case inlined:
// a float32 in f16's normal range rounds its low 13 bits to nearest even in
// place (a carry into the exponent is right, up to overflow to Inf) and
// rebiases its exponent (127 -> 15).
func f16FromF32x4(a [4]float32) (h [4]uint32) {
	for i, f := range a {
		if b := math.Float32bits(f); b&0x7f800000-113<<23 <= (142-113)<<23 { // biased exponent in [113, 142]
			b += 0xfff + (b>>13)&1
			h[i] = (b>>16)&0x8000 | (b&0x7fffffff-112<<23)>>13
		} else {
			h[i] = uint32(F16FromF32(f))
		}
	}
	return h
}

// checkSpecialRange checks elements [lo, hi) of special inputs one at a
// time: every rank's input of the element, then specialExpect.
func (r *reducer) checkSpecialRange(got []byte, first uint64, lo, hi int, p *partial) {
	in := make([]uint32, r.n)
	for j := lo; j < hi; j++ {
		index := first + uint64(j)
		e := r.expectSpecial(index, in)
		if gb := r.dtype.GetBits(got, j); !e.Accepts(r.dtype, gb) {
			r.wrongSpecial(p, index, gb, e, in)
		}
	}
}
