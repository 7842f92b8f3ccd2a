package reference

import (
	"bytes"
	"fmt"
	"math"
	"strings"
)

// Coll is a collective: an index into Collectives. Its values are part of
// the kernel and plugin ABIs (kernels.FlagReduceScatter is 1 << 1, the
// plugin header's ARTEST_REDUCE_SCATTER is 1), so a collective keeps its
// number for ever.
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

// Collective is one collective's description, which every layer reads
// instead of switching on the collective: its names, the shape of a rank's
// buffers, its reference check, its bus-bandwidth factor, the kernel symbol
// and NCCL call that implement it, and its report labels. A collective's
// count is always its full buffer's elements (the allreduce's message, the
// reduce-scatter's input, the all-gather's output), as nccl-tests counts.
type Collective struct {
	ID   Coll
	Name string // as --coll, case IDs and reports spell it
	// Aliases are the other spellings --coll accepts.
	Aliases []string
	// Reduces: the collective applies an op (an all-gather's cases have
	// none).
	Reduces bool
	// ChunkIn and ChunkOut: a rank's input (output) is one chunk of
	// count/n elements instead of the full count. In place, the chunk is
	// the rank's chunk of the full buffer (NCCL's offsets), and the count
	// must divide by n.
	ChunkIn, ChunkOut bool
	// Check checks got, rank's whole output of a count-element collective
	// (spec.First is the check's to set).
	Check func(spec CheckSpec, rank int, count int64, got []byte) Result
	// Model is the collective's definition, naively: rank's output from
	// every rank's input (in[r], InCount elements each) under op, in
	// float64. Check must accept what it gives for exact inputs and reject
	// any change (TestEveryCollectiveChecksItsModel); Check is the
	// reference the runner uses, Model what it is checked against.
	Model func(in [][]float64, rank int, op Op) []float64
	// BusFactor is busbw / algbw on n ranks, nccl-tests' factor for the
	// collective (algbw is of the full buffer).
	BusFactor func(n int) float64
	// KernelTag is what artest's kernel symbols put before the dtype
	// ("artest_<kernel>_<tag>_<dtype>[_<op>]"); "" for the allreduce's
	// "artest_<kernel>_<dtype>_<op>".
	KernelTag string
	// NCCL is the NCCL function that implements it ("" when none: its
	// NCCL cases are skipped).
	NCCL string
	// Bench is the Go benchmark name of its cases (`--gobench`).
	Bench string
}

// Collectives lists every collective once, by ID. A new collective is one
// entry here and its reference check: buffers, checks, case IDs, bus
// bandwidth, kernel names and reports read the entry.
var Collectives = []Collective{
	{ID: AllReduce, Name: "allreduce", Aliases: []string{"all-reduce", "all_reduce"}, Reduces: true,
		Check:     func(spec CheckSpec, _ int, _ int64, got []byte) Result { spec.First = 0; return Check(spec, got) },
		Model:     func(in [][]float64, _ int, op Op) []float64 { return reduceModel(in, op) },
		BusFactor: func(n int) float64 { return 2 * float64(n-1) / float64(n) }, NCCL: "ncclAllReduce", Bench: "BenchmarkAllreduce"},
	{ID: ReduceScatter, Name: "reduce-scatter", Aliases: []string{"reducescatter", "reduce_scatter"}, Reduces: true, ChunkOut: true,
		Check: func(spec CheckSpec, rank int, count int64, got []byte) Result {
			spec.First = uint64(int64(rank) * Chunk(count, spec.NRanks))
			return Check(spec, got)
		},
		Model: func(in [][]float64, rank int, op Op) []float64 {
			all := reduceModel(in, op)
			c := len(all) / len(in)
			return all[rank*c : (rank+1)*c]
		},
		BusFactor: chunkBusFactor, KernelTag: "rs", NCCL: "ncclReduceScatter", Bench: "BenchmarkReduceScatter"},
	{ID: AllGather, Name: "all-gather", Aliases: []string{"allgather", "all_gather"}, ChunkIn: true,
		Check: func(spec CheckSpec, _ int, _ int64, got []byte) Result {
			return CheckGather(spec.Gen, spec.NRanks, spec.Iter, got)
		},
		Model: func(in [][]float64, _ int, _ Op) []float64 {
			var out []float64
			for _, x := range in {
				out = append(out, x...)
			}
			return out
		},
		BusFactor: chunkBusFactor, KernelTag: "ag", NCCL: "ncclAllGather", Bench: "BenchmarkAllGather"},
}

// reduceModel is op over the ranks' inputs, element by element, in rank
// order.
func reduceModel(in [][]float64, op Op) []float64 {
	out := append([]float64(nil), in[0]...)
	for _, x := range in[1:] {
		for i, v := range x {
			switch op {
			case Max:
				out[i] = math.Max(out[i], v)
			case Min:
				out[i] = math.Min(out[i], v)
			default:
				out[i] += v
			}
		}
	}
	return out
}

// chunkBusFactor is (n-1)/n: each rank's link carries every chunk but its
// own once (nccl-tests' reduce_scatter.cu and all_gather.cu).
func chunkBusFactor(n int) float64 { return float64(n-1) / float64(n) }

// Colls lists every collective in a stable order (Collectives').
var Colls = func() []Coll {
	out := make([]Coll, len(Collectives))
	for i, c := range Collectives {
		if c.ID != Coll(i) {
			panic(fmt.Sprintf("reference: Collectives[%d] is %s, id %d: list them by id", i, c.Name, c.ID))
		}
		out[i] = c.ID
	}
	return out
}()

// Desc is c's description; an unknown collective gets one that names it
// and has no check, so that misuse shows in messages, not as a panic in a
// lookup.
func (c Coll) Desc() *Collective {
	if int(c) < len(Collectives) {
		return &Collectives[c]
	}
	return &Collective{ID: c, Name: fmt.Sprintf("coll(%d)", uint8(c)), Reduces: true,
		BusFactor: func(int) float64 { return 0 }}
}

func (c Coll) String() string { return c.Desc().Name }

// ParseColl accepts the names String returns plus each one's aliases.
func ParseColl(s string) (Coll, error) {
	l := strings.ToLower(s)
	var names []string
	for _, c := range Collectives {
		if l == c.Name {
			return c.ID, nil
		}
		for _, a := range c.Aliases {
			if l == a {
				return c.ID, nil
			}
		}
		names = append(names, c.Name)
	}
	return 0, fmt.Errorf("unknown collective %q (valid: %s)", s, strings.Join(names, ", "))
}

// Reduces reports whether the collective applies an op: all-gather only
// moves data, so its cases have no op.
func (c Coll) Reduces() bool { return c.Desc().Reduces }

// Chunked reports whether a rank's input or output is one chunk of the
// full buffer, so that the count must divide by the world size.
func (c Coll) Chunked() bool { d := c.Desc(); return d.ChunkIn || d.ChunkOut }

// Chunk is the elements of one rank's part of a count-element collective
// over n ranks: the reduce-scatter's output and the all-gather's input.
// count must be a multiple of n (DividesReason).
func Chunk(count int64, n int) int64 { return count / int64(n) }

// DividesReason says why a collective over count elements cannot run on n
// ranks ("" when it can): a chunked collective cuts the count into n equal
// chunks, as NCCL's counts per rank do.
func (c Coll) DividesReason(count int64, n int) string {
	if !c.Chunked() || n <= 0 || count%int64(n) == 0 {
		return ""
	}
	return fmt.Sprintf("%s on %d ranks needs a count divisible by %d, not %d elements", c, n, n, count)
}

// InCount and OutCount are the elements of one rank's input and output in
// a collective whose full buffer is count elements (the reduce-scatter's
// input, the all-gather's output).
func (c Coll) InCount(count int64, n int) int64 {
	if c.Desc().ChunkIn {
		return Chunk(count, n)
	}
	return count
}

func (c Coll) OutCount(count int64, n int) int64 {
	if c.Desc().ChunkOut {
		return Chunk(count, n)
	}
	return count
}

// InputFirst is the generator element index (Gen.Fill's first) of rank's
// input element 0. A chunked input is the slice of the full buffer it
// stands for (an all-gather's inputs are the slices of the output they
// become), so rank r's input element i is generator element r*c+i and the
// gathered output is one generator range; the others start at 0.
func (c Coll) InputFirst(count int64, n, rank int) uint64 {
	if c.Desc().ChunkIn {
		return uint64(int64(rank) * Chunk(count, n))
	}
	return 0
}

// OutputFirst is the full buffer's element index of rank's output element
// 0: a chunked output is chunk rank of it (a reduce-scatter's, of the
// allreduce); the others start at 0.
func (c Coll) OutputFirst(count int64, n, rank int) uint64 {
	if c.Desc().ChunkOut {
		return uint64(int64(rank) * Chunk(count, n))
	}
	return 0
}

// InPlaceInAt and InPlaceOutAt are where, in place, rank's input and
// output start in the shared full buffer, in elements: a chunked side is
// the rank's chunk (NCCL's offsets), the other the buffer's start.
func (c Coll) InPlaceInAt(count int64, n, rank int) int64 {
	return int64(c.InputFirst(count, n, rank))
}

func (c Coll) InPlaceOutAt(count int64, n, rank int) int64 {
	return int64(c.OutputFirst(count, n, rank))
}

// BusFactor is busbw / algbw on n ranks (0 on one rank: nothing crosses a
// link).
func (c Coll) BusFactor(n int) float64 {
	if n <= 1 {
		return 0
	}
	return c.Desc().BusFactor(n)
}

// CheckCollective checks got, rank's whole output of collective c whose
// full buffer is count elements (spec.First is ignored and set here), with
// the collective's own check.
func CheckCollective(c Coll, spec CheckSpec, rank int, count int64, got []byte) Result {
	d := c.Desc()
	if d.Check == nil {
		panic(fmt.Sprintf("reference: no check for %s", d.Name))
	}
	return d.Check(spec, rank, count, got)
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
