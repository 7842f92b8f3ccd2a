// Package hostmodel is the host (CPU) implementation of every custom
// variant: the same protocol as the CUDA kernel of the same name, with
// goroutines for blocks, the same SignalBlock flags and epochs, the same
// reduction order and the same fault switches. It is a model of the
// protocol, not a call to the reference: remove a barrier here and the
// results go wrong here too.
package hostmodel

import (
	"errors"
	"fmt"
	"runtime"
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
	k := &kernel{l: l, mem: mem, elem: int64(l.DType.Size())}
	k.sig = make([]sigblock.Block, a.NRanks)
	for r := range k.sig {
		k.sig[r] = sigblock.Block(mem.Bytes(a.PeerSignal[r], sigblock.Size))
	}
	body, ok := l.Variant.Host.(Body)
	if !ok {
		return fmt.Errorf("host backend has no model of variant %q", l.Variant.Name)
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
// launch, with the helpers the models share (barriers, epochs, reduction,
// the planted bugs).
type Body func(k *kernel, b int) error

// IsHostModel marks Body as a kernels.HostModel.
func (Body) IsHostModel() {}

// The models of the built-in variants, which their folders
// (kernels/<variant>/) put in their Variant.
var (
	Oneshot        Body = (*kernel).oneshot
	Twoshot        Body = (*kernel).twoshot
	OneshotCpasync Body = (*kernel).oneshotCpasync
	OneshotLL      Body = (*kernel).oneshotLL
	Ring           Body = (*kernel).ring
	Multimem       Body = (*kernel).multimem
)

type kernel struct {
	l    *Launch
	mem  Memory
	sig  []sigblock.Block
	elem int64

	llOnce   sync.Once // oneshot-ll: the launch's sequence, read once (ll.go)
	llSeqVal uint32
}

func (k *kernel) own() sigblock.Block { return k.sig[k.l.Args.Rank] }

func (k *kernel) injected(bit uint32) bool { return k.l.Args.Inject&bit != 0 }

// barrier is the host form of the kernel's barrier(): announce (the epoch
// with this launch's tag, in one 64-bit store), then wait for every peer,
// for one block and phase of this launch's epoch, checking that each
// peer's flag of this epoch carries the tag expected of it.
func (k *kernel) barrier(ph, b int, epoch uint32) error {
	a := k.l.Args
	sigblock.Arrive(k.sig, ph, b, int(a.Rank), a.SelfTag, epoch)
	res := sigblock.WaitBounded(k.own(), ph, b, int(a.NRanks), epoch, a.PeerTag[:a.NRanks], k.l.Stop, k.timeout())
	switch res.Outcome {
	case sigblock.WaitStopped:
		return ErrStopped
	case sigblock.WaitTimedOut:
		return k.giveUp(sigblock.GiveUp{Block: b, Kind: sigblock.DiagKindBarrier, Where: ph, Peer: res.Peer,
			Want: epoch, Seen: res.Seen, Waited: res.Waited, Lane: b})
	case sigblock.WaitTagMismatch:
		return k.giveUp(sigblock.GiveUp{Block: b, Kind: sigblock.DiagKindTagMismatch, Where: ph, Peer: res.Peer,
			Want: res.Want, Seen: res.Seen, Lane: b})
	}
	return nil
}

// epochBegin is the kernels' epoch_begin for block b: claim the block's
// epoch word and read the epoch in one atomic; a claim already held means
// another launch of this rank runs the block (a second stream), which is
// recorded (DiagKindClaimed) and ends the block with errGaveUp.
func (k *kernel) epochBegin(b int) (uint32, error) {
	epoch, held, claim := k.own().ClaimEpoch(b)
	if held {
		return epoch, k.giveUp(sigblock.GiveUp{Block: b, Kind: sigblock.DiagKindClaimed, Peer: int(k.l.Args.Rank),
			Want: epoch, Seen: claim, Lane: b})
	}
	return epoch, nil
}

// epochEnd is epoch_end: the epoch is complete and the claim released, in
// one store.
func (k *kernel) epochEnd(b int, epoch uint32) { k.own().EndEpoch(b, epoch) }

// timeout is the launch's wait deadline (0: unbounded).
func (k *kernel) timeout() time.Duration { return time.Duration(k.l.Args.WaitTimeoutNs) }

// giveUp records g (completed with the launch's rank, variant and deadline)
// in this rank's diag words, unless another block already did, and returns
// errGaveUp for the block to leave with.
func (k *kernel) giveUp(g sigblock.GiveUp) error {
	a := k.l.Args
	g.Rank, g.Variant, g.Timeout = int(a.Rank), a.VariantID, k.timeout()
	k.own().RecordGiveUp(g)
	return errGaveUp
}

func (k *kernel) delay() {
	a := k.l.Args
	if k.injected(kernels.InjectDelay) && a.Rank == a.DelayRank {
		time.Sleep(time.Duration(a.DelayNs))
	}
}

// span is block b's share [lo, hi) of n elements: contiguous ranges, the
// same on every rank, so a block's barriers cover exactly what the same
// block of each peer reads and writes.
func span(n int64, b, blocks int) (lo, hi int64) {
	return n * int64(b) / int64(blocks), n * int64(b+1) / int64(blocks)
}

// reduceInto writes op over all ranks' inputs for elements [lo, hi) into
// dst (a buffer whose element 0 is element 0 of the message), accumulating
// in float32 in rank order 0..N-1 and rounding once, as the kernels do.
func (k *kernel) reduceInto(dst []byte, lo, hi int64) {
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
			acc = k.combine(acc, x)
		}
		d.SetF32(dst, int(i), acc)
	}
}

// combine is the launch's op on two float32 values, as Op<OP>::apply in
// kernels/common.cuh.
func (k *kernel) combine(acc, x float32) float32 {
	switch k.l.Op {
	case reference.Max:
		return max(acc, x)
	case reference.Min:
		return min(acc, x)
	}
	return acc + x
}

// outEnd is where writing [lo, hi) of the output stops: one short of the
// end under the planted skip-last bug.
func (k *kernel) outEnd(hi int64) int64 {
	if k.injected(kernels.InjectSkipLast) && hi == int64(k.l.Args.Count) {
		return hi - 1
	}
	return hi
}

// overrun applies the planted overrun bug after [lo, hi) was written: the
// block that owns the last element also writes one element past the end.
func (k *kernel) overrun(lo, hi int64) {
	count := int64(k.l.Args.Count)
	if k.injected(kernels.InjectOverrun) && hi == count && lo < hi {
		past := k.mem.Bytes(k.l.Args.Out, (count+1)*k.elem)
		copy(past[count*k.elem:], past[lo*k.elem:(lo+1)*k.elem])
	}
}

// writeOut copies elements [lo, hi) of src (element 0 of src is element 0
// of the message) into the output.
func (k *kernel) writeOut(src []byte, lo, hi int64) {
	out := k.mem.Bytes(k.l.Args.Out, int64(k.l.Args.Count)*k.elem)
	if end := k.outEnd(hi); end > lo {
		copy(out[lo*k.elem:end*k.elem], src[lo*k.elem:end*k.elem])
	}
	k.overrun(lo, hi)
}

// oneshot: start barrier; reduce this block's span from every peer; then
// out of place: write the output, end barrier (peers may still read my
// input until they pass it); in place: the output is my input, which peers
// are still reading, so reduce into my staging, mid barrier, then copy.
func (k *kernel) oneshot(b int) error {
	a := k.l.Args
	epoch, err := k.epochBegin(b)
	if err != nil {
		return err
	}
	if !k.injected(kernels.InjectNoStartBarrier) {
		if err := k.barrier(sigblock.PhaseStart, b, epoch); err != nil {
			return err
		}
	}
	k.delay()
	count := int64(a.Count)
	lo, hi := span(count, b, k.l.Blocks)
	if a.Flags&kernels.FlagInPlace != 0 {
		stage := k.mem.Bytes(a.PeerStage[a.Rank], count*k.elem)
		k.reduceInto(stage, lo, hi)
		if !k.injected(kernels.InjectNoMidBarrier) {
			if err := k.barrier(sigblock.PhaseMid, b, epoch); err != nil {
				return err
			}
		}
		k.writeOut(stage, lo, hi)
	} else {
		k.reduceInto(k.mem.Bytes(a.Out, count*k.elem), lo, k.outEnd(hi))
		k.overrun(lo, hi)
		if !k.injected(kernels.InjectNoEndBarrier) {
			if err := k.barrier(sigblock.PhaseEnd, b, epoch); err != nil {
				return err
			}
		}
	}
	k.epochEnd(b, epoch)
	return nil
}

// twoshot: start barrier; reduce chunk r (this block's span of it) from
// every peer into my staging; mid barrier; gather every peer's chunk from
// its staging into my output; end barrier, since peers may still be reading
// my staging.
func (k *kernel) twoshot(b int) error {
	a := k.l.Args
	epoch, err := k.epochBegin(b)
	if err != nil {
		return err
	}
	n := int(a.NRanks)
	count := int64(a.Count)
	chunk := kernels.ChunkElems(count, n, k.elem)
	chunkSpan := func(c int) (lo, hi int64) {
		clo := min(int64(c)*chunk, count)
		chi := min(clo+chunk, count)
		l, h := span(chi-clo, b, k.l.Blocks)
		return clo + l, clo + h
	}
	if !k.injected(kernels.InjectNoStartBarrier) {
		if err := k.barrier(sigblock.PhaseStart, b, epoch); err != nil {
			return err
		}
	}
	k.delay()
	lo, hi := chunkSpan(int(a.Rank))
	if a.Param0 == kernels.TwoshotGatherPush {
		return k.twoshotPush(b, epoch, lo, hi, chunkSpan)
	}
	k.reduceInto(k.mem.Bytes(a.PeerStage[a.Rank], count*k.elem), lo, hi)
	if !k.injected(kernels.InjectNoMidBarrier) {
		if err := k.barrier(sigblock.PhaseMid, b, epoch); err != nil {
			return err
		}
	}
	for p := 0; p < n; p++ {
		lo, hi := chunkSpan(p)
		k.writeOut(k.mem.Bytes(a.PeerStage[p], count*k.elem), lo, hi)
	}
	if !k.injected(kernels.InjectNoEndBarrier) {
		if err := k.barrier(sigblock.PhaseEnd, b, epoch); err != nil {
			return err
		}
	}
	k.epochEnd(b, epoch)
	return nil
}

// twoshotPush is twoshot's push gather after the start barrier: reduce
// this block's span [lo, hi) of chunk r (into our own staging, whose chunk
// r region no peer writes), write it into our output and into every peer's
// staging; mid barrier; then copy the other chunks from our staging into
// our output. No end barrier: no peer reads anything of ours after the mid
// barrier (twoshot.cu says why that is enough).
func (k *kernel) twoshotPush(b int, epoch uint32, lo, hi int64, chunkSpan func(int) (int64, int64)) error {
	a := k.l.Args
	n := int(a.NRanks)
	count := int64(a.Count)
	stage := k.mem.Bytes(a.PeerStage[a.Rank], count*k.elem)
	k.reduceInto(stage, lo, hi)
	for p := 0; p < n; p++ {
		if p != int(a.Rank) {
			copy(k.mem.Bytes(a.PeerStage[p], count*k.elem)[lo*k.elem:hi*k.elem], stage[lo*k.elem:hi*k.elem])
		}
	}
	k.writeOut(stage, lo, hi)
	if !k.injected(kernels.InjectNoMidBarrier) {
		if err := k.barrier(sigblock.PhaseMid, b, epoch); err != nil {
			return err
		}
	}
	for p := 0; p < n; p++ {
		if p != int(a.Rank) {
			plo, phi := chunkSpan(p)
			k.writeOut(stage, plo, phi)
		}
	}
	k.epochEnd(b, epoch)
	return nil
}

// errTimedOut: pollUntil's wait passed the launch's deadline.
var errTimedOut = errors.New("host wait passed the launch's deadline")

// pollUntil polls ready (after a failed first poll at start) until it
// holds: ErrStopped when the backend closes, errTimedOut (with the time
// waited) past the launch's deadline. sigblock.Backoff yields the core to
// other processes (ranks), but a goroutine spinning in it keeps its P, and
// the peer a wait is for is often another goroutine of this process (a
// lane or block of the same rank, or, in tests, another rank); these waits
// come once per piece or slot, not once per launch, so each poll lets this
// process's other goroutines run first.
func (k *kernel) pollUntil(start time.Time, ready func() bool) (time.Duration, error) {
	var bo sigblock.Backoff
	for !ready() {
		runtime.Gosched()
		if !bo.Pause() {
			continue
		}
		if k.l.Stop != nil && k.l.Stop() {
			return time.Since(start), ErrStopped
		}
		if waited := time.Since(start); k.timeout() > 0 && waited > k.timeout() {
			return waited, errTimedOut
		}
	}
	return time.Since(start), nil
}
