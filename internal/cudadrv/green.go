package cudadrv

/*
#include "green.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// GreenCtx is a green context (CUgreenCtx): work on its streams runs on
// the multiprocessors it was made with and no others, while memory,
// modules and everything else stay the primary context's.
type GreenCtx uintptr

type greenSymbols struct {
	getResource, split, genDesc, create, streamCreate, destroy symbol
}

func (t *greenSymbols) specs() []symbolSpec {
	return []symbolSpec{
		{dst: &t.getResource, names: []string{"cuDeviceGetDevResource"}},
		{dst: &t.split, names: []string{"cuDevSmResourceSplitByCount"}},
		{dst: &t.genDesc, names: []string{"cuDevResourceGenerateDesc"}},
		{dst: &t.create, names: []string{"cuGreenCtxCreate"}},
		{dst: &t.streamCreate, names: []string{"cuGreenCtxStreamCreate"}},
		{dst: &t.destroy, names: []string{"cuGreenCtxDestroy"}},
	}
}

// greenTable resolves the green-context entry points on first use.
func (d *Driver) greenTable() (*greenSymbols, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lazy.green == nil && d.lazy.greenErr == nil {
		t := &greenSymbols{}
		if err := resolveGroup(d.lib, t.specs()); err != nil {
			d.lazy.greenErr = fmt.Errorf("green contexts (CUDA 12.4+): %w", err)
		} else {
			d.lazy.green = t
		}
	}
	return d.lazy.green, d.lazy.greenErr
}

// SMPartition splits dev's multiprocessors into groups disjoint groups of
// equal size, as large as the driver's split allows, and makes a green
// context on group index. The split depends only on the device, so
// processes that each take a different index of the same split run on
// disjoint multiprocessors. It returns the context and its SM count.
func (d *Driver) SMPartition(dev Device, groups, index int) (GreenCtx, int, error) {
	if groups < 1 || index < 0 || index >= groups {
		return 0, 0, fmt.Errorf("SM partition %d of %d: no such group", index, groups)
	}
	t, err := d.greenTable()
	if err != nil {
		return 0, 0, err
	}
	var in C.art_devResource
	if err := d.check(&t.getResource, C.art_cuDeviceGetDevResourceSM(t.getResource.ptr, C.int(dev), &in)); err != nil {
		return 0, 0, err
	}
	sm := (*C.art_devSmResource)(unsafe.Pointer(&in.u))
	total, least, align := int(sm.smCount), int(sm.minSmPartitionSize), int(sm.smCoscheduledAlignment)
	align = max(align, 1)
	// The largest multiple of the alignment, no smaller than the driver's
	// minimum partition, that still yields groups groups.
	minCount := total / groups / align * align
	for ; minCount >= max(least, 1); minCount -= align {
		var n C.uint
		if err := d.check(&t.split, C.art_countSM(t.split.ptr, &n, &in, C.uint(minCount))); err != nil {
			return 0, 0, err
		}
		if int(n) >= groups {
			break
		}
	}
	if minCount < max(least, 1) {
		return 0, 0, fmt.Errorf("%d SMs do not split into %d groups (partitions of at least %d SMs, in steps of %d)", total, groups, least, align)
	}
	out := (*C.art_devResource)(C.calloc(C.size_t(groups), C.size_t(C.sizeof_art_devResource)))
	if out == nil {
		return 0, 0, fmt.Errorf("SM partition: out of host memory")
	}
	defer C.free(unsafe.Pointer(out))
	n := C.uint(groups)
	if err := d.check(&t.split, C.art_splitSM(t.split.ptr, out, &n, &in, C.uint(minCount))); err != nil {
		return 0, 0, err
	}
	if int(n) < groups {
		return 0, 0, fmt.Errorf("%d SMs split into %d groups of %d, want %d", total, int(n), minCount, groups)
	}
	res := (*C.art_devResource)(unsafe.Add(unsafe.Pointer(out), index*int(C.sizeof_art_devResource)))
	sms := int((*C.art_devSmResource)(unsafe.Pointer(&res.u)).smCount)
	var g C.uintptr_t
	if err := d.check(&t.create, C.art_greenCtxCreate(t.genDesc.ptr, t.create.ptr, &g, res, C.int(dev))); err != nil {
		return 0, 0, err
	}
	return GreenCtx(g), sms, nil
}

// GreenCtxStreamCreate creates a stream of g (flags as StreamCreate's):
// kernels launched on it run on g's multiprocessors.
func (d *Driver) GreenCtxStreamCreate(g GreenCtx, flags uint32) (Stream, error) {
	t, err := d.greenTable()
	if err != nil {
		return 0, err
	}
	var s C.uintptr_t
	err = d.check(&t.streamCreate, C.art_cuGreenCtxStreamCreate(t.streamCreate.ptr, &s, C.uintptr_t(g), C.uint(flags)))
	return Stream(s), err
}

// GreenCtxDestroy destroys g; its streams must be destroyed first.
func (d *Driver) GreenCtxDestroy(g GreenCtx) error {
	t, err := d.greenTable()
	if err != nil {
		return err
	}
	return d.check(&t.destroy, C.art_cuGreenCtxDestroy(t.destroy.ptr, C.uintptr_t(g)))
}
