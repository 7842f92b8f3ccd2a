package kernels

import "time"

// The producer kernel of --pdl, artest_pdl_fill (kernels/harness/pdl.cu):
// it writes a call's input into the registered buffer and lets the
// allreduce after it launch early (programmatic dependent launch, sm_90).
const PdlFillKernel = "artest_pdl_fill"

// PdlFillArgs is the producer's one parameter, by value: the C struct
// ArtestPdlFillArgs in kernels/harness/pdl.cu (pdl_test.go checks the layout).
type PdlFillArgs struct {
	Dst     uint64 // the registered input (at the case's offset)
	Src     uint64 // the call's input, private memory
	Bytes   uint64
	DelayNs uint64 // every block holds this long before it copies
}

// The producer's launch. Few blocks and a hold before the copy make it slow
// on purpose (a stand-in for the GEMM before an allreduce), so that a
// consumer that skips griddepcontrol.wait reads poison at every size, not
// only where the copy happens to be slower than the start barrier. Both
// are untuned: gpu.sh's bench-pdl step measured PDL's gain on 4 H200 with
// these values only (docs/perf.md). 20 us is
// several times a small allreduce's start barrier there (about 2 to 3 us
// for oneshot at 4 KiB), and 8 blocks of 256 threads copy 16 MiB in tens of
// microseconds. PdlFillThreads must equal ARTEST_PDL_FILL_THREADS, the
// kernel's __launch_bounds__.
const (
	PdlFillBlocks  = 8
	PdlFillThreads = 256
	PdlFillDelay   = 20 * time.Microsecond
)

// PdlNCCLSkip is why nccl cases are skipped under --pdl: ncclAllReduce has no
// griddepcontrol.wait for a producer launched before it.
const PdlNCCLSkip = "PDL needs the kernel to call griddepcontrol.wait (nccl does not)"

// PdlExternalSkip is why a plugin's cases are skipped under --pdl, on every
// backend: the ABI does not tell a plugin to wait for the producer.
const PdlExternalSkip = "PDL needs the kernel to call griddepcontrol.wait, which a plugin is not told to do"
