package cuda

import (
	"encoding/binary"
	"fmt"
	"os"
	"time"

	"github.com/artest/artest/internal/backend"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/kernels"
)

var _ backend.Stamper = (*Backend)(nil)

// StampReason: the stress witness needs artest_stamp in the fatbin.
func (b *Backend) StampReason() string {
	if _, err := b.fn(kernels.StampKernel); err != nil {
		return fmt.Sprintf("the fatbin has no %s (%s): rebuild with make kernels", kernels.StampKernel, b.fatbin)
	}
	return ""
}

// Stamp writes the GPU's global timer into the slot at p when the stream
// reaches it: one thread of artest_stamp, in stream order and inside a
// graph capture alike.
func (b *Backend) Stamp(p backend.Ptr) error {
	f, err := b.fn(kernels.StampKernel)
	if err != nil {
		return fmt.Errorf("kernel %s: %w", kernels.StampKernel, err)
	}
	args := kernels.StampArgs{Slot: uint64(p)}
	if err := cu.LaunchArg(b.d, f, cu.D1(1), cu.D1(1), 0, b.stream, &args); err != nil {
		return fmt.Errorf("launch %s: %w", kernels.StampKernel, wrap(err))
	}
	return nil
}

// clockSamples is how many stamps ClockOffset takes; the one with the
// shortest host round trip bounds the offset best.
const clockSamples = 16

// ClockSync stamps a scratch slot clockSamples times between two reads of
// the host's wall clock and keeps the tightest pair: the global timer read
// falls between them, so the offset is known to within half their distance
// (about 4.5 us on H200, 2026-11-26). GPUs of one host need not share a
// global timer; the host's wall clock is shared by every rank on it, and
// ranks on one GPU share its timer exactly (the Domain).
func (b *Backend) ClockSync() (backend.ClockSync, error) {
	host, _ := os.Hostname()
	offset, unc, err := b.clockOffset()
	return backend.ClockSync{Offset: offset, Uncertainty: unc, Domain: fmt.Sprintf("%s/gpu%d", host, b.ordinal), Host: host}, err
}

func (b *Backend) clockOffset() (time.Duration, time.Duration, error) {
	slot, err := b.Alloc(8)
	if err != nil {
		return 0, 0, fmt.Errorf("clock offset: %w", err)
	}
	defer b.Free(slot)
	best := time.Duration(-1)
	var offset time.Duration
	buf := make([]byte, 8)
	for range clockSamples {
		t0 := time.Now().UnixNano()
		if err := b.Stamp(slot); err != nil {
			return 0, 0, fmt.Errorf("clock offset: %w", err)
		}
		if err := wrap(b.d.StreamSynchronize(b.stream)); err != nil {
			return 0, 0, fmt.Errorf("clock offset: %w", err)
		}
		t1 := time.Now().UnixNano()
		if err := b.Download(buf, slot); err != nil {
			return 0, 0, fmt.Errorf("clock offset: %w", err)
		}
		gpu := int64(binary.LittleEndian.Uint64(buf))
		if span := time.Duration(t1 - t0); best < 0 || span < best {
			best = span
			offset = time.Duration(gpu - (t0+t1)/2)
		}
	}
	return offset, best / 2, nil
}
