package ring

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// Host is the host model of the ring kernel (ring.cu), block b being lane
// b: the same plan (NewPlan), the same slots in the
// receiver's staging, the same sequence and credit words in the
// SignalBlocks, the same unit loop and the same fault switches. The
// protocol is described in protocol.go.
func Host(k *hostmodel.Kernel, b int) error {
	a := k.Args()
	if err := Check(a, k.Blocks(), k.Elem()); err != nil {
		return err
	}
	own := k.Own()
	epoch, err := k.EpochBegin(b)
	if err != nil {
		return err
	}
	if err := k.PhaseBarrier(sigblock.PhaseStart, b, epoch); err != nil {
		return err
	}
	n, rank := int64(a.NRanks), int64(a.Rank)
	lanes, slotBytes, slots := int64(a.Param0), int64(a.Param1), int64(a.Param2)
	// One lane per block (Grid); with another grid, block b
	// runs lanes b, b+blocks, ... in turn, as block b of every peer does.
	plans := map[int]Plan{}
	for lane := b; lane < int(lanes); lane += k.Blocks() {
		plans[lane] = NewPlan(int64(a.Count), n, lanes, slotBytes, slots, int64(lane))
		// For diagnosis: the lane is in a launch until Head reaches
		// Target (set before the injected delay, so a delayed rank shows
		// as in the launch and waiting for nobody).
		head := own.Load(sigblock.RingOffset(lane, sigblock.RingOffHead))
		own.Store(sigblock.RingOffset(lane, sigblock.RingOffSlots), uint32(slots))
		own.Store(sigblock.RingOffset(lane, sigblock.RingOffTarget), head+uint32(plans[lane].Pieces))
	}
	k.Delay()
	for lane := b; lane < int(lanes); lane += k.Blocks() {
		plan := plans[lane]
		head := own.Load(sigblock.RingOffset(lane, sigblock.RingOffHead))
		if n == 1 {
			// No ring: the allreduce of one rank is a copy.
			k.WriteOut(k.Bytes(a.PeerIn[rank], int64(a.Count)*k.Elem()), plan.Lo, plan.Hi)
		} else if err := units(k, lane, &plan, head); err != nil {
			return err
		}
		own.Store(sigblock.RingOffset(lane, sigblock.RingOffHead), head+uint32(plan.Pieces))
	}
	k.EpochEnd(b, epoch)
	return nil
}

// units is the lane's loop: at unit u it consumes piece u-Q and
// produces piece u (protocol.go says why that order cannot deadlock).
func units(k *hostmodel.Kernel, lane int, plan *Plan, head uint32) error {
	a := k.Args()
	d, op := k.DType(), k.Op()
	n, rank := int64(a.NRanks), int64(a.Rank)
	right, left := int((rank+1)%n), int((rank-1+n)%n)
	slots, slotBytes := int64(a.Param2), int64(a.Param1)
	ring := func(p int) []byte { // lane's ring in rank p's staging
		base := StageBase(a.PeerStage[p]) + uint64(int64(lane)*slots*slotBytes)
		return k.Bytes(base, slots*slotBytes)
	}
	mine, theirs := ring(int(rank)), ring(right)
	slot := func(ring []byte, t int64) []byte {
		s := (int64(head) + t) & (slots - 1)
		return ring[s*slotBytes : (s+1)*slotBytes]
	}
	seq := func(t int64) uint32 { return head + uint32(t) + 1 }
	count := int64(a.Count)
	in := k.Bytes(a.PeerIn[rank], count*k.Elem())
	out := k.Bytes(a.Out, count*k.Elem())
	noCredit := k.Injected(InjectNoCreditWait)

	q, total := plan.Q, plan.Pieces
	for u := int64(0); u < total+q; u++ {
		c, p := u-q, u
		consume, produce := c >= 0, p < total
		if consume {
			s := int((int64(head) + c) & (slots - 1))
			if err := wait(k, lane, sigblock.RingSeqOffset(lane, s), seq(c), sigblock.RingWaitData, s); err != nil {
				return err
			}
		}
		if produce && !noCredit {
			// Slot p%S held piece p-S: it must have been consumed.
			if err := wait(k, lane, sigblock.RingOffset(lane, sigblock.RingOffCredit), seq(p)-uint32(slots), sigblock.RingWaitCredit, 0); err != nil {
				return err
			}
		}

		if produce {
			if round, step, j := plan.Step(p); step == 0 {
				// Reduce-scatter step 0: this rank's own chunk, as float32.
				lo, hi := plan.Span(round, SendChunk(rank, 0, n), j)
				dst := slot(theirs, p)
				for i := lo; i < hi; i++ {
					putPartial(dst, i-lo, d.GetF32(in, int(i)))
				}
			}
		}
		if consume {
			round, step, j := plan.Step(c)
			lo, hi := plan.Span(round, RecvChunk(rank, step, n), j)
			src := slot(mine, c)
			var dst []byte // the next step's slot, when this piece goes on
			if step < 2*n-3 {
				dst = slot(theirs, p)
			}
			switch {
			case step < n-2: // reduce-scatter: add, pass the partial on
				for i := lo; i < hi; i++ {
					putPartial(dst, i-lo, apply(op, getPartial(src, i-lo), d.GetF32(in, int(i))))
				}
			case step == n-2: // last reduce-scatter step: the sum is final
				end := k.OutEnd(hi) // the skip-last bug leaves the last element unwritten
				for i := lo; i < hi; i++ {
					v := d.FromF32(apply(op, getPartial(src, i-lo), d.GetF32(in, int(i))))
					if i < end {
						d.SetBits(out, int(i), v)
					}
					d.SetBits(dst, int(i-lo), v)
				}
				k.Overrun(lo, hi)
			default: // all-gather: write the final values out, pass them on
				for i := lo; i < k.OutEnd(hi); i++ {
					d.SetBits(out, int(i), d.GetBits(src, int(i-lo)))
				}
				if dst != nil {
					copy(dst[:(hi-lo)*k.Elem()], src[:(hi-lo)*k.Elem()])
				}
				k.Overrun(lo, hi)
			}
		}

		if consume {
			k.Signal(left).Store(sigblock.RingOffset(lane, sigblock.RingOffCredit), seq(c))
			k.Signal(left).Ring()
		}
		if produce {
			k.Signal(right).Store(sigblock.RingSeqOffset(lane, int((int64(head)+p)&(slots-1))), seq(p))
			k.Signal(right).Ring()
		}
	}
	return nil
}

// wait waits until word off of this rank's SignalBlock reaches want,
// recording what it waits for (kind, slot) in the lane's Wait* words while
// it does, for the hang diagnosis.
func wait(k *hostmodel.Kernel, lane, off int, want uint32, kind, slot int) error {
	own := k.Own()
	if sigblock.Reached(own.Load(off), want) {
		return nil
	}
	start := time.Now() // the deadline counts from the first failed poll, as on the GPU
	own.Store(sigblock.RingOffset(lane, sigblock.RingOffWaitWant), want)
	own.Store(sigblock.RingOffset(lane, sigblock.RingOffWaitSlot), uint32(slot))
	own.Store(sigblock.RingOffset(lane, sigblock.RingOffWaitKind), uint32(kind))
	var seen uint32
	waited, err := k.PollUntil(start, func() bool {
		seen = own.Load(off)
		return sigblock.Reached(seen, want)
	})
	if errors.Is(err, hostmodel.ErrTimedOut) {
		// The Wait* words stay set: the flag-based diagnosis still
		// shows what the lane waited for.
		n := int(k.Args().NRanks)
		g := sigblock.GiveUp{Block: laneBlock(k, lane), Kind: sigblock.DiagKindRingCredit, Peer: (int(k.Args().Rank) + 1) % n,
			Want: want, Seen: seen, Waited: waited, Lane: lane}
		if kind == sigblock.RingWaitData {
			g.Kind, g.Where, g.Peer = sigblock.DiagKindRingData, slot, (int(k.Args().Rank)-1+n)%n
		}
		return k.GiveUp(g)
	}
	if err != nil {
		return err
	}
	own.Store(sigblock.RingOffset(lane, sigblock.RingOffWaitKind), sigblock.RingWaitNone)
	return nil
}

// laneBlock is the block that runs lane (block b runs lanes b, b+blocks, ...).
func laneBlock(k *hostmodel.Kernel, lane int) int { return lane % k.Blocks() }

func getPartial(slot []byte, i int64) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(slot[4*i:]))
}

func putPartial(slot []byte, i int64, v float32) {
	binary.LittleEndian.PutUint32(slot[4*i:], math.Float32bits(v))
}

// apply is one step of the reduction in float32, as Op<OP>::apply in
// kernels/device/elem.cuh.
func apply(op reference.Op, acc, x float32) float32 {
	switch op {
	case reference.Sum:
		return acc + x
	case reference.Max:
		return max(acc, x)
	case reference.Min:
		return min(acc, x)
	}
	panic(fmt.Sprintf("ring: unknown op %d", op))
}
