package pull

import (
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// Host is pull's host model (pull.cu), block b of one launch: start
// barrier (no peer's input is read before that peer's launch began);
// this block's span of every chunk it handles, read from the peers'
// inputs; end barrier (peers may still be reading our input, which our
// caller may overwrite once we return). A reduce-scatter reduces its span
// of chunk Rank over every rank's input into its output; an all-gather
// copies its span of peer p's input into chunk p of its output, for
// every p. Block b of every rank takes the same span, so its barriers
// cover exactly what the same block of each peer reads of ours.
func Host(k *hostmodel.Kernel, b int) error {
	a := k.Args()
	epoch, err := k.EpochBegin(b)
	if err != nil {
		return err
	}
	if err := k.PhaseBarrier(sigblock.PhaseStart, b, epoch); err != nil {
		return err
	}
	k.Delay()
	n := int64(a.NRanks)
	chunk := reference.Chunk(int64(a.Count), int(n))
	lo, hi := hostmodel.Span(chunk, b, k.Blocks())
	e := k.Elem()
	switch a.Coll() {
	case reference.ReduceScatter:
		mine := int64(a.Rank) * chunk
		k.ReduceSpan(k.Bytes(a.Out, chunk*e), mine, mine+lo, mine+k.OutEnd(hi))
		k.Overrun(lo, hi)
	case reference.AllGather:
		out := k.Bytes(a.Out, n*chunk*e)
		for p := int64(0); p < n; p++ {
			if a.PeerIn[p] == a.Out+uint64(p*chunk*e) {
				continue // in place: our own chunk is already our input
			}
			in := k.Bytes(a.PeerIn[p], chunk*e)
			end := k.OutEnd(p*chunk+hi) - p*chunk
			if end > lo {
				copy(out[(p*chunk+lo)*e:(p*chunk+end)*e], in[lo*e:end*e])
			}
		}
		k.Overrun((n-1)*chunk+lo, (n-1)*chunk+hi)
	}
	if err := k.PhaseBarrier(sigblock.PhaseEnd, b, epoch); err != nil {
		return err
	}
	k.EpochEnd(b, epoch)
	return nil
}
