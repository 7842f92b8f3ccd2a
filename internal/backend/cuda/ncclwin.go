package cuda

import (
	"errors"
	"fmt"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/nccl"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// ncclWindows is nccl-win's memory: this rank's input and output region,
// each of the world's capacity, each its own ncclMemAlloc allocation
// registered as a symmetric window (NCCL_WIN_COLL_SYMMETRIC), as nccl-tests
// -R 2 allocates its send and receive buffers. A symmetric window must lie
// in cuMem (VMM) memory on every rank, which the world's cuMemAlloc'd,
// IPC-shared input cannot be; so the runner writes nccl-win's inputs here
// and reads its outputs from here (backend.OwnRegioner). Made at the first
// nccl-win case, undone at Close.
type ncclWindows struct {
	in, out cu.DevicePtr
	size    int64
	wins    []nccl.Window
	// reason, once set, is why the windows could not be made; every later
	// nccl-win case fails with it instead of trying again.
	reason string
}

// KeepsOwnRegions is backend.OwnRegioner's: nccl-win's buffers are the
// windows.
func (b *Backend) KeepsOwnRegions(v *kernels.Variant) bool {
	return !v.Custom && v.External == nil && v.NCCL == kernels.NCCLWindow
}

// OwnRegions is backend.OwnRegioner's: nccl-win's input and output
// windows, made on first use. Collective then: every rank allocates, the
// ranks agree that all of them could, and only then register (a rank
// that stopped before the registration would leave the others waiting
// in it).
func (b *Backend) OwnRegions(c comm.Comm, v *kernels.Variant) (in, out backend.Ptr, ok bool, err error) {
	if !b.KeepsOwnRegions(v) {
		return 0, 0, false, nil
	}
	if err := b.openWindows(c); err != nil {
		return 0, 0, true, err
	}
	return backend.Ptr(b.win.in), backend.Ptr(b.win.out), true, nil
}

func (b *Backend) openWindows(c comm.Comm) error {
	w := &b.win
	if w.reason != "" {
		return errors.New(w.reason)
	}
	if w.in != 0 {
		return nil
	}
	if b.world == nil || b.ncclComm == 0 {
		w.reason = "nccl-win: no NCCL communicator"
		return errors.New(w.reason)
	}
	size := b.world.Capacity
	var allocErr string
	for _, p := range []*cu.DevicePtr{&w.in, &w.out} {
		q, err := b.nccl.MemAlloc(uint64(size))
		if err != nil {
			allocErr = fmt.Sprintf("rank %d: ncclMemAlloc %d bytes: %v", b.rank, size, err)
			break
		}
		*p = q
	}
	agreed, err := comm.AgreeReason(c, allocErr)
	if err == nil && agreed != "" {
		err = errors.New("nccl-win: " + agreed)
	}
	if err != nil {
		w.reason = err.Error()
		return errors.Join(err, b.closeWindows())
	}
	w.size = size
	for _, p := range []cu.DevicePtr{w.in, w.out} {
		h, err := b.nccl.CommWindowRegister(b.ncclComm, p, uint64(size), nccl.WinCollSymmetric)
		if err != nil {
			w.reason = fmt.Sprintf("nccl-win: ncclCommWindowRegister %d bytes at %#x: %v", size, uint64(p), err)
			return errors.Join(errors.New(w.reason), b.closeWindows())
		}
		w.wins = append(w.wins, h)
	}
	return nil
}

// windowBuffers checks that a call of nccl-win reads its input window
// and writes its output window: anything else would have NCCL take its
// regular path and time that as nccl-win.
func (b *Backend) windowBuffers(send, recv cu.DevicePtr) error {
	w := &b.win
	if w.in == 0 {
		return errors.New("nccl-win: the windows were not made (the runner did not ask for nccl-win's own buffers)")
	}
	in := func(p, base cu.DevicePtr) bool { return p >= base && p < base+cu.DevicePtr(w.size) }
	if !in(send, w.in) {
		return fmt.Errorf("nccl-win: the input %#x is not in the input window [%#x, +%d)", uint64(send), uint64(w.in), w.size)
	}
	if !in(recv, w.out) && !in(recv, w.in) {
		return fmt.Errorf("nccl-win: the output %#x is in neither window", uint64(recv))
	}
	return nil
}

// closeWindows deregisters the windows (collective, as their
// registration was) and frees their memory; Close calls it before it
// destroys the communicator.
func (b *Backend) closeWindows() error {
	w := &b.win
	var errs []error
	for _, h := range w.wins {
		errs = append(errs, b.nccl.CommWindowDeregister(b.ncclComm, h))
	}
	w.wins = nil
	for _, p := range []*cu.DevicePtr{&w.in, &w.out} {
		if *p != 0 {
			errs = append(errs, b.nccl.MemFree(*p))
			*p = 0
		}
	}
	return errors.Join(errs...)
}

// windowDefectFrom and windowDefectFixed bound the NCCLs whose symmetric
// LL allreduce gets 16-bit sums wrong at offsets of 2 mod 4 bytes: seen
// with 2.28.9; its load helper (loadPack) is the same through 2.29.7 and
// was rewritten in 2.30.3, whose notes list the fix. Other versions run
// those cases, so an older broken NCCL shows itself.
var (
	windowDefectFrom  = nccl.Version{Major: 2, Minor: 28, Patch: 9}
	windowDefectFixed = nccl.Version{Major: 2, Minor: 30, Patch: 3}
)

// windowDefect is the reason nccl-win's cases of 16-bit types at an offset
// of 2 mod 4 bytes are skipped with those NCCLs (backend.DefectKnower).
const windowDefect = "a known defect of NCCL 2.28.9 to 2.30.2, not run (--run-known-defects runs it): " +
	"its symmetric LL allreduce (AllReduce_AGxLL_R) returns one element in four wrong for f16 and bf16 " +
	"at buffer offsets of 2 mod 4 bytes (docs/findings/2026-11-nccl-symmetric-misaligned-16bit.md)"

// versionBefore reports whether a is an older NCCL than b.
func versionBefore(a, b nccl.Version) bool {
	if a.Major != b.Major {
		return a.Major < b.Major
	}
	if a.Minor != b.Minor {
		return a.Minor < b.Minor
	}
	return a.Patch < b.Patch
}

// KnownDefect is backend.DefectKnower's: nccl-win's cases that NCCL 2.28.9
// gets wrong. All sizes are skipped, not only those where NCCL picks that
// kernel: which kernel it picks depends on the size, the ranks and the
// machine.
func (b *Backend) KnownDefect(v *kernels.Variant, dt reference.DType, offsetBytes int64) string {
	if !b.KeepsOwnRegions(v) || b.nccl == nil {
		return ""
	}
	if ver := b.nccl.Version(); versionBefore(ver, windowDefectFrom) || !versionBefore(ver, windowDefectFixed) {
		return ""
	}
	if dt.Size() != 2 || offsetBytes%4 != 2 {
		return ""
	}
	return windowDefect
}

var (
	_ backend.OwnRegioner  = (*Backend)(nil)
	_ backend.DefectKnower = (*Backend)(nil)
)
