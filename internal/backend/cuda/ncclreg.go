package cuda

import (
	"errors"
	"fmt"

	"github.com/artest/artest/internal/backend"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/nccl"
	"github.com/artest/artest/kernels"
)

// ncclRegs are the NCCL buffer registrations of nccl-reg (ncclCommRegister):
// one per allocation, keyed by its base, made at the first call that reads
// or writes it and undone when the allocation is freed (Free) or at Close.
// allocs are Alloc's live allocations, so a pointer into one (a case's
// output at its guard offset) finds the allocation it belongs to.
type ncclRegs struct {
	allocs  map[cu.DevicePtr]int64
	handles map[cu.DevicePtr]nccl.RegHandle
}

// ncclModeSkip is why the NCCL baseline v cannot run with the loaded NCCL,
// or "" when it can; the communicator exists (ncclReason is "").
func (b *Backend) ncclModeSkip(v *kernels.Variant) string {
	switch v.NCCL {
	case kernels.NCCLRegistered:
		if why := b.nccl.RegisterReason(); why != "" {
			return "nccl: " + why
		}
	case kernels.NCCLWindow:
		if why := b.nccl.WindowReason(); why != "" {
			return "nccl: " + why
		}
	}
	return ""
}

// allocation is the allocation p lies in: this rank's shared input or
// staging buffer, an NCCL baseline's region, or one of Alloc's.
func (b *Backend) allocation(p cu.DevicePtr) (base cu.DevicePtr, size int64, ok bool) {
	if w := b.world; w != nil {
		for _, bufs := range [][]backend.Ptr{w.Input, w.Staging} {
			if w.Rank < len(bufs) {
				s := cu.DevicePtr(bufs[w.Rank])
				if p >= s && p < s+cu.DevicePtr(w.Capacity) {
					return s, w.Capacity, true
				}
			}
		}
	}
	for i := range b.ncclMem {
		r := &b.ncclMem[i]
		for _, s := range []cu.DevicePtr{r.in, r.out} {
			if s != 0 && p >= s && p < s+cu.DevicePtr(r.size) {
				return s, r.size, true
			}
		}
	}
	for s, n := range b.regs.allocs {
		if p >= s && p < s+cu.DevicePtr(n) {
			return s, n, true
		}
	}
	return 0, 0, false
}

// registered makes sure the allocation p lies in is registered with the
// communicator, registering all of it on first use.
func (b *Backend) registered(p cu.DevicePtr) error {
	base, size, ok := b.allocation(p)
	if !ok {
		return fmt.Errorf("nccl-reg: %#x is in no buffer of this rank's", uint64(p))
	}
	if _, done := b.regs.handles[base]; done {
		return nil
	}
	h, err := b.nccl.CommRegister(b.ncclComm, base, uint64(size))
	if err != nil {
		return fmt.Errorf("nccl-reg: register %d bytes at %#x: %w", size, uint64(base), err)
	}
	if b.regs.handles == nil {
		b.regs.handles = map[cu.DevicePtr]nccl.RegHandle{}
	}
	b.regs.handles[base] = h
	return nil
}

// ncclBuffers registers what a call of v reads and writes, as v's mode
// asks.
func (b *Backend) ncclBuffers(v *kernels.Variant, send, recv cu.DevicePtr) error {
	switch v.NCCL {
	case kernels.NCCLPlain:
		return nil
	case kernels.NCCLRegistered:
		if why := b.nccl.RegisterReason(); why != "" {
			return errors.New("nccl: " + why)
		}
		if err := b.registered(send); err != nil {
			return err
		}
		return b.registered(recv)
	case kernels.NCCLWindow:
		if why := b.nccl.WindowReason(); why != "" {
			return errors.New("nccl: " + why)
		}
		return b.windowBuffers(send, recv)
	}
	return fmt.Errorf("nccl: unknown buffer mode %d", v.NCCL)
}

// trackAlloc and untrackAlloc keep ncclRegs' view of Alloc's memory; a
// registered allocation is deregistered before it is freed.
func (b *Backend) trackAlloc(p cu.DevicePtr, n int64) {
	if b.regs.allocs == nil {
		b.regs.allocs = map[cu.DevicePtr]int64{}
	}
	b.regs.allocs[p] = n
}

func (b *Backend) untrackAlloc(p cu.DevicePtr) error {
	delete(b.regs.allocs, p)
	h, ok := b.regs.handles[p]
	if !ok {
		return nil
	}
	delete(b.regs.handles, p)
	return b.nccl.CommDeregister(b.ncclComm, h)
}

// deregisterAll undoes every registration; Close calls it before it
// destroys the communicator.
func (b *Backend) deregisterAll() error {
	var errs []error
	for p, h := range b.regs.handles {
		errs = append(errs, b.nccl.CommDeregister(b.ncclComm, h))
		delete(b.regs.handles, p)
	}
	return errors.Join(errs...)
}
