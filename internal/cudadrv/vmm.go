package cudadrv

/*
#include "vmm.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
)

// Virtual memory management (cuMemCreate, cuMemMap, ...) and multicast
// (cuMulticast*). Neither group is in the table that Load resolves:
//
//   - The VMM entry points are resolved on first use, so a driver without
//     them still runs everything else. Only the multicast setup uses them.
//   - The multicast entry points are resolved only by EnableMulticast, which
//     needs a MulticastPermit from an open safety gate
//     (internal/multicast/gate, the only caller of GrantMulticast).
//     Until then no cuMulticast* symbol is even looked up, and every
//     multicast method fails with ErrMulticastDisabled without calling the
//     driver. A multicast object can take a shared machine's GPUs out of
//     service: this is what keeps artest from creating one by accident.

// MemHandle is a CUmemGenericAllocationHandle: physical memory from
// MemCreate or MemImportFD, or a multicast object.
type MemHandle uint64

// MemHandleType is a CUmemAllocationHandleType: how an allocation can be
// shared with other processes.
type MemHandleType int32

const (
	// HandlePOSIXFD: a file descriptor, passed to another process over a
	// Unix socket (SCM_RIGHTS).
	HandlePOSIXFD MemHandleType = 0x1
	// HandleFabric: a 64-byte handle that can travel as bytes (needs IMEX
	// channels); not used by artest yet.
	HandleFabric MemHandleType = 0x8
)

// Granularity options (CUmemAllocationGranularity_flags and
// CUmulticastGranularity_flags have the same values).
const (
	granularityMinimum = 0
)

// MulticastPermit is the proof, which EnableMulticast needs, that the
// multicast safety gate (internal/multicast/gate, whose Permit is this type)
// opened. Its zero value is not valid. The type lives here, below the gate,
// so that this package imports nothing above it.
type MulticastPermit struct{ granted bool }

// Valid reports whether p came from an open gate.
func (p MulticastPermit) Valid() bool { return p.granted }

// GrantMulticast returns a valid MulticastPermit. The safety gate's Decide
// calls it when the gate opens, and nothing else may: the gate's
// TestOnlyTheGateGrantsMulticast checks every non-test file of the tree.
func GrantMulticast() MulticastPermit { return MulticastPermit{granted: true} }

// ErrMulticastDisabled is what every multicast method returns before
// EnableMulticast succeeded.
var ErrMulticastDisabled = errors.New("multicast entry points not enabled: the safety gate has not opened")

// lazySymbols are the entry point groups resolved after Load.
type lazySymbols struct {
	vmm       *vmmSymbols
	vmmErr    error
	multicast *multicastSymbols
	green     *greenSymbols // green.go
	greenErr  error
}

type vmmSymbols struct {
	granularity, create, release, export, importFD symbol
	reserve, free, mapMem, unmap, setAccess        symbol
}

func (t *vmmSymbols) specs() []symbolSpec {
	return []symbolSpec{
		{dst: &t.granularity, names: []string{"cuMemGetAllocationGranularity"}},
		{dst: &t.create, names: []string{"cuMemCreate"}},
		{dst: &t.release, names: []string{"cuMemRelease"}},
		{dst: &t.export, names: []string{"cuMemExportToShareableHandle"}},
		{dst: &t.importFD, names: []string{"cuMemImportFromShareableHandle"}},
		{dst: &t.reserve, names: []string{"cuMemAddressReserve"}},
		{dst: &t.free, names: []string{"cuMemAddressFree"}},
		{dst: &t.mapMem, names: []string{"cuMemMap"}},
		{dst: &t.unmap, names: []string{"cuMemUnmap"}},
		{dst: &t.setAccess, names: []string{"cuMemSetAccess"}},
	}
}

type multicastSymbols struct {
	granularity, create, addDevice, bindMem, unbind symbol
}

func (t *multicastSymbols) specs() []symbolSpec {
	return []symbolSpec{
		{dst: &t.granularity, names: []string{"cuMulticastGetGranularity"}},
		{dst: &t.create, names: []string{"cuMulticastCreate"}},
		{dst: &t.addDevice, names: []string{"cuMulticastAddDevice"}},
		{dst: &t.bindMem, names: []string{"cuMulticastBindMem"}},
		{dst: &t.unbind, names: []string{"cuMulticastUnbind"}},
	}
}

// MulticastSymbolNames are the multicast entry points EnableMulticast
// resolves; the tests check that nothing else ever looks them up.
func MulticastSymbolNames() []string {
	var names []string
	for _, s := range (&multicastSymbols{}).specs() {
		names = append(names, s.names...)
	}
	return names
}

// resolveGroup looks up every entry point of specs; all are required.
func resolveGroup(lib library, specs []symbolSpec) error {
	var missing []string
	for _, s := range specs {
		for _, name := range s.names {
			if p, err := lib.Lookup(name); err == nil && p != nil {
				*s.dst = symbol{name: name, ptr: p}
				break
			}
		}
		if s.dst.ptr == nil {
			s.dst.name = s.names[0]
			missing = append(missing, s.names[0])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("driver lacks %s: %w", strings.Join(missing, ", "), ErrSymbolMissing)
	}
	return nil
}

// vmmTable resolves the VMM entry points on first use.
func (d *Driver) vmmTable() (*vmmSymbols, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lazy.vmm == nil && d.lazy.vmmErr == nil {
		t := &vmmSymbols{}
		if err := resolveGroup(d.lib, t.specs()); err != nil {
			d.lazy.vmmErr = fmt.Errorf("virtual memory management (CUDA 10.2+): %w", err)
		} else {
			d.lazy.vmm = t
		}
	}
	return d.lazy.vmm, d.lazy.vmmErr
}

// EnableMulticast resolves the multicast entry points. It needs a permit
// from an open safety gate; without one it returns an error and looks
// nothing up. Calling it again after success does nothing.
func (d *Driver) EnableMulticast(p MulticastPermit) error {
	if !p.Valid() {
		return fmt.Errorf("EnableMulticast without a permit from the safety gate: %w", ErrMulticastDisabled)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lazy.multicast != nil {
		return nil
	}
	t := &multicastSymbols{}
	if err := resolveGroup(d.lib, t.specs()); err != nil {
		return fmt.Errorf("multicast (CUDA 12.1+ driver): %w", err)
	}
	d.lazy.multicast = t
	return nil
}

// multicastTable is the resolved multicast group, or ErrMulticastDisabled.
func (d *Driver) multicastTable() (*multicastSymbols, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lazy.multicast == nil {
		return nil, ErrMulticastDisabled
	}
	return d.lazy.multicast, nil
}

// MemAllocationGranularity is the minimum size and alignment of a MemCreate
// allocation on dev that can be exported as ht.
func (d *Driver) MemAllocationGranularity(dev Device, ht MemHandleType) (uint64, error) {
	t, err := d.vmmTable()
	if err != nil {
		return 0, err
	}
	var g C.size_t
	err = d.check(&t.granularity, C.art_cuMemGetAllocationGranularity(t.granularity.ptr, &g, C.int(dev), C.int(ht), granularityMinimum))
	return uint64(g), err
}

// MemCreate allocates bytes of physical memory on dev, exportable as ht. It
// has no address until MemMap.
func (d *Driver) MemCreate(bytes uint64, dev Device, ht MemHandleType) (MemHandle, error) {
	t, err := d.vmmTable()
	if err != nil {
		return 0, err
	}
	var h C.art_memHandle
	err = d.check(&t.create, C.art_cuMemCreate(t.create.ptr, &h, C.size_t(bytes), C.int(dev), C.int(ht)))
	return MemHandle(h), err
}

// MemRelease drops a handle from MemCreate, MemImportFD or MulticastCreate;
// the memory goes when its last mapping goes too.
func (d *Driver) MemRelease(h MemHandle) error {
	t, err := d.vmmTable()
	if err != nil {
		return err
	}
	return d.check(&t.release, C.art_cuMemRelease(t.release.ptr, C.art_memHandle(h)))
}

// MemExportFD exports h (created with HandlePOSIXFD) as a file descriptor
// that the caller owns and must close.
func (d *Driver) MemExportFD(h MemHandle) (int, error) {
	t, err := d.vmmTable()
	if err != nil {
		return -1, err
	}
	fd := C.int(-1)
	if err := d.check(&t.export, C.art_cuMemExportToFD(t.export.ptr, &fd, C.art_memHandle(h), C.int(HandlePOSIXFD))); err != nil {
		return -1, err
	}
	return int(fd), nil
}

// MemImportFD imports an exported handle from a file descriptor (which the
// caller still owns and may close afterwards).
func (d *Driver) MemImportFD(fd int) (MemHandle, error) {
	t, err := d.vmmTable()
	if err != nil {
		return 0, err
	}
	var h C.art_memHandle
	err = d.check(&t.importFD, C.art_cuMemImportFromFD(t.importFD.ptr, &h, C.int(fd), C.int(HandlePOSIXFD)))
	return MemHandle(h), err
}

// MemAddressReserve reserves bytes of device address space aligned to align.
func (d *Driver) MemAddressReserve(bytes, align uint64) (DevicePtr, error) {
	t, err := d.vmmTable()
	if err != nil {
		return 0, err
	}
	var p C.CUdeviceptr
	err = d.check(&t.reserve, C.art_cuMemAddressReserve(t.reserve.ptr, &p, C.size_t(bytes), C.size_t(align)))
	return DevicePtr(p), err
}

// MemAddressFree returns a reservation from MemAddressReserve.
func (d *Driver) MemAddressFree(p DevicePtr, bytes uint64) error {
	t, err := d.vmmTable()
	if err != nil {
		return err
	}
	return d.check(&t.free, C.art_cuMemAddressFree(t.free.ptr, C.CUdeviceptr(p), C.size_t(bytes)))
}

// MemMap maps bytes of h, from its start, at reserved address p.
func (d *Driver) MemMap(p DevicePtr, bytes uint64, h MemHandle) error {
	t, err := d.vmmTable()
	if err != nil {
		return err
	}
	return d.check(&t.mapMem, C.art_cuMemMap(t.mapMem.ptr, C.CUdeviceptr(p), C.size_t(bytes), C.art_memHandle(h)))
}

// MemUnmap unmaps what MemMap mapped at p.
func (d *Driver) MemUnmap(p DevicePtr, bytes uint64) error {
	t, err := d.vmmTable()
	if err != nil {
		return err
	}
	return d.check(&t.unmap, C.art_cuMemUnmap(t.unmap.ptr, C.CUdeviceptr(p), C.size_t(bytes)))
}

// MemSetAccess lets dev read and write the mapping at p.
func (d *Driver) MemSetAccess(p DevicePtr, bytes uint64, dev Device) error {
	t, err := d.vmmTable()
	if err != nil {
		return err
	}
	return d.check(&t.setAccess, C.art_cuMemSetAccess(t.setAccess.ptr, C.CUdeviceptr(p), C.size_t(bytes), C.int(dev)))
}

// MulticastGranularity is the minimum size and alignment of a multicast
// object for devices GPUs and bytes per GPU, exportable as ht.
func (d *Driver) MulticastGranularity(devices int, bytes uint64, ht MemHandleType) (uint64, error) {
	t, err := d.multicastTable()
	if err != nil {
		return 0, err
	}
	var g C.size_t
	err = d.check(&t.granularity, C.art_cuMulticastGetGranularity(t.granularity.ptr, &g, C.uint(devices), C.size_t(bytes), C.int(ht), granularityMinimum))
	return uint64(g), err
}

// MulticastCreate creates a multicast object for devices GPUs with bytes
// per GPU, exportable as ht. Release it with MemRelease.
func (d *Driver) MulticastCreate(devices int, bytes uint64, ht MemHandleType) (MemHandle, error) {
	t, err := d.multicastTable()
	if err != nil {
		return 0, err
	}
	var h C.art_memHandle
	err = d.check(&t.create, C.art_cuMulticastCreate(t.create.ptr, &h, C.uint(devices), C.size_t(bytes), C.int(ht)))
	return MemHandle(h), err
}

// MulticastAddDevice adds dev to the multicast team of mc. Every device
// must be added before any memory is bound or the object is mapped.
func (d *Driver) MulticastAddDevice(mc MemHandle, dev Device) error {
	t, err := d.multicastTable()
	if err != nil {
		return err
	}
	return d.check(&t.addDevice, C.art_cuMulticastAddDevice(t.addDevice.ptr, C.art_memHandle(mc), C.CUdevice(dev)))
}

// MulticastBindMem binds bytes of mem from memOffset to mc at mcOffset.
func (d *Driver) MulticastBindMem(mc MemHandle, mcOffset uint64, mem MemHandle, memOffset, bytes uint64) error {
	t, err := d.multicastTable()
	if err != nil {
		return err
	}
	return d.check(&t.bindMem, C.art_cuMulticastBindMem(t.bindMem.ptr, C.art_memHandle(mc), C.size_t(mcOffset), C.art_memHandle(mem), C.size_t(memOffset), C.size_t(bytes)))
}

// MulticastUnbind undoes MulticastBindMem of dev's memory (same offset and
// size as the bind).
func (d *Driver) MulticastUnbind(mc MemHandle, dev Device, mcOffset, bytes uint64) error {
	t, err := d.multicastTable()
	if err != nil {
		return err
	}
	return d.check(&t.unbind, C.art_cuMulticastUnbind(t.unbind.ptr, C.art_memHandle(mc), C.CUdevice(dev), C.size_t(mcOffset), C.size_t(bytes)))
}
