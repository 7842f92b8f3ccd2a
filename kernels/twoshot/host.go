package twoshot

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/sigblock"
)

// Host is twoshot's host model (twoshot.cu), block b of one launch: the
// reduce-scatter, all-gather protocol (hostmodel.ReduceScatterGather),
// with the pull gather, or with the push gather when param0 asks for it.
func Host(k *hostmodel.Kernel, b int) error {
	if k.Args().Param0 == GatherPush {
		return hostmodel.ReduceScatterGather(k, b, push)
	}
	return hostmodel.ReduceScatterGather(k, b, nil)
}

// push is the push gather after the start barrier: reduce this block's
// span [lo, hi) of chunk r (into our own staging, whose chunk r region no
// peer writes), write it into our output and into every peer's staging;
// mid barrier; then copy the other chunks from our staging into our
// output. No end barrier: no peer reads anything of ours after the mid
// barrier (twoshot.cu says why that is enough).
func push(k *hostmodel.Kernel, b int, epoch uint32, lo, hi int64) error {
	a := k.Args()
	n := int(a.NRanks)
	count := int64(a.Count)
	e := k.Elem()
	chunk := kernels.ChunkElems(count, n, e)
	stage := k.Bytes(a.PeerStage[a.Rank], count*e)
	k.ReduceInto(stage, lo, hi)
	for p := 0; p < n; p++ {
		if p != int(a.Rank) {
			copy(k.Bytes(a.PeerStage[p], count*e)[lo*e:hi*e], stage[lo*e:hi*e])
		}
	}
	k.WriteOut(stage, lo, hi)
	if err := k.PhaseBarrier(sigblock.PhaseMid, b, epoch); err != nil {
		return err
	}
	for p := 0; p < n; p++ {
		if p != int(a.Rank) {
			plo, phi := k.ChunkSpan(count, chunk, p, b)
			k.WriteOut(stage, plo, phi)
		}
	}
	k.EpochEnd(b, epoch)
	return nil
}
