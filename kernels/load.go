package kernels

import "time"

// The straggler schedule's side load on the cuda backend, artest_load
// (kernels/harness/load.cu): LoadBlocksPerSM blocks of LoadThreads threads per
// multiprocessor stream read-modify-writes over a scratch buffer until the
// first block's start plus LoadArgs.Ns.
const LoadKernel = "artest_load"

// LoadArgs is artest_load's one parameter, by value: the C struct
// ArtestLoadArgs in kernels/harness/load.cu (load_test.go checks the layout).
type LoadArgs struct {
	Buf   uint64 // scratch, 16-byte aligned: the deadline word (LoadHead bytes), then the streamed region
	Bytes uint64 // a multiple of 16
	Ns    uint64 // how long to load
	// The link load (--schedule link): every block reads these peers'
	// buffers (as this process maps them, PeerBytes each, a multiple of
	// 16) instead of the scratch; NPeers 0: none.
	Peers     [LoadMaxPeers]uint64
	PeerBytes uint64
	NPeers    uint32
	// Kind, when NPeers is 0: LoadKindMemory or LoadKindSM.
	Kind uint32
}

// The load's kinds (ARTEST_LOAD_MEMORY, ARTEST_LOAD_SM in load.cu).
const (
	// LoadKindMemory streams read-modify-writes over the scratch: the
	// loaded rank's blocks share the SMs and the memory bandwidth with it
	// (as do any ranks on the same GPU).
	LoadKindMemory uint32 = 0
	// LoadKindSM keeps every thread on one shared-memory word's atomics:
	// it slows the blocks on the same multiprocessors and touches no memory
	// another rank reads.
	LoadKindSM uint32 = 1
)

// LoadMaxPeers is the most peers a link load reads (ARTEST_LOAD_MAX_PEERS).
const LoadMaxPeers = 8

// LoadMax is the longest load artest_load runs (ARTEST_LOAD_MAX_NS),
// whatever it is asked.
const LoadMax = 10 * time.Millisecond

// LoadThreads is artest_load's block size (ARTEST_LOAD_THREADS): two warps,
// so that a block fits in the room one allreduce block leaves on a
// multiprocessor; LoadBlocksPerSM of them per multiprocessor make 512
// threads of load on each.
const (
	LoadThreads     = 64
	LoadBlocksPerSM = 8
	// LoadSMBlocksPerSM is the SM kind's: 1024 threads of atomics on each
	// multiprocessor, leaving 1024 for the allreduce's block (16 measured
	// on one H200 under MPS,
	// docs/results/2026-11-26-h200-sm-load-shared-catch.md).
	LoadSMBlocksPerSM = 16
)

// LoadHead is the scratch's head, the deadline word padded to 16 bytes
// (ARTEST_LOAD_HEAD); the host zeroes it before each launch.
const LoadHead = 16

// LoadScratchBytes is the scratch a rank's load streams over: larger than
// the L2 of an H100 (50 MiB) or H200 (60 MiB), so the load reaches memory.
const LoadScratchBytes = 64 << 20
