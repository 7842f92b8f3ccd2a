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
	commFinalize, commDestroy, commAbort, asyncError symbol
	getErrorString, getLastError                     symbol
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
		{&l.commFinalize, "ncclCommFinalize", true}, // NCCL 2.14
		{&l.commDestroy, "ncclCommDestroy", false},
		{&l.commAbort, "ncclCommAbort", false},
		{&l.asyncError, "ncclCommGetAsyncError", false},
		{&l.getErrorString, "ncclGetErrorString", false},
		{&l.getLastError, "ncclGetLastError", false},
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
