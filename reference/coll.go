package reference

import (
	"bytes"
	"fmt"
	"math"
	"strings"
)

// Coll is a collective. Its values are part of the kernel ABI: the kernels
// learn theirs from the launch's flags (kernels.FlagReduceScatter,
// kernels.FlagAllGather), and a case ID names it where it is not AllReduce.
type Coll uint8

const (
	// AllReduce: every rank gets op over every rank's count elements.
	AllReduce Coll = 0
	// ReduceScatter: rank r gets elements [r*c, (r+1)*c) of the allreduce of
	// the ranks' count-element inputs, c = count/n (NCCL's
	// ncclReduceScatter with recvcount c).
	ReduceScatter Coll = 1
	// AllGather: every rank gets the ranks' c-element inputs one after the
	// other, rank 0's first: count = n*c elements (ncclAllGather with
	// sendcount c).
	AllGather Coll = 2
)

// Colls lists every collective in a stable order.
var Colls = []Coll{AllReduce, ReduceScatter, AllGather}

func (c Coll) String() string {
	switch c {
	case AllReduce:
		return "allreduce"
	case ReduceScatter:
		return "reduce-scatter"
	case AllGather:
		return "all-gather"
	}
	return fmt.Sprintf("coll(%d)", uint8(c))
}

// ParseColl accepts the names String returns plus the usual aliases.
func ParseColl(s string) (Coll, error) {
	switch strings.ToLower(s) {
	case "allreduce", "all-reduce", "all_reduce":
		return AllReduce, nil
	case "reduce-scatter", "reducescatter", "reduce_scatter":
		return ReduceScatter, nil
	case "all-gather", "allgather", "all_gather":
		return AllGather, nil
	}
	return 0, fmt.Errorf("unknown collective %q (valid: allreduce, reduce-scatter, all-gather)", s)
}

// Reduces reports whether the collective applies an op: all-gather only
// moves data, so its cases have no op.
func (c Coll) Reduces() bool { return c != AllGather }

// Chunk is the elements of one rank's part of a count-element collective
// over n ranks: the reduce-scatter's output and the all-gather's input.
// count must be a multiple of n (DividesReason).
func Chunk(count int64, n int) int64 { return count / int64(n) }

// DividesReason says why a collective over count elements cannot run on n
// ranks ("" when it can): reduce-scatter and all-gather cut the count into
// n equal chunks, as NCCL's counts per rank do.
func (c Coll) DividesReason(count int64, n int) string {
	if c == AllReduce || n <= 0 || count%int64(n) == 0 {
		return ""
	}
	return fmt.Sprintf("%s on %d ranks needs a count divisible by %d, not %d elements", c, n, n, count)
}

// InCount and OutCount are the elements of one rank's input and output in
// a collective whose full buffer is count elements (the reduce-scatter's
// input, the all-gather's output).
func (c Coll) InCount(count int64, n int) int64 {
	if c == AllGather {
		return Chunk(count, n)
	}
	return count
}

func (c Coll) OutCount(count int64, n int) int64 {
	if c == ReduceScatter {
		return Chunk(count, n)
	}
	return count
}

// InputFirst is the generator element index (Gen.Fill's first) of rank's
// input element 0. An all-gather's inputs are the slices of the output they
// become, so rank r's input element i is generator element r*c+i and the
// gathered output is one generator range; the others start at 0.
func (c Coll) InputFirst(count int64, n, rank int) uint64 {
	if c == AllGather {
		return uint64(int64(rank) * Chunk(count, n))
	}
	return 0
}

// OutputFirst is the allreduce element index (CheckSpec.First) of rank's
// output element 0: a reduce-scatter's output is chunk rank of the
// allreduce; the others start at 0.
func (c Coll) OutputFirst(count int64, n, rank int) uint64 {
	if c == ReduceScatter {
		return uint64(int64(rank) * Chunk(count, n))
	}
	return 0
}

// CheckCollective checks got, rank's whole output of collective c whose
// full buffer is count elements (spec.First is ignored and set here): an
// allreduce as Check does, a reduce-scatter as the chunk of the allreduce
// it is, an all-gather with CheckGather.
func CheckCollective(c Coll, spec CheckSpec, rank int, count int64, got []byte) Result {
	switch c {
	case AllGather:
		return CheckGather(spec.Gen, spec.NRanks, spec.Iter, got)
	case ReduceScatter:
		spec.First = c.OutputFirst(count, spec.NRanks, rank)
	default:
		spec.First = 0
	}
	return Check(spec, got)
}

// CheckGather compares got, the output of an all-gather of nranks ranks'
// inputs of iteration iter (InputFirst), with those inputs, bit for bit: an
// all-gather computes nothing, so whatever the order, op or input kind its
// output is exactly what the ranks put in. It panics when got is not a
// whole number of elements, or of nranks equal chunks.
func CheckGather(g Gen, nranks, iter int, got []byte) Result {
	d := g.DType
	size := d.Size()
	if len(got)%size != 0 {
		panic(fmt.Sprintf("reference: CheckGather of %d bytes, not a whole number of %v elements", len(got), d))
	}
	n := len(got) / size
	if nranks < 1 || n%nranks != 0 {
		panic(fmt.Sprintf("reference: CheckGather of %d elements over %d ranks", n, nranks))
	}
	chunk := n / nranks
	want := make([]byte, chunk*size)
	p := partial{worstIndex: math.MaxUint64}
	for r := 0; r < nranks; r++ {
		first := uint64(r * chunk)
		g.Fill(want, r, iter, first)
		seg := got[r*chunk*size : (r+1)*chunk*size]
		p.checked += uint64(chunk)
		if bytes.Equal(seg, want) {
			continue
		}
		for i := 0; i < chunk; i++ {
			gb, wb := d.GetBits(seg, i), d.GetBits(want, i)
			if gb == wb {
				continue
			}
			got, w := d.ToF64(gb), d.ToF64(wb)
			ulp := ulpDistance(d, got, w)
			p.wrong++
			p.noteWorst(ulp, first+uint64(i))
			if len(p.first) < MaxReported {
				p.first = append(p.first, Mismatch{Index: first + uint64(i), Got: got, Want: w, GotBits: gb, WantBits: wb, ULP: ulp})
			}
		}
	}
	return merge([]partial{p}, d, 0)
}
