package cuda

import (
	"fmt"

	"github.com/artest/artest/internal/backend"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/kernels"
)

var _ backend.SMCopier = (*Backend)(nil)

// SMCopyReason: copies on the multiprocessors need artest_copy in the
// fatbin.
func (b *Backend) SMCopyReason() string {
	if _, err := b.fn(kernels.CopyKernel); err != nil {
		return fmt.Sprintf("the fatbin has no %s (%s): rebuild with make kernels", kernels.CopyKernel, b.fatbin)
	}
	return ""
}

// CopySM copies n bytes with artest_copy on the main stream, in stream
// order and inside a graph capture alike.
func (b *Backend) CopySM(dst, src backend.Ptr, n int64) error {
	if n <= 0 {
		return nil
	}
	f, err := b.fn(kernels.CopyKernel)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", kernels.CopyKernel, err)
	}
	args := kernels.CopyArgs{Dst: uint64(dst), Src: uint64(src), Bytes: uint64(n)}
	grid := cu.D1(uint32(kernels.CopyBlocks(n, b.sms)))
	if err := cu.LaunchArg(b.d, f, grid, cu.D1(kernels.CopyThreads), 0, b.stream, &args); err != nil {
		return fmt.Errorf("launch %s of %d bytes: %w", kernels.CopyKernel, n, wrap(err))
	}
	return nil
}
