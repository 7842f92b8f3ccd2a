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

// ncclRegion is one NCCL baseline's memory: this rank's input and output
// region, each of the world's capacity, each its own ncclMemAlloc
// allocation, as nccl-tests (built against NCCL 2.19 or later) allocates
// its send and receive buffers. NCCL registers only cuMem (VMM) memory
// with its peers: a symmetric window (nccl-win) must lie in it, and NCCL's
// automatic registration of the buffers a CUDA graph captures
// (NCCL_GRAPH_REGISTER, on by default), which lets its ring read and write
// the peers' buffers directly, skips anything else. The world's
// cuMemAlloc'd, IPC-shared input is not such memory, so the runner writes
// the baselines' inputs here and reads their outputs from here
// (backend.OwnRegioner). Made at the baseline's first case, undone at
// Close.
type ncclRegion struct {
	in, out cu.DevicePtr
	size    int64
	// wins are nccl-win's symmetric windows over in and out.
	wins []nccl.Window
	// reason, once set, is why the region could not be made; every later
	// case of the baseline fails with it instead of trying again.
	reason string
}

// ncclRegions holds a region per NCCL baseline, indexed by its mode: the
// registrations of nccl-reg and the windows of nccl-win must not reach
// the plain nccl's calls (NCCL uses a registration it finds).
type ncclRegions [kernels.NCCLWindow + 1]ncclRegion

// ncclBaseline: v is one of the NCCL baselines (not a custom variant that
// needs NCCL, not a plugin's).
func ncclBaseline(v *kernels.Variant) bool {
	return v.Kind == kernels.KindNCCL && v.Needs&kernels.NeedNCCL != 0 && int(v.NCCL) < len(ncclRegions{})
}

// KeepsOwnRegions is backend.OwnRegioner's: the NCCL baselines' buffers
// are their regions.
func (b *Backend) KeepsOwnRegions(v *kernels.Variant) bool { return ncclBaseline(v) }

// OwnRegionsOptional is backend.OptionalRegioner's: nccl and nccl-reg run
// on the world's buffers too (stress does, needing an output per
// iteration), where NCCL cannot register their outputs in a graph; only
// nccl-win must have its windows.
func (b *Backend) OwnRegionsOptional(v *kernels.Variant) bool {
	return ncclBaseline(v) && v.NCCL != kernels.NCCLWindow
}

// OwnRegions is backend.OwnRegioner's: v's input and output region, made
// on first use. Collective then: every rank allocates, the ranks agree
// that all of them could, and only then (nccl-win) register windows (a
// rank that stopped before the registration would leave the others
// waiting in it). Where this NCCL has no ncclMemAlloc (before 2.19), nccl
// and nccl-reg use the world's buffers (ok false).
func (b *Backend) OwnRegions(c comm.Comm, v *kernels.Variant) (in, out backend.Ptr, ok bool, err error) {
	if !b.KeepsOwnRegions(v) {
		return 0, 0, false, nil
	}
	if b.OwnRegionsOptional(v) && (b.nccl == nil || b.nccl.MemAllocReason() != "") {
		return 0, 0, false, nil
	}
	r := &b.ncclMem[v.NCCL]
	if err := b.openRegion(c, v, r); err != nil {
		return 0, 0, true, err
	}
	return backend.Ptr(r.in), backend.Ptr(r.out), true, nil
}

func (b *Backend) openRegion(c comm.Comm, v *kernels.Variant, r *ncclRegion) error {
	if r.reason != "" {
		return errors.New(r.reason)
	}
	if r.in != 0 {
		return nil
	}
	if b.world == nil || b.ncclComm == 0 {
		r.reason = v.Name + ": no NCCL communicator"
		return errors.New(r.reason)
	}
	size := b.world.Capacity
	var allocErr string
	for _, p := range []*cu.DevicePtr{&r.in, &r.out} {
		q, err := b.nccl.MemAlloc(uint64(size))
		if err != nil {
			allocErr = fmt.Sprintf("rank %d: ncclMemAlloc %d bytes: %v", b.rank, size, err)
			break
		}
		*p = q
	}
	agreed, err := comm.AgreeReason(c, allocErr)
	if err == nil && agreed != "" {
		err = errors.New(v.Name + ": " + agreed)
	}
	if err != nil {
		r.reason = err.Error()
		return errors.Join(err, b.closeRegion(r))
	}
	r.size = size
	if v.NCCL != kernels.NCCLWindow {
		return nil
	}
	for _, p := range []cu.DevicePtr{r.in, r.out} {
		h, err := b.nccl.CommWindowRegister(b.ncclComm, p, uint64(size), nccl.WinCollSymmetric)
		if err != nil {
			r.reason = fmt.Sprintf("nccl-win: ncclCommWindowRegister %d bytes at %#x: %v", size, uint64(p), err)
			return errors.Join(errors.New(r.reason), b.closeRegion(r))
		}
		r.wins = append(r.wins, h)
	}
	return nil
}

// windowBuffers checks that a call of nccl-win reads its input window
// and writes its output window: anything else would have NCCL take its
// regular path and time that as nccl-win.
func (b *Backend) windowBuffers(send, recv cu.DevicePtr) error {
	w := &b.ncclMem[kernels.NCCLWindow]
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

// closeRegions deregisters the windows (collective, as their
// registration was) and frees every region's memory; Close calls it after
// deregisterAll (nccl-reg's registrations of these regions) and before it
// destroys the communicator.
func (b *Backend) closeRegions() error {
	var errs []error
	for i := range b.ncclMem {
		errs = append(errs, b.closeRegion(&b.ncclMem[i]))
	}
	return errors.Join(errs...)
}

func (b *Backend) closeRegion(r *ncclRegion) error {
	var errs []error
	for _, h := range r.wins {
		errs = append(errs, b.nccl.CommWindowDeregister(b.ncclComm, h))
	}
	r.wins = nil
	for _, p := range []*cu.DevicePtr{&r.in, &r.out} {
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
	if !ncclBaseline(v) || v.NCCL != kernels.NCCLWindow || b.nccl == nil {
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
	_ backend.OwnRegioner      = (*Backend)(nil)
	_ backend.OptionalRegioner = (*Backend)(nil)
	_ backend.DefectKnower     = (*Backend)(nil)
)
