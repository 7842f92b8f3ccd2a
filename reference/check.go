package reference

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// CheckSpec says which allreduce produced an output buffer.
type CheckSpec struct {
	Gen    Gen
	Op     Op
	NRanks int
	Iter   int
	Order  Order
	First  uint64 // element index of got[0]
}

// Mismatch is one wrong output element.
type Mismatch struct {
	Index    uint64
	Got      float64
	Want     float64 // the expected value, or the float64 reference when bounded
	GotBits  uint32
	WantBits uint32 // the expected bits, or the reference rounded to the dtype
	// ULP is |Got-Want| in units of the dtype's spacing at Want; +Inf when
	// Got is NaN or Inf and Want is not.
	ULP float64
}

// MaxReported is how many mismatches Result.First keeps.
const MaxReported = 8

// Result is the verdict on one output buffer.
type Result struct {
	Checked, Wrong uint64
	First          []Mismatch // the MaxReported wrong elements of lowest index
	// WorstULP is the largest ULP distance from the expectation over all
	// checked elements (under a bound, correct elements count too, so the
	// worst error is visible before it becomes wrong); WorstIndex is the
	// lowest index where it occurs.
	WorstULP   float64
	WorstIndex uint64
	DType      DType
}

// OK reports whether every checked element was right.
func (r Result) OK() bool { return r.Wrong == 0 }

// String is a one-line summary, e.g.
// "3 of 1048576 wrong; first [7] got 1.5 (0x3fc0) want 1.25 (0x3fa0); worst 2 ulp at 7".
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d wrong", r.Wrong, r.Checked)
	if len(r.First) > 0 {
		m := r.First[0]
		fmt.Fprintf(&b, "; first [%d] got %v (%s) want %v (%s)", m.Index,
			m.Got, r.DType.bitsString(m.GotBits), m.Want, r.DType.bitsString(m.WantBits))
	}
	fmt.Fprintf(&b, "; worst %.3g ulp at %d", r.WorstULP, r.WorstIndex)
	return b.String()
}

// Poison patterns: signalling NaNs with a recognisable payload. The generator
// never produces a NaN and arithmetic only produces quiet ones, so an output
// element still holding its poison was never written.
const (
	poisonF32  uint32 = 0x7fbadbad
	poisonF16  uint32 = 0x7dad
	poisonBF16 uint32 = 0x7fad
)

// PoisonBits is the pattern FillPoison writes for d.
func PoisonBits(d DType) uint32 {
	switch d {
	case F32:
		return poisonF32
	case F16:
		return poisonF16
	case BF16:
		return poisonBF16
	}
	panic(fmt.Sprintf("reference: unknown dtype %d", d))
}

// FillPoison writes PoisonBits(d) to every whole element of dst.
func FillPoison(dst []byte, d DType) {
	p := PoisonBits(d)
	for i := range len(dst) / d.Size() {
		d.SetBits(dst, i, p)
	}
}

// checkChunkElems is the unit of work a Check goroutine takes at a time:
// big enough to amortise the atomic, small enough to balance the load.
const checkChunkElems = 1 << 15

// Check compares got, the output elements First.. of the allreduce described
// by spec, with the reference: bit for bit where spec.BitExact(), else within
// the error bound of Expect. It streams over got on GOMAXPROCS goroutines and
// allocates nothing proportional to len(got). It panics when len(got) is not
// a whole number of elements or spec is invalid.
func Check(spec CheckSpec, got []byte) Result {
	d := spec.Gen.DType
	if len(got)%d.Size() != 0 {
		panic(fmt.Sprintf("reference: Check of %d bytes, not a whole number of %v elements", len(got), d))
	}
	r := newReducer(spec)
	n := len(got) / d.Size()
	chunks := (n + checkChunkElems - 1) / checkChunkElems
	workers := min(runtime.GOMAXPROCS(0), chunks)
	if n < fillMinElems {
		workers = 1
	}
	parts := make([]partial, max(workers, 1))
	var next atomic.Int64
	work := func(p *partial) {
		p.worstIndex = math.MaxUint64
		for {
			c := int(next.Add(1) - 1)
			if c >= chunks {
				return
			}
			lo := c * checkChunkElems
			hi := min(lo+checkChunkElems, n)
			r.checkRange(got, spec.First, lo, hi, p)
		}
	}
	if workers <= 1 {
		work(&parts[0])
	} else {
		var wg sync.WaitGroup
		for w := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work(&parts[w])
			}()
		}
		wg.Wait()
	}
	return merge(parts, d, spec.First)
}

// partial is one goroutine's share of a Result. A goroutine takes chunks in
// increasing order, so its first mismatches are its lowest.
type partial struct {
	checked, wrong uint64
	first          []Mismatch
	worstULP       float64
	worstIndex     uint64
}

func (p *partial) noteWorst(ulp float64, index uint64) {
	if ulp > p.worstULP || (ulp == p.worstULP && index < p.worstIndex) {
		p.worstULP, p.worstIndex = ulp, index
	}
}

func merge(parts []partial, d DType, first uint64) Result {
	res := Result{DType: d, WorstIndex: math.MaxUint64}
	for i := range parts {
		p := &parts[i]
		res.Checked += p.checked
		res.Wrong += p.wrong
		res.First = append(res.First, p.first...)
		if p.checked > 0 && (p.worstULP > res.WorstULP || (p.worstULP == res.WorstULP && p.worstIndex < res.WorstIndex)) {
			res.WorstULP, res.WorstIndex = p.worstULP, p.worstIndex
		}
	}
	if res.WorstIndex == math.MaxUint64 {
		res.WorstIndex = first
	}
	slices.SortFunc(res.First, func(a, b Mismatch) int {
		switch {
		case a.Index < b.Index:
			return -1
		case a.Index > b.Index:
			return 1
		}
		return 0
	})
	if len(res.First) > MaxReported {
		res.First = res.First[:MaxReported]
	}
	return res
}

// checkRange checks elements [lo, hi) of got: sums four elements at a time
// in loops specialised by table (sums.go), then the tail of the chunk and
// every element of max and min one at a time.
func (r *reducer) checkRange(got []byte, first uint64, lo, hi int, p *partial) {
	p.checked += uint64(hi - lo)
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

func (r *reducer) wrongExact(p *partial, index uint64, gotBits, wantBits uint32) {
	r.wrong(p, index, gotBits, wantBits, r.dtype.ToF64(wantBits))
}

func (r *reducer) wrongBounded(p *partial, index uint64, gotBits uint32, ref float64) {
	r.wrong(p, index, gotBits, r.dtype.FromF64(ref), ref)
}

func (r *reducer) wrong(p *partial, index uint64, gotBits, wantBits uint32, want float64) {
	got := r.dtype.ToF64(gotBits)
	ulp := ulpDistance(r.dtype, got, want)
	p.wrong++
	p.noteWorst(ulp, index)
	if len(p.first) < MaxReported {
		p.first = append(p.first, Mismatch{
			Index: index, Got: got, Want: want, GotBits: gotBits, WantBits: wantBits, ULP: ulp,
		})
	}
}

// ulpDistance is |got-want| in units of d's spacing at want; a NaN or an
// infinity where want is finite is infinitely far.
func ulpDistance(d DType, got, want float64) float64 {
	if math.IsNaN(got) || math.IsInf(got, 0) || math.IsInf(want, 0) {
		if got == want {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(got-want) / d.ULP(want)
}
