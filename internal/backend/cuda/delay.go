package cuda

import (
	"fmt"
	"time"

	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/kernels"
)

// DelayReason: skew's delay needs artest_delay in the fatbin.
func (b *Backend) DelayReason() string {
	if _, err := b.fn(kernels.DelayKernel); err != nil {
		return fmt.Sprintf("the fatbin has no %s (%s): rebuild with make kernels", kernels.DelayKernel, b.fatbin)
	}
	return ""
}

// Delay holds the stream for d (at most kernels.DelayMax) with one thread
// of artest_delay: what is enqueued after it starts d later, in stream
// order and inside a graph capture alike.
func (b *Backend) Delay(d time.Duration) error {
	f, err := b.fn(kernels.DelayKernel)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", kernels.DelayKernel, err)
	}
	args := kernels.DelayArgs{Ns: uint64(min(max(d, 0), kernels.DelayMax).Nanoseconds())}
	if err := cu.LaunchArg(b.d, f, cu.D1(1), cu.D1(1), 0, b.stream, &args); err != nil {
		return fmt.Errorf("launch %s for %v: %w", kernels.DelayKernel, d, wrap(err))
	}
	return nil
}
