package reference

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
)

// Gen generates allreduce inputs as a pure function of (Seed, rank, iter,
// element index): any process can compute any rank's input element, so each
// rank checks its own output without communication.
//
// Every element has one 64-bit hash of (Seed, iter, index), shared by all
// ranks. A rank's input is a bit field of that hash (rank 0 takes the lowest
// field, rank 1 the next): one hash word holds the fields of several ranks
// (5 for bf16, 4 for f16, 2 for f32, 8 for Exact), and each further word is
// one remix of the hash. Checking an element of an N-rank reduction
// therefore costs one hash, a remix per word and a shift, a mask and a table
// load per rank. Special inputs lay out tiles of special values from the
// same per-element hash (special.go).
type Gen struct {
	Seed  uint64
	Kind  InputKind
	DType DType
}

// Value ranges of the generator, relied on by the error bound and the
// exactness argument in doc.go.
const (
	// ExactMin and ExactMax bound Exact inputs: integers in [-8, 8]. Any
	// partial sum of up to 32 of them is an integer of magnitude <= 256,
	// exact in bf16 (8 significant bits), f16 and f32, in any order.
	ExactMin = -8
	ExactMax = 8
	// RandomMinExp and RandomMaxExp bound Random inputs: magnitudes in
	// [2^RandomMinExp, 2^RandomMaxExp), never zero, subnormal, Inf or NaN.
	RandomMinExp = -4
	RandomMaxExp = 4
)

const (
	golden = 0x9e3779b97f4a7c15
	// exactBits is the field width of an Exact input: 256 field values
	// spread over the 17 integers (15 or 16 each).
	exactBits = 8
	// binadeBits selects one of the 8 binades [2^-4, 2^4) of a Random input.
	binadeBits = 3
	// randomExpBase is the biased float32 exponent of the lowest binade.
	randomExpBase = 127 + RandomMinExp
)

// mix64 is the splitmix64 finalizer: a bijection that spreads every input
// bit over the whole output.
func mix64(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// wymix is the mixing step of wyrand: the two halves of the 128-bit product
// of x and x^wyKey, folded. It is nonlinear in x, and each call costs one
// multiply instruction, so it serves for the per-element hash and the
// per-word remix in the hot loops.
func wymix(x uint64) uint64 {
	hi, lo := bits.Mul64(x, x^wyKey)
	return hi ^ lo
}

const wyKey = 0xe7037ed1a0b428db

// elemKey selects the data of one (seed, iter) pair; different iters give
// different keys because mix64 is a bijection.
func elemKey(seed uint64, iter int) uint64 {
	return mix64(mix64(seed+golden) ^ uint64(iter))
}

// elemHash is the hash shared by all ranks for element index under key.
func elemHash(key, index uint64) uint64 {
	return wymix(key + index*golden)
}

// hashWord is word w of an element's random bits: the hash itself, then
// one remix per further word.
func hashWord(h uint64, w int) uint64 {
	if w == 0 {
		return h
	}
	return wymix(h + uint64(w)*golden)
}

// scheme is how one (kind, dtype) turns hash bits into inputs.
type scheme struct {
	width   uint   // bits per rank
	perWord int    // ranks per 64-bit hash word
	mask    uint64 // 1<<width - 1
	// vals maps a field to its input as float32 (the dtype value exactly)
	// and bits to its dtype bits; both nil for f32 Random, whose 27-bit
	// field is decoded by f32Random instead.
	vals []float32
	bits []uint32
	// For Random inputs: unit is the spacing of the lowest binade,
	// 2^(RandomMinExp - mantissa bits); every input is a whole number of
	// units. For the 16-bit dtypes fixed packs |x|/unit in its high 32 bits
	// and x/unit + fixedBias (positive) in its low 32 bits, so one add sums
	// both.
	unit  float64
	fixed []uint64
}

// field is rank's bit field of the element with hash h.
func (s *scheme) field(h uint64, rank int) uint64 {
	if rank < 0 {
		panic(fmt.Sprintf("reference: input of rank %d", rank))
	}
	w := hashWord(h, rank/s.perWord)
	return w >> (s.width * uint(rank%s.perWord)) & s.mask
}

func (s *scheme) value(f uint64) float32 {
	if s.vals == nil {
		return f32Random(f)
	}
	return s.vals[f]
}

func (s *scheme) dtypeBits(f uint64) uint32 {
	if s.bits == nil {
		return math.Float32bits(f32Random(f))
	}
	return s.bits[f]
}

// randomField is the float32 bits of a Random input from a field of
// 1 + binadeBits + mantBits bits: sign, binade, mantissa from the top down.
func randomField(f uint64, mantBits uint) uint32 {
	mant := uint32(f) & (1<<mantBits - 1)
	binade := uint32(f>>mantBits) & (1<<binadeBits - 1)
	sign := uint32(f>>(mantBits+binadeBits)) & 1
	return sign<<31 | (randomExpBase+binade)<<23 | mant<<(23-mantBits)
}

// f32Random decodes a 27-bit f32 Random field; inlined in hot loops.
func f32Random(f uint64) float32 {
	return math.Float32frombits(uint32(f>>26)<<31 | (uint32(f>>23)&7+randomExpBase)<<23 | uint32(f)&0x7fffff)
}

// exactValue maps an exactBits field to an integer in [ExactMin, ExactMax].
func exactValue(f uint64) float32 {
	return float32(int(f*(ExactMax-ExactMin+1)>>exactBits) + ExactMin)
}

func newScheme(kind InputKind, d DType) *scheme {
	var s scheme
	switch kind {
	case Exact:
		s.width = exactBits
	case Random:
		s.width = 1 + binadeBits + uint(d.format().precision-1)
	default:
		panic(fmt.Sprintf("reference: unknown input kind %d", kind))
	}
	s.perWord = 64 / int(s.width)
	s.mask = 1<<s.width - 1
	mantBits := s.width - 1 - binadeBits
	if kind == Random {
		s.unit = math.Ldexp(1, RandomMinExp-int(mantBits))
	}
	if kind == Random && d == F32 {
		return &s
	}
	s.vals = make([]float32, 1<<s.width)
	s.bits = make([]uint32, 1<<s.width)
	for f := range s.vals {
		if kind == Exact {
			s.vals[f] = exactValue(uint64(f))
		} else {
			s.vals[f] = math.Float32frombits(randomField(uint64(f), mantBits))
		}
		s.bits[f] = d.FromF32(s.vals[f])
	}
	if kind == Random {
		// Inputs are below fixedBias = 2^(RandomMaxExp-RandomMinExp+mantBits)
		// units (2^15 for bf16, 2^18 for f16), so a biased input is below
		// 2^19 and a word of up to 5 of them below 2^32.
		bias := fixedBias(s.width)
		s.fixed = make([]uint64, len(s.vals))
		for f, v := range s.vals {
			units := int64(float64(v) / s.unit)
			s.fixed[f] = uint64(max(units, -units))<<32 | uint64(units+bias)
		}
	}
	return &s
}

// schemes holds the scheme of every (kind, dtype), built once: the 16-bit
// Random tables are 8 KiB (bf16) and 64 KiB (f16) of float32.
var schemes = sync.OnceValue(func() map[[2]uint8]*scheme {
	m := map[[2]uint8]*scheme{}
	for _, k := range []InputKind{Random, Exact} {
		for _, d := range DTypes {
			m[[2]uint8{uint8(k), uint8(d)}] = newScheme(k, d)
		}
	}
	return m
})

func (g Gen) scheme() *scheme {
	s := schemes()[[2]uint8{uint8(g.Kind), uint8(g.DType)}]
	if s == nil {
		panic(fmt.Sprintf("reference: no generator for %v %v", g.Kind, g.DType))
	}
	return s
}

// F32 returns the input of rank for element index in stress iteration iter
// as a float32 (the dtype value exactly; a NaN stays a NaN).
func (g Gen) F32(rank, iter int, index uint64) float32 {
	if g.Kind == Special {
		return g.DType.ToF32(g.Bits(rank, iter, index))
	}
	s := g.scheme()
	return s.value(s.field(elemHash(elemKey(g.Seed, iter), index), rank))
}

// Bits returns the input of rank for element index in stress iteration iter
// (0 for ordinary runs), as dtype bits.
func (g Gen) Bits(rank, iter int, index uint64) uint32 {
	if g.Kind == Special {
		return specialBits(g.DType, elemKey(g.Seed, iter), rank, index)
	}
	s := g.scheme()
	return s.dtypeBits(s.field(elemHash(elemKey(g.Seed, iter), index), rank))
}

// fillMinElems is the size below which Fill and Check stay on the calling
// goroutine: starting goroutines costs more than it saves.
const fillMinElems = 1 << 16

// Fill writes len(dst)/Size() consecutive inputs of rank for iteration iter,
// starting at element index first, little endian. Trailing bytes that do not
// make a whole element are left alone. Large slices are split over
// GOMAXPROCS goroutines.
func (g Gen) Fill(dst []byte, rank, iter int, first uint64) {
	if rank < 0 {
		panic(fmt.Sprintf("reference: Fill for rank %d", rank))
	}
	if g.Kind == Special {
		g.fillSpecial(dst, rank, iter, first)
		return
	}
	s := g.scheme()
	n := len(dst) / g.DType.Size()
	key := elemKey(g.Seed, iter)
	word, shift := rank/s.perWord, s.width*uint(rank%s.perWord)
	parallelRanges(n, func(lo, hi int) {
		switch {
		case s.bits == nil: // f32 Random
			out := dst[4*lo : 4*hi]
			for j := range hi - lo {
				f := hashWord(elemHash(key, first+uint64(lo+j)), word) >> shift & s.mask
				binary.LittleEndian.PutUint32(out[4*j:], math.Float32bits(f32Random(f)))
			}
		case g.DType == F32:
			out := dst[4*lo : 4*hi]
			for j := range hi - lo {
				f := hashWord(elemHash(key, first+uint64(lo+j)), word) >> shift & s.mask
				binary.LittleEndian.PutUint32(out[4*j:], s.bits[f])
			}
		default:
			out := dst[2*lo : 2*hi]
			for j := range hi - lo {
				f := hashWord(elemHash(key, first+uint64(lo+j)), word) >> shift & s.mask
				binary.LittleEndian.PutUint16(out[2*j:], uint16(s.bits[f]))
			}
		}
	})
}

// parallelRanges calls fn on disjoint [lo, hi) ranges covering [0, n), on
// up to GOMAXPROCS goroutines when n is large enough to pay for them.
func parallelRanges(n int, fn func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), n/(fillMinElems/4))
	if n < fillMinElems || workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}
