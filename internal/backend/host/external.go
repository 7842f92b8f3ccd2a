package host

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/kernels"
)

// externals is what the backend keeps of the External variants it called.
type externals struct {
	// set is the run's External variants (Setup's).
	set backend.ExternalSet
	// setup is each owner's set-up result as the ranks agreed on it
	// (setupExternals).
	setup map[string]error
	// last is the External the stream called last, for Waiting.
	last atomic.Value // of extHolder
}

type extHolder struct{ e kernels.External }

// real is the process address of backend address p: what a plugin (C code
// on the CPU) reads and writes. Every host byte outside the Go heap
// (segments and Alloc's mappings), so the plugin may hold it.
func (b *Backend) real(p backend.Ptr) (uintptr, error) {
	var out uintptr
	err := catch(func() { out = uintptr(unsafe.Pointer(&b.Bytes(p, 1)[0])) })
	return out, err
}

// externalWorld is the world as owner sees it: its own control region
// within the control block.
func (b *Backend) externalWorld(owner string) (*kernels.ExternalWorld, error) {
	w := b.world
	if w == nil {
		return nil, fmt.Errorf("no world set up")
	}
	off, size := b.ext.set.ExternalControlRegion(owner)
	soff, ssize := b.ext.set.ExternalStagingRegion(owner)
	// A plugin that declares no control bytes (and no private staging)
	// gets none: its control pointers are 0, as on the cuda backend.
	if (size > 0 || ssize > 0) && len(w.Control) != w.Size {
		return nil, fmt.Errorf("no control regions (no External variant was registered before set-up)")
	}
	if off+size > w.ControlBytes {
		return nil, fmt.Errorf("%s: control region %d+%d beyond the %d-byte control block", owner, off, size, w.ControlBytes)
	}
	// A declared staging size is private, in the control block (see
	// registry's externalControlLayout); none: the shared staging buffers.
	if soff+ssize > w.ControlBytes {
		return nil, fmt.Errorf("%s: private staging %d+%d beyond the %d-byte control block", owner, soff, ssize, w.ControlBytes)
	}
	ew := &kernels.ExternalWorld{
		Rank: w.Rank, Size: w.Size, LocalRank: w.Rank, Device: -1, Backend: "host",
		InputBytes: w.Capacity, StagingBytes: w.Capacity, ControlBytes: size,
	}
	if ssize > 0 {
		ew.StagingBytes = ssize
	}
	for r := 0; r < w.Size; r++ {
		in, err := b.real(w.Input[r])
		if err != nil {
			return nil, err
		}
		stPtr := w.Staging[r]
		if ssize > 0 {
			stPtr = w.Control[r] + backend.Ptr(soff)
		}
		st, err := b.real(stPtr)
		if err != nil {
			return nil, err
		}
		var ctl uintptr
		if size > 0 {
			if ctl, err = b.real(w.Control[r] + backend.Ptr(off)); err != nil {
				return nil, err
			}
		}
		ew.Input = append(ew.Input, in)
		ew.Staging = append(ew.Staging, st)
		ew.Control = append(ew.Control, ctl)
	}
	return ew, nil
}

// allreduceExternal enqueues one call of an External variant: the call
// runs on the stream goroutine and returns when it is done (the host
// backend passes no stream). Set-up happened at Setup (setupExternals); a
// failed one fails the call at once.
func (b *Backend) allreduceExternal(l *backend.Launch) error {
	ext := l.Variant.External
	call, err := backend.ExternalCall(l, b.world, b.real)
	if err != nil {
		return err
	}
	if err := b.ext.setup[ext.Owner()]; err != nil {
		return err // a rank's set-up failed: every rank's calls fail at once
	}
	return b.enqueue(func() error {
		b.ext.last.Store(extHolder{ext})
		if err := b.setupExternal(ext); err != nil {
			return err
		}
		return ext.Allreduce(call)
	})
}

// setupExternals sets up every External owner of the run's set that has a
// variant for this world size, once, at set-up, as the cuda backend does:
// the ranks agree on each owner's result, so that a setup that fails on one
// rank fails that plugin's calls on every rank at their first call (the
// cases of other variants run), with that rank's error, instead of leaving
// its peers waiting in the plugin's barriers until the watchdog fires.
func (b *Backend) setupExternals(c comm.Comm) error {
	b.ext.setup = map[string]error{}
	for _, e := range b.ext.set.ExternalOwners(b.world.Size) {
		err := b.setupExternal(e)
		agreed := comm.Agree(c, err)
		if agreed != nil && !errors.As(agreed, new(*comm.RankError)) {
			return fmt.Errorf("agree on the set-up of %s: %w", e.Owner(), agreed)
		}
		b.ext.setup[e.Owner()] = agreed
	}
	return nil
}

// setupExternal sets ext up on its first call; the External itself makes
// later calls return the first one's result.
func (b *Backend) setupExternal(ext kernels.External) error {
	w, err := b.externalWorld(ext.Owner())
	if err != nil {
		return fmt.Errorf("%s: set-up: %w", ext.Owner(), err)
	}
	return ext.Setup(w)
}

// Waiting names the External call the stream is inside, if any.
func (b *Backend) Waiting() string {
	h, ok := b.ext.last.Load().(extHolder)
	if !ok || h.e == nil {
		return ""
	}
	return h.e.Busy()
}
