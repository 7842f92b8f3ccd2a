package twoshot

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/sigblock"
)

// Host is twoshot's host model (twoshot.cu), block b of one launch: start
// barrier; reduce chunk r (this block's span of it) from every peer into
// my staging; mid barrier; gather every peer's chunk from its staging into
// my output; end barrier, since peers may still be reading my staging.
// With the push gather (param0) the rest is push's.
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
	if a.Param0 == GatherPush {
		return push(k, b, epoch, lo, hi, chunkSpan)
	}
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

// push is the push gather after the start barrier: reduce this block's
// span [lo, hi) of chunk r (into our own staging, whose chunk r region no
// peer writes), write it into our output and into every peer's staging;
// mid barrier; then copy the other chunks from our staging into our
// output. No end barrier: no peer reads anything of ours after the mid
// barrier (twoshot.cu says why that is enough).
func push(k *hostmodel.Kernel, b int, epoch uint32, lo, hi int64, chunkSpan func(int) (int64, int64)) error {
	a := k.Args()
	n := int(a.NRanks)
	count := int64(a.Count)
	e := k.Elem()
	stage := k.Bytes(a.PeerStage[a.Rank], count*e)
	k.ReduceInto(stage, lo, hi)
	for p := 0; p < n; p++ {
		if p != int(a.Rank) {
			copy(k.Bytes(a.PeerStage[p], count*e)[lo*e:hi*e], stage[lo*e:hi*e])
		}
	}
	k.WriteOut(stage, lo, hi)
	if !k.Injected(kernels.InjectNoMidBarrier) {
		if err := k.Barrier(sigblock.PhaseMid, b, epoch); err != nil {
			return err
		}
	}
	for p := 0; p < n; p++ {
		if p != int(a.Rank) {
			plo, phi := chunkSpan(p)
			k.WriteOut(stage, plo, phi)
		}
	}
	k.EpochEnd(b, epoch)
	return nil
}
