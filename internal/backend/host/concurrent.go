package host

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
)

var (
	_ backend.ConcurrentLauncher = (*Backend)(nil)
	_ backend.Reregisterer       = (*Backend)(nil)
)

// AllreduceConcurrent enqueues l on the second stream, which runs beside
// the first as a second CUDA stream does: the launch runs on its own
// goroutine, concurrently with whatever the first stream runs. The
// enqueue path is Allreduce's own, with the second stream in the first's
// place for the call (only the runner's goroutine touches b.stream).
func (b *Backend) AllreduceConcurrent(l *backend.Launch) error {
	if b.side == nil {
		b.side = newStream()
		b.side.setProgress(b.stream.progressFunc())
	}
	first := b.stream
	b.stream = b.side
	defer func() { b.stream = first }()
	return b.Allreduce(l)
}

// syncStreams is Sync for both streams, each timing out when none of its
// ops finished within timeout (stream.sync): the first stream's error (or
// timeout) wins. The second ran beside the first all along, so its wait
// is counted from the first's end.
func (b *Backend) syncStreams(timeout time.Duration) error {
	err := b.stream.sync(timeout)
	if b.side == nil || errors.Is(err, backend.ErrTimeout) {
		return err
	}
	if serr := b.side.sync(timeout); err == nil {
		err = serr
	}
	return err
}

// closeSide drains and stops the second stream (its waiting kernels see
// the stop flag Close set and leave).
func (b *Backend) closeSide() error {
	if b.side == nil {
		return nil
	}
	if err := b.side.sync(5 * time.Second); errors.Is(err, backend.ErrTimeout) {
		return fmt.Errorf("host second stream did not drain on close: %w", err)
	}
	b.side.close()
	return nil
}

// ReregisterInput gives rank owner a new input segment of the world's
// capacity, exchanged like Setup's: owner creates it and sends its name,
// every rank maps it, and the name is removed once all hold a mapping.
// The old input segment stays mapped (a captured graph may still hold its
// address) until Close.
func (b *Backend) ReregisterInput(c comm.Comm, owner int) error {
	w := b.world
	if w == nil || owner < 0 || owner >= w.Size {
		return fmt.Errorf("re-register rank %d's input: no such rank in the world", owner)
	}
	var name string
	var mine []byte
	var err error
	handle := make([]byte, handleBytes)
	if c.Rank() == owner {
		id := make([]byte, 8)
		if _, err = rand.Read(id); err == nil {
			name = filepath.Join(b.dir, fmt.Sprintf("artest-%s-r%d-input", hex.EncodeToString(id), owner))
			if mine, err = createSegment(name, w.Capacity); err == nil {
				copy(handle, name)
			}
		}
	}
	all, gerr := c.Allgather(handle)
	if gerr != nil {
		if name != "" {
			os.Remove(name)
		}
		return fmt.Errorf("exchange rank %d's new input segment: %w", owner, gerr)
	}
	peerName := strings.TrimRight(string(all[owner*handleBytes:(owner+1)*handleBytes]), "\x00")
	mem := mine
	switch {
	case err != nil:
	case peerName == "":
		err = exitcode.Envf("rank %d could not create its new input segment", owner)
	case c.Rank() != owner:
		if mem, err = openSegment(peerName, w.Capacity); err != nil {
			err = fmt.Errorf("open rank %d's new input segment: %w", owner, err)
		}
	}
	// Everyone learns whether everyone mapped it before anyone uses it.
	aerr := comm.Agree(c, err)
	if name != "" {
		os.Remove(name)
	}
	if aerr != nil {
		return aerr
	}
	w.Input[owner] = b.addRegion(&region{mem: mem, mapped: true})
	w.BumpGen(owner)
	return nil
}
