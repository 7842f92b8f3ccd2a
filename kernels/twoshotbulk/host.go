package twoshotbulk

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/sigblock"
)

// Host is twoshot-bulk's host model, block b of one launch: twoshot's pull
// protocol (kernels/twoshot/host.go). Start barrier; reduce chunk r (this
// block's span of it) from every peer into my staging; mid barrier; gather
// every peer's chunk from its staging into my output; end barrier, since
// peers may still be reading my staging. How the kernel moves the gathered
// bytes (bulk copies through shared memory, or slot by slot) is a detail
// of the GPU; which bytes each block reads and writes, and when, is this.
// hostmodel.Run writes the launch's VariantID into the trace word, so a
// dispatcher that runs twoshot for a twoshot-bulk case fails here too.
func Host(k *hostmodel.Kernel, b int) error {
	a := k.Args()
	epoch, err := k.EpochBegin(b)
	if err != nil {
		return err
	}
	n := int(a.NRanks)
	count := int64(a.Count)
	chunk := kernels.ChunkElems(count, n, k.Elem())
	chunkSpan := func(c int) (lo, hi int64) {
		clo := min(int64(c)*chunk, count)
		chi := min(clo+chunk, count)
		l, h := hostmodel.Span(chi-clo, b, k.Blocks())
		return clo + l, clo + h
	}
	if !k.Injected(kernels.InjectNoStartBarrier) {
		if err := k.Barrier(sigblock.PhaseStart, b, epoch); err != nil {
			return err
		}
	}
	k.Delay()
	lo, hi := chunkSpan(int(a.Rank))
	k.ReduceInto(k.Bytes(a.PeerStage[a.Rank], count*k.Elem()), lo, hi)
	if !k.Injected(kernels.InjectNoMidBarrier) {
		if err := k.Barrier(sigblock.PhaseMid, b, epoch); err != nil {
			return err
		}
	}
	for p := 0; p < n; p++ {
		lo, hi := chunkSpan(p)
		k.WriteOut(k.Bytes(a.PeerStage[p], count*k.Elem()), lo, hi)
	}
	if !k.Injected(kernels.InjectNoEndBarrier) {
		if err := k.Barrier(sigblock.PhaseEnd, b, epoch); err != nil {
			return err
		}
	}
	k.EpochEnd(b, epoch)
	return nil
}
