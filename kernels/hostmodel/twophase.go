package hostmodel

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/sigblock"
)

// ChunkSpan is block b's part [lo, hi) of chunk c of a message of count
// elements cut into chunks of chunk elements (kernels.ChunkElems): the
// chunk that rank c reduces in a reduce-scatter.
func (k *Kernel) ChunkSpan(count, chunk int64, c, b int) (lo, hi int64) {
	clo := min(int64(c)*chunk, count)
	chi := min(clo+chunk, count)
	l, h := Span(chi-clo, b, k.Blocks())
	return clo + l, clo + h
}

// AfterStart is what a two-phase kernel does once the start barrier is
// passed, in place of ReduceScatterGather's pull: given the launch's
// epoch and this block's span [lo, hi) of our own chunk.
type AfterStart func(k *Kernel, b int, epoch uint32, lo, hi int64) error

// ReduceScatterGather is block b of a reduce-scatter, all-gather launch
// (twoshot's protocol, which twoshot's pull gather and twoshot-bulk share):
// start barrier; reduce this block's span of our chunk from every peer's
// input into our staging; mid barrier; copy every peer's chunk (this
// block's span of it) from its staging into our output; end barrier, since
// peers may still be reading our staging. Each barrier is left out under
// its fault switch. A non-nil other replaces everything after the start
// barrier (twoshot's push gather).
func ReduceScatterGather(k *Kernel, b int, other AfterStart) error {
	a := k.Args()
	epoch, err := k.EpochBegin(b)
	if err != nil {
		return err
	}
	n := int(a.NRanks)
	count := int64(a.Count)
	chunk := kernels.ChunkElems(count, n, k.Elem())
	if err := k.PhaseBarrier(sigblock.PhaseStart, b, epoch); err != nil {
		return err
	}
	k.Delay()
	lo, hi := k.ChunkSpan(count, chunk, int(a.Rank), b)
	if other != nil {
		return other(k, b, epoch, lo, hi)
	}
	k.ReduceInto(k.Bytes(a.PeerStage[a.Rank], count*k.Elem()), lo, hi)
	if err := k.PhaseBarrier(sigblock.PhaseMid, b, epoch); err != nil {
		return err
	}
	for p := 0; p < n; p++ {
		plo, phi := k.ChunkSpan(count, chunk, p, b)
		k.WriteOut(k.Bytes(a.PeerStage[p], count*k.Elem()), plo, phi)
	}
	if err := k.PhaseBarrier(sigblock.PhaseEnd, b, epoch); err != nil {
		return err
	}
	k.EpochEnd(b, epoch)
	return nil
}
