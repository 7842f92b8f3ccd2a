package kernels

// bench --overlap's compute load on the cuda backend, artest_compute
// (kernels/harness/compute.cu): a grid of --overlap blocks of ComputeThreads
// threads, each block running ComputeArgs.Iters K steps of a 64 x 64 x 16
// tile product staged from a small input buffer (a fixed amount of work).
const ComputeKernel = "artest_compute"

// ComputeArgs is artest_compute's one parameter, by value: the C struct
// ArtestComputeArgs in kernels/harness/compute.cu (compute_test.go checks the
// layout).
type ComputeArgs struct {
	In      uint64 // InTiles pairs of tiles of ComputePairFloats floats, 16-byte aligned
	Out     uint64 // one float per thread of the grid
	InTiles uint32 // at least 1
	Iters   uint32 // K steps per block
}

// ComputeThreads is artest_compute's block size (ARTEST_COMPUTE_THREADS):
// 16 x 16 threads, each accumulating 4 x 4 of the block's 64 x 64 tile.
const ComputeThreads = 256

// ComputePairFloats is the floats of one A and B tile pair in the input
// (ARTEST_COMPUTE_PAIR): 2 x 64 x 16.
const ComputePairFloats = 2 * 64 * 16

// ComputeInTiles is the pairs of tiles in a rank's input: 64 pairs of
// 8 KiB, 512 KiB, far below the L2 of an A100 (40 MiB) or H100 (50 MiB),
// so the load's reads mostly hit L2, as a GEMM's reuse of its tiles does.
const ComputeInTiles = 64

// ComputeInBytes is the input buffer's size.
const ComputeInBytes = ComputeInTiles * ComputePairFloats * 4

// ComputeItersPerUnit is the K steps of one unit of load work. One step is
// 16 x 16 FMAs per thread, 65536 per block; a multiprocessor of an H100
// issues 128 FP32 FMAs per clock, so one block alone on one takes about
// 512 clocks per step at best, and 32 steps about 10 us at 1.7 GHz. The
// runner asks for as many units as cover a repetition of calls; the unit's
// size is a guess until measured on a GPU.
const ComputeItersPerUnit = 32

// ComputeMaxUnits bounds one load: 4096 units, about 40 ms per block at
// the estimate above when it has a multiprocessor to itself.
const ComputeMaxUnits = 4096
