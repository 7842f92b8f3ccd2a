package sigblock

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
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

// Epoch is the number of launches block blk of this rank has completed
// (the epoch word's low half).
func (b Block) Epoch(blk int) uint32 { return uint32(b.Load64(EpochOffset(blk))) }

// Flag is the epoch peer p last stored for block blk and phase ph (the
// flag's low half; FlagTag is the high half).
func (b Block) Flag(ph, blk, p int) uint32 { return uint32(b.Load64(FlagOffset(ph, blk, p))) }

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
// of launch epoch: it stores tag<<32 | epoch into Flag[ph][blk][self] of
// each peer's block (peers[r] is rank r's SignalBlock, self included), one
// 64-bit store each, and rings each peer's bell (Ring). The caller's prior
// writes to shared memory are ordered before these stores.
func Arrive(peers []Block, ph, blk, self int, tag, epoch uint32) {
	for _, p := range peers {
		p.Store64(FlagOffset(ph, blk, self), FlagValue(tag, epoch))
		p.Ring()
	}
}

// Wait blocks until every one of nranks peers has arrived at phase ph of
// epoch for block blk, as seen in own (this rank's SignalBlock). It spins
// briefly, then sleeps on own's bell (Parker) so that many ranks on few
// cores make progress. It returns false, leaving the wait, when stop
// reports true; stop is polled between sleeps and may be nil.
func Wait(own Block, ph, blk, nranks int, epoch uint32, stop func() bool) bool {
	return WaitBounded(own, ph, blk, nranks, epoch, nil, stop, 0).Outcome == WaitArrived
}

// WaitOutcome is how a bounded wait ended.
type WaitOutcome int

const (
	WaitArrived     WaitOutcome = iota // every peer arrived
	WaitStopped                        // stop reported true
	WaitTimedOut                       // the deadline passed first
	WaitTagMismatch                    // a peer's flag reached the epoch with another tag
)

// WaitResult is a bounded wait's outcome; after WaitTimedOut, Peer is the
// first rank whose flag had not arrived, Seen that flag, and Waited how long
// the wait lasted; after WaitTagMismatch, Peer is the rank whose flag
// carried another tag, Seen that tag and Want the one expected.
type WaitResult struct {
	Outcome WaitOutcome
	Peer    int
	Seen    uint32
	Want    uint32
	Waited  time.Duration
}

// WaitBounded is Wait with the device-side deadline of the kernels'
// barrier(): when timeout > 0 and the wait has lasted longer than timeout,
// counted from its first failed poll (as the kernels count it: a fast
// barrier never reads the clock), it gives up with WaitTimedOut. The clock
// is read only when the Parker slept, at most parkMax apart, which is often
// enough for a deadline of milliseconds or more.
//
// tags, when not nil, holds the tag expected of each peer (Args.PeerTag):
// a flag that reached exactly epoch with another tag ends the wait with
// WaitTagMismatch, as the kernels' barrier() does. A flag ahead of epoch
// belongs to a later launch and its tag is not checked.
func WaitBounded(own Block, ph, blk, nranks int, epoch uint32, tags []uint32, stop func() bool, timeout time.Duration) WaitResult {
	pk := NewParker(own)
	var start time.Time
	for p := 0; p < nranks; p++ {
		off := FlagOffset(ph, blk, p)
		arrived := func() bool { return Reached(uint32(own.Load64(off)), epoch) }
		for {
			bell := pk.Bell()
			v := own.Load64(off)
			seen := uint32(v)
			if Reached(seen, epoch) {
				if tag := uint32(v >> 32); tags != nil && seen == epoch && tag != tags[p] {
					return WaitResult{Outcome: WaitTagMismatch, Peer: p, Seen: tag, Want: tags[p]}
				}
				break
			}
			if start.IsZero() {
				start = time.Now()
			}
			if !pk.Pause(bell, arrived) {
				continue
			}
			if stop != nil && stop() {
				return WaitResult{Outcome: WaitStopped}
			}
			if waited := time.Since(start); timeout > 0 && waited > timeout {
				return WaitResult{Outcome: WaitTimedOut, Peer: p, Seen: seen, Waited: waited}
			}
		}
	}
	return WaitResult{Outcome: WaitArrived}
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
