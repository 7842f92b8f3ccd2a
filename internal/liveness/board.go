// Package liveness is the ranks' liveness board: one slot per rank in
// memory every rank of the node maps, where each rank's main thread counts
// its progress and where a rank that found the job hung says so, with its
// account of what it was doing. A rank's watchdog reads every slot from a
// goroutine of its own: it needs no MPI call and no backend call, so it
// sees the job whatever the main threads are blocked in (a kernel launch,
// a plugin's call, an MPI collective waiting for a stuck peer).
package liveness

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/artest/artest/internal/comm"
)

// A slot is one rank's: its progress count, its state and the text its
// state carries.
const (
	slotBytes = 4096
	offBeats  = 0  // uint64: progress steps of the rank's main thread
	offState  = 8  // uint32: State
	offLen    = 12 // uint32: bytes of text
	offText   = 16
	// MaxText is the most bytes of text a slot keeps; longer text is cut.
	MaxText = slotBytes - offText
)

// State is what a rank says about the job.
type State uint32

const (
	// Running: nothing to say.
	Running State = iota
	// Hung: this rank found the job hung; its text says what it was
	// doing. The other ranks' watchdogs end the job with it.
	Hung
	// Reported: rank 0 has written the reports of the hung job; the
	// others may end.
	Reported
)

// Board is one rank's view of the board.
type Board struct {
	mem  []byte
	n    int
	rank int
	// shared: the memory is a mapping every rank of the world shares;
	// false for a board of this rank alone (Private).
	shared bool
	unmap  func() error
}

// nameBytes is the length of the file name rank 0 broadcasts.
const nameBytes = 1024

// Open maps a board every rank of c shares: rank 0 creates a file of one
// slot per rank in dir, every rank maps it, and once every rank has, rank 0
// removes its name (the mappings stay). It is collective. Ranks on several
// nodes cannot share memory: where c spans more than one node, each rank
// gets a board it alone writes (Private) and Shared says false.
func Open(c comm.Comm, dir string) (*Board, error) {
	n := c.Size()
	if c.LocalSize() != n {
		return Private(n, c.Rank()), nil
	}
	size := int64(n) * slotBytes
	buf := make([]byte, nameBytes)
	var f *os.File
	if c.Rank() == 0 {
		var err error
		if f, err = os.CreateTemp(dir, "artest-liveness-*"); err == nil {
			if err = f.Truncate(size); err != nil {
				_ = f.Close()
				_ = os.Remove(f.Name())
				f = nil
			}
		}
		switch {
		case err != nil:
			copy(buf[1:], fmt.Sprintf("create the liveness board in %s: %v", dir, err))
		case len(f.Name()) >= nameBytes-1:
			_ = f.Close()
			_ = os.Remove(f.Name())
			f = nil
			copy(buf[1:], fmt.Sprintf("create the liveness board in %s: path longer than %d bytes", dir, nameBytes-2))
		default:
			buf[0] = 1
			copy(buf[1:], f.Name())
		}
	}
	if err := c.Bcast(buf, 0); err != nil {
		if f != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
		return nil, fmt.Errorf("share the liveness board's name: %w", err)
	}
	text := strings.TrimRight(string(buf[1:]), "\x00")
	if buf[0] != 1 {
		return nil, errors.New(text)
	}
	var mem []byte
	var err error
	if f == nil {
		if f, err = os.OpenFile(text, os.O_RDWR, 0); err != nil {
			err = fmt.Errorf("open the liveness board: %w", err)
		}
	}
	if err == nil {
		if mem, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err != nil {
			err = fmt.Errorf("map the liveness board %s: %w", text, err)
		}
	}
	if f != nil {
		_ = f.Close()
	}
	agreed := comm.Agree(c, err)
	if c.Rank() == 0 {
		_ = os.Remove(text)
	}
	if agreed != nil {
		if mem != nil {
			_ = syscall.Munmap(mem)
		}
		return nil, agreed
	}
	return &Board{mem: mem, n: n, rank: c.Rank(), shared: true, unmap: func() error { return syscall.Munmap(mem) }}, nil
}

// Private is a board of n slots that only this rank writes: what a rank
// whose peers are on other nodes has.
func Private(n, rank int) *Board {
	mem := make([]uint64, n*slotBytes/8) // 8-byte aligned for the atomics
	return &Board{mem: unsafe.Slice((*byte)(unsafe.Pointer(&mem[0])), n*slotBytes), n: n, rank: rank}
}

// Shared reports whether the peers' slots are theirs (one node), not
// copies no one writes.
func (b *Board) Shared() bool { return b.shared }

// Size is the number of slots, one per rank.
func (b *Board) Size() int { return b.n }

// Close unmaps the board.
func (b *Board) Close() error {
	if b.unmap == nil {
		return nil
	}
	err := b.unmap()
	b.unmap = nil
	return err
}

func (b *Board) u64(p, off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&b.mem[p*slotBytes+off]))
}

func (b *Board) u32(p, off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&b.mem[p*slotBytes+off]))
}

// Beat counts one step of this rank's progress.
func (b *Board) Beat() { b.u64(b.rank, offBeats).Add(1) }

// Beats is rank p's progress count.
func (b *Board) Beats(p int) uint64 { return b.u64(p, offBeats).Load() }

// Say sets this rank's state and text: the text first, then the state, so
// a rank that reads the state reads the text that goes with it.
func (b *Board) Say(s State, text string) {
	if len(text) > MaxText {
		text = text[:MaxText]
	}
	me := b.rank
	b.u32(me, offLen).Store(0)
	copy(b.mem[me*slotBytes+offText:(me+1)*slotBytes], text)
	b.u32(me, offLen).Store(uint32(len(text)))
	b.u32(me, offState).Store(uint32(s))
}

// SetState changes this rank's state and keeps its text.
func (b *Board) SetState(s State) { b.u32(b.rank, offState).Store(uint32(s)) }

// State is rank p's state and text.
func (b *Board) State(p int) (State, string) {
	s := State(b.u32(p, offState).Load())
	if s == Running {
		return s, ""
	}
	n := min(int(b.u32(p, offLen).Load()), MaxText)
	return s, string(b.mem[p*slotBytes+offText : p*slotBytes+offText+n])
}
