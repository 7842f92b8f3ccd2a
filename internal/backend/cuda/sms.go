package cuda

import (
	"fmt"

	cu "github.com/artest/artest/internal/cudadrv"
)

// partitionSMs gives this rank, the index-th of the ranks that share its
// GPU, multiprocessors of its own: a green context on one group of an
// even split of the GPU's SMs, on which every stream of this rank is made.
// Ranks that share every SM slow each other alike: a load beside one
// rank's call slows its peers' blocks as much as its own, and a rank that
// returns without waiting for a slow peer (a missing end barrier) is
// hardly ever early enough to be seen. On its own SMs, the straggler's SM
// load (straggle.go's loadKind) slows this rank's blocks alone, as on a
// GPU of its own. (Partitions with the memory load caught less than
// shared SMs: the load's memory traffic slows every rank's reads.) Where the
// driver cannot split (no green contexts before CUDA 12.4, too few SMs),
// the ranks share every SM, and smNote says why; ARTEST_SM_PARTITION=off
// asks for that too.
func (b *Backend) partitionSMs(index int) {
	if b.knobs.SMPartitionOff {
		b.smNote = "the ranks share every SM (ARTEST_SM_PARTITION=off)"
		return
	}
	g, sms, err := b.d.SMPartition(b.dev, b.RanksPerGPU(), index)
	if err != nil {
		b.smNote = fmt.Sprintf("the ranks share every SM (no SM partition: %v)", err)
		return
	}
	b.green, b.greenSMs = g, sms
	b.smNote = fmt.Sprintf("each rank on its own %d of the %d SMs (green contexts)", sms, b.sms)
}

// newStream makes a non-blocking stream of this rank: on its green
// context when it has one.
func (b *Backend) newStream() (cu.Stream, error) {
	if b.green != 0 {
		s, err := b.d.GreenCtxStreamCreate(b.green, cu.StreamNonBlocking)
		if err != nil {
			return 0, fmt.Errorf("cuGreenCtxStreamCreate: %w", err)
		}
		return s, nil
	}
	s, err := b.d.StreamCreate(cu.StreamNonBlocking)
	if err != nil {
		return 0, fmt.Errorf("cuStreamCreate: %w", err)
	}
	return s, nil
}

// ownSMs is how many multiprocessors this rank's work runs on: its
// partition's, else the GPU's.
func (b *Backend) ownSMs() int {
	if b.green != 0 {
		return b.greenSMs
	}
	return b.sms
}
