package cudadrv

/*
#include "trampolines.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// MemAlloc allocates bytes of device memory in the current context.
func (d *Driver) MemAlloc(bytes uint64) (DevicePtr, error) {
	var p C.CUdeviceptr
	err := d.check(&d.t.memAlloc, C.art_cuMemAlloc(d.t.memAlloc.ptr, &p, C.size_t(bytes)))
	return DevicePtr(p), err
}

// MemFree frees memory from MemAlloc.
func (d *Driver) MemFree(p DevicePtr) error {
	return d.check(&d.t.memFree, C.art_cuMemFree(d.t.memFree.ptr, C.CUdeviceptr(p)))
}

// MemGetInfo reports free and total memory of the current context's device.
func (d *Driver) MemGetInfo() (free, total uint64, err error) {
	var f, t C.size_t
	err = d.check(&d.t.memGetInfo, C.art_cuMemGetInfo(d.t.memGetInfo.ptr, &f, &t))
	return uint64(f), uint64(t), err
}

// MemAllocHost allocates page-locked host memory. The slice lives in C
// memory, outside the Go heap, which is what lets the async copies read or
// write it after they return. Free it with MemFreeHost.
func (d *Driver) MemAllocHost(bytes int) ([]byte, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("%s: size %d must be positive", d.t.memAllocHost.name, bytes)
	}
	var p unsafe.Pointer
	if err := d.check(&d.t.memAllocHost, C.art_cuMemAllocHost(d.t.memAllocHost.ptr, &p, C.size_t(bytes))); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.pinned[uintptr(p)] = bytes
	d.mu.Unlock()
	return unsafe.Slice((*byte)(p), bytes), nil
}

// MemFreeHost frees a slice returned by MemAllocHost (the whole slice, not
// a subslice).
func (d *Driver) MemFreeHost(b []byte) error {
	if len(b) == 0 {
		return fmt.Errorf("%s: empty slice", d.t.memFreeHost.name)
	}
	p := unsafe.Pointer(&b[0])
	d.mu.Lock()
	_, ok := d.pinned[uintptr(p)]
	delete(d.pinned, uintptr(p))
	d.mu.Unlock()
	if !ok {
		return fmt.Errorf("%s: %p is not the start of a MemAllocHost allocation", d.t.memFreeHost.name, p)
	}
	return d.check(&d.t.memFreeHost, C.art_cuMemFreeHost(d.t.memFreeHost.ptr, p))
}

// isPinned reports whether b lies inside one MemAllocHost allocation.
func (d *Driver) isPinned(b []byte) bool {
	start := uintptr(unsafe.Pointer(&b[0]))
	end := start + uintptr(len(b))
	d.mu.Lock()
	defer d.mu.Unlock()
	for p, n := range d.pinned {
		if start >= p && end <= p+uintptr(n) {
			return true
		}
	}
	return false
}

func (d *Driver) requirePinned(call string, b []byte) error {
	if !d.isPinned(b) {
		return fmt.Errorf("%s: host buffer is not page-locked memory from MemAllocHost (an async copy may outlive a Go buffer)", call)
	}
	return nil
}

// MemcpyHtoD copies src to device memory and returns when the copy is done.
func (d *Driver) MemcpyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return d.check(&d.t.memcpyHtoD, C.art_cuMemcpyHtoD(d.t.memcpyHtoD.ptr, C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

// MemcpyDtoH fills dst from device memory and returns when the copy is done.
func (d *Driver) MemcpyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.check(&d.t.memcpyDtoH, C.art_cuMemcpyDtoH(d.t.memcpyDtoH.ptr, unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst))))
}

// MemcpyHtoDAsync queues a copy of src to device memory on s. src must be
// (part of) a MemAllocHost slice: the copy may run after the call returns.
func (d *Driver) MemcpyHtoDAsync(dst DevicePtr, src []byte, s Stream) error {
	if len(src) == 0 {
		return nil
	}
	if err := d.requirePinned(d.t.memcpyHtoDAsync.name, src); err != nil {
		return err
	}
	return d.check(&d.t.memcpyHtoDAsync, C.art_cuMemcpyHtoDAsync(d.t.memcpyHtoDAsync.ptr, C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src)), C.uintptr_t(s)))
}

// MemcpyDtoHAsync queues a copy from device memory into dst on s. dst must
// be (part of) a MemAllocHost slice; read it only after s is synchronised.
func (d *Driver) MemcpyDtoHAsync(dst []byte, src DevicePtr, s Stream) error {
	if len(dst) == 0 {
		return nil
	}
	if err := d.requirePinned(d.t.memcpyDtoHAsync.name, dst); err != nil {
		return err
	}
	return d.check(&d.t.memcpyDtoHAsync, C.art_cuMemcpyDtoHAsync(d.t.memcpyDtoHAsync.ptr, unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst)), C.uintptr_t(s)))
}

// MemcpyDtoDAsync queues a device-to-device copy of bytes on s; with unified
// addressing either side may be a peer's mapped IPC memory.
func (d *Driver) MemcpyDtoDAsync(dst, src DevicePtr, bytes uint64, s Stream) error {
	return d.check(&d.t.memcpyDtoDAsync, C.art_cuMemcpyDtoDAsync(d.t.memcpyDtoDAsync.ptr, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(bytes), C.uintptr_t(s)))
}

// MemsetD8Async queues setting count bytes at dst to v.
func (d *Driver) MemsetD8Async(dst DevicePtr, v uint8, count uint64, s Stream) error {
	return d.check(&d.t.memsetD8Async, C.art_cuMemsetD8Async(d.t.memsetD8Async.ptr, C.CUdeviceptr(dst), C.uchar(v), C.size_t(count), C.uintptr_t(s)))
}

// MemsetD32Async queues setting count 32-bit words at dst (4-byte aligned)
// to v.
func (d *Driver) MemsetD32Async(dst DevicePtr, v uint32, count uint64, s Stream) error {
	return d.check(&d.t.memsetD32Async, C.art_cuMemsetD32Async(d.t.memsetD32Async.ptr, C.CUdeviceptr(dst), C.uint(v), C.size_t(count), C.uintptr_t(s)))
}

// IpcGetMemHandle exports an allocation from MemAlloc (its base address) so
// another process can map it with IpcOpenMemHandle.
func (d *Driver) IpcGetMemHandle(p DevicePtr) (IPCMemHandle, error) {
	var h IPCMemHandle
	err := d.check(&d.t.ipcGetMemHandle, C.art_cuIpcGetMemHandle(d.t.ipcGetMemHandle.ptr, (*C.art_ipcHandle)(unsafe.Pointer(&h)), C.CUdeviceptr(p)))
	return h, err
}

// IpcOpenMemHandle maps a peer process's allocation into the current
// context, enabling peer access lazily as the driver needs it. A process
// cannot open its own handles.
func (d *Driver) IpcOpenMemHandle(h IPCMemHandle) (DevicePtr, error) {
	var p C.CUdeviceptr
	err := d.check(&d.t.ipcOpenMemHandle, C.art_cuIpcOpenMemHandle(d.t.ipcOpenMemHandle.ptr, &p, (*C.art_ipcHandle)(unsafe.Pointer(&h)), ipcLazyEnablePeerAccess))
	return DevicePtr(p), err
}

// IpcCloseMemHandle unmaps memory from IpcOpenMemHandle.
func (d *Driver) IpcCloseMemHandle(p DevicePtr) error {
	return d.check(&d.t.ipcCloseMemHandle, C.art_cuIpcCloseMemHandle(d.t.ipcCloseMemHandle.ptr, C.CUdeviceptr(p)))
}
