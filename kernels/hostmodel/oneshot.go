package hostmodel

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/sigblock"
)

// OneShot is the one-shot protocol's host model, block b of one launch,
// which oneshot and oneshot-cpasync share (their kernels differ in how
// peer data reaches the SMs, not in what each rank reads and writes, and
// when): start barrier; reduce this block's span from every peer; then out
// of place: write the output, end barrier (peers may still read my input
// until they pass it); in place: the output is my input, which peers are
// still reading, so reduce into my staging, mid barrier, then copy.
func OneShot(k *Kernel, b int) error {
	a := k.Args()
	epoch, err := k.EpochBegin(b)
	if err != nil {
		return err
	}
	if err := k.PhaseBarrier(sigblock.PhaseStart, b, epoch); err != nil {
		return err
	}
	k.Delay()
	count := int64(a.Count)
	lo, hi := Span(count, b, k.Blocks())
	if a.Flags&kernels.FlagInPlace != 0 {
		stage := k.Bytes(a.PeerStage[a.Rank], count*k.Elem())
		k.ReduceInto(stage, lo, hi)
		if err := k.PhaseBarrier(sigblock.PhaseMid, b, epoch); err != nil {
			return err
		}
		k.WriteOut(stage, lo, hi)
	} else {
		k.ReduceInto(k.Bytes(a.Out, count*k.Elem()), lo, k.OutEnd(hi))
		k.Overrun(lo, hi)
		if err := k.PhaseBarrier(sigblock.PhaseEnd, b, epoch); err != nil {
			return err
		}
	}
	k.EpochEnd(b, epoch)
	return nil
}
