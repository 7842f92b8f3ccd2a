// Package hostmodel runs the host (CPU) models of the custom variants and
// holds what the models share: Run plays a launch with one goroutine per
// block, and Kernel gives each block the same SignalBlock flags and
// epochs, barriers, reduction order, give-ups and fault switches as the
// CUDA kernels' shared headers. Each variant's own model is a Body in its
// folder (kernels/<variant>/host.go), built from these helpers; this
// package knows no variant. A model is a model of the protocol, not a call
// to the reference: remove a barrier there and the results go wrong there
// too.
package hostmodel

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// Memory resolves backend addresses to host bytes.
type Memory interface {
	// Bytes returns n bytes at p; it panics if they are not mapped (a bug in
	// the caller, like an illegal address on the GPU).
	Bytes(p uint64, n int64) []byte
}

// Launch describes one call, as backend.Launch does for the kernels.
type Launch struct {
	Variant *kernels.Variant
	DType   reference.DType
	Op      reference.Op
	Args    *kernels.Args
	Blocks  int
	// Stop is polled while a block waits; when it reports true the block
	// gives up (the backend is closing). It may be nil.
	Stop func() bool
	// Producer, when set, is the --pdl producer enqueued just before this
	// launch, which was made with programmatic dependent launch: every
	// block waits for it first (pdl.go), as the kernels' pdl_wait does.
	Producer *Producer
}

// ErrStopped: a block gave up waiting because Stop reported true.
var ErrStopped = fmt.Errorf("host kernel stopped while waiting at a barrier")

// errGaveUp: a block waited past the launch's deadline (Args.WaitTimeoutNs),
// recorded where in the diag words and left, as a kernel block does with
// exit. It ends the block's body but is no error of the launch: the GPU's
// launch completes when its blocks have exited, and the runner learns of
// the give-up from the diag words.
var errGaveUp = errors.New("host block gave up waiting")

// Run executes the launch on the calling goroutine's behalf: one goroutine
// per block, returning when every block has finished (as a stream would
// when the kernel completes).
func Run(mem Memory, l *Launch) error {
	a := l.Args
	if l.Blocks < 1 || l.Blocks > sigblock.MaxBlocks {
		return fmt.Errorf("host %s: %d blocks, want 1..%d", l.Variant.Name, l.Blocks, sigblock.MaxBlocks)
	}
	if a.NRanks < 1 || a.NRanks > sigblock.MaxRanks || a.Rank >= a.NRanks {
		return fmt.Errorf("host %s: rank %d of %d", l.Variant.Name, a.Rank, a.NRanks)
	}
	k := &Kernel{l: l, mem: mem, elem: int64(l.DType.Size())}
	k.sig = make([]sigblock.Block, a.NRanks)
	for r := range k.sig {
		k.sig[r] = sigblock.Block(mem.Bytes(a.PeerSignal[r], sigblock.Size))
	}
	body, ok := l.Variant.Host.(Body)
	if !ok {
		return fmt.Errorf("host backend has no model of variant %q", l.Variant.Name)
	}
	if c := a.Coll(); !l.Variant.Implements(c) {
		return fmt.Errorf("host %s: the variant does not implement %s", l.Variant.Name, c)
	}
	errs := make([]error, l.Blocks)
	gaveUp := make([]bool, l.Blocks)
	var wg sync.WaitGroup
	for b := 0; b < l.Blocks; b++ {
		wg.Add(1)
		go func(b int) {
			defer wg.Done()
			// A bad address panics in Memory.Bytes; report it like the
			// GPU's illegal-address error instead of crashing the rank.
			defer func() {
				if r := recover(); r != nil {
					errs[b] = fmt.Errorf("host %s block %d: %v", l.Variant.Name, b, r)
				}
			}()
			err := k.pdlWait()
			if err == nil {
				err = body(k, b)
			}
			if errors.Is(err, errGaveUp) {
				gaveUp[b], err = true, nil
			}
			errs[b] = err
		}(b)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	// Block 0 writes the trace at its end (epoch_end), which a block that
	// gave up never reaches.
	if !gaveUp[0] {
		k.sig[a.Rank].WriteTrace(a.VariantID)
	}
	return nil
}

// Body is a variant's host model (kernels.Variant.Host): block b of one
// launch, written with Kernel's helpers (barriers, epochs, reduction, the
// planted bugs). Each variant's folder defines its own (host.go) and puts
// it in its Variant.
type Body func(k *Kernel, b int) error

// IsHostModel marks Body as a kernels.HostModel.
func (Body) IsHostModel() {}

// Kernel is one launch as the blocks of a host model see it: its
// arguments, the memory they point into, every rank's SignalBlock, and the
// helpers that do what the CUDA kernels' shared headers do. Its methods
// are safe for the launch's blocks to call at once.
type Kernel struct {
	l    *Launch
	mem  Memory
	sig  []sigblock.Block
	elem int64

	once    sync.Once // OncePerLaunch
	onceVal any
}

// Args are the launch's arguments, the kernels' ArtestArgs.
func (k *Kernel) Args() *kernels.Args { return k.l.Args }

// Variant is the variant the launch runs.
func (k *Kernel) Variant() *kernels.Variant { return k.l.Variant }

// DType and Op are the launch's element type and operator.
func (k *Kernel) DType() reference.DType { return k.l.DType }
func (k *Kernel) Op() reference.Op       { return k.l.Op }

// Blocks is the launch's grid (gridDim.x).
func (k *Kernel) Blocks() int { return k.l.Blocks }

// Elem is the size of one element in bytes.
func (k *Kernel) Elem() int64 { return k.elem }

// Mem is the memory the launch's addresses point into.
func (k *Kernel) Mem() Memory { return k.mem }

// Bytes is Mem().Bytes: n bytes at address p.
func (k *Kernel) Bytes(p uint64, n int64) []byte { return k.mem.Bytes(p, n) }

// Signal is rank r's SignalBlock; Own is this rank's.
func (k *Kernel) Signal(r int) sigblock.Block { return k.sig[r] }
func (k *Kernel) Own() sigblock.Block         { return k.sig[k.l.Args.Rank] }

// Injected reports whether fault switch bit (kernels.Inject*) is set.
func (k *Kernel) Injected(bit uint32) bool { return k.l.Args.Inject&bit != 0 }

// OncePerLaunch returns what init returns, run once for the whole launch
// by the first block that asks: state that a kernel reads once for its
// grid (oneshot-ll's sequence), so that no block can see what another
// block of the same launch writes later. One value per launch.
func (k *Kernel) OncePerLaunch(init func() any) any {
	k.once.Do(func() { k.onceVal = init() })
	return k.onceVal
}

// LaunchSeq is the launch count oneshot-ll and oneshot-sentinel share
// (sigblock.OffLlSeq): the last launch's + 1, never 0, read once per launch
// (OncePerLaunch), so that no block sees the value the last block of this
// launch stores at its end.
func (k *Kernel) LaunchSeq() uint32 {
	return k.OncePerLaunch(func() any { return k.Own().Load(sigblock.OffLlSeq) + 1 }).(uint32)
}

// PhaseBarrier is Barrier for phase ph (sigblock.PhaseStart, PhaseMid or
// PhaseEnd) unless that phase's fault switch is on (--inject
// no-start-barrier, no-mid-barrier, no-end-barrier): then the block goes
// on without waiting, as the kernels' own switch makes theirs do.
func (k *Kernel) PhaseBarrier(ph, b int, epoch uint32) error {
	if k.Injected(phaseSwitch[ph]) {
		return nil
	}
	return k.Barrier(ph, b, epoch)
}

// phaseSwitch is the fault switch that drops each phase's barrier.
var phaseSwitch = map[int]uint32{
	sigblock.PhaseStart: kernels.InjectNoStartBarrier,
	sigblock.PhaseMid:   kernels.InjectNoMidBarrier,
	sigblock.PhaseEnd:   kernels.InjectNoEndBarrier,
}

// Barrier is the host form of the kernels' barrier(): announce (the epoch
// with this launch's tag, in one 64-bit store), then wait for every peer,
// for one block and phase of this launch's epoch, checking that each
// peer's flag of this epoch carries the tag expected of it.
func (k *Kernel) Barrier(ph, b int, epoch uint32) error {
	a := k.l.Args
	sigblock.Arrive(k.sig, ph, b, int(a.Rank), a.SelfTag, epoch)
	res := sigblock.WaitBounded(k.Own(), ph, b, int(a.NRanks), epoch, a.PeerTag[:a.NRanks], k.l.Stop, k.Timeout())
	switch res.Outcome {
	case sigblock.WaitStopped:
		return ErrStopped
	case sigblock.WaitTimedOut:
		return k.GiveUp(sigblock.GiveUp{Block: b, Kind: sigblock.DiagKindBarrier, Where: ph, Peer: res.Peer,
			Want: epoch, Seen: res.Seen, Waited: res.Waited, Lane: b})
	case sigblock.WaitTagMismatch:
		return k.GiveUp(sigblock.GiveUp{Block: b, Kind: sigblock.DiagKindTagMismatch, Where: ph, Peer: res.Peer,
			Want: res.Want, Seen: res.Seen, Lane: b})
	}
	return nil
}

// EpochBegin is the kernels' epoch_begin for block b: claim the block's
// epoch word and read the epoch in one atomic; a claim already held means
// another launch of this rank runs the block (a second stream), which is
// recorded (DiagKindClaimed) and ends the block (the error GiveUp returns).
func (k *Kernel) EpochBegin(b int) (uint32, error) {
	epoch, held, claim := k.Own().ClaimEpoch(b)
	if held {
		return epoch, k.GiveUp(sigblock.GiveUp{Block: b, Kind: sigblock.DiagKindClaimed, Peer: int(k.l.Args.Rank),
			Want: epoch, Seen: claim, Lane: b})
	}
	return epoch, nil
}

// EpochEnd is epoch_end: the epoch is complete and the claim released, in
// one store.
func (k *Kernel) EpochEnd(b int, epoch uint32) { k.Own().EndEpoch(b, epoch) }

// Timeout is the launch's wait deadline (0: unbounded).
func (k *Kernel) Timeout() time.Duration { return time.Duration(k.l.Args.WaitTimeoutNs) }

// GiveUp records g (completed with the launch's rank, variant and
// deadline) in this rank's diag words, unless another block already did,
// and returns the error for the block to leave with: Run counts it as a
// block that exited, not as an error of the launch.
func (k *Kernel) GiveUp(g sigblock.GiveUp) error {
	a := k.l.Args
	g.Rank, g.Variant, g.Timeout = int(a.Rank), a.VariantID, k.Timeout()
	k.Own().RecordGiveUp(g)
	return errGaveUp
}

// Delay is inject_delay: under kernels.InjectDelay, rank DelayRank sleeps
// DelayNs (each block calls it right after its start barrier).
func (k *Kernel) Delay() {
	a := k.l.Args
	if k.Injected(kernels.InjectDelay) && a.Rank == a.DelayRank {
		time.Sleep(time.Duration(a.DelayNs))
	}
}

// Span is block b's share [lo, hi) of n elements: contiguous ranges, the
// same on every rank, so a block's barriers cover exactly what the same
// block of each peer reads and writes.
func Span(n int64, b, blocks int) (lo, hi int64) {
	return n * int64(b) / int64(blocks), n * int64(b+1) / int64(blocks)
}

// ReduceInto writes op over all ranks' inputs for elements [lo, hi) into
// dst (a buffer whose element 0 is element 0 of the message), accumulating
// in float32 in rank order 0..N-1 and rounding once, as the kernels do.
func (k *Kernel) ReduceInto(dst []byte, lo, hi int64) {
	a := k.l.Args
	d := k.l.DType
	count := int64(a.Count)
	ins := make([][]byte, a.NRanks)
	for r := range ins {
		ins[r] = k.mem.Bytes(a.PeerIn[r], count*k.elem)
	}
	for i := lo; i < hi; i++ {
		acc := d.GetF32(ins[0], int(i))
		for r := 1; r < len(ins); r++ {
			x := d.GetF32(ins[r], int(i))
			acc = k.Combine(acc, x)
		}
		d.SetF32(dst, int(i), acc)
	}
}

// ReduceSpan writes op over all ranks' inputs for input elements [lo, hi)
// into dst at element index i-shift, as ReduceInto does at i: a
// reduce-scatter reduces its chunk, which starts at input element shift,
// into an output whose element 0 is that chunk's first.
func (k *Kernel) ReduceSpan(dst []byte, shift, lo, hi int64) {
	a := k.l.Args
	d := k.l.DType
	ins := make([][]byte, a.NRanks)
	for r := range ins {
		ins[r] = k.mem.Bytes(a.PeerIn[r], hi*k.elem)
	}
	for i := lo; i < hi; i++ {
		acc := d.GetF32(ins[0], int(i))
		for r := 1; r < len(ins); r++ {
			acc = k.Combine(acc, d.GetF32(ins[r], int(i)))
		}
		d.SetF32(dst, int(i-shift), acc)
	}
}

// Combine is the launch's op on two float32 values, as Op<OP>::apply in
// kernels/device/elem.cuh.
func (k *Kernel) Combine(acc, x float32) float32 {
	switch k.l.Op {
	case reference.Max:
		return max(acc, x)
	case reference.Min:
		return min(acc, x)
	}
	return acc + x
}

// OutEnd is where writing [lo, hi) of the output stops: one short of the
// end under the planted skip-last bug. Indices are the output's (a
// reduce-scatter's output is its chunk: kernels.Args.OutCount).
func (k *Kernel) OutEnd(hi int64) int64 {
	if k.Injected(kernels.InjectSkipLast) && hi == int64(k.l.Args.OutCount()) {
		return hi - 1
	}
	return hi
}

// Overrun applies the planted overrun bug after [lo, hi) of the output was
// written: the block that owns the last element also writes one element
// past the end.
func (k *Kernel) Overrun(lo, hi int64) {
	count := int64(k.l.Args.OutCount())
	if k.Injected(kernels.InjectOverrun) && hi == count && lo < hi {
		past := k.mem.Bytes(k.l.Args.Out, (count+1)*k.elem)
		copy(past[count*k.elem:], past[lo*k.elem:(lo+1)*k.elem])
	}
}

// WriteOut copies elements [lo, hi) of src (element 0 of src is element 0
// of the output) into the output, with the planted bugs.
func (k *Kernel) WriteOut(src []byte, lo, hi int64) {
	out := k.mem.Bytes(k.l.Args.Out, int64(k.l.Args.OutCount())*k.elem)
	if end := k.OutEnd(hi); end > lo {
		copy(out[lo*k.elem:end*k.elem], src[lo*k.elem:end*k.elem])
	}
	k.Overrun(lo, hi)
}

// ErrTimedOut: PollUntil's wait passed the launch's deadline. The caller
// records where it waited (GiveUp).
var ErrTimedOut = errors.New("host wait passed the launch's deadline")

// PollUntil polls ready (after a failed first poll at start) until it
// holds: ErrStopped when the backend closes, ErrTimedOut (with the time
// waited) past the launch's deadline. What ready reads is this rank's own
// memory, which a peer stores into and then rings (RingPeers): after a
// short spin that lets this process's other goroutines run (the peer is
// often a lane or block of the same rank), the block sleeps on this rank's
// bell (sigblock.Parker).
func (k *Kernel) PollUntil(start time.Time, ready func() bool) (time.Duration, error) {
	pk := sigblock.NewParker(k.Own())
	for {
		bell := pk.Bell()
		if ready() {
			return time.Since(start), nil
		}
		if !pk.Pause(bell, ready) {
			continue
		}
		if k.l.Stop != nil && k.l.Stop() {
			return time.Since(start), ErrStopped
		}
		if waited := time.Since(start); k.Timeout() > 0 && waited > k.Timeout() {
			return waited, ErrTimedOut
		}
	}
}

// RingPeers rings every rank's bell (sigblock.Block.Ring), self included:
// the block stored into peers' memory something they may be waiting for
// (pushed slots, a sequence, a credit).
func (k *Kernel) RingPeers() { sigblock.RingAll(k.sig) }
