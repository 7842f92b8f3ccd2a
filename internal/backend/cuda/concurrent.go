package cuda

import (
	"fmt"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/exitcode"
)

var (
	_ backend.ConcurrentLauncher = (*Backend)(nil)
	_ backend.Reregisterer       = (*Backend)(nil)
)

// AllreduceConcurrent launches l on a second non-blocking stream, not
// ordered with the first: two allreduces of this rank in flight on one
// SignalBlock at once. The launch path is Allreduce's own, with the second
// stream in the first's place for the call (every method runs on the
// backend's one OS thread).
func (b *Backend) AllreduceConcurrent(l *backend.Launch) error {
	if b.side == 0 {
		s, err := b.newStream()
		if err != nil {
			return wrap(err)
		}
		b.side = s
	}
	first := b.stream
	b.stream = b.side
	defer func() { b.stream = first }()
	return b.Allreduce(l)
}

// streamsIdle reports whether both streams have finished their work.
func (b *Backend) streamsIdle() (bool, error) {
	done, err := b.d.StreamQuery(b.stream)
	if err != nil || !done || b.side == 0 {
		return done, err
	}
	return b.d.StreamQuery(b.side)
}

// ReregisterInput gives rank owner a new input buffer of the world's
// capacity: owner allocates, clears and exports it, the ranks agree that
// it did, the handle travels in one collective, every other rank opens it,
// and all agree again before World.Input[owner] changes. The old buffer stays
// allocated and opened until Close: a captured graph may still hold its
// address, and must fault nothing before its tags stop it.
func (b *Backend) ReregisterInput(c comm.Comm, owner int) error {
	w := b.world
	if w == nil || owner < 0 || owner >= w.Size {
		return fmt.Errorf("re-register rank %d's input: no such rank in the world", owner)
	}
	me := make([]byte, handleBytes)
	var mine cu.DevicePtr
	var newErr error
	if c.Rank() == owner {
		var h newBuffer
		if h, newErr = b.newInput(w.Capacity); newErr == nil {
			mine = h.ptr
			copy(me, h.handle[:])
		}
	}
	if err := comm.Agree(c, newErr); err != nil {
		return err
	}
	all, err := c.Allgather(me)
	if err != nil {
		return fmt.Errorf("exchange rank %d's new input handle: %w", owner, err)
	}
	p := mine
	var openErr error
	if c.Rank() != owner {
		var h cu.IPCMemHandle
		copy(h[:], all[owner*handleBytes:(owner+1)*handleBytes])
		if p, openErr = b.d.IpcOpenMemHandle(h); openErr != nil {
			openErr = exitcode.Envf("open rank %d's new input handle: %v", owner, openErr)
		} else {
			b.opened = append(b.opened, p)
		}
	}
	if err := comm.Agree(c, openErr); err != nil {
		return err
	}
	w.Input[owner] = backend.Ptr(p)
	w.BumpGen(owner)
	return nil
}

type newBuffer struct {
	ptr    cu.DevicePtr
	handle cu.IPCMemHandle
}

// newInput allocates, clears and exports a buffer of n bytes; Close frees it.
func (b *Backend) newInput(n int64) (newBuffer, error) {
	p, err := b.d.MemAlloc(uint64(n))
	if err != nil {
		return newBuffer{}, exitcode.Envf("allocate a new input buffer (%d bytes): %v", n, err)
	}
	b.own = append(b.own, p)
	if err := b.d.MemsetD8Async(p, 0, uint64(n), b.stream); err != nil {
		return newBuffer{}, fmt.Errorf("clear the new input buffer: %w", err)
	}
	if err := b.d.StreamSynchronize(b.stream); err != nil {
		return newBuffer{}, fmt.Errorf("clear the new input buffer: %w", err)
	}
	h, err := b.d.IpcGetMemHandle(p)
	if err != nil {
		return newBuffer{}, exitcode.Envf("IPC handle of the new input buffer: %v", err)
	}
	return newBuffer{ptr: p, handle: h}, nil
}
