package cuda

import (
	"errors"
	"fmt"

	"github.com/artest/artest/internal/backend"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/kernels"
)

var _ backend.Overlapper = (*Backend)(nil)

// overlapState is bench --overlap's side stream, its fork and join events,
// the compute load's input and output and its grid, made by
// PrepareOverlap.
type overlapState struct {
	side    sideStream
	in, out cu.DevicePtr
	blocks  int
}

// OverlapReason: the load needs artest_compute in the fatbin.
func (b *Backend) OverlapReason() string {
	if _, err := b.fn(kernels.ComputeKernel); err != nil {
		return fmt.Sprintf("the fatbin has no %s (%s): rebuild with make kernels", kernels.ComputeKernel, b.fatbin)
	}
	return ""
}

// PrepareOverlap makes the side stream, the fork and join events, the
// load's input (kernels.ComputeInBytes, every byte 0x3c: each float is
// about 0.0115, a normal number whose products stay finite) and its
// output (one float per thread of a grid of blocks). Once; later calls
// do nothing.
func (b *Backend) PrepareOverlap(blocks int) error {
	o := &b.ovl
	if o.in != 0 {
		return nil
	}
	if blocks < 1 {
		return fmt.Errorf("overlap: %d blocks: want at least 1", blocks)
	}
	if err := o.side.open(b, "overlap"); err != nil {
		return err
	}
	var err error
	if o.out == 0 {
		outBytes := uint64(blocks) * kernels.ComputeThreads * 4
		if o.out, err = b.d.MemAlloc(outBytes); err != nil {
			return fmt.Errorf("overlap output of %d bytes: cuMemAlloc: %w", outBytes, wrap(err))
		}
	}
	in, err := b.d.MemAlloc(kernels.ComputeInBytes)
	if err != nil {
		return fmt.Errorf("overlap input of %d bytes: cuMemAlloc: %w", kernels.ComputeInBytes, wrap(err))
	}
	if err := b.d.MemsetD8Async(in, 0x3c, kernels.ComputeInBytes, b.stream); err != nil {
		_ = b.d.MemFree(in)
		return fmt.Errorf("fill the overlap input: cuMemsetD8Async: %w", wrap(err))
	}
	o.in, o.blocks = in, blocks
	return nil
}

// StartOverlap forks the side stream from the main one (an event),
// records a timing event there, launches artest_compute with the prepared
// grid and units * kernels.ComputeItersPerUnit K steps per block, and
// records a second timing event. Nothing on the main stream waits for it
// until JoinOverlap.
func (b *Backend) StartOverlap(units int) (backend.Event, backend.Event, error) {
	o := &b.ovl
	if o.in == 0 {
		return nil, nil, errors.New("overlap: PrepareOverlap was not called")
	}
	f, err := b.fn(kernels.ComputeKernel)
	if err != nil {
		return nil, nil, fmt.Errorf("overlap: kernel %s: %w", kernels.ComputeKernel, err)
	}
	units = min(max(units, 1), kernels.ComputeMaxUnits)
	if err := o.side.forkFrom(b); err != nil {
		return nil, nil, err
	}
	start, err := b.recordOn(o.side.stream)
	if err != nil {
		return nil, nil, fmt.Errorf("overlap: start event: %w", err)
	}
	args := kernels.ComputeArgs{In: uint64(o.in), Out: uint64(o.out), InTiles: kernels.ComputeInTiles,
		Iters: uint32(units * kernels.ComputeItersPerUnit)}
	if err := cu.LaunchArg(b.d, f, cu.D1(uint32(o.blocks)), cu.D1(kernels.ComputeThreads), 0, o.side.stream, &args); err != nil {
		_ = start.Destroy()
		return nil, nil, fmt.Errorf("overlap: launch %s of %d blocks: %w", kernels.ComputeKernel, o.blocks, wrap(err))
	}
	end, err := b.recordOn(o.side.stream)
	if err != nil {
		_ = start.Destroy()
		return nil, nil, fmt.Errorf("overlap: end event: %w", err)
	}
	return start, end, nil
}

// recordOn records a new timing event on stream s.
func (b *Backend) recordOn(s cu.Stream) (*event, error) {
	ev, err := b.d.EventCreate(cu.EventDefault)
	if err != nil {
		return nil, fmt.Errorf("cuEventCreate: %w", wrap(err))
	}
	if err := b.d.EventRecord(ev, s); err != nil {
		_ = b.d.EventDestroy(ev)
		return nil, fmt.Errorf("cuEventRecord: %w", wrap(err))
	}
	return &event{b: b, e: ev}, nil
}

// JoinOverlap makes the main stream wait for the side stream's loads (one
// event recorded after the last; a no-op when none was started since the
// last join).
func (b *Backend) JoinOverlap() error { return b.ovl.side.joinInto(b) }

// closeOverlap frees what PrepareOverlap made.
func (b *Backend) closeOverlap() []error {
	var errs []error
	o := &b.ovl
	for _, p := range []cu.DevicePtr{o.in, o.out} {
		if p != 0 {
			errs = append(errs, b.d.MemFree(p))
		}
	}
	errs = append(errs, o.side.close(b)...)
	*o = overlapState{}
	return errs
}
