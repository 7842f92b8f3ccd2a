// Package hostmodeltest is what the tests of host models share: a
// synthetic address space, a world of ranks' buffers in it, launches of
// every rank at once (ranks are goroutines, as processes are in the host
// backend), and the checks every model with barriers must pass (a peer
// that never launches, a peer that launches another call). The checks
// every variant passes run over the whole registry
// (kernels/registry/conformance_test.go); each variant's folder tests what
// is its own with it (kernels/<variant>/host_test.go).
package hostmodeltest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// Memory gives every buffer its own 4 GiB window of a synthetic address
// space, as the host backend gives regions of its shared segment.
type Memory struct {
	mu   sync.Mutex
	bufs [][]byte
}

// WindowShift: buffer i (from 0) starts at address (i+1) << WindowShift.
const WindowShift = 32

// Alloc adds a zeroed buffer of n bytes and returns its address.
func (m *Memory) Alloc(n int64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bufs = append(m.bufs, make([]byte, n))
	return uint64(len(m.bufs)) << WindowShift
}

// Bytes is hostmodel.Memory's: it panics on bytes that are not mapped. It
// takes a lock as the host backend's does, which orders the models' plain
// copies between ranks as they are ordered there.
func (m *Memory) Bytes(p uint64, n int64) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	i, off := int(p>>WindowShift)-1, int64(p&(1<<WindowShift-1))
	if i < 0 || i >= len(m.bufs) || off+n > int64(len(m.bufs[i])) {
		panic(fmt.Sprintf("fake memory: %d bytes at %#x are not mapped", n, p))
	}
	return m.bufs[i][off : off+n]
}

// World is n ranks' buffers in one Memory: inputs (with one spare element
// past the end, for the overrun bug), staging, outputs, signals. Inputs
// and outputs have room for Count elements whatever the collective.
type World struct {
	Mem            Memory
	In, Stage, Out []uint64
	Sig            []uint64
	Count, Elem    int64
	NRanks         int
	DType          reference.DType
	Gen            reference.Gen
	InPlace        bool
	// Coll is the collective the launches make (the allreduce unless set);
	// Count is its full buffer, as in kernels.Args. In place, a
	// reduce-scatter's output is rank r's chunk of In[r], an all-gather's
	// input rank r's chunk of Out[r] (InPtr, OutPtr).
	Coll reference.Coll
	// StageBytes is the size of every rank's staging buffer.
	StageBytes int64
	// Multicast: the launches get a multicast delta and the memory models
	// the multicast window (MulticastWindow), as the host backend does
	// for a variant that needs multicast.
	Multicast bool
	// Params are the launch parameters every launch sets (--param); the
	// others keep their defaults.
	Params map[string]uint32
	// Adjust, when set, changes every rank's arguments after the
	// variant's parameters were set (a ring small enough for the staging).
	Adjust func(a *kernels.Args)
	// Delay, when DelayRank's Inject has kernels.InjectDelay, is how long
	// that rank waits before it starts (kernels.Args.DelayNs).
	DelayRank int
	Delay     time.Duration
}

// NewWorld lays out n ranks' buffers for count elements of d, with
// staging of the message's size.
func NewWorld(n int, d reference.DType, count int64, inPlace bool) *World {
	return newWorld(n, d, count, inPlace, count*int64(d.Size()), false)
}

// StageGuard is the bytes the runner adds to every staging buffer past
// the largest message (its guard), which a variant may use.
const StageGuard = 256

// NewWorldFor lays out n ranks' buffers for count elements of d as the
// runner and the host backend lay them out for v: staging of the message
// (or what v.StageNeed asks, when more) plus the runner's guard, and a
// multicast window when v needs multicast.
func NewWorldFor(v *kernels.Variant, n int, d reference.DType, count int64, inPlace bool) *World {
	stage := count * int64(d.Size())
	if v.StageNeed != nil {
		stage = max(stage, v.StageNeed(stage, n))
	}
	return newWorld(n, d, count, inPlace, stage+StageGuard, v.Needs&kernels.NeedMulticast != 0)
}

func newWorld(n int, d reference.DType, count int64, inPlace bool, stage int64, multicast bool) *World {
	w := &World{Count: count, Elem: int64(d.Size()), NRanks: n, DType: d, InPlace: inPlace,
		Gen: reference.Gen{Seed: 7, Kind: reference.Random, DType: d}, StageBytes: stage, Multicast: multicast}
	bytes := count * w.Elem
	for r := 0; r < n; r++ {
		w.In = append(w.In, w.Mem.Alloc(bytes+w.Elem))
		w.Stage = append(w.Stage, w.Mem.Alloc(stage))
		w.Out = append(w.Out, w.Mem.Alloc(bytes+w.Elem))
		w.Sig = append(w.Sig, w.Mem.Alloc(sigblock.Size))
		sigblock.Block(w.Mem.Bytes(w.Sig[r], sigblock.Size)).Init(r, n)
	}
	return w
}

// MulticastWindow is the address of a World's multicast window: offset o
// of it stands for offset o from every rank's input buffer (rank r's
// staging is at the same distance from its input on every rank).
const MulticastWindow = uint64(1) << 48

// multicastMemory is a World's memory with its multicast window.
type multicastMemory struct{ w *World }

func (m multicastMemory) Bytes(p uint64, n int64) []byte { return m.w.Mem.Bytes(p, n) }

// Replicas is what the multimem model reads through (multimem.Multicast).
func (m multicastMemory) Replicas(p uint64, n int64) [][]byte {
	if p < MulticastWindow {
		panic(fmt.Sprintf("fake memory: %#x is no multicast address", p))
	}
	out := make([][]byte, m.w.NRanks)
	for r := range out {
		out[r] = m.w.Mem.Bytes(m.w.In[r]+(p-MulticastWindow), n)
	}
	return out
}

// memory is what the launches read and write through.
func (w *World) memory() hostmodel.Memory {
	if w.Multicast {
		return multicastMemory{w}
	}
	return &w.Mem
}

// Blocks is the block count of Launch and LaunchTagged for v, on every
// rank of this world.
func (w *World) Blocks(v *kernels.Variant) int {
	a := w.args(v, 0, w.Count, 0, 0)
	v.SetParams(a, w.Params, w.Elem)
	if w.Adjust != nil {
		w.Adjust(a)
	}
	return w.blocks(v, a)
}

// blocks is the block count of a launch of v with arguments a: its
// HostBlocks, or, when 0, the grid of the cuda backend (the host
// backend's rule).
func (w *World) blocks(v *kernels.Variant, a *kernels.Args) int {
	if v.HostBlocks > 0 {
		return v.HostBlocks
	}
	return kernels.Grid(v, a, w.Elem, v.Blocks, v.Threads)
}

// Fill writes iteration iter's inputs.
func (w *World) Fill(iter int) {
	for r := 0; r < w.NRanks; r++ {
		w.FillRank(r, iter)
	}
}

// FillRank writes rank r's input of iteration iter.
func (w *World) FillRank(r, iter int) {
	w.Gen.Fill(w.Input(r), r, iter, w.Coll.InputFirst(w.Count, w.NRanks, r))
}

// Input is rank r's input bytes, in place (not a copy).
func (w *World) Input(r int) []byte {
	return w.Mem.Bytes(w.InPtr(r), w.Coll.InCount(w.Count, w.NRanks)*w.Elem)
}

// inPlaceBuf is rank r's one buffer in place: the full-size side's, Out[r]
// where the input is a chunk (an all-gather's), else In[r].
func (w *World) inPlaceBuf(r int) uint64 {
	if w.Coll.Desc().ChunkIn {
		return w.Out[r]
	}
	return w.In[r]
}

// InPtr is rank r's input: In[r], or in place its NCCL offset in the one
// buffer (an all-gather's r's chunk of Out[r]).
func (w *World) InPtr(r int) uint64 {
	if w.InPlace {
		return w.inPlaceBuf(r) + uint64(w.Coll.InPlaceInAt(w.Count, w.NRanks, r)*w.Elem)
	}
	return w.In[r]
}

// OutPtr is rank r's output: Out[r], or in place its NCCL offset in the one
// buffer (an allreduce's In[r], a reduce-scatter's r's chunk of In[r], an
// all-gather's Out[r]).
func (w *World) OutPtr(r int) uint64 {
	if w.InPlace {
		return w.inPlaceBuf(r) + uint64(w.Coll.InPlaceOutAt(w.Count, w.NRanks, r)*w.Elem)
	}
	return w.Out[r]
}

// args is rank r's arguments for a launch of v over the whole world.
func (w *World) args(v *kernels.Variant, r int, count int64, inject uint32, timeout time.Duration) *kernels.Args {
	a := &kernels.Args{Count: uint64(count), Rank: uint32(r), NRanks: uint32(w.NRanks), Inject: inject,
		VariantID: v.ID, StageBytes: uint64(w.StageBytes), Out: w.OutPtr(r), WaitTimeoutNs: uint64(timeout.Nanoseconds()),
		DelayRank: uint32(w.DelayRank), DelayNs: uint64(w.Delay.Nanoseconds())}
	if w.InPlace {
		a.Flags = kernels.FlagInPlace
	}
	a.SetColl(w.Coll)
	for p := 0; p < w.NRanks; p++ {
		a.PeerIn[p], a.PeerStage[p], a.PeerSignal[p] = w.InPtr(p), w.Stage[p], w.Sig[p]
	}
	if w.Multicast {
		kernels.SetMulticastDelta(a, MulticastWindow-w.In[r])
	}
	return a
}

// Launch runs variant v on every rank at once with the host backend's
// block count (blocks) and returns each rank's error. param0, when not 0,
// replaces Args.Param0 after the variant's defaults were set.
func (w *World) Launch(v *kernels.Variant, op reference.Op, param0 uint32, inject uint32) []error {
	return w.LaunchHooked(v, op, param0, inject, nil, nil)
}

// LaunchHooked is Launch with each rank's goroutine calling before(r)
// before its launch and after(r) once it returned (nil: nothing), as a
// rank's host writes its input before its call and may overwrite it as
// soon as the call returned.
func (w *World) LaunchHooked(v *kernels.Variant, op reference.Op, param0 uint32, inject uint32, before, after func(r int)) []error {
	errs := make([]error, w.NRanks)
	var wg sync.WaitGroup
	for r := 0; r < w.NRanks; r++ {
		a := w.args(v, r, w.Count, inject, 0)
		v.SetParams(a, w.Params, w.Elem)
		if param0 != 0 {
			a.Param0 = param0
		}
		if w.Adjust != nil {
			w.Adjust(a)
		}
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			if before != nil {
				before(r)
			}
			errs[r] = hostmodel.Run(w.memory(), &hostmodel.Launch{Variant: v, DType: w.DType, Op: op, Args: a, Blocks: w.blocks(v, a)})
			if after != nil {
				after(r)
			}
		}(r)
	}
	wg.Wait()
	return errs
}

// WaitTimeout is the deadline of LaunchSome: short, so the tests are
// fast, and far above a scheduling hiccup of the ranks that do run.
const WaitTimeout = 100 * time.Millisecond

// LaunchSome runs variant v on the given ranks only, with the deadline
// WaitTimeout: the other ranks never launch, so their peers must give up.
// It returns each launched rank's error and how long the launches took.
func (w *World) LaunchSome(t *testing.T, v *kernels.Variant, inject uint32, ranks ...int) (map[int]error, time.Duration) {
	t.Helper()
	return w.launchAll(v, ranks, func(r int) (*kernels.Args, int) {
		a := w.args(v, r, w.Count, inject, WaitTimeout)
		v.SetParams(a, w.Params, w.Elem)
		if w.Adjust != nil {
			w.Adjust(a)
		}
		return a, kernels.Grid(v, a, w.Elem, v.HostBlocks, v.Threads)
	})
}

// LaunchTagged runs v on every rank at once with launch tags set as the
// backends set them: counts[r] elements on rank r (the grid of the common
// count, as the size-mismatch injection launches), and gens[r] the
// generations rank r holds of every rank's buffers. It returns the errors
// and how long the launches took.
func (w *World) LaunchTagged(t *testing.T, v *kernels.Variant, counts []int64, gens [][]uint32, timeout time.Duration) (map[int]error, time.Duration) {
	t.Helper()
	ranks := make([]int, w.NRanks)
	for r := range ranks {
		ranks[r] = r
	}
	return w.launchAll(v, ranks, func(r int) (*kernels.Args, int) {
		a := w.args(v, r, counts[r], 0, timeout)
		v.SetParams(a, w.Params, w.Elem)
		if w.Adjust != nil {
			w.Adjust(a)
		}
		blocks := w.blocks(v, a)
		kernels.SetTags(a, kernels.CallHash(v, w.DType, reference.Sum, a, blocks, v.Threads), gens[r])
		return a, blocks
	})
}

// launchAll runs v (sum) on the given ranks at once, each with the
// arguments and grid launch gives it, and returns each rank's error and how
// long the launches took.
func (w *World) launchAll(v *kernels.Variant, ranks []int, launch func(r int) (*kernels.Args, int)) (map[int]error, time.Duration) {
	errs := map[int]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for _, r := range ranks {
		a, blocks := launch(r)
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			err := hostmodel.Run(w.memory(), &hostmodel.Launch{Variant: v, DType: w.DType, Op: reference.Sum, Args: a, Blocks: blocks})
			mu.Lock()
			errs[r] = err
			mu.Unlock()
		}(r)
	}
	wg.Wait()
	return errs, time.Since(start)
}

// SameGens is n ranks that all hold generations gens of every rank's
// buffers.
func SameGens(n int, gens ...uint32) [][]uint32 {
	out := make([][]uint32, n)
	for r := range out {
		out[r] = gens
	}
	return out
}

// Result is rank r's output bytes (the output only).
func (w *World) Result(r int) []byte {
	return append([]byte(nil), w.Mem.Bytes(w.OutPtr(r), w.Coll.OutCount(w.Count, w.NRanks)*w.Elem)...)
}

// Check compares rank r's output of iteration iter (op, in order) with
// the reference for the world's collective.
func (w *World) Check(r int, op reference.Op, iter int, order reference.Order) reference.Result {
	spec := reference.CheckSpec{Gen: w.Gen, Op: op, NRanks: w.NRanks, Iter: iter, Order: order}
	return reference.CheckCollective(w.Coll, spec, r, w.Count, w.Result(r))
}

// CollCount is count rounded down to a whole chunk per rank for
// collective c on n ranks (at least one element each).
func CollCount(c reference.Coll, count int64, n int) int64 {
	if !c.Chunked() {
		return count
	}
	return max(int64(n), count/int64(n)*int64(n))
}

// Trace is rank r's trace word: the last launch's variant id and the
// launch count.
func (w *World) Trace(r int) (id, count uint32) {
	return sigblock.Block(w.Mem.Bytes(w.Sig[r], sigblock.Size)).Trace()
}

// Snapshot is a copy of rank r's SignalBlock.
func (w *World) Snapshot(r int) sigblock.Snapshot {
	return append(sigblock.Snapshot(nil), w.Mem.Bytes(w.Sig[r], sigblock.Size)...)
}

// CheckBarrierGivesUp: a start barrier whose peer never arrives gives up
// after the launch's deadline (CheckWaitGivesUp at the start barrier).
func CheckBarrierGivesUp(t *testing.T, v *kernels.Variant) {
	t.Helper()
	CheckWaitGivesUp(t, v, sigblock.DiagKindBarrier, sigblock.PhaseStart)
}

// FirstSlotOfBlock, as CheckWaitGivesUp's where: the first 16-byte slot of
// the block that recorded the give-up (hostmodel.Span), for a variant whose
// first wait is for a peer's data and whose blocks all wait at once, so
// any of them may reach the deadline first.
const FirstSlotOfBlock = -1

// CheckWaitGivesUp: a launch of v on ranks 0 and 1 of 3, where rank 2
// never launches, gives up after the launch's deadline at its first wait
// for a peer (kind, at where: a barrier's phase or a slot): the launch
// completes without an error (as a GPU launch whose blocks exited), the
// diag words say which block waited where for whom, and block 0, which
// gave up, wrote no trace.
func CheckWaitGivesUp(t *testing.T, v *kernels.Variant, kind, where int) {
	t.Helper()
	for _, c := range v.Collectives() {
		checkWaitGivesUp(t, v, c, kind, where)
	}
}

func checkWaitGivesUp(t *testing.T, v *kernels.Variant, c reference.Coll, kind, where int) {
	t.Helper()
	w := NewWorldFor(v, 3, reference.F32, CollCount(c, 1024, 3), false)
	w.Coll = c
	w.Fill(0)
	errs, took := w.LaunchSome(t, v, 0, 0, 1)
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Less(t, took, 20*WaitTimeout, "the launch must end soon after the deadline")
	for _, r := range []int{0, 1} {
		g, ok := w.Snapshot(r).GiveUp()
		require.True(t, ok, "rank %d recorded no give-up", r)
		require.Equal(t, r, g.Rank)
		require.Equal(t, kind, g.Kind, g.String())
		want := where
		if where == FirstSlotOfBlock {
			slots := (w.Count*w.Elem + kernels.VecBytes - 1) / kernels.VecBytes
			a := w.args(v, r, w.Count, 0, WaitTimeout)
			v.SetParams(a, w.Params, w.Elem)
			lo, _ := hostmodel.Span(slots, g.Block, kernels.Grid(v, a, w.Elem, v.HostBlocks, v.Threads)) // LaunchSome's grid
			want = int(lo)
		}
		require.Equal(t, want, g.Where, g.String())
		require.Equal(t, 2, g.Peer, "rank 2 never launched")
		require.Equal(t, uint32(1), g.Want, "the first launch's epoch or sequence")
		require.Equal(t, uint32(0), g.Seen)
		require.Equal(t, v.ID, g.Variant)
		require.GreaterOrEqual(t, g.Waited, WaitTimeout)
		require.Equal(t, WaitTimeout, g.Timeout)
		_, count := w.Trace(r)
		require.Zero(t, count, "block 0 gave up: no trace")
	}
	_, ok := w.Snapshot(2).GiveUp()
	require.False(t, ok)
}

// CheckTagMismatch: one rank launching a smaller count: every rank's
// blocks find another tag at the start barrier and give up at once, long
// before the deadline, naming the barrier and the rank whose call differs.
func CheckTagMismatch(t *testing.T, v *kernels.Variant) {
	t.Helper()
	for _, c := range v.Collectives() {
		checkTagMismatch(t, v, c)
	}
}

func checkTagMismatch(t *testing.T, v *kernels.Variant, c reference.Coll) {
	t.Helper()
	count := CollCount(c, 1024, 3)
	w := NewWorldFor(v, 3, reference.F32, count, false)
	w.Coll = c
	w.Fill(0)
	counts := []int64{count, count - 4, count} // rank 1: one 16-byte slot less
	errs, took := w.LaunchTagged(t, v, counts, SameGens(3, 1, 1, 1), 30*time.Second)
	for r := 0; r < 3; r++ {
		require.NoError(t, errs[r])
	}
	require.Less(t, took, 10*time.Second, "a mismatch is found at the barrier, not at the 30 s deadline")
	for r := 0; r < 3; r++ {
		g, ok := w.Snapshot(r).GiveUp()
		require.True(t, ok, "rank %d recorded nothing", r)
		require.Equal(t, sigblock.DiagKindTagMismatch, g.Kind)
		require.Equal(t, sigblock.PhaseStart, g.Where)
		if r != 1 {
			require.Equal(t, 1, g.Peer, "rank %d must name rank 1", r)
		}
		require.Contains(t, g.String(), "at the start barrier: rank ")
		require.Contains(t, g.String(), "launched a different call")
	}
}
