package reference

import "math/bits"

// The hot loops of Check. Rank r's input is field r%per of hash word r/per
// (gen.go). The loops are generic over the lookup table's array type: Go
// compiles each array length separately, so mask, field width and fields per
// word become constants there (an AND and a shift by an immediate, no bounds
// check), with no interface or closure per element. The 4-element variants
// run four independent chains, so the adder's latency is not paid per rank.

// Field widths of the schemes: sign, binade, then the dtype's mantissa.
const (
	bf16RandomWidth = 1 + binadeBits + 7
	f16RandomWidth  = 1 + binadeBits + 10
	f32RandomWidth  = 1 + binadeBits + 23
)

// valTable is a table from field to input value (Exact, bf16 and f16 Random).
type valTable interface {
	*[1 << exactBits]float32 | *[1 << bf16RandomWidth]float32 | *[1 << f16RandomWidth]float32
}

// fixedTable is a table from field to packed fixed-point input (scheme.fixed).
type fixedTable interface {
	*[1 << bf16RandomWidth]uint64 | *[1 << f16RandomWidth]uint64
}

// layoutOf is the field layout of a table with size entries.
func layoutOf(size int) (mask uint64, width uint, per int) {
	width = uint(bits.TrailingZeros(uint(size)))
	return uint64(size - 1), width, 64 / int(width)
}

// sumVals is the float32 rank-order sum of n table inputs. Starting from +0
// changes nothing: +0 + x0 is x0 for every input the generator makes (it
// never makes -0).
func sumVals[T valTable](tab T, n int, h uint64) float32 {
	mask, width, per := layoutOf(len(tab))
	var acc float32
	w := h
	for word := uint64(1); ; word++ {
		k := min(n, per)
		for range k {
			acc += tab[w&mask]
			w >>= width
		}
		if n -= k; n == 0 {
			return acc
		}
		w = wymix(h + word*golden)
	}
}

func sumVals4[T valTable](tab T, n int, h0, h1, h2, h3 uint64) (a0, a1, a2, a3 float32) {
	mask, width, per := layoutOf(len(tab))
	w0, w1, w2, w3 := h0, h1, h2, h3
	for word := uint64(1); ; word++ {
		k := min(n, per)
		// Two ranks per iteration, still added one at a time in rank order.
		i := 0
		for ; i+2 <= k; i += 2 {
			a0 += tab[w0&mask]
			a1 += tab[w1&mask]
			a2 += tab[w2&mask]
			a3 += tab[w3&mask]
			a0 += tab[w0>>width&mask]
			a1 += tab[w1>>width&mask]
			a2 += tab[w2>>width&mask]
			a3 += tab[w3>>width&mask]
			w0, w1, w2, w3 = w0>>(2*width), w1>>(2*width), w2>>(2*width), w3>>(2*width)
		}
		if i < k {
			a0 += tab[w0&mask]
			a1 += tab[w1&mask]
			a2 += tab[w2&mask]
			a3 += tab[w3&mask]
		}
		if n -= k; n == 0 {
			return
		}
		off := word * golden
		w0, w1, w2, w3 = wymix(h0+off), wymix(h1+off), wymix(h2+off), wymix(h3+off)
	}
}

// sumF32Random is sumVals for f32 Random inputs, decoded instead of looked
// up (2^27 fields are too many for a table).
func sumF32Random(n int, h uint64) float32 {
	const mask, per = 1<<f32RandomWidth - 1, 64 / f32RandomWidth
	var acc float32
	w := h
	for word := uint64(1); ; word++ {
		k := min(n, per)
		for range k {
			acc += f32Random(w & mask)
			w >>= f32RandomWidth
		}
		if n -= k; n == 0 {
			return acc
		}
		w = wymix(h + word*golden)
	}
}

func sumF32Random4(n int, h0, h1, h2, h3 uint64) (a0, a1, a2, a3 float32) {
	const mask, per = 1<<f32RandomWidth - 1, 64 / f32RandomWidth
	w0, w1, w2, w3 := h0, h1, h2, h3
	for word := uint64(1); ; word++ {
		k := min(n, per)
		a0 += f32Random(w0 & mask)
		a1 += f32Random(w1 & mask)
		a2 += f32Random(w2 & mask)
		a3 += f32Random(w3 & mask)
		if k == 2 { // per is 2
			a0 += f32Random(w0 >> f32RandomWidth & mask)
			a1 += f32Random(w1 >> f32RandomWidth & mask)
			a2 += f32Random(w2 >> f32RandomWidth & mask)
			a3 += f32Random(w3 >> f32RandomWidth & mask)
		}
		if n -= k; n == 0 {
			return
		}
		off := word * golden
		w0, w1, w2, w3 = wymix(h0+off), wymix(h1+off), wymix(h2+off), wymix(h3+off)
	}
}

// fixedBias is what a fixed table adds to each signed input (see scheme).
func fixedBias(width uint) int64 {
	return 1 << (width - 1 - binadeBits + (RandomMaxExp - RandomMinExp))
}

// fixedSum returns the sum and the sum of magnitudes of the n Random inputs
// of the element with hash h, as integers in units of scheme.unit. Every
// input is a whole number of units below 2^31, so both are exact, and
// integer adds do not wait on floating-point latency.
func fixedSum[T fixedTable](tab T, n int, h uint64) (sum, mag int64) {
	mask, width, per := layoutOf(len(tab))
	bias := fixedBias(width)
	w := h
	for word := uint64(1); ; word++ {
		k := min(n, per)
		var packed uint64
		for range k {
			packed += tab[w&mask]
			w >>= width
		}
		sum += int64(packed&0xffffffff) - int64(k)*bias
		mag += int64(packed >> 32)
		if n -= k; n == 0 {
			return sum, mag
		}
		w = wymix(h + word*golden)
	}
}

// fixedSum4 is fixedSum for four elements at once. It keeps the packed sums
// across words and unpacks once: the low halves hold up to
// 2^32/fixedBias/2 biased inputs (8192 for f16), so n must not exceed
// maxPackedRanks.
func fixedSum4[T fixedTable](tab T, n int, h0, h1, h2, h3 uint64) (s0, s1, s2, s3, m0, m1, m2, m3 int64) {
	mask, width, per := layoutOf(len(tab))
	w0, w1, w2, w3 := h0, h1, h2, h3
	var p0, p1, p2, p3 uint64
	total := n
	for word := uint64(1); ; word++ {
		k := min(n, per)
		// Two fields per iteration: integer sums do not care about order.
		i := 0
		for ; i+2 <= k; i += 2 {
			p0 += tab[w0&mask] + tab[w0>>width&mask]
			p1 += tab[w1&mask] + tab[w1>>width&mask]
			p2 += tab[w2&mask] + tab[w2>>width&mask]
			p3 += tab[w3&mask] + tab[w3>>width&mask]
			w0, w1, w2, w3 = w0>>(2*width), w1>>(2*width), w2>>(2*width), w3>>(2*width)
		}
		if i < k {
			p0 += tab[w0&mask]
			p1 += tab[w1&mask]
			p2 += tab[w2&mask]
			p3 += tab[w3&mask]
		}
		if n -= k; n == 0 {
			break
		}
		off := word * golden
		w0, w1, w2, w3 = wymix(h0+off), wymix(h1+off), wymix(h2+off), wymix(h3+off)
	}
	nb := int64(total) * fixedBias(width)
	return int64(p0&0xffffffff) - nb, int64(p1&0xffffffff) - nb, int64(p2&0xffffffff) - nb, int64(p3&0xffffffff) - nb,
		int64(p0 >> 32), int64(p1 >> 32), int64(p2 >> 32), int64(p3 >> 32)
}

// maxPackedRanks is the most ranks fixedSum4 can sum: the low 32 bits of a
// packed sum hold n biased f16 inputs, each below 2*2^18.
const maxPackedRanks = 1 << (32 - 19)

// f32RandomUnits is an f32 Random input in units of 2^-27, the spacing of
// its lowest binade: the significand shifted by the binade, then signed.
func f32RandomUnits(f uint64) (signed, mag int64) {
	mag = int64(1<<23|f&0x7fffff) << (f >> 23 & (1<<binadeBits - 1))
	neg := -int64(f >> (f32RandomWidth - 1)) // 0 or -1
	return mag ^ neg - neg, mag
}

// fixedSumF32 is fixedSum for f32 Random inputs.
func fixedSumF32(n int, h uint64) (sum, mag int64) {
	const mask, per = 1<<f32RandomWidth - 1, 64 / f32RandomWidth
	w := h
	for word := uint64(1); ; word++ {
		k := min(n, per)
		for range k {
			s, m := f32RandomUnits(w & mask)
			sum, mag = sum+s, mag+m
			w >>= f32RandomWidth
		}
		if n -= k; n == 0 {
			return sum, mag
		}
		w = wymix(h + word*golden)
	}
}
