package kernels

import "time"

// The straggler schedule's side load on the cuda backend, artest_load
// (kernels/load.cu): LoadThreads threads per block stream read-modify-
// writes over a scratch buffer for LoadArgs.Ns.
const LoadKernel = "artest_load"

// LoadArgs is artest_load's one parameter, by value: the C struct
// ArtestLoadArgs in kernels/load.cu (load_test.go checks the layout).
type LoadArgs struct {
	Buf   uint64 // scratch, 16-byte aligned
	Bytes uint64 // a multiple of 16
	Ns    uint64 // how long to load
}

// LoadMax is the longest load artest_load runs (ARTEST_LOAD_MAX_NS),
// whatever it is asked.
const LoadMax = 10 * time.Millisecond

// LoadThreads is artest_load's block size (ARTEST_LOAD_THREADS).
const LoadThreads = 512

// LoadScratchBytes is the scratch a rank's load streams over: larger than
// the L2 of an H100 (50 MiB) or H200 (60 MiB), so the load reaches memory.
const LoadScratchBytes = 64 << 20
