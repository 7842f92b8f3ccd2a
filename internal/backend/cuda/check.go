package cuda

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"
	"unsafe"

	"github.com/artest/artest/internal/backend"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// checkSlotBytes is one kernels.CheckSlot as the device writes it.
const checkSlotBytes = int64(unsafe.Sizeof(kernels.CheckSlot{}))

// DeviceCheckReason: the device checker needs artest_check in the fatbin.
func (b *Backend) DeviceCheckReason() string {
	if _, err := b.fn(kernels.CheckKernel); err != nil {
		return fmt.Sprintf("the fatbin has no %s (%s): rebuild with make kernels", kernels.CheckKernel, b.fatbin)
	}
	return ""
}

// CheckOnDevice zeroes the verdicts, launches artest_check over the batch
// on the backend's stream (after everything enqueued before it, the
// allreduces that wrote the outputs included), waits for it and downloads
// the verdicts: one CheckSlot per slot, a few hundred bytes per batch
// instead of the outputs.
func (b *Backend) CheckOnDevice(req backend.DeviceCheck, timeout time.Duration) ([]kernels.CheckSlot, error) {
	if req.Slots <= 0 {
		return nil, nil
	}
	if req.Spec.Gen.Kind == reference.Special {
		// kernels/harness/check.cuh generates random and exact inputs only; the
		// runner checks special inputs on the host.
		return nil, fmt.Errorf("the device checker has no model of %s inputs", req.Spec.Gen.Kind)
	}
	f, err := b.fn(kernels.CheckKernel)
	if err != nil {
		return nil, fmt.Errorf("kernel %s: %w", kernels.CheckKernel, err)
	}
	need := int64(req.Slots) * checkSlotBytes
	if b.checkBytes < need {
		if b.checkBuf != 0 {
			if err := b.d.MemFree(b.checkBuf); err != nil {
				return nil, fmt.Errorf("free the device checker's verdicts: %w", wrap(err))
			}
			b.checkBuf, b.checkBytes = 0, 0
		}
		p, err := b.d.MemAlloc(uint64(need))
		if err != nil {
			return nil, fmt.Errorf("alloc the device checker's verdicts (%d bytes): %w", need, wrap(err))
		}
		b.checkBuf, b.checkBytes = p, need
	}
	if err := b.d.MemsetD8Async(b.checkBuf, 0, uint64(need), b.stream); err != nil {
		return nil, fmt.Errorf("zero the device checker's verdicts: %w", wrap(err))
	}
	args := kernels.NewCheckArgs(req.Spec)
	args.Region = req.Region
	args.SlotBytes = uint64(req.SlotBytes)
	args.Lead = uint64(req.Lead)
	args.GuardAfter = uint64(req.GuardAfter)
	args.Count = req.Count
	args.Result = uint64(b.checkBuf)
	args.Iter0 = uint32(req.Spec.Iter)
	args.Slots = uint32(req.Slots)
	args.Guard = uint32(req.Guard)
	x, y := kernels.CheckGrid(req.Count, req.Slots)
	if err := cu.LaunchArg(b.d, f, cu.Dim3{X: x, Y: y, Z: 1}, cu.D1(kernels.CheckThreads), 0, b.stream, &args); err != nil {
		return nil, fmt.Errorf("launch %s over %d slots: %w", kernels.CheckKernel, req.Slots, wrap(err))
	}
	if err := b.Sync(timeout); err != nil {
		return nil, fmt.Errorf("%s over %d slots: %w", kernels.CheckKernel, req.Slots, err)
	}
	raw := make([]byte, need)
	if err := b.Download(raw, backend.Ptr(b.checkBuf)); err != nil {
		return nil, fmt.Errorf("download the device checker's verdicts: %w", err)
	}
	return decodeCheckSlots(raw, req.Slots)
}

// decodeCheckSlots reads n CheckSlots as the device laid them out (little
// endian, the layout check_test.go in kernels/ pins).
func decodeCheckSlots(raw []byte, n int) ([]kernels.CheckSlot, error) {
	out := make([]kernels.CheckSlot, n)
	if err := binary.Read(bytes.NewReader(raw), binary.LittleEndian, out); err != nil {
		return nil, fmt.Errorf("decode %d device check verdicts from %d bytes: %w", n, len(raw), err)
	}
	return out, nil
}

var _ backend.DeviceChecker = (*Backend)(nil)
