package cuda

import (
	"fmt"
	"unsafe"

	"github.com/artest/artest/internal/backend"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/kernels"
)

// Produce launches --pdl's producer kernel (kernels/harness/pdl.cu) with a normal
// launch: it starts after everything before it on the stream (the poison
// copy, the previous allreduce) and lets the PDL launch after it start
// early.
func (b *Backend) Produce(dst, src backend.Ptr, n int64) error {
	f, err := b.fn(kernels.PdlFillKernel)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", kernels.PdlFillKernel, err)
	}
	args := kernels.PdlFillArgs{Dst: dst, Src: src, Bytes: uint64(n), DelayNs: uint64(kernels.PdlFillDelay.Nanoseconds())}
	return wrap(cu.LaunchArg(b.d, f, cu.D1(kernels.PdlFillBlocks), cu.D1(kernels.PdlFillThreads), 0, b.stream, &args))
}

// PDLSkipReason: programmatic dependent launch needs sm_90, a driver with
// cuLaunchKernelEx, the producer in the fatbin, and a kernel that calls
// griddepcontrol.wait (ours do; ncclAllReduce does not).
func (b *Backend) PDLSkipReason(v *kernels.Variant) string {
	switch {
	case v.External != nil:
		return kernels.PdlExternalSkip
	case !v.Custom():
		return kernels.PdlNCCLSkip
	case b.cc < 90:
		return fmt.Sprintf("PDL needs sm_90, GPU is sm_%d", b.cc)
	case !b.d.HasLaunchEx():
		return "PDL needs cuLaunchKernelEx (a CUDA 11.8 or newer driver)"
	}
	if _, err := b.fn(kernels.PdlFillKernel); err != nil {
		return fmt.Sprintf("the fatbin has no %s (%s): rebuild with make kernels", kernels.PdlFillKernel, b.fatbin)
	}
	return ""
}

// launch launches an allreduce kernel: with l.PDL through cuLaunchKernelEx
// with programmatic stream serialization, else plainly.
func (b *Backend) launch(f cu.Function, l *backend.Launch, threads, shared int) error {
	a := &l.Args
	grid, block := cu.D1(uint32(l.Blocks)), cu.D1(uint32(threads))
	if !l.PDL {
		return b.d.Launch(f, grid, block, uint32(shared), b.stream, unsafe.Pointer(a), unsafe.Sizeof(*a))
	}
	cfg := cu.LaunchConfig{
		Grid: grid, Block: block, SharedBytes: uint32(shared), Stream: b.stream,
		Attributes: []cu.LaunchAttribute{cu.ProgrammaticStreamSerialization(true)},
	}
	return b.d.LaunchEx(cfg, f, unsafe.Pointer(a), unsafe.Sizeof(*a))
}
