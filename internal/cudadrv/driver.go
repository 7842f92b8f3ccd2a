package cudadrv

/*
#include "trampolines.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/artest/artest/internal/dl"
)

// LibraryName is the driver library every CUDA installation provides.
const LibraryName = "libcuda.so.1"

// Driver is the loaded CUDA driver API. Its methods may be called from any
// goroutine, but the driver's current context is per OS thread: lock the
// calling goroutine with runtime.LockOSThread and make a context current
// (MakeCurrent or CtxSetCurrent) on that thread before calling anything
// that needs one (memory, streams, modules, launches).
type Driver struct {
	lib     library
	t       *table
	version int

	mu     sync.Mutex
	pinned map[uintptr]int           // page-locked host allocations: start -> length
	images map[Module]unsafe.Pointer // C copies of module images, freed at unload
	lazy   lazySymbols               // VMM and multicast entry points (vmm.go), under mu
}

var process struct {
	once sync.Once
	d    *Driver
	err  error
}

// Load opens libcuda.so.1 and calls cuInit(0), once per process; later calls
// return the same Driver or the same error. No GPU, no driver or a driver
// too old for artest is an ordinary error.
func Load() (*Driver, error) {
	process.once.Do(func() { process.d, process.err = load(LibraryName, openDL) })
	return process.d, process.err
}

// LoadFrom opens the driver library at path and calls cuInit(0), without
// Load's once: for tests that drive code above the wrapper with a stand-in
// driver (testdata/fakecuda.c, whose "device memory" is host memory).
func LoadFrom(path string) (*Driver, error) { return load(path, openDL) }

type dlLibrary struct{ lib *dl.Lib }

func (l dlLibrary) Lookup(symbol string) (unsafe.Pointer, error) { return l.lib.Sym(symbol) }
func (l dlLibrary) Close() error                                 { return l.lib.Close() }

func openDL(path string) (library, error) {
	lib, err := dl.Open(path)
	if err != nil {
		return nil, err
	}
	return dlLibrary{lib}, nil
}

func load(path string, open func(string) (library, error)) (*Driver, error) {
	lib, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("CUDA driver not available: %w", err)
	}
	t, err := resolve(lib)
	if err != nil {
		lib.Close()
		return nil, fmt.Errorf("CUDA driver %s: %w", path, err)
	}
	d := &Driver{
		lib:    lib,
		t:      t,
		pinned: map[uintptr]int{},
		images: map[Module]unsafe.Pointer{},
	}
	// From here on the library stays open even on failure: cuInit may have
	// started driver threads that unloading would pull the code from under.
	if err := d.check(&t.init, C.art_cuInit(t.init.ptr, 0)); err != nil {
		return nil, fmt.Errorf("initialise CUDA driver: %w", err)
	}
	var v C.int
	if err := d.check(&t.driverGetVersion, C.art_cuDriverGetVersion(t.driverGetVersion.ptr, &v)); err != nil {
		return nil, err
	}
	d.version = int(v)
	return d, nil
}

// check turns a CUresult into an error. Success must be a nil error
// interface, never a nil *Error.
func (d *Driver) check(s *symbol, r C.CUresult) error {
	return d.result(s.name, int(r))
}

func (d *Driver) result(call string, code int) error {
	if code == 0 {
		return nil
	}
	return d.newError(call, code)
}

func (d *Driver) newError(call string, code int) *Error {
	e := &Error{Call: call, Code: code, Name: Result(code).Name()}
	var s *C.char
	if C.art_cuGetErrorName(d.t.getErrorName.ptr, C.CUresult(code), &s) == 0 && s != nil {
		e.Name = C.GoString(s)
	}
	s = nil
	if C.art_cuGetErrorString(d.t.getErrorString.ptr, C.CUresult(code), &s) == 0 && s != nil {
		e.Text = C.GoString(s)
	}
	return e
}

func missing(s *symbol) error {
	return fmt.Errorf("%s: %w", s.name, ErrSymbolMissing)
}

// Version is the CUDA version the driver supports, as cuDriverGetVersion
// reports it (13000 for 13.0); VersionString formats it.
func (d *Driver) Version() int { return d.version }

// DeviceCount is the number of visible GPUs.
func (d *Driver) DeviceCount() (int, error) {
	var n C.int
	err := d.check(&d.t.deviceGetCount, C.art_cuDeviceGetCount(d.t.deviceGetCount.ptr, &n))
	return int(n), err
}

// DeviceGet returns the device with the given ordinal.
func (d *Driver) DeviceGet(ordinal int) (Device, error) {
	var dev C.CUdevice
	err := d.check(&d.t.deviceGet, C.art_cuDeviceGet(d.t.deviceGet.ptr, &dev, C.int(ordinal)))
	return Device(dev), err
}

// DeviceName is the marketing name, e.g. "NVIDIA H200".
func (d *Driver) DeviceName(dev Device) (string, error) {
	var buf [256]C.char
	if err := d.check(&d.t.deviceGetName, C.art_cuDeviceGetName(d.t.deviceGetName.ptr, &buf[0], C.int(len(buf)), C.CUdevice(dev))); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

// DeviceAttribute reads one attribute of dev.
func (d *Driver) DeviceAttribute(dev Device, attr DeviceAttribute) (int, error) {
	var v C.int
	err := d.check(&d.t.deviceGetAttribute, C.art_cuDeviceGetAttribute(d.t.deviceGetAttribute.ptr, &v, C.int(attr), C.CUdevice(dev)))
	return int(v), err
}

// execAffinitySMCount is CU_EXEC_AFFINITY_TYPE_SM_COUNT.
const execAffinitySMCount = 0

// MPSClient says whether this process talks to dev through an MPS server.
// cuDeviceGetExecAffinitySupport for the SM-count affinity reads 1 only
// then: seen on an H100 with driver 580, 0 with no MPS control daemon and
// after the daemon quit (its control socket file stays behind, so the
// file is no evidence), 1 with one running, before any context exists.
// Drivers without the entry point (before CUDA 11.4) return
// ErrSymbolMissing.
func (d *Driver) MPSClient(dev Device) (bool, error) {
	if d.t.deviceGetExecAffinitySupport.ptr == nil {
		return false, missing(&d.t.deviceGetExecAffinitySupport)
	}
	var v C.int
	err := d.check(&d.t.deviceGetExecAffinitySupport, C.art_cuDeviceGetExecAffinitySupport(d.t.deviceGetExecAffinitySupport.ptr, &v, execAffinitySMCount, C.CUdevice(dev)))
	return v == 1, err
}

// ContextSMs is how many multiprocessors the current context may use
// (cuCtxGetExecAffinity, SM count): the whole GPU, unless MPS limits this
// client (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE). Drivers before CUDA 11.4
// return ErrSymbolMissing.
func (d *Driver) ContextSMs() (int, error) {
	if d.t.ctxGetExecAffinity.ptr == nil {
		return 0, missing(&d.t.ctxGetExecAffinity)
	}
	var n C.uint
	err := d.check(&d.t.ctxGetExecAffinity, C.art_cuCtxGetExecAffinity(d.t.ctxGetExecAffinity.ptr, &n))
	return int(n), err
}

// ComputeCapability returns dev's major and minor compute capability (9, 0
// for sm_90).
func (d *Driver) ComputeCapability(dev Device) (major, minor int, err error) {
	if major, err = d.DeviceAttribute(dev, AttrComputeCapabilityMajor); err != nil {
		return 0, 0, err
	}
	if minor, err = d.DeviceAttribute(dev, AttrComputeCapabilityMinor); err != nil {
		return 0, 0, err
	}
	return major, minor, nil
}

// DeviceUUID is dev's UUID (cuDeviceGetUuid_v2 where the driver has it).
func (d *Driver) DeviceUUID(dev Device) (UUID, error) {
	var u UUID
	err := d.check(&d.t.deviceGetUUID, C.art_cuDeviceGetUuid(d.t.deviceGetUUID.ptr, (*C.art_uuid)(unsafe.Pointer(&u)), C.CUdevice(dev)))
	return u, err
}

// DevicePCIBusID is dev's PCI address, e.g. "0000:19:00.0".
func (d *Driver) DevicePCIBusID(dev Device) (string, error) {
	var buf [64]C.char
	if err := d.check(&d.t.deviceGetPCIBusID, C.art_cuDeviceGetPCIBusId(d.t.deviceGetPCIBusID.ptr, &buf[0], C.int(len(buf)), C.CUdevice(dev))); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

// DeviceTotalMem is dev's memory in bytes.
func (d *Driver) DeviceTotalMem(dev Device) (uint64, error) {
	var n C.size_t
	err := d.check(&d.t.deviceTotalMem, C.art_cuDeviceTotalMem(d.t.deviceTotalMem.ptr, &n, C.CUdevice(dev)))
	return uint64(n), err
}

// CanAccessPeer reports whether dev can map peer's memory.
func (d *Driver) CanAccessPeer(dev, peer Device) (bool, error) {
	var can C.int
	err := d.check(&d.t.deviceCanAccessPeer, C.art_cuDeviceCanAccessPeer(d.t.deviceCanAccessPeer.ptr, &can, C.CUdevice(dev), C.CUdevice(peer)))
	return can != 0, err
}

// PrimaryCtxRetain retains dev's primary context, the one the CUDA runtime
// and NCCL use too, so artest's kernels and NCCL share memory and streams.
func (d *Driver) PrimaryCtxRetain(dev Device) (Context, error) {
	var ctx C.uintptr_t
	err := d.check(&d.t.primaryCtxRetain, C.art_cuDevicePrimaryCtxRetain(d.t.primaryCtxRetain.ptr, &ctx, C.CUdevice(dev)))
	return Context(ctx), err
}

// PrimaryCtxRelease drops one PrimaryCtxRetain reference.
func (d *Driver) PrimaryCtxRelease(dev Device) error {
	return d.check(&d.t.primaryCtxRelease, C.art_cuDevicePrimaryCtxRelease(d.t.primaryCtxRelease.ptr, C.CUdevice(dev)))
}

// CtxSetCurrent binds ctx to the calling OS thread.
func (d *Driver) CtxSetCurrent(ctx Context) error {
	return d.check(&d.t.ctxSetCurrent, C.art_cuCtxSetCurrent(d.t.ctxSetCurrent.ptr, C.uintptr_t(ctx)))
}

// CtxGetCurrent is the context bound to the calling OS thread (0 if none).
func (d *Driver) CtxGetCurrent() (Context, error) {
	var ctx C.uintptr_t
	err := d.check(&d.t.ctxGetCurrent, C.art_cuCtxGetCurrent(d.t.ctxGetCurrent.ptr, &ctx))
	return Context(ctx), err
}

// MakeCurrent retains dev's primary context and binds it to the calling OS
// thread, which the caller must have locked. Release it with
// PrimaryCtxRelease(dev).
func (d *Driver) MakeCurrent(dev Device) (Context, error) {
	ctx, err := d.PrimaryCtxRetain(dev)
	if err != nil {
		return 0, err
	}
	if err := d.CtxSetCurrent(ctx); err != nil {
		d.PrimaryCtxRelease(dev)
		return 0, err
	}
	return ctx, nil
}

// CtxSynchronize waits for all work in the current context.
func (d *Driver) CtxSynchronize() error {
	return d.check(&d.t.ctxSynchronize, C.art_cuCtxSynchronize(d.t.ctxSynchronize.ptr))
}

// CtxEnablePeerAccess lets the current context access memory of peer's
// context. Access that is already enabled counts as success, so callers
// need not track which pairs they enabled.
func (d *Driver) CtxEnablePeerAccess(peer Context) error {
	err := d.check(&d.t.ctxEnablePeerAccess, C.art_cuCtxEnablePeerAccess(d.t.ctxEnablePeerAccess.ptr, C.uintptr_t(peer), 0))
	if e, ok := err.(*Error); ok && Result(e.Code) == ErrPeerAccessAlreadyEnabled {
		return nil
	}
	return err
}
