// Package mpi is artest's only MPI code: a small cgo binding that gives the
// runner a comm.Comm over MPI_COMM_WORLD.
//
// MPI is linked, not loaded at run time, because MPI ABIs differ between
// implementations: the default build uses pkg-config ompi (Open MPI), the
// build tag mpich switches to pkg-config mpich. A binary started by another
// MPI's launcher sees a world of one; Init detects that from the launcher's
// environment and fails with ErrLauncherMismatch instead of running N copies
// of rank 0. Launched without any launcher, the binary is a one-rank world
// (singleton MPI_Init).
//
// Threads: Init asks for MPI_THREAD_FUNNELED, so every MPI call must come
// from the thread that initialized MPI. Go moves goroutines between threads,
// so the caller locks its goroutine to its thread (runtime.LockOSThread,
// best in main's init so that it is the process's main thread, which CUDA's
// per-thread context also wants) before Init, and makes every call from that
// goroutine. Init locks the goroutine as well and never unlocks it, and the
// collectives check MPI_Is_thread_main: a call from another thread fails
// with ErrWrongThread rather than break MPI. Abort is the one exception.
//
// Memory: MPI libraries cache memory registrations by address and learn that
// memory went away by intercepting libc (munmap, madvise, ...). The Go runtime
// returns memory to the OS with raw system calls that they never see, so a
// registration of a Go heap page could outlive the page. MPI therefore only
// ever sees C memory: data is staged through C buffers of at most
// chunk.Limit bytes per call. The copy costs nothing at the control-path
// sizes artest moves, no Go pointer crosses into C beyond a call, and
// buffers of any size work (the staging splits them into int-sized pieces).
//
// Errors: the world communicator returns errors (MPI_ERRORS_RETURN) instead
// of aborting; they come back as "MPI_Bcast: <MPI_Error_string text>".
package mpi

/*
#include <stdlib.h>
#include <mpi.h>

// Open MPI's handles are addresses of globals behind macros that cgo cannot
// evaluate; these return them (and are harmless for MPICH's integers).
static MPI_Comm artest_comm_world(void) { return MPI_COMM_WORLD; }
static MPI_Datatype artest_byte(void) { return MPI_BYTE; }
static MPI_Info artest_info_null(void) { return MPI_INFO_NULL; }
static MPI_Errhandler artest_errors_return(void) { return MPI_ERRORS_RETURN; }

static int artest_init_thread(int required, int *provided) {
	return MPI_Init_thread(NULL, NULL, required, provided);
}
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/mpi/internal/chunk"
)

// ErrWrongThread is returned by a collective called from another OS thread
// than the one that called Init.
var ErrWrongThread = errors.New("called from another OS thread than the one that initialized MPI " +
	"(MPI_THREAD_FUNNELED): lock the goroutine with runtime.LockOSThread before mpi.Init and call MPI only from it")

// World is MPI_COMM_WORLD. It implements comm.Comm. Rank, Size, LocalRank,
// LocalSize and Hostname are cached at Init and, like Abort, may be called
// from any goroutine; everything else only from the goroutine that called
// Init.
type World struct {
	comm                 C.MPI_Comm
	byteType             C.MPI_Datatype
	rank, size           int
	localRank, localSize int
	hostname             string
	finalized            bool
}

var _ comm.Comm = (*World)(nil)

// Init initializes MPI with MPI_THREAD_FUNNELED and returns the world. Lock
// the calling goroutine to its OS thread first (see the package comment);
// Init locks it too, for good. MPI can be initialized once per process.
func Init() (*World, error) {
	switch initialized, finalized := state(); {
	case finalized:
		return nil, errors.New("MPI_Init_thread: MPI was finalized and cannot be initialized again")
	case initialized:
		return nil, errors.New("MPI_Init_thread: MPI is already initialized")
	}
	runtime.LockOSThread()
	var provided C.int
	if err := mpiError("MPI_Init_thread", C.artest_init_thread(C.MPI_THREAD_FUNNELED, &provided)); err != nil {
		return nil, err
	}
	w, err := newWorld(provided)
	if err != nil {
		C.MPI_Finalize()
		return nil, err
	}
	return w, nil
}

func newWorld(provided C.int) (*World, error) {
	if provided < C.MPI_THREAD_FUNNELED {
		return nil, fmt.Errorf("MPI_Init_thread: %s provides thread level %d, below MPI_THREAD_FUNNELED", Version(), provided)
	}
	w := &World{comm: C.artest_comm_world(), byteType: C.artest_byte()}
	if err := mpiError("MPI_Comm_set_errhandler", C.MPI_Comm_set_errhandler(w.comm, C.artest_errors_return())); err != nil {
		return nil, err
	}
	var rank, size C.int
	if err := mpiError("MPI_Comm_rank", C.MPI_Comm_rank(w.comm, &rank)); err != nil {
		return nil, err
	}
	if err := mpiError("MPI_Comm_size", C.MPI_Comm_size(w.comm, &size)); err != nil {
		return nil, err
	}
	w.rank, w.size = int(rank), int(size)
	if err := checkLauncher(w.size, os.LookupEnv); err != nil {
		return nil, err
	}

	var node C.MPI_Comm
	if err := mpiError("MPI_Comm_split_type", C.MPI_Comm_split_type(w.comm, C.MPI_COMM_TYPE_SHARED, rank, C.artest_info_null(), &node)); err != nil {
		return nil, err
	}
	var localRank, localSize C.int
	errRank := mpiError("MPI_Comm_rank", C.MPI_Comm_rank(node, &localRank))
	errSize := mpiError("MPI_Comm_size", C.MPI_Comm_size(node, &localSize))
	errFree := mpiError("MPI_Comm_free", C.MPI_Comm_free(&node))
	if err := errors.Join(errRank, errSize, errFree); err != nil {
		return nil, fmt.Errorf("node communicator: %w", err)
	}
	w.localRank, w.localSize = int(localRank), int(localSize)

	var name [C.MPI_MAX_PROCESSOR_NAME]C.char
	var nameLen C.int
	if err := mpiError("MPI_Get_processor_name", C.MPI_Get_processor_name(&name[0], &nameLen)); err != nil {
		return nil, err
	}
	w.hostname = C.GoStringN(&name[0], nameLen)
	return w, nil
}

// Initialized reports whether MPI has been initialized and not finalized.
// It may be called from any goroutine.
func Initialized() bool {
	initialized, finalized := state()
	return initialized && !finalized
}

func state() (initialized, finalized bool) {
	var i, f C.int
	C.MPI_Initialized(&i)
	C.MPI_Finalized(&f)
	return i != 0, f != 0
}

// Version is the first line of MPI_Get_library_version, e.g. "Open MPI
// v4.1.4, package: ...". It may be called at any time.
func Version() string {
	var buf [C.MPI_MAX_LIBRARY_VERSION_STRING]C.char
	var n C.int
	if C.MPI_Get_library_version(&buf[0], &n) != C.MPI_SUCCESS {
		return flavor + " (library version unknown)"
	}
	s := C.GoStringN(&buf[0], n)
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(strings.TrimRight(s, "\x00"))
}

func (w *World) Rank() int        { return w.rank }
func (w *World) Size() int        { return w.size }
func (w *World) LocalRank() int   { return w.localRank }
func (w *World) LocalSize() int   { return w.localSize }
func (w *World) Hostname() string { return w.hostname }

// Barrier returns once every rank entered it. The agreement step is itself
// an MPI_Allgather, which no rank can leave before every rank contributed,
// so no MPI_Barrier follows it.
func (w *World) Barrier() error {
	const fn = "MPI_Barrier"
	if err := w.usable(fn); err != nil {
		return err
	}
	_, err := w.agree(fn, comm.Call{Op: comm.OpBarrier})
	return err
}

func (w *World) Allgather(send []byte) ([]byte, error) {
	const fn = "MPI_Allgather"
	if err := w.usable(fn); err != nil {
		return nil, err
	}
	if _, err := w.agree(fn, comm.Call{Op: comm.OpAllgather, Len: len(send)}); err != nil {
		return nil, err
	}
	n := len(send)
	out := make([]byte, n*w.size)
	if n == 0 {
		return out, nil
	}
	piece := min(n, chunk.PerRank(w.size))
	stage := newCBuf(piece * (1 + w.size)) // piece to send, then size pieces received
	defer stage.free()
	sendArea, recvArea := stage.bytes()[:piece], stage.bytes()[piece:]
	for round := range chunk.Rounds(n, piece) {
		off, c := chunk.Span(n, piece, round)
		copy(sendArea, send[off:off+c])
		rc := C.MPI_Allgather(stage.at(0), C.int(c), w.byteType, stage.at(piece), C.int(c), w.byteType, w.comm)
		if err := mpiError(fn, rc); err != nil {
			return nil, err
		}
		for r := range w.size {
			copy(out[r*n+off:r*n+off+c], recvArea[r*c:(r+1)*c])
		}
	}
	return out, nil
}

func (w *World) Bcast(buf []byte, root int) error {
	const fn = "MPI_Bcast"
	if err := w.usable(fn); err != nil {
		return err
	}
	if _, err := w.agree(fn, comm.Call{Op: comm.OpBcast, Len: len(buf), Root: root}); err != nil {
		return err
	}
	n := len(buf)
	if n == 0 {
		return nil
	}
	piece := min(n, chunk.PerRank(1))
	stage := newCBuf(piece)
	defer stage.free()
	for round := range chunk.Rounds(n, piece) {
		off, c := chunk.Span(n, piece, round)
		if w.rank == root {
			copy(stage.bytes(), buf[off:off+c])
		}
		if err := mpiError(fn, C.MPI_Bcast(stage.at(0), C.int(c), w.byteType, C.int(root), w.comm)); err != nil {
			return err
		}
		if w.rank != root {
			copy(buf[off:off+c], stage.bytes())
		}
	}
	return nil
}

// Gather learns every rank's length in the agreement step, then moves the
// data in rounds of MPI_Gatherv, each taking the next piece of every rank's
// buffer (nothing from a rank whose buffer is done).
func (w *World) Gather(send []byte, root int) ([][]byte, error) {
	const fn = "MPI_Gatherv"
	if err := w.usable(fn); err != nil {
		return nil, err
	}
	calls, err := w.agree(fn, comm.Call{Op: comm.OpGather, Len: len(send), Root: root})
	if err != nil {
		return nil, err
	}
	isRoot := w.rank == root
	var out [][]byte
	maxLen := 0
	if isRoot {
		out = make([][]byte, w.size)
	}
	for r, c := range calls {
		maxLen = max(maxLen, c.Len)
		if isRoot {
			out[r] = make([]byte, c.Len)
		}
	}
	if maxLen == 0 {
		return out, nil
	}

	piece := min(maxLen, chunk.PerRank(w.size))
	sendStage := newCBuf(piece)
	defer sendStage.free()
	var (
		recvStage      cBuf
		counts, displs []C.int
		recvPtr        unsafe.Pointer
		countsPtr      *C.int
		displsPtr      *C.int
	)
	if isRoot {
		recvStage = newCBuf(piece * w.size)
		defer recvStage.free()
		counts, displs = make([]C.int, w.size), make([]C.int, w.size)
		recvPtr, countsPtr, displsPtr = recvStage.at(0), &counts[0], &displs[0]
	}
	for round := range chunk.Rounds(maxLen, piece) {
		off, c := chunk.Span(len(send), piece, round)
		copy(sendStage.bytes(), send[off:off+c])
		if isRoot {
			total := 0
			for r, call := range calls {
				_, n := chunk.Span(call.Len, piece, round)
				counts[r], displs[r] = C.int(n), C.int(total)
				total += n
			}
		}
		rc := C.MPI_Gatherv(sendStage.at(0), C.int(c), w.byteType,
			recvPtr, countsPtr, displsPtr, w.byteType, C.int(root), w.comm)
		if err := mpiError(fn, rc); err != nil {
			return nil, err
		}
		if isRoot {
			recv := recvStage.bytes()
			for r, call := range calls {
				off, n := chunk.Span(call.Len, piece, round)
				copy(out[r][off:off+n], recv[displs[r]:int(displs[r])+n])
			}
		}
	}
	return out, nil
}

// Abort ends every rank of the job with MPI_Abort on MPI_COMM_WORLD. Open
// MPI 4.1's mpirun then exits with code (mpicheck's tests pin this), and a
// singleton exits with code itself. Abort never returns: if MPI is not
// running, or MPI_Abort comes back, the process exits with code.
//
// It may be called from any goroutine, which is what a watchdog needs while
// the MPI thread is stuck in a collective. Strictly, MPI_THREAD_FUNNELED
// allows MPI calls only from the initializing thread; but MPI_Abort exists
// to take the process down, and Open MPI does so from any thread in practice
// (the watchdog test aborts while the main thread waits in a collective).
// Abort locks the calling goroutine to its thread, so the call runs on one.
func (w *World) Abort(code int) {
	runtime.LockOSThread()
	if Initialized() {
		C.MPI_Abort(C.artest_comm_world(), C.int(code))
	}
	os.Exit(code)
}

// Finalize calls MPI_Finalize; no collective may follow, and MPI cannot be
// initialized again in this process.
func (w *World) Finalize() error {
	const fn = "MPI_Finalize"
	if err := w.usable(fn); err != nil {
		return err
	}
	w.finalized = true
	return mpiError(fn, C.MPI_Finalize())
}

// usable checks what can be checked without peers before a collective.
func (w *World) usable(fn string) error {
	if w.finalized {
		return fmt.Errorf("%s: %w", fn, comm.ErrFinalized)
	}
	var main C.int
	if err := mpiError("MPI_Is_thread_main", C.MPI_Is_thread_main(&main)); err != nil {
		return fmt.Errorf("%s: %w", fn, err)
	}
	if main == 0 {
		return fmt.Errorf("%s: %w", fn, ErrWrongThread)
	}
	return nil
}

// callBytes is the size of one rank's comm.Call on the wire: op, length
// and root as little-endian int64.
const callBytes = 24

// agree exchanges every rank's description of the collective it entered
// and checks that they match (comm.CheckCalls), so that ranks on different
// paths all get an error instead of corrupting data or hanging in mismatched
// MPI calls. It returns the calls in rank order: Gather uses the lengths.
func (w *World) agree(fn string, call comm.Call) ([]comm.Call, error) {
	stage := newCBuf(callBytes * (1 + w.size))
	defer stage.free()
	b := stage.bytes()
	binary.LittleEndian.PutUint64(b[0:], uint64(call.Op))
	binary.LittleEndian.PutUint64(b[8:], uint64(call.Len))
	binary.LittleEndian.PutUint64(b[16:], uint64(int64(call.Root)))
	rc := C.MPI_Allgather(stage.at(0), callBytes, w.byteType, stage.at(callBytes), callBytes, w.byteType, w.comm)
	if err := mpiError("MPI_Allgather", rc); err != nil {
		return nil, fmt.Errorf("%s: agree on the call with peers: %w", fn, err)
	}
	calls := make([]comm.Call, w.size)
	for r := range calls {
		c := b[callBytes*(1+r):]
		calls[r] = comm.Call{
			Op:   comm.Op(binary.LittleEndian.Uint64(c[0:])),
			Len:  int(int64(binary.LittleEndian.Uint64(c[8:]))),
			Root: int(int64(binary.LittleEndian.Uint64(c[16:]))),
		}
	}
	if err := comm.CheckCalls(calls); err != nil {
		return nil, fmt.Errorf("%s: %w", fn, err)
	}
	return calls, nil
}

// cBuf is C memory that MPI may see; see the package comment for why.
type cBuf struct {
	p unsafe.Pointer
	n int
}

func newCBuf(n int) cBuf {
	// C.malloc never returns nil (cgo crashes on exhaustion); max keeps
	// malloc(0) from returning nil.
	return cBuf{p: C.malloc(C.size_t(max(n, 1))), n: n}
}

func (b cBuf) bytes() []byte             { return unsafe.Slice((*byte)(b.p), b.n) }
func (b cBuf) at(off int) unsafe.Pointer { return unsafe.Add(b.p, off) }
func (b cBuf) free()                     { C.free(b.p) }

// mpiError turns an MPI return code into an error naming the call.
func mpiError(fn string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	// Open MPI aborts the process when MPI_Error_string is called outside
	// MPI_Init..MPI_Finalize, which is where a failed Init or Finalize is.
	var buf [C.MPI_MAX_ERROR_STRING]C.char
	var n C.int
	if !Initialized() || C.MPI_Error_string(rc, &buf[0], &n) != C.MPI_SUCCESS {
		return fmt.Errorf("%s: MPI error code %d", fn, int(rc))
	}
	return fmt.Errorf("%s: %s", fn, C.GoStringN(&buf[0], n))
}
