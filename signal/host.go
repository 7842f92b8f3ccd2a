package signal

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// Block is a view of one rank's SignalBlock in host-addressable shared
// memory. Every access is atomic: peers in other processes read and write the
// same words concurrently.
type Block []byte

func (b Block) word(off int) *uint32 {
	if off < 0 || off+4 > len(b) || off%4 != 0 {
		panic(fmt.Sprintf("signal: word offset %d outside a %d-byte block", off, len(b)))
	}
	return (*uint32)(unsafe.Pointer(&b[off]))
}

// Load reads a word with acquire semantics (Go atomics are sequentially
// consistent, which is stronger).
func (b Block) Load(off int) uint32 { return atomic.LoadUint32(b.word(off)) }

// Store writes a word with release semantics.
func (b Block) Store(off int, v uint32) { atomic.StoreUint32(b.word(off), v) }

// Add adds d to a word and returns the new value.
func (b Block) Add(off int, d uint32) uint32 { return atomic.AddUint32(b.word(off), d) }

// Init writes the header of a fresh (zeroed) SignalBlock.
func (b Block) Init(rank, nranks int) {
	b.Store(OffMagic, Magic)
	b.Store(OffVersion, Version)
	b.Store(OffRank, uint32(rank))
	b.Store(OffNRanks, uint32(nranks))
}

// Epoch is the number of launches block blk of this rank has completed.
func (b Block) Epoch(blk int) uint32 { return b.Load(EpochOffset(blk)) }

// Flag is what peer p last stored for block blk and phase ph.
func (b Block) Flag(ph, blk, p int) uint32 { return b.Load(FlagOffset(ph, blk, p)) }

// Trace returns the variant id and launch count the last kernel wrote.
func (b Block) Trace() (variant, count uint32) {
	return b.Load(OffTraceVariant), b.Load(OffTraceCount)
}

// WriteTrace records one completed launch of variant id.
func (b Block) WriteTrace(id uint32) {
	b.Store(OffTraceVariant, id)
	b.Add(OffTraceCount, 1)
}

// Arrive tells every rank that block blk of rank self has reached phase ph
// of launch epoch: it stores epoch into Flag[ph][blk][self] of each peer's
// block (peers[r] is rank r's SignalBlock, self included). The caller's
// prior writes to shared memory are ordered before these stores.
func Arrive(peers []Block, ph, blk, self int, epoch uint32) {
	for _, p := range peers {
		p.Store(FlagOffset(ph, blk, self), epoch)
	}
}

// Wait blocks until every one of nranks peers has arrived at phase ph of
// epoch for block blk, as seen in own (this rank's SignalBlock). It backs off
// from spinning to sleeping so that many ranks on few cores make progress.
// It returns false, leaving the wait, when stop reports true; stop is polled
// between sleeps and may be nil.
func Wait(own Block, ph, blk, nranks int, epoch uint32, stop func() bool) bool {
	var bo Backoff
	for p := 0; p < nranks; p++ {
		for !Reached(own.Flag(ph, blk, p), epoch) {
			if bo.Pause() && stop != nil && stop() {
				return false
			}
		}
	}
	return true
}

// Backoff is the host side of the bounded backoff the kernels use: spin a
// little, then yield, then sleep with doubling durations up to a ceiling.
type Backoff struct{ n int }

// Backoff steps. The host models run several ranks' worth of goroutines on
// a few cores, so waiting must give the core away quickly; 64 us keeps a
// wake-up well under the time of one small host launch.
const (
	backoffSpins  = 64
	backoffYields = 4096
	backoffFirst  = time.Microsecond
	backoffCeil   = 64 * time.Microsecond
)

// Pause waits a little longer each call. It reports true when it slept, the
// moment to check for cancellation.
func (b *Backoff) Pause() bool {
	b.n++
	switch {
	case b.n <= backoffSpins:
		return false
	case b.n <= backoffSpins+backoffYields:
		// An OS-level yield, not runtime.Gosched: with more ranks than
		// cores, the peer this block waits for is another process that
		// needs this core.
		syscall.Syscall(syscall.SYS_SCHED_YIELD, 0, 0, 0)
		return b.n%16 == 0
	}
	d := backoffFirst << min(b.n-backoffSpins-backoffYields, 6)
	time.Sleep(min(d, backoffCeil))
	return true
}

// Snapshot is a copy of a SignalBlock taken at one moment, for diagnosis.
type Snapshot []byte

// Word reads a word of the copy.
func (s Snapshot) Word(off int) uint32 { return binary.LittleEndian.Uint32(s[off:]) }

// Epoch reads block blk's completed-launch count.
func (s Snapshot) Epoch(blk int) uint32 { return s.Word(EpochOffset(blk)) }

// Flag reads Flag[ph][blk][p].
func (s Snapshot) Flag(ph, blk, p int) uint32 { return s.Word(FlagOffset(ph, blk, p)) }

// Valid reports whether the copy has the SignalBlock header.
func (s Snapshot) Valid() bool {
	return len(s) >= Size && s.Word(OffMagic) == Magic && s.Word(OffVersion) == Version
}
