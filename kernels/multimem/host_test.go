package multimem_test

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/kernels/multimem"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// mcMemory is a world of ranks in one process, laid out as the host backend
// lays it out: per rank a segment [SignalBlock | input | staging] at
// (rank+1)<<40, an output buffer at (rank+17)<<40, and the multicast window
// at 64<<40 whose offset o stands for offset o of every segment.
type mcMemory struct {
	n      int
	segs   [][]byte
	outs   [][]byte
	stride int64 // bytes of the input and of the staging part
}

const (
	mcSigBytes = (sigblock.Size + 4095) / 4096 * 4096 // rounded up to a page, as the host backend does
	mcWindow   = uint64(64) << 40
	guard      = 64 // bytes fenced on each side of an output
	guardFill  = 0xA5
)

func newMCMemory(n int, stride int64) *mcMemory {
	m := &mcMemory{n: n, stride: stride}
	for r := 0; r < n; r++ {
		seg := make([]byte, mcSigBytes+2*stride)
		sigblock.Block(seg[:sigblock.Size]).Init(r, n)
		m.segs = append(m.segs, seg)
		m.outs = append(m.outs, make([]byte, stride))
	}
	return m
}

func (m *mcMemory) seg(r int) uint64   { return uint64(r+1) << 40 }
func (m *mcMemory) input(r int) uint64 { return m.seg(r) + mcSigBytes }
func (m *mcMemory) stage(r int) uint64 { return m.input(r) + uint64(m.stride) }
func (m *mcMemory) out(r int) uint64   { return uint64(r+17) << 40 }

func (m *mcMemory) Bytes(p uint64, n int64) []byte {
	idx, off := int(p>>40), int64(p&(1<<40-1))
	var buf []byte
	switch {
	case idx >= 1 && idx <= m.n:
		buf = m.segs[idx-1]
	case idx >= 17 && idx < 17+m.n:
		buf = m.outs[idx-17]
	}
	if buf == nil || off+n > int64(len(buf)) || n < 0 {
		panic(fmt.Sprintf("illegal address %#x (+%d bytes)", p, n))
	}
	return buf[off : off+n : off+n]
}

func (m *mcMemory) Replicas(p uint64, n int64) [][]byte {
	if p>>40 != mcWindow>>40 {
		panic(fmt.Sprintf("illegal multicast address %#x", p))
	}
	out := make([][]byte, m.n)
	for r := range out {
		out[r] = m.Bytes(m.seg(r)+(p-mcWindow), n)
	}
	return out
}

var multimemVariant = multimem.Variant()

type mmCase struct {
	n        int
	dtype    reference.DType
	count    int64
	offset   int64 // elements past the 16-byte-aligned start (misaligned modes)
	shots    uint32
	inPlace  bool
	kind     reference.InputKind
	inject   uint32
	delay    time.Duration
	slowRank int
	blocks   int
}

// runMultimem runs one launch on every rank (a goroutine each) and returns
// each rank's output bytes and guard damage.
func runMultimem(t *testing.T, c mmCase) (outs [][]byte, guardsOK []bool) {
	t.Helper()
	elem := int64(c.dtype.Size())
	lead := int64(guard) + c.offset*elem
	// Room for one element past the end; a multiple of 256 keeps staging
	// as aligned as the input, as the backends' buffers are.
	stride := (lead + c.count*elem + guard + elem + 255) / 256 * 256
	m := newMCMemory(c.n, stride)
	gen := reference.Gen{Seed: 7, Kind: c.kind, DType: c.dtype}
	for r := 0; r < c.n; r++ {
		in := m.Bytes(m.input(r), stride)
		for i := range in {
			in[i] = guardFill
		}
		gen.Fill(in[lead:lead+c.count*elem], r, 0, 0)
		out := m.outs[r]
		for i := range out {
			out[i] = guardFill
		}
		reference.FillPoison(out[lead:lead+c.count*elem], c.dtype)
	}
	blocks := c.blocks
	if blocks == 0 {
		blocks = 3
	}
	errs := make([]error, c.n)
	snaps := make([][]byte, c.n)
	var wg sync.WaitGroup
	for r := 0; r < c.n; r++ {
		a := &kernels.Args{
			Count: uint64(c.count), Rank: uint32(r), NRanks: uint32(c.n), Inject: c.inject,
			DelayRank: uint32(c.slowRank), DelayNs: uint64(c.delay.Nanoseconds()), VariantID: multimem.ID,
			StageBytes: uint64(stride - lead), Param0: c.shots,
		}
		for p := 0; p < c.n; p++ {
			a.PeerIn[p] = m.input(p) + uint64(lead)
			a.PeerStage[p] = m.stage(p) + uint64(lead)
			a.PeerSignal[p] = m.seg(p)
		}
		a.Out = m.out(r) + uint64(lead)
		if c.inPlace {
			a.Out = a.PeerIn[r]
			a.Flags |= kernels.FlagInPlace
		}
		kernels.SetMulticastDelta(a, mcWindow-m.seg(r))
		wg.Add(1)
		go func(r int, a *kernels.Args) {
			defer wg.Done()
			errs[r] = hostmodel.Run(m, &hostmodel.Launch{Variant: &multimemVariant, DType: c.dtype, Op: reference.Sum, Args: a, Blocks: blocks})
			// What this rank's caller would download the moment its own
			// launch is done, whatever slower ranks still do.
			region := m.outs[r]
			if c.inPlace {
				region = m.Bytes(m.input(r), stride)
			}
			snaps[r] = append([]byte(nil), region...)
		}(r, a)
	}
	wg.Wait()
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	for r := 0; r < c.n; r++ {
		region := snaps[r]
		outs = append(outs, region[lead:lead+c.count*elem])
		ok := bytes.Count(region[:lead], []byte{guardFill}) == int(lead) &&
			bytes.Count(region[lead+c.count*elem:], []byte{guardFill}) == int(stride-lead-c.count*elem)
		guardsOK = append(guardsOK, ok)
		sig := sigblock.Block(m.segs[r][:sigblock.Size])
		id, count := sig.Trace()
		require.Equal(t, multimem.ID, id, "trace word")
		require.Equal(t, uint32(1), count)
	}
	return outs, guardsOK
}

func wrong(c mmCase, out []byte) uint64 {
	spec := reference.CheckSpec{Gen: reference.Gen{Seed: 7, Kind: c.kind, DType: c.dtype}, Op: reference.Sum, NRanks: c.n,
		Order: multimemVariant.Order}
	return reference.Check(spec, out).Wrong
}

// The model on 1 to 8 ranks, both forms, in and out of place, aligned and
// misaligned, odd counts and 16-byte multiples, against the reference.
// Every world size gets every form; 3 ranks also get every dtype and size.
// (8 in-process ranks cost about 0.1 s a launch on 2 cores: the matrix is
// kept small.)
func TestMultimemModelMatchesReference(t *testing.T) {
	type form struct {
		shots   uint32
		inPlace bool
	}
	forms := []form{{multimem.OneShot, false}, {multimem.OneShot, true}, {multimem.TwoShot, false}, {multimem.TwoShot, true}}
	var cases []mmCase
	for n := 1; n <= 8; n++ {
		for i, f := range forms {
			for _, count := range []int64{7, 4099} {
				cases = append(cases, mmCase{n: n, dtype: reference.DTypes[(n+i)%3], count: count, offset: int64(i % 2),
					shots: f.shots, inPlace: f.inPlace, blocks: 2})
			}
		}
	}
	for _, d := range reference.DTypes {
		for _, f := range forms {
			for _, count := range []int64{1, 64, 1000} {
				for _, offset := range []int64{0, 3} {
					cases = append(cases, mmCase{n: 3, dtype: d, count: count, offset: offset, shots: f.shots, inPlace: f.inPlace, blocks: 3})
				}
			}
		}
	}
	for _, c := range cases {
		c.kind = reference.Random
		name := fmt.Sprintf("np%d/%s/%d/shots%d/inplace=%v/off%d", c.n, c.dtype, c.count, c.shots, c.inPlace, c.offset)
		outs, guards := runMultimem(t, c)
		for r, out := range outs {
			require.Zero(t, wrong(c, out), "%s rank %d", name, r)
			require.True(t, guards[r], "%s rank %d guards", name, r)
		}
	}
}

// The multicast path's order is not the reference's: random f32 sums differ
// from rank order in the last bit somewhere, which is why the registry
// declares OrderUnknown (and which shows that every form takes the
// multicast path on aligned buffers). Exact inputs agree bit for bit.
func TestMultimemModelOrderIsNotRankOrder(t *testing.T) {
	for _, shots := range []uint32{multimem.OneShot, multimem.TwoShot} {
		for _, inPlace := range []bool{false, true} {
			c := mmCase{n: 8, dtype: reference.F32, count: 4096, shots: shots, inPlace: inPlace, kind: reference.Random}
			outs, _ := runMultimem(t, c)
			strict := reference.CheckSpec{Gen: reference.Gen{Seed: 7, Kind: c.kind, DType: c.dtype}, Op: reference.Sum, NRanks: c.n,
				Order: reference.OrderRankAscendingF32}
			require.Positive(t, reference.Check(strict, outs[0]).Wrong, "shots %d in place %v: rank-order bits would be a coincidence", shots, inPlace)
			require.Zero(t, wrong(c, outs[0]))

			c.kind = reference.Exact
			outs, _ = runMultimem(t, c)
			strict.Gen.Kind = reference.Exact
			require.Zero(t, reference.Check(strict, outs[0]).Wrong)
		}
	}
}

// Every protection has a switch that makes the model fail.
func TestMultimemModelFaults(t *testing.T) {
	slow := 200 * time.Millisecond
	for _, tc := range []struct {
		name   string
		c      mmCase
		guards bool // the guards catch it, not the values
	}{
		// Two-shot, staged: without the mid barrier a fast rank copies its
		// staging before the slow rank's chunk arrived.
		{"two-shot no mid barrier", mmCase{shots: multimem.TwoShot, inject: kernels.InjectNoMidBarrier | kernels.InjectDelay}, false},
		// Two-shot in place: without the end barrier a fast rank returns
		// before the slow rank broadcast its chunk into everyone's output.
		{"two-shot in place no end barrier", mmCase{shots: multimem.TwoShot, inPlace: true, inject: kernels.InjectNoEndBarrier | kernels.InjectDelay}, false},
		// One-shot in place: without the mid barrier a fast rank overwrites
		// its input (its output) while the slow rank still reduces it.
		{"one-shot in place no mid barrier", mmCase{shots: multimem.OneShot, inPlace: true, inject: kernels.InjectNoMidBarrier | kernels.InjectDelay}, false},
		{"skip-last, two-shot", mmCase{shots: multimem.TwoShot, inject: kernels.InjectSkipLast}, false},
		{"skip-last, two-shot in place", mmCase{shots: multimem.TwoShot, inPlace: true, inject: kernels.InjectSkipLast}, false},
		{"skip-last, one-shot", mmCase{shots: multimem.OneShot, inject: kernels.InjectSkipLast}, false},
		{"overrun, two-shot", mmCase{shots: multimem.TwoShot, inject: kernels.InjectOverrun}, true},
		{"overrun, two-shot in place", mmCase{shots: multimem.TwoShot, inPlace: true, inject: kernels.InjectOverrun}, true},
		{"overrun, one-shot in place", mmCase{shots: multimem.OneShot, inPlace: true, inject: kernels.InjectOverrun}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			c.n, c.dtype, c.count, c.kind, c.delay, c.slowRank = 4, reference.F32, 4096, reference.Random, slow, 3
			outs, guards := runMultimem(t, c)
			var bad uint64
			guardsOK := true
			for r := range outs {
				bad += wrong(c, outs[r])
				guardsOK = guardsOK && guards[r]
			}
			if tc.guards {
				require.False(t, guardsOK, "a guard byte must be overwritten")
				return
			}
			require.Positive(t, bad, "wrong values must show")

			// The same without the fault passes.
			c.inject = 0
			outs, guards = runMultimem(t, c)
			for r := range outs {
				require.Zero(t, wrong(c, outs[r]))
				require.True(t, guards[r])
			}
		})
	}
}

func TestMultimemModelRefusesWhatTheKernelTraps(t *testing.T) {
	m := newMCMemory(1, 1024)
	a := &kernels.Args{Count: 4, NRanks: 1, Param0: multimem.TwoShot, VariantID: multimem.ID, StageBytes: 512}
	a.PeerIn[0], a.PeerStage[0], a.PeerSignal[0], a.Out = m.input(0), m.stage(0), m.seg(0), m.out(0)
	l := &hostmodel.Launch{Variant: &multimemVariant, DType: reference.F32, Op: reference.Sum, Args: a, Blocks: 1}
	require.ErrorContains(t, hostmodel.Run(m, l), "without a multicast mapping")

	kernels.SetMulticastDelta(a, mcWindow-m.seg(0))
	a.Param0 = 3
	require.ErrorContains(t, hostmodel.Run(m, l), "shots 3")
	a.Param0 = multimem.OneShot
	l.Op = reference.Max
	require.ErrorContains(t, hostmodel.Run(m, l), "no max kernel")
	l.Op = reference.Sum
	require.NoError(t, hostmodel.Run(m, l))
}
