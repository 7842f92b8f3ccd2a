// Package sigblock is the start/mid/end barrier protocol that every custom
// variant uses: the memory layout of a rank's SignalBlock, shared byte for
// byte with kernels/device/signal.cuh, the epoch rules, the host (CPU)
// implementation of arrive and wait, and the decoding of a block's flags into
// a hang diagnosis.
//
// One SignalBlock per rank lives in memory every peer can write (CUDA IPC
// memory or a shared-memory segment). Peer p tells rank r that block b of p
// has reached phase ph of launch epoch e by storing the 64-bit word
// tag<<32 | e into Flag[ph][b][p] of r's SignalBlock, in one store (release
// or relaxed: see kernels/device/sync.cuh, Sync). Rank r's block b waits until
// every peer's flag has reached e; then the high word, the peer's launch
// tag, must be what r expects of peer p for this call (Args.PeerTag[p]): a
// peer that launched a different call (size, variant, grid, parameters) or
// whose buffers are not the ones r's launch points at is found there, at
// the first barrier, instead of hanging or corrupting data (tag.go).
// Epochs are per block and kept in the rank's own SignalBlock (Epoch[b]);
// each launch uses Epoch[b]+1, so flags are never reset and back-to-back
// launches or graph replays can never mistake an old flag for a new one.
// The epoch word is 64 bits: its high word is the block's claim, set by
// the launch that runs block b (one atomic OR, which also reads the
// epoch) and cleared by the same store that writes the new epoch at its
// end, so a second launch of this rank that finds the claim held is using
// the same block's state concurrently (two streams) and says so.
package sigblock

import "fmt"

// Layout constants. kernels/device/signal.cuh repeats them; a test keeps both equal.
const (
	Magic   uint32 = 0x41525453 // "ARTS" little-endian
	Version uint32 = 3          // 2: the ring region; 3: 64-bit flags (launch tags) and epochs (claims)

	// MaxRanks bounds the world size every variant can address (the kernel
	// argument block carries this many peer pointers).
	MaxRanks = 16
	// MaxBlocks bounds the grid of any custom kernel: flags are per block.
	MaxBlocks = 256

	// Phases of one launch.
	PhaseStart = 0 // inputs written: peers may read them
	PhaseMid   = 1 // this block's reduce-scatter part is in staging
	PhaseEnd   = 2 // this block no longer reads peers' memory
	NumPhases  = 3

	// Byte offsets inside a SignalBlock.
	OffMagic        = 0
	OffVersion      = 4
	OffRank         = 8
	OffNRanks       = 12
	OffTraceVariant = 64  // variant id of the last kernel that ran
	OffTraceCount   = 68  // launches completed, incremented by block 0
	OffLlSeq        = 72  // oneshot-ll: sequence number of the last launch (kernels/oneshotll/oneshot_ll.cu)
	OffLlDone       = 76  // oneshot-ll: blocks of the launch in progress that have read its sequence
	OffDiag         = 128 // DiagWords uint32, written by a kernel that gave up
	DiagWords       = 16
	OffEpoch        = 256                                       // [MaxBlocks]uint64: epoch | claim<<32
	OffFlags        = OffEpoch + 8*MaxBlocks                    // [NumPhases][MaxBlocks][MaxRanks]uint64: epoch | tag<<32
	OffRing         = OffFlags + 8*NumPhases*MaxBlocks*MaxRanks // [RingMaxLanes] lane records (ring.go)
	Size            = OffRing + RingMaxLanes*RingLaneBytes      // bytes of one SignalBlock

	// EpochClaim is the epoch word's high word while a launch runs the
	// block: what a launch ORs in at its start (with the epoch read in the
	// same atomic) and its end store of the plain epoch clears.
	EpochClaim = 1
)

// The ring variant's region: one record of RingLaneBytes per lane, at
// OffRing + lane*RingLaneBytes. Words the lane's own block writes share the
// first 64 bytes; the credit, written by the right neighbour, and the slot
// sequences, written by the left neighbour, have lines of their own (the
// host backend's ranks are processes on one CPU, where a shared line would
// bounce between cores). sigblock/ring.go says what each word means.
const (
	RingMaxLanes  = 32                   // lanes a ring launch can use (blocks)
	RingMaxSlots  = 64                   // slots a lane's ring can have
	RingLaneBytes = 128 + 4*RingMaxSlots // one lane record

	RingOffHead     = 0   // own: pieces through this lane in completed launches
	RingOffTarget   = 4   // own: Head + pieces of the launch in progress
	RingOffSlots    = 8   // own: slots of the launch in progress
	RingOffWaitKind = 12  // own: RingWait* while the lane's block is waiting
	RingOffWaitWant = 16  // own: the sequence it waits for
	RingOffWaitSlot = 20  // own: the slot it waits on (data waits)
	RingOffCredit   = 64  // right neighbour: sequence of the last piece it consumed
	RingOffSeq      = 128 // left neighbour: [RingMaxSlots] sequence of the piece in each slot

	RingWaitNone   = 0 // not waiting
	RingWaitData   = 1 // consumer: a slot's sequence from the left neighbour
	RingWaitCredit = 2 // producer: credit from the right neighbour
)

// The diagnostic words: word i is at OffDiag + 4*i of the rank's
// own SignalBlock. A kernel block (or a host model's block goroutine) that
// gives up waiting after the launch's deadline (Args.WaitTimeoutNs) records
// here where it gave up, then exits. The first give-up of a rank wins: it
// claims DiagState with a compare-and-swap from 0 to DiagClaimed, writes the
// other words, and then stores DiagGaveUp with release semantics, so a
// reader that sees DiagGaveUp sees every other word (the host reads them
// after the stream finished, or while it still runs when its watchdog fired
// first). Nothing clears them: a give-up ends the run with exit code 3.
// kernels/device/signal.cuh repeats these (SIG_DIAG_*).
const (
	DiagState     = 0  // 0: nobody gave up; DiagClaimed: being written; DiagGaveUp: complete
	DiagVariant   = 1  // variant id (Args.VariantID) of the launch that gave up
	DiagBlock     = 2  // blockIdx.x (the host model's block number)
	DiagKind      = 3  // DiagKind*: what it waited for
	DiagWhere     = 4  // the barrier's phase (barrier, tag), the slot (ring data), 0 (ring credit, claim)
	DiagPeer      = 5  // the rank whose write never came (whose tag differed; itself for a claim)
	DiagWant      = 6  // the flag (epoch) or sequence it waited for; the tag it expected; the epoch it would have used
	DiagSeen      = 7  // what the word held when it gave up; the peer's tag; the epoch word's claim
	DiagWaitedMs  = 8  // how long it waited, from its first failed poll, in ms
	DiagLane      = 9  // ring lane (ring waits); the block again for barriers
	DiagRank      = 10 // the rank that gave up (the SignalBlock's own rank)
	DiagTimeoutMs = 11 // the launch's deadline, in ms (rounded down)
	DiagUsedWords = 12 // words 12..DiagWords-1 are spare

	DiagClaimed uint32 = 1          // a block has claimed the words and is writing them
	DiagGaveUp  uint32 = 0x47495645 // "GIVE" (read as hex, like Magic): the words are complete

	DiagKindBarrier    = 1 // a start/mid/end barrier: Flag[phase][block][peer] in our block
	DiagKindRingData   = 2 // ring consumer: Seq[slot] of our lane, written by the left neighbour
	DiagKindRingCredit = 3 // ring producer: Credit of our lane, written by the right neighbour
	// DiagKindTagMismatch: a barrier flag reached the epoch but carried
	// another launch tag than the one expected of that peer (Want: the
	// expected tag, Seen: the peer's); no timeout is involved.
	DiagKindTagMismatch = 4
	// DiagKindClaimed: the block's epoch word was already claimed by
	// another launch of this rank that had not finished (Want: the epoch
	// this launch would have used, Seen: the claim word).
	DiagKindClaimed = 5
	// DiagKindLlData: oneshot-ll's reader waited for an LL slot (Where:
	// the slot) pushed by rank Peer to carry sequence Want (Seen: the
	// lowest flag it held).
	DiagKindLlData = 6
	// DiagKindPluginWait: a plugin's kernel gave up in artest_wait
	// (plugin/artest_device.h, which repeats these words): Variant is the
	// plugin variant's trace id, Where the index of its declared wait point,
	// Want and Seen the low halves of the 64-bit word.
	DiagKindPluginWait = 7
	// DiagKindSentinelData: oneshot-sentinel's reader waited for a slot
	// (Where) pushed by rank Peer in the launch of sequence Want to be
	// written (Seen: the slot's first word as it stood, whose zero halves
	// are the elements that never came).
	DiagKindSentinelData = 8
)

// DiagOffset is the byte offset of diagnostic word i (a Diag* index).
func DiagOffset(i int) int { return OffDiag + 4*i }

// EpochOffset is the byte offset of block b's 64-bit epoch word: the
// completed-launch count in its low half (at EpochOffset), the claim in its
// high half (at EpochOffset+4).
func EpochOffset(b int) int { return OffEpoch + 8*b }

// FlagOffset is the byte offset of the 64-bit flag that peer p writes for
// block b and phase ph: the epoch in its low half (at FlagOffset), the
// peer's launch tag in its high half (at FlagOffset+4).
func FlagOffset(ph, b, p int) int {
	return OffFlags + 8*((ph*MaxBlocks+b)*MaxRanks+p)
}

// Reached reports whether a flag or sequence value has reached want, with
// wrap-around: values are compared as a signed distance, so a counter that
// overflows uint32 keeps working. A flag can be ahead of want (a peer that
// skipped a barrier under fault injection); waiting treats that as arrived.
func Reached(seen, want uint32) bool { return int32(seen-want) >= 0 }

// PhaseName is the barrier's name in diagnostics.
func PhaseName(ph int) string {
	switch ph {
	case PhaseStart:
		return "start"
	case PhaseMid:
		return "mid"
	case PhaseEnd:
		return "end"
	}
	return fmt.Sprintf("phase%d", ph)
}
