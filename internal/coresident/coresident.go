// Package coresident sizes the grid of a kernel whose blocks wait for each
// other across ranks that share one GPU. Every block of a barrier kernel
// must be running before any can finish (block b of each rank waits for
// block b of every other rank), so the blocks of all ranks on the GPU must
// be resident at once: a grid one block larger than that hangs until the
// device deadline (seen on one H100 under MPS: twoshot at 4 MiB on 4 ranks,
// oneshot at 1 MiB on 8 ranks, with the grids tuned for one GPU per rank).
package coresident

import "fmt"

// Limits are what bounds the blocks resident on one GPU.
type Limits struct {
	// PerSM is the driver's occupancy for the kernel at its block size
	// and dynamic shared memory: blocks one multiprocessor holds at once.
	PerSM int
	// SMs is the GPU's multiprocessor count.
	SMs int
	// ContextSMs is how many multiprocessors this rank's context may use
	// (an MPS active-thread percentage lowers it); 0 or SMs: all.
	ContextSMs int
	// Ranks is the most ranks that share one GPU.
	Ranks int
	// Late is set when one rank is made to start late (stress's skew and
	// straggler schedules): its peers' blocks then spin at the start
	// barrier before any of its blocks runs, and the late rank's grid
	// must still find room. Occupancy arithmetic says it does at the
	// cap above, but blocks of different MPS clients do not fill one
	// multiprocessor as the occupancy of one kernel says: on one H100 under
	// MPS at 4 ranks a late grid of 66 blocks or more waited out the device
	// deadline where 33 never did
	// (docs/results/2026-11-25-h100-x1-late-ranks-bulk-overlap-chain.md).
	// So a late rank's grid gets at most one block per multiprocessor of
	// its even share.
	Late bool
}

// Blocks is the largest grid each rank may launch so that the grids of all
// Ranks ranks are resident together: the GPU's capacity split evenly, and
// no more than this rank's own multiprocessors hold. 0 means not even one
// block per rank fits.
func (l Limits) Blocks() int {
	if l.PerSM <= 0 || l.SMs <= 0 || l.Ranks <= 0 {
		return 0
	}
	n := l.PerSM * l.SMs / l.Ranks
	if l.ContextSMs > 0 && l.ContextSMs < l.SMs {
		n = min(n, l.PerSM*l.ContextSMs)
	}
	if l.Late {
		n = min(n, l.spread())
	}
	return n
}

// spread is one block per multiprocessor of this rank's even share.
func (l Limits) spread() int {
	n := l.SMs / l.Ranks
	if l.ContextSMs > 0 && l.ContextSMs < l.SMs {
		n = min(n, l.ContextSMs)
	}
	return n
}

// String says how Blocks was reached, for the report.
func (l Limits) String() string {
	s := fmt.Sprintf("occupancy %d blocks/SM x %d SMs / %d ranks per GPU", l.PerSM, l.SMs, l.Ranks)
	if l.ContextSMs > 0 && l.ContextSMs < l.SMs {
		s += fmt.Sprintf(", at most %d blocks/SM x %d SMs of this rank's context", l.PerSM, l.ContextSMs)
	}
	if l.Late {
		s += fmt.Sprintf(", at most 1 block/SM of this rank's share under a late rank (%d)", l.spread())
	}
	return fmt.Sprintf("%s = %d", s, l.Blocks())
}
