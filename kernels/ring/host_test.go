package ring_test

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/kernels/hostmodel/hostmodeltest"
	"github.com/artest/artest/kernels/ring"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// ringMem is a synthetic address space: buffer i lives in window i+1 of
// 2^32 bytes, as the host backend's regions do in theirs.
type ringMem struct {
	mu   sync.Mutex
	bufs [][]byte
}

const ringWindowShift = 32

func (m *ringMem) alloc(n int64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bufs = append(m.bufs, make([]byte, n))
	return uint64(len(m.bufs)) << ringWindowShift
}

func (m *ringMem) Bytes(p uint64, n int64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, off := int(p>>ringWindowShift)-1, int64(p&(1<<ringWindowShift-1))
	if i < 0 || i >= len(m.bufs) || off+n > int64(len(m.bufs[i])) {
		panic(fmt.Sprintf("ring test memory: %d bytes at %#x are not mapped", n, p))
	}
	return m.bufs[i][off : off+n : off+n]
}

// ringWorld is n ranks' buffers, laid out as the runner lays them out: the
// staging buffer has the message plus the 256-byte guard after it, starting
// stageSkew bytes into its allocation (a misaligned offset), inputs and
// outputs one element longer (for the overrun bug).
type ringWorld struct {
	mem             ringMem
	in, stage, out  []uint64
	sig             []uint64
	n               int
	count, elem     int64
	dtype           reference.DType
	gen             reference.Gen
	inPlace         bool
	stageBytes      uint64
	lanes, slotB, s uint32 // --param values; 0: the default
	blocks          int    // --blocks; 0: the variant's grid
	inject          uint32
	delayRank       uint32
	delay           time.Duration
	stop            atomic.Bool
}

const ringStageSkew = 6

func newRingWorld(n int, d reference.DType, count int64) *ringWorld {
	w := &ringWorld{n: n, count: count, elem: int64(d.Size()), dtype: d,
		gen: reference.Gen{Seed: 11, Kind: reference.Random, DType: d}}
	bytes := count * w.elem
	w.stageBytes = uint64(bytes + 256)
	for r := 0; r < n; r++ {
		w.in = append(w.in, w.mem.alloc(bytes+w.elem))
		w.stage = append(w.stage, w.mem.alloc(int64(w.stageBytes)+ringStageSkew)+ringStageSkew)
		w.out = append(w.out, w.mem.alloc(bytes+w.elem))
		w.sig = append(w.sig, w.mem.alloc(sigblock.Size))
		sigblock.Block(w.mem.Bytes(w.sig[r], sigblock.Size)).Init(r, n)
	}
	return w
}

func (w *ringWorld) fill(iter int) {
	for r := 0; r < w.n; r++ {
		w.gen.Fill(w.mem.Bytes(w.in[r], w.count*w.elem), r, iter, 0)
	}
}

func (w *ringWorld) args(v *kernels.Variant, r int) *kernels.Args {
	a := &kernels.Args{Count: uint64(w.count), Rank: uint32(r), NRanks: uint32(w.n), Inject: w.inject,
		DelayRank: w.delayRank, DelayNs: uint64(w.delay.Nanoseconds()),
		VariantID: v.ID, StageBytes: w.stageBytes, Out: w.out[r]}
	for p := 0; p < w.n; p++ {
		a.PeerIn[p], a.PeerStage[p], a.PeerSignal[p] = w.in[p], w.stage[p], w.sig[p]
	}
	if w.inPlace {
		a.Out, a.Flags = w.in[r], kernels.FlagInPlace
	}
	set := map[string]uint32{}
	for name, val := range map[string]uint32{"lanes": w.lanes, "slot-bytes": w.slotB, "slots": w.s} {
		if val != 0 {
			set[name] = val
		}
	}
	v.SetParams(a, set, w.elem)
	return a
}

// launch runs the ring on every rank at once (ranks are goroutines, as
// processes are in the host backend) with the grid the cuda backend would
// use, and returns each rank's error.
func (w *ringWorld) launch(t *testing.T, op reference.Op) []error {
	t.Helper()
	v := ringVariant(t)
	errs := make([]error, w.n)
	var wg sync.WaitGroup
	for r := 0; r < w.n; r++ {
		a := w.args(v, r)
		blocks := kernels.Grid(v, a, w.elem, v.Blocks, v.Threads)
		if w.blocks > 0 {
			blocks = w.blocks // as --blocks does
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = hostmodel.Run(&w.mem, &hostmodel.Launch{Variant: v, DType: w.dtype, Op: op, Args: a, Blocks: blocks, Stop: w.stop.Load})
		}()
	}
	wg.Wait()
	return errs
}

func (w *ringWorld) result(r int) []byte {
	p := w.out[r]
	if w.inPlace {
		p = w.in[r]
	}
	return append([]byte(nil), w.mem.Bytes(p, w.count*w.elem)...)
}

func (w *ringWorld) signal(r int) sigblock.Block {
	return sigblock.Block(w.mem.Bytes(w.sig[r], sigblock.Size))
}

// check runs one launch of iteration iter and checks every rank's output
// against the reference; it returns the wrong elements of all ranks.
func (w *ringWorld) check(t *testing.T, op reference.Op, iter int) uint64 {
	t.Helper()
	w.fill(iter)
	for r := 0; r < w.n; r++ {
		if !w.inPlace {
			reference.FillPoison(w.mem.Bytes(w.out[r], w.count*w.elem), w.dtype)
		}
	}
	for r, err := range w.launch(t, op) {
		require.NoError(t, err, "rank %d", r)
	}
	var wrong uint64
	for r := 0; r < w.n; r++ {
		spec := reference.CheckSpec{Gen: w.gen, Op: op, NRanks: w.n, Iter: iter, Order: ringVariant(t).Order}
		wrong += reference.Check(spec, w.result(r)).Wrong
	}
	return wrong
}

func ringVariant(t *testing.T) *kernels.Variant {
	t.Helper()
	v := ring.Variant()
	return &v
}

// ringOrderExpect is the output the documented order gives: element i of
// chunk c (of its lane and round) is x_c + x_{c+1} + ... + x_{c-1} (ranks
// mod N) in float32, rounded once. It also proves the plan's spans cover
// every element exactly once.
func ringOrderExpect(t *testing.T, w *ringWorld, a *kernels.Args, op reference.Op, iter int) []byte {
	t.Helper()
	n := int64(w.n)
	start := make([]int64, w.count)
	for i := range start {
		start[i] = -1
	}
	lanes := int64(a.Param0)
	for l := int64(0); l < lanes; l++ {
		p := ring.NewPlan(w.count, n, lanes, int64(a.Param1), int64(a.Param2), l)
		if n == 1 {
			for i := p.Lo; i < p.Hi; i++ {
				start[i] = 0
			}
			continue
		}
		for round := int64(0); round < p.Rounds; round++ {
			for c := int64(0); c < n; c++ {
				for j := int64(0); j < p.Q; j++ {
					lo, hi := p.Span(round, c, j)
					for i := lo; i < hi; i++ {
						require.Equal(t, int64(-1), start[i], "element %d in two pieces", i)
						start[i] = c
					}
				}
			}
		}
	}
	out := make([]byte, w.count*w.elem)
	for i := range start {
		require.NotEqual(t, int64(-1), start[i], "element %d in no piece", i)
		c := start[i]
		acc := w.gen.F32(int(c), iter, uint64(i))
		for k := int64(1); k < n; k++ {
			acc = testApply(op, acc, w.gen.F32(int((c+k)%n), iter, uint64(i)))
		}
		w.dtype.SetF32(out, i, acc)
	}
	return out
}

// Many more pieces than slots go through every ring (wrap-around), at
// every world size, with the smallest ring (2 slots of 16 bytes: one piece
// per step) and a larger one; every output is checked against the
// reference and, bit for bit, against the documented order.
func TestRingWrapsAroundAtEveryWorldSize(t *testing.T) {
	for n := 1; n <= 8; n++ {
		for _, p := range []struct{ slots, slotBytes uint32 }{{2, 16}, {4, 64}} {
			for _, d := range []reference.DType{reference.F32, reference.BF16} {
				t.Run(fmt.Sprintf("np%d/slots%d/%dB/%s", n, p.slots, p.slotBytes, d), func(t *testing.T) {
					w := newRingWorld(n, d, 1000)
					w.lanes, w.s, w.slotB = 1, p.slots, p.slotBytes
					a := w.args(ringVariant(t), 0)
					require.Equal(t, p.slots, a.Param2)
					require.Equal(t, p.slotBytes, a.Param1)
					plan := ring.NewPlan(w.count, int64(n), 1, int64(a.Param1), int64(a.Param2), 0)
					if n > 1 {
						require.Greater(t, plan.Pieces, 10*int64(p.slots), "wrap-around: many more pieces than slots")
						require.Greater(t, plan.Rounds, int64(1))
					}
					for iter := 0; iter < 2; iter++ {
						require.Zero(t, w.check(t, reference.Sum, iter))
						want := ringOrderExpect(t, w, a, reference.Sum, iter)
						for r := 0; r < n; r++ {
							require.Equal(t, want, w.result(r), "rank %d iteration %d: the documented order", r, iter)
						}
					}
					// Head counted every piece of both launches, on every rank.
					for r := 0; r < n; r++ {
						s := w.signal(r)
						require.Equal(t, uint32(2*plan.Pieces), s.Load(sigblock.RingOffset(0, sigblock.RingOffHead)))
						require.Equal(t, uint32(2*plan.Pieces), s.Load(sigblock.RingOffset(0, sigblock.RingOffTarget)))
						require.Equal(t, uint32(sigblock.RingWaitNone), s.Load(sigblock.RingOffset(0, sigblock.RingOffWaitKind)))
					}
				})
			}
		}
	}
}

// Sizes smaller than one slot, not a multiple of the slot, one element; every
// dtype and op; out of place and in place.
func TestRingOddSizes(t *testing.T) {
	for _, tc := range []struct {
		n     int
		count int64
	}{
		{2, 1}, {3, 1}, {4, 3}, {8, 5}, {3, 37}, {4, 1021}, {5, 4099}, {2, 4096 + 4},
	} {
		for _, d := range reference.DTypes {
			for _, op := range reference.Ops {
				for _, inPlace := range []bool{false, true} {
					name := fmt.Sprintf("np%d/%d/%s/%s/inplace=%v", tc.n, tc.count, d, op, inPlace)
					t.Run(name, func(t *testing.T) {
						w := newRingWorld(tc.n, d, tc.count)
						w.inPlace = inPlace
						w.slotB = 256 // 64 partial sums: some sizes below one slot, most not a multiple
						require.Zero(t, w.check(t, op, 3))
					})
				}
			}
		}
	}
}

// Lane counts 1, 2 and the maximum, each checked, and the auto rule.
func TestRingLanes(t *testing.T) {
	for _, lanes := range []uint32{0, 1, 2, ring.MaxLanes} {
		for _, n := range []int{2, 3} {
			t.Run(fmt.Sprintf("lanes%d/np%d", lanes, n), func(t *testing.T) {
				w := newRingWorld(n, reference.F16, 20000)
				w.lanes, w.slotB = lanes, 512
				a := w.args(ringVariant(t), 0)
				if lanes != 0 {
					require.Equal(t, lanes, a.Param0)
				}
				require.Equal(t, int(a.Param0), kernels.Grid(ringVariant(t), a, w.elem, 1, 512))
				for iter := 0; iter < 2; iter++ {
					require.Zero(t, w.check(t, reference.Sum, iter))
					want := ringOrderExpect(t, w, a, reference.Sum, iter)
					require.Equal(t, want, w.result(n-1))
				}
			})
		}
	}
}

// Any grid works: with fewer blocks than lanes a block runs several lanes
// in turn, with more the extra blocks find no lane.
func TestRingGridOtherThanLanes(t *testing.T) {
	for _, blocks := range []int{1, 3, 7} {
		w := newRingWorld(3, reference.BF16, 5000)
		w.lanes, w.slotB, w.blocks = 5, 128, blocks
		for iter := 0; iter < 2; iter++ {
			require.Zero(t, w.check(t, reference.Sum, iter), "%d blocks", blocks)
		}
	}
}

// Launches back to back with different parameters (lanes, slots, slot
// sizes) and sizes keep working: sequences are per lane and monotone, so a
// slot's word left by an earlier launch, whatever its ring, is always behind.
func TestRingParametersChangeBetweenLaunches(t *testing.T) {
	w := newRingWorld(3, reference.F32, 3000)
	for i, p := range []struct{ lanes, slots, slotBytes uint32 }{
		{1, 2, 16}, {2, 8, 64}, {1, 4, 32}, {3, 2, 128}, {2, 64, 16}, {1, 2, 16},
	} {
		w.lanes, w.s, w.slotB = p.lanes, p.slots, p.slotBytes
		require.Zero(t, w.check(t, reference.Min, i), "launch %d %+v", i, p)
		require.Zero(t, w.check(t, reference.Sum, i), "launch %d %+v", i, p)
	}
}

// A lane waiting for a peer gives up when the backend stops, and while it
// waits the SignalBlocks say who waits for whom: the diagnosis names the
// delayed rank's right neighbour waiting for its data, and the delayed
// rank as the one waiting for nobody.
func TestRingWaitIsDiagnosedAndStops(t *testing.T) {
	w := newRingWorld(3, reference.F32, 1000)
	w.lanes, w.slotB = 2, 64
	w.inject, w.delayRank, w.delay = kernels.InjectDelay, 1, 400*time.Millisecond
	w.fill(0)
	done := make(chan []error)
	go func() { done <- w.launch(t, reference.Sum) }()
	time.Sleep(150 * time.Millisecond)
	snaps := make([]sigblock.Snapshot, w.n)
	for r := range snaps {
		snaps[r] = append(sigblock.Snapshot(nil), w.mem.Bytes(w.sig[r], sigblock.Size)...)
	}
	waits, busy := sigblock.DiagnoseRing(snaps)
	text := sigblock.SummarizeRing(waits, busy)
	require.Contains(t, text, "rank 2 lane 0 waits for slot 0 seq 1 from rank 1 (seen 0; lanes 0-1 wait alike)", text)
	require.Contains(t, text, "rank 1 lanes 0-1 are in a ring launch and wait for no peer", text)
	w.stop.Store(true)
	errs := <-done
	for r, err := range errs { // the delayed rank too: it wakes to peers that gave up
		require.ErrorIs(t, err, hostmodel.ErrStopped, "rank %d", r)
	}
	require.False(t, strings.Contains(sigblock.SummarizeRing(sigblock.DiagnoseRing([]sigblock.Snapshot{make(sigblock.Snapshot, sigblock.Size)})), "lane"))
}

// Like the kernel's traps, the model refuses launches that break the
// contract: parameters that are not powers of two, rings that do not fit
// the staging buffer.
func TestRingModelRejectsBadLaunches(t *testing.T) {
	v := ringVariant(t)
	w := newRingWorld(2, reference.F32, 1000)
	for _, tc := range []struct {
		name   string
		mutate func(a *kernels.Args) int
		want   string
	}{
		{"slot bytes", func(a *kernels.Args) int { a.Param1 = 48; return int(a.Param0) }, "slot bytes 48"},
		{"slots", func(a *kernels.Args) int { a.Param2 = 3; return int(a.Param0) }, "3 slots"},
		{"staging", func(a *kernels.Args) int { a.StageBytes = 64; return int(a.Param0) }, "do not fit"},
	} {
		a := w.args(v, 0)
		blocks := tc.mutate(a)
		err := hostmodel.Run(&w.mem, &hostmodel.Launch{Variant: v, DType: w.dtype, Op: reference.Sum, Args: a, Blocks: blocks})
		require.ErrorContains(t, err, tc.want, tc.name)
	}
}

// testApply is op on float32, as the models' reduction applies it.
func testApply(op reference.Op, acc, x float32) float32 {
	switch op {
	case reference.Max:
		return max(acc, x)
	case reference.Min:
		return min(acc, x)
	}
	return acc + x
}

// The ring's own waits give up too: with the start barrier switched off,
// rank 0's lane waits for a slot from its left neighbour, rank 2, which
// never launched.
func TestRingWaitGivesUpAfterTheDeadline(t *testing.T) {
	w := hostmodeltest.NewWorld(3, reference.F32, 4096, false)
	w.Adjust = func(a *kernels.Args) {
		a.Param1, a.Param2 = 256, 4 // slot bytes, slots: small rings fit the test's staging
	}
	w.Fill(0)
	v := ringVariant(t)
	errs, took := w.LaunchSome(t, v, kernels.InjectNoStartBarrier, 0, 1)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	// Ended by the deadline, not left waiting: any bound far below the
	// test's own limit shows it; 100x leaves room for a loaded machine.
	require.Less(t, took, 100*hostmodeltest.WaitTimeout)
	g, ok := w.Snapshot(0).GiveUp()
	require.True(t, ok)
	require.Equal(t, sigblock.DiagKindRingData, g.Kind)
	require.Equal(t, 2, g.Peer)
	require.Equal(t, uint32(1), g.Want, "the first piece's sequence")
	require.Equal(t, uint32(0), g.Seen)
	require.Equal(t, v.ID, g.Variant)
	require.Contains(t, g.String(), "rank 0 lane 0 gave up after")
	require.Contains(t, g.String(), "waiting for slot 0 seq 1 from rank 2 (seen 0)")
}
