package cudadrv

/*
#include "trampolines.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// ModuleLoadData loads a fatbin, cubin or PTX image into the current
// context. The image is copied into C memory with a terminating NUL (PTX
// must be a C string) and the copy is kept until ModuleUnload, because with
// lazy loading the driver may read the image again when a function is
// first used.
func (d *Driver) ModuleLoadData(image []byte) (Module, error) {
	if len(image) == 0 {
		return 0, fmt.Errorf("%s: empty image", d.t.moduleLoadData.name)
	}
	buf := C.malloc(C.size_t(len(image) + 1))
	if buf == nil {
		return 0, fmt.Errorf("%s: cannot allocate %d bytes for the image copy", d.t.moduleLoadData.name, len(image)+1)
	}
	copied := unsafe.Slice((*byte)(buf), len(image)+1)
	copy(copied, image)
	copied[len(image)] = 0

	var m C.uintptr_t
	if err := d.check(&d.t.moduleLoadData, C.art_cuModuleLoadData(d.t.moduleLoadData.ptr, &m, buf)); err != nil {
		C.free(buf)
		return 0, err
	}
	d.mu.Lock()
	d.images[Module(m)] = buf
	d.mu.Unlock()
	return Module(m), nil
}

// ModuleUnload unloads m and frees its image copy.
func (d *Driver) ModuleUnload(m Module) error {
	if err := d.check(&d.t.moduleUnload, C.art_cuModuleUnload(d.t.moduleUnload.ptr, C.uintptr_t(m))); err != nil {
		return err
	}
	d.mu.Lock()
	buf := d.images[m]
	delete(d.images, m)
	d.mu.Unlock()
	C.free(buf)
	return nil
}

// ModuleGetFunction finds a kernel by its (extern "C") name.
func (d *Driver) ModuleGetFunction(m Module, name string) (Function, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var fn C.uintptr_t
	if err := d.check(&d.t.moduleGetFunction, C.art_cuModuleGetFunction(d.t.moduleGetFunction.ptr, &fn, C.uintptr_t(m), cname)); err != nil {
		return 0, fmt.Errorf("kernel %q: %w", name, err)
	}
	return Function(fn), nil
}

// FuncSetAttribute sets a function attribute, e.g.
// FuncMaxDynamicSharedSizeBytes before launching with more than 48 KiB of
// dynamic shared memory.
func (d *Driver) FuncSetAttribute(fn Function, attr FuncAttribute, v int) error {
	return d.check(&d.t.funcSetAttribute, C.art_cuFuncSetAttribute(d.t.funcSetAttribute.ptr, C.uintptr_t(fn), C.int(attr), C.int(v)))
}

// FuncGetAttribute reads a function attribute.
func (d *Driver) FuncGetAttribute(fn Function, attr FuncAttribute) (int, error) {
	var v C.int
	err := d.check(&d.t.funcGetAttribute, C.art_cuFuncGetAttribute(d.t.funcGetAttribute.ptr, &v, C.int(attr), C.uintptr_t(fn)))
	return int(v), err
}

// FuncParamInfo is the offset and size of fn's parameter index as compiled
// (cuFuncGetParamInfo, CUDA 12.4+). It lets a caller check that the Go
// argument struct has the size the kernel expects before launching.
func (d *Driver) FuncParamInfo(fn Function, index int) (offset, size uint64, err error) {
	if d.t.funcParamInfo.ptr == nil {
		return 0, 0, missing(&d.t.funcParamInfo)
	}
	var off, sz C.size_t
	err = d.check(&d.t.funcParamInfo, C.art_cuFuncGetParamInfo(d.t.funcParamInfo.ptr, C.uintptr_t(fn), C.size_t(index), &off, &sz))
	return uint64(off), uint64(sz), err
}

// OccupancyMaxActiveBlocks is how many blocks of fn, with block threads
// and shared bytes of dynamic shared memory, one multiprocessor holds at
// once (cuOccupancyMaxActiveBlocksPerMultiprocessor): registers, shared
// memory, threads and the block limit all count.
func (d *Driver) OccupancyMaxActiveBlocks(fn Function, block, shared int) (int, error) {
	var n C.int
	err := d.check(&d.t.occupancyMaxActiveBlocks, C.art_cuOccupancyMaxActiveBlocksPerMultiprocessor(d.t.occupancyMaxActiveBlocks.ptr, &n, C.uintptr_t(fn), C.int(block), C.size_t(shared)))
	return int(n), err
}
