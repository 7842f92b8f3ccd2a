package kernels

import "github.com/artest/artest/sigblock"

// MaxThreads is the largest block the kernels are compiled for
// (ARTEST_MAX_THREADS in device/grid.cuh: at 1024 threads the 16-bit kernels
// spilled under the 64-register cap).
const MaxThreads = 512

// VecBytes is the width of the kernels' vector loads and stores.
const VecBytes = 16

// ChunkElems is a two-shot chunk: ceil(count/n) elements rounded up to
// whole 16-byte vectors, so every chunk starts 16-byte aligned when the
// buffer does. The CUDA kernels and the host models use this same rule.
func ChunkElems(count int64, n int, elem int64) int64 {
	vec := VecBytes / elem
	c := (count + int64(n) - 1) / int64(n)
	return (c + vec - 1) / vec * vec
}

// VecGrid is one 16-byte vector per thread over part elements: at least 1
// block, at most maxBlocks and sigblock.MaxBlocks.
func VecGrid(part, elem int64, maxBlocks, threads int) int {
	vecs := (part*elem + VecBytes - 1) / VecBytes
	g := int((vecs + int64(threads) - 1) / int64(threads))
	return max(1, min(g, maxBlocks, sigblock.MaxBlocks))
}

// Grid is the number of blocks a CUDA launch of v uses: v.GridFunc's, else
// one 16-byte vector per thread over the whole message (VecGrid), at least
// 1 and at most maxBlocks. It depends on the count, world size and
// resolved parameters only, so every rank launches the same grid, which
// the per-block barriers require.
func Grid(v *Variant, a *Args, elem int64, maxBlocks, threads int) int {
	if v.GridFunc != nil {
		return max(1, min(v.GridFunc(a, elem, maxBlocks, threads), sigblock.MaxBlocks))
	}
	return VecGrid(int64(a.Count), elem, maxBlocks, threads)
}
