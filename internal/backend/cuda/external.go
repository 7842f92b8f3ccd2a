package cuda

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/kernels"
)

// externals is what the backend keeps of the External variants (plugins):
// each owner's set-up result, and the last External call it enqueued, for
// the hang diagnosis.
type externals struct {
	// set is the run's External variants (Setup's).
	set backend.ExternalSet
	// setup holds, per owner (kernels.External.Owner), the result of its
	// Setup at the backend's set-up: nil, or the error every rank agreed on,
	// returned by each of its calls.
	setup map[string]error
	// last is the External whose call was the last allreduce enqueued on
	// the stream, and what that call was; nil after an artest kernel's.
	// Atomic: the runner's watchdog reads it (Waiting) from its own
	// goroutine while the main thread may be inside the call.
	last atomic.Pointer[lastExternal]
}

// deviceAddr is what an External gets for a backend address: on cuda the
// same device address (the plugin launches kernels that use it).
func deviceAddr(p backend.Ptr) (uintptr, error) { return uintptr(p), nil }

// externalWorld is the world as an External sees it on this GPU: every
// rank's input, staging and control region as device addresses opened in
// this process (World.Control is empty when no External needs a control
// region: the addresses are then 0).
func (b *Backend) externalWorld(owner string) (*kernels.ExternalWorld, error) {
	off, size := b.ext.set.ExternalControlRegion(owner)
	soff, ssize := b.ext.set.ExternalStagingRegion(owner)
	return externalWorldOf(b.world, b.localRank, b.ordinal, off, size, soff, ssize)
}

// externalWorldOf is w as an owner whose control region is size bytes at
// off sees it (each plugin has one of its own within the control block),
// with its private staging of ssize bytes at soff in the same block when
// ssize is above 0, else the shared staging buffers.
func externalWorldOf(w *backend.World, localRank, ordinal int, off, size, soff, ssize int64) (*kernels.ExternalWorld, error) {
	if w == nil {
		return nil, fmt.Errorf("no world set up")
	}
	if len(w.Input) != w.Size || len(w.Staging) != w.Size || (len(w.Control) != w.Size && len(w.Control) != 0) {
		return nil, fmt.Errorf("world of %d ranks with %d inputs, %d staging buffers and %d control regions", w.Size, len(w.Input), len(w.Staging), len(w.Control))
	}
	if len(w.Control) != w.Size || off+size > w.ControlBytes {
		off, size = 0, 0
	}
	private := ssize > 0
	if private && (len(w.Control) != w.Size || soff+ssize > w.ControlBytes) {
		return nil, fmt.Errorf("private staging %d+%d beyond the %d-byte control block", soff, ssize, w.ControlBytes)
	}
	ew := &kernels.ExternalWorld{
		Rank: w.Rank, Size: w.Size, LocalRank: localRank, Device: ordinal, Backend: "cuda",
		InputBytes: w.Capacity, StagingBytes: w.Capacity, ControlBytes: size,
	}
	if private {
		ew.StagingBytes = ssize
	}
	for r := 0; r < w.Size; r++ {
		ew.Input = append(ew.Input, uintptr(w.Input[r]))
		if private {
			ew.Staging = append(ew.Staging, uintptr(w.Control[r])+uintptr(soff))
		} else {
			ew.Staging = append(ew.Staging, uintptr(w.Staging[r]))
		}
		var ctl uintptr
		if size > 0 {
			ctl = uintptr(w.Control[r]) + uintptr(off)
		}
		ew.Control = append(ew.Control, ctl)
	}
	return ew, nil
}

// setupExternals calls Setup of every External owner of the run's set that
// has a variant for this world size, once, at set-up: after every peer's
// buffers are open, on this thread (the primary context is current), and
// never inside a graph capture (a plugin's setup may allocate or copy). It
// is collective: the ranks agree on each owner's result, so that a setup
// that fails on one rank fails that plugin's calls on every rank, at their
// first call (the cases of other variants run), instead of leaving peers
// waiting in its kernels.
func (b *Backend) setupExternals(c comm.Comm) error {
	b.ext.setup = map[string]error{}
	for _, e := range b.ext.set.ExternalOwners(b.world.Size) {
		owner := e.Owner()
		var err error
		if w, werr := b.externalWorld(owner); werr != nil {
			err = fmt.Errorf("%s: setup: %w", owner, werr)
		} else {
			err = e.Setup(w)
		}
		agreed := comm.Agree(c, err)
		if agreed != nil && !errors.As(agreed, new(*comm.RankError)) {
			return fmt.Errorf("agree on the setup of %s: %w", owner, agreed)
		}
		b.ext.setup[owner] = agreed
	}
	return nil
}

// allreduceExternal enqueues one call of an External variant on the
// stream: the plugin's allreduce gets the device addresses of the message
// (offsets included), the stream as a uint64 (it must launch there and
// only there, so graph capture records it) and the parameters, on this
// thread. A staged input is the plugin's to copy when the variant stages
// its own input (Launch.Src), as on the host backend.
func (b *Backend) allreduceExternal(l *backend.Launch) error {
	ext := l.Variant.External
	err, done := b.ext.setup[ext.Owner()]
	if !done {
		// Registered after set-up (no plugin is, in artest): set up now.
		var w *kernels.ExternalWorld
		if w, err = b.externalWorld(ext.Owner()); err == nil {
			err = ext.Setup(w)
		} else {
			err = fmt.Errorf("%s: setup: %w", ext.Owner(), err)
		}
		if b.ext.setup == nil {
			b.ext.setup = map[string]error{}
		}
		b.ext.setup[ext.Owner()] = err
	}
	if err != nil {
		return err
	}
	call, err := externalCall(l, b.world, uint64(b.stream))
	if err != nil {
		return err
	}
	b.ext.last.Store(&lastExternal{ext, fmt.Sprintf("allreduce of %s (%s %s, %d elements)", l.Variant.Name, l.DType, l.Op, call.Count)})
	return ext.Allreduce(call)
}

// lastExternal is the last External call enqueued: its variant's owner
// and the call as the diagnosis names it.
type lastExternal struct {
	e    kernels.External
	call string
}

// externalCall is l as an External's call on this backend: device
// addresses, and the stream the plugin must launch on.
func externalCall(l *backend.Launch, w *backend.World, stream uint64) (*kernels.ExternalCall, error) {
	call, err := backend.ExternalCall(l, w, deviceAddr)
	if err != nil {
		return nil, err
	}
	call.Stream = stream
	return call, nil
}

// Waiting is backend.Waiter's: the External call this rank is inside (a
// plugin's allreduce that has not returned), or, when the last allreduce
// enqueued on the stream was an External's, that call, whose kernels have
// not completed. A plugin's barriers are its own, not in any SignalBlock.
func (b *Backend) Waiting() string {
	l := b.ext.last.Load()
	if l == nil {
		return ""
	}
	if s := l.e.Busy(); s != "" {
		return s
	}
	return fmt.Sprintf("rank %d's stream has not finished the last call enqueued on it, %s: %s", b.rank, l.e.Owner(), l.call)
}

var _ backend.Waiter = (*Backend)(nil)
