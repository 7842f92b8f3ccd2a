package nccl

/*
#include "trampolines.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/dl"
)

// NVLSEnv is the NCCL variable that switches NVLink SHARP on or off.
const NVLSEnv = "NCCL_NVLS_ENABLE"

type symbol struct {
	name string
	ptr  unsafe.Pointer
}

// Lib is a loaded libnccl.
type Lib struct {
	path    string
	lib     *dl.Lib
	version Version

	getVersion, getUniqueID, commInitRank, allReduce symbol
	reduceScatter, allGather                         symbol
	commFinalize, commDestroy, commAbort, asyncError symbol
	getErrorString, getLastError                     symbol

	// Optional: buffer registration (2.19), symmetric windows and
	// ncclMemAlloc (2.27 for windows; ncclMemAlloc since 2.19).
	commRegister, commDeregister     symbol
	windowRegister, windowDeregister symbol
	memAlloc, memFree                symbol
}

// Load opens the NCCL library at path (from Find) and checks that it is
// NCCL 2. It also makes NVLS off the default (see the package comment).
func Load(path string) (*Lib, error) {
	lib, err := dl.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load NCCL: %w", err)
	}
	l := &Lib{path: path, lib: lib}
	if err := l.resolve(); err != nil {
		lib.Close()
		return nil, fmt.Errorf("load NCCL from %s: %w", path, err)
	}
	var code C.int
	if err := l.check(&l.getVersion, 0, C.art_ncclGetVersion(l.getVersion.ptr, &code)); err != nil {
		lib.Close()
		return nil, fmt.Errorf("load NCCL from %s: %w", path, err)
	}
	l.version = ParseVersion(int(code))
	if l.version.Major != 2 {
		lib.Close()
		return nil, fmt.Errorf("load NCCL from %s: version %v (code %d) is not NCCL 2", path, l.version, int(code))
	}
	if _, set := os.LookupEnv(NVLSEnv); !set {
		if err := os.Setenv(NVLSEnv, "0"); err != nil {
			lib.Close()
			return nil, fmt.Errorf("load NCCL: turn NVLS off: %w", err)
		}
	}
	return l, nil
}

func (l *Lib) resolve() error {
	var missing []string
	for _, s := range []struct {
		dst      *symbol
		name     string
		optional bool
	}{
		{&l.getVersion, "ncclGetVersion", false},
		{&l.getUniqueID, "ncclGetUniqueId", false},
		{&l.commInitRank, "ncclCommInitRank", false},
		{&l.allReduce, "ncclAllReduce", false},
		{&l.reduceScatter, "ncclReduceScatter", false},
		{&l.allGather, "ncclAllGather", false},
		{&l.commFinalize, "ncclCommFinalize", true}, // NCCL 2.14
		{&l.commDestroy, "ncclCommDestroy", false},
		{&l.commAbort, "ncclCommAbort", false},
		{&l.asyncError, "ncclCommGetAsyncError", false},
		{&l.getErrorString, "ncclGetErrorString", false},
		{&l.getLastError, "ncclGetLastError", false},
		{&l.commRegister, "ncclCommRegister", true},
		{&l.commDeregister, "ncclCommDeregister", true},
		{&l.windowRegister, "ncclCommWindowRegister", true},
		{&l.windowDeregister, "ncclCommWindowDeregister", true},
		{&l.memAlloc, "ncclMemAlloc", true},
		{&l.memFree, "ncclMemFree", true},
	} {
		s.dst.name = s.name
		p, err := l.lib.Sym(s.name)
		if err != nil {
			if !s.optional {
				missing = append(missing, s.name)
			}
			continue
		}
		s.dst.ptr = p
	}
	if len(missing) > 0 {
		return fmt.Errorf("not an NCCL library: lacks %s", strings.Join(missing, ", "))
	}
	return nil
}

// Path is the file Load opened.
func (l *Lib) Path() string { return l.path }

// Version is the loaded NCCL's version.
func (l *Lib) Version() Version { return l.version }

// Close unloads the library. Every communicator must be destroyed first.
func (l *Lib) Close() error { return l.lib.Close() }

// check turns an ncclResult_t into an error; success is a nil interface.
// comm, when known, lets ncclGetLastError say more.
func (l *Lib) check(s *symbol, comm Comm, r C.ncclResult_t) error {
	if r == 0 {
		return nil
	}
	return l.newError(s.name, comm, int(r))
}

func (l *Lib) newError(call string, comm Comm, code int) *Error {
	e := &Error{Call: call, Code: code}
	if p := C.art_ncclGetErrorString(l.getErrorString.ptr, C.ncclResult_t(code)); p != nil {
		e.Text = C.GoString(p)
	}
	if p := C.art_ncclGetLastError(l.getLastError.ptr, C.uintptr_t(comm)); p != nil {
		e.Detail = strings.TrimSpace(C.GoString(p))
	}
	return e
}

// LastError is NCCL's description of the last failure on comm (or on this
// thread for comm 0).
func (l *Lib) LastError(comm Comm) string {
	p := C.art_ncclGetLastError(l.getLastError.ptr, C.uintptr_t(comm))
	if p == nil {
		return ""
	}
	return C.GoString(p)
}

// GetUniqueID creates the id that names a new communicator. Rank 0 calls
// it and broadcasts the bytes to the other ranks.
func (l *Lib) GetUniqueID() (UniqueID, error) {
	var id UniqueID
	err := l.check(&l.getUniqueID, 0, C.art_ncclGetUniqueId(l.getUniqueID.ptr, (*C.art_ncclUniqueId)(unsafe.Pointer(&id))))
	return id, err
}

// CommInitRank joins rank of an nranks communicator on the device whose
// context is current on this thread. It blocks until every rank has joined.
func (l *Lib) CommInitRank(nranks int, id UniqueID, rank int) (Comm, error) {
	if nranks < 1 || rank < 0 || rank >= nranks {
		return 0, fmt.Errorf("%s: rank %d of %d ranks", l.commInitRank.name, rank, nranks)
	}
	var c C.uintptr_t
	err := l.check(&l.commInitRank, 0, C.art_ncclCommInitRank(l.commInitRank.ptr, &c, C.int(nranks), (*C.art_ncclUniqueId)(unsafe.Pointer(&id)), C.int(rank)))
	return Comm(c), err
}

// AllReduce queues an allreduce of count elements from send into recv (the
// same address for in place) on stream.
func (l *Lib) AllReduce(send, recv cudadrv.DevicePtr, count uint64, dt DataType, op RedOp, comm Comm, stream cudadrv.Stream) error {
	return l.check(&l.allReduce, comm, C.art_ncclAllReduce(l.allReduce.ptr, C.uintptr_t(send), C.uintptr_t(recv),
		C.size_t(count), C.int(dt), C.int(op), C.uintptr_t(comm), C.uintptr_t(stream)))
}

// ReduceScatter queues a reduce-scatter: recvcount elements into recv on
// every rank, from send's recvcount*nranks (recv = send +
// rank*recvcount elements for in place) on stream.
func (l *Lib) ReduceScatter(send, recv cudadrv.DevicePtr, recvcount uint64, dt DataType, op RedOp, comm Comm, stream cudadrv.Stream) error {
	return l.check(&l.reduceScatter, comm, C.art_ncclReduceScatter(l.reduceScatter.ptr, C.uintptr_t(send), C.uintptr_t(recv),
		C.size_t(recvcount), C.int(dt), C.int(op), C.uintptr_t(comm), C.uintptr_t(stream)))
}

// AllGather queues an all-gather: sendcount elements from send on every
// rank into recv's sendcount*nranks (send = recv + rank*sendcount
// elements for in place) on stream.
func (l *Lib) AllGather(send, recv cudadrv.DevicePtr, sendcount uint64, dt DataType, comm Comm, stream cudadrv.Stream) error {
	return l.check(&l.allGather, comm, C.art_ncclAllGather(l.allGather.ptr, C.uintptr_t(send), C.uintptr_t(recv),
		C.size_t(sendcount), C.int(dt), C.uintptr_t(comm), C.uintptr_t(stream)))
}

// Collective queues the NCCL function fn (reference.Collective.NCCL) with
// NCCL's count for it: the elements of a rank's chunk for a reduce-scatter
// (recvcount) or an all-gather (sendcount), the full count for an
// allreduce; op is ignored where fn takes none.
func (l *Lib) Collective(fn string, send, recv cudadrv.DevicePtr, count uint64, dt DataType, op RedOp, comm Comm, stream cudadrv.Stream) error {
	switch fn {
	case "ncclAllReduce":
		return l.AllReduce(send, recv, count, dt, op, comm, stream)
	case "ncclReduceScatter":
		return l.ReduceScatter(send, recv, count, dt, op, comm, stream)
	case "ncclAllGather":
		return l.AllGather(send, recv, count, dt, comm, stream)
	}
	return fmt.Errorf("nccl: artest has no binding for %q", fn)
}

// CommFinalize flushes comm's outstanding work and resources (NCCL 2.14+);
// call it on every rank before CommDestroy. Without the entry point it does
// nothing, as CommDestroy then does the whole job.
func (l *Lib) CommFinalize(comm Comm) error {
	if l.commFinalize.ptr == nil {
		return nil
	}
	return l.check(&l.commFinalize, comm, C.art_ncclCommFinalize(l.commFinalize.ptr, C.uintptr_t(comm)))
}

// CommDestroy frees comm.
func (l *Lib) CommDestroy(comm Comm) error {
	return l.check(&l.commDestroy, 0, C.art_ncclCommDestroy(l.commDestroy.ptr, C.uintptr_t(comm)))
}

// CommAbort stops comm's outstanding operations and frees it; the way out
// when a peer has died or an operation hangs.
func (l *Lib) CommAbort(comm Comm) error {
	return l.check(&l.commAbort, 0, C.art_ncclCommAbort(l.commAbort.ptr, C.uintptr_t(comm)))
}

// CommAsyncError reports comm's asynchronous state: async is nil while
// comm is healthy, ErrInProgress (as an *Error) while a non-blocking
// operation is still going, or the error that broke it. err is the failure
// of the query itself.
func (l *Lib) CommAsyncError(comm Comm) (async, err error) {
	var r C.ncclResult_t
	if err := l.check(&l.asyncError, comm, C.art_ncclCommGetAsyncError(l.asyncError.ptr, C.uintptr_t(comm), &r)); err != nil {
		return nil, err
	}
	if r == 0 {
		return nil, nil
	}
	return l.newError("async error", comm, int(r)), nil
}

// lacks is why this NCCL cannot make the calls syms name: "libnccl 2.18.5
// has no ncclCommWindowRegister", or "" when it exports them all.
func (l *Lib) lacks(syms ...*symbol) string {
	var missing []string
	for _, s := range syms {
		if s.ptr == nil {
			missing = append(missing, s.name)
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("libnccl %v has no %s", l.version, strings.Join(missing, ", "))
}

// missing is the error of a call whose entry point this NCCL lacks.
func (l *Lib) missing(s *symbol) error {
	return fmt.Errorf("%s: %w", l.lacks(s), ErrSymbolMissing)
}

// RegisterReason is why this NCCL cannot register user buffers
// (ncclCommRegister, ncclCommDeregister), or "" when it can.
func (l *Lib) RegisterReason() string { return l.lacks(&l.commRegister, &l.commDeregister) }

// WindowReason is why this NCCL cannot register symmetric windows
// (ncclCommWindowRegister, ncclCommWindowDeregister, and ncclMemAlloc,
// ncclMemFree for the memory they need), or "" when it can.
func (l *Lib) WindowReason() string {
	return l.lacks(&l.windowRegister, &l.windowDeregister, &l.memAlloc, &l.memFree)
}

// MemAllocReason is why this NCCL cannot allocate the memory it registers
// (ncclMemAlloc, ncclMemFree: NCCL 2.19 and later), or "" when it can.
func (l *Lib) MemAllocReason() string { return l.lacks(&l.memAlloc, &l.memFree) }

// CommRegister registers size bytes at buf with comm for zero-copy
// collectives (ncclCommRegister). It is local to this rank; every rank
// must pass registered buffers to a collective if any does.
func (l *Lib) CommRegister(comm Comm, buf cudadrv.DevicePtr, size uint64) (RegHandle, error) {
	if l.commRegister.ptr == nil {
		return 0, l.missing(&l.commRegister)
	}
	var h C.uintptr_t
	err := l.check(&l.commRegister, comm, C.art_ncclCommRegister(l.commRegister.ptr, C.uintptr_t(comm), C.uintptr_t(buf), C.size_t(size), &h))
	return RegHandle(h), err
}

// CommDeregister undoes CommRegister.
func (l *Lib) CommDeregister(comm Comm, h RegHandle) error {
	if l.commDeregister.ptr == nil {
		return l.missing(&l.commDeregister)
	}
	return l.check(&l.commDeregister, comm, C.art_ncclCommDeregister(l.commDeregister.ptr, C.uintptr_t(comm), C.uintptr_t(h)))
}

// CommWindowRegister registers size bytes at buf as a window of comm
// (ncclCommWindowRegister) with flags (WinCollSymmetric for the symmetric
// kernels). It is collective: every rank registers the same size. A
// symmetric window must lie in cuMem (VMM) memory, such as MemAlloc's.
func (l *Lib) CommWindowRegister(comm Comm, buf cudadrv.DevicePtr, size uint64, flags WinFlags) (Window, error) {
	if l.windowRegister.ptr == nil {
		return 0, l.missing(&l.windowRegister)
	}
	var w C.uintptr_t
	err := l.check(&l.windowRegister, comm, C.art_ncclCommWindowRegister(l.windowRegister.ptr, C.uintptr_t(comm), C.uintptr_t(buf), C.size_t(size), &w, C.int(flags)))
	return Window(w), err
}

// CommWindowDeregister undoes CommWindowRegister; collective too.
func (l *Lib) CommWindowDeregister(comm Comm, w Window) error {
	if l.windowDeregister.ptr == nil {
		return l.missing(&l.windowDeregister)
	}
	return l.check(&l.windowDeregister, comm, C.art_ncclCommWindowDeregister(l.windowDeregister.ptr, C.uintptr_t(comm), C.uintptr_t(w)))
}

// MemAlloc allocates size bytes of device memory on the current device
// the way NCCL wants for registration and windows (ncclMemAlloc: cuMem
// VMM memory; the allocation may be rounded up to the granularity).
func (l *Lib) MemAlloc(size uint64) (cudadrv.DevicePtr, error) {
	if l.memAlloc.ptr == nil {
		return 0, l.missing(&l.memAlloc)
	}
	var p C.uintptr_t
	err := l.check(&l.memAlloc, 0, C.art_ncclMemAlloc(l.memAlloc.ptr, &p, C.size_t(size)))
	return cudadrv.DevicePtr(p), err
}

// MemFree frees MemAlloc's memory.
func (l *Lib) MemFree(p cudadrv.DevicePtr) error {
	if l.memFree.ptr == nil {
		return l.missing(&l.memFree)
	}
	return l.check(&l.memFree, 0, C.art_ncclMemFree(l.memFree.ptr, C.uintptr_t(p)))
}
