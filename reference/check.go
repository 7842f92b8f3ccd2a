package reference

import (
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
	// Got is NaN or Inf and Want is not, or Want is a NaN.
	ULP float64
	// Accept says what was right when more than WantBits was (special
	// inputs: "a NaN", "+0 (0x0000) or -0 (0x8000)"); "" otherwise.
	Accept string
	// Inputs are every rank's input of the element, dtype bits in rank
	// order, for special inputs, where a wrong element is read against
	// them; nil for the other kinds.
	Inputs []uint32
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
// "3 of 1048576 wrong; first [7] got 1.5 (0x3fc0) want 1.25 (0x3fa0); worst 2 ulp at 7",
// and for special inputs with the first wrong element's inputs:
// "1 of 2050 wrong; first [16] got +0 (0x0000) want -0 (0x8000); inputs: rank 0 -0 (0x8000), rank 1 -0 (0x8000); worst +Inf ulp at 16".
func (r Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d wrong", r.Wrong, r.Checked)
	if len(r.First) > 0 {
		m := r.First[0]
		if m.Inputs == nil {
			fmt.Fprintf(&b, "; first [%d] got %v (%s) want %v (%s)", m.Index,
				m.Got, r.DType.bitsString(m.GotBits), m.Want, r.DType.bitsString(m.WantBits))
		} else {
			want := m.Accept
			if want == "" {
				want = r.DType.Describe(m.WantBits)
			}
			fmt.Fprintf(&b, "; first [%d] got %s want %s; inputs: %s", m.Index,
				r.DType.Describe(m.GotBits), want, DescribeInputs(r.DType, m.Inputs))
		}
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

func (r *reducer) wrongExact(p *partial, index uint64, gotBits, wantBits uint32) {
	r.wrong(p, index, gotBits, wantBits, r.dtype.ToF64(wantBits))
}

func (r *reducer) wrongBounded(p *partial, index uint64, gotBits uint32, ref float64) {
	r.wrong(p, index, gotBits, r.dtype.FromF64(ref), ref)
}

func (r *reducer) wrong(p *partial, index uint64, gotBits, wantBits uint32, want float64) {
	r.wrongWith(p, index, gotBits, wantBits, want, "", nil)
}

// wrongSpecial records a wrong element of special inputs with what was
// right and the inputs it came from.
func (r *reducer) wrongSpecial(p *partial, index uint64, gotBits uint32, e Expectation, in []uint32) {
	r.wrongWith(p, index, gotBits, e.Bits, e.Value, e.acceptText(r.dtype), in)
}

func (r *reducer) wrongWith(p *partial, index uint64, gotBits, wantBits uint32, want float64, accept string, in []uint32) {
	got := r.dtype.ToF64(gotBits)
	ulp := ulpDistance(r.dtype, got, want)
	p.wrong++
	p.noteWorst(ulp, index)
	if len(p.first) < MaxReported {
		p.first = append(p.first, Mismatch{
			Index: index, Got: got, Want: want, GotBits: gotBits, WantBits: wantBits, ULP: ulp,
			Accept: accept, Inputs: slices.Clone(in),
		})
	}
}

// ulpDistance is |got-want| in units of d's spacing at want; a NaN or an
// infinity where want is finite, and anything where want is a NaN, is
// infinitely far.
func ulpDistance(d DType, got, want float64) float64 {
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(got, 0) || math.IsInf(want, 0) {
		if got == want {
			return 0
		}
		return math.Inf(1)
	}
	return math.Abs(got-want) / d.ULP(want)
}
