package ring

import (
	"fmt"
	"math/bits"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/sigblock"
)

// The ring protocol (ring.cu, and its host model in host.go):
// a Disruptor-style ring of slots per lane between neighbouring ranks, and a
// persistent kernel that produces into its right neighbour's ring while it
// consumes its own, running a ring reduce-scatter and then a ring
// all-gather through the slots.
//
// Topology: rank r sends to (r+1)%N and receives from (r-1+N)%N. Push model:
// the producer stores a piece's payload into the receiver's staging buffer
// (remote stores, posted), then the slot's sequence word into the
// receiver's SignalBlock (release); the receiver waits for that sequence
// (acquire), reads the slot locally, and stores the credit (the sequence it
// consumed) into the producer's SignalBlock (release). The words and their
// meaning: sigblock/ring.go.
//
// Lanes: lane l owns elements [l*L, (l+1)*L) of the message (L = the lane
// share rounded up to Unit) and has its own ring, block and counters.
//
// Pieces: each lane's elements are processed in rounds. A round splits its
// elements into N chunks of Q pieces of E elements; piece t of the launch
// (t = 0..T-1, T = rounds * 2(N-1) * Q) is piece j = t%Q of step
// s = (t / Q) % 2(N-1) of its round. At step s rank r sends chunk (r-s)%N
// and receives chunk (r-1-s)%N:
//
//	steps 0..N-2   reduce-scatter: step 0 sends r's own input; a piece
//	               received at step s < N-2 plus r's input is sent at s+1.
//	               At s = N-2 the sum is complete (chunk r+1): r rounds it
//	               to the dtype, writes it out and sends it at step N-1.
//	steps N-1..2N-3 all-gather: a final piece received is written out and,
//	               before the last step, forwarded.
//
// So chunk c is accumulated x_c + x_{c+1} + ... + x_{c-1} (ranks mod N) in
// float32: the partial sums travel as float32 (PartialBytes per
// element) and the final values in the dtype. The order depends on the
// chunk, so Variant declares reference.OrderUnknown: random-input sums
// are checked within the float64 reference's bound, which covers any order
// of float32 accumulation and one final rounding (reference/doc.go); exact
// inputs, max and min are still compared bit for bit.
//
// The loop: at unit u = 0..T+Q-1 a lane's block consumes piece c = u-Q
// (when 0 <= c < T) and produces piece p = u (when p < T). Piece p depends
// on piece p-Q, consumed in the same unit (or, at step 0, on nothing), so the
// data a unit consumes is the data it produces. Before a unit the block
// waits for c's sequence (data from the left) and for the credit of p-S
// (the right neighbour consumed the piece slot p%S held); after it, it
// publishes c's credit to the left and p's sequence to the right.
//
// Why this cannot deadlock (Q <= S-1, StepPieces): a unit of rank r at
// u needs (a) the left neighbour's unit c = u-Q < u finished, and (b) the
// right neighbour's unit p-S+Q <= u-1 finished (it consumed p-S there).
// Take the rank whose next unit u is the smallest of all ranks: every other
// rank finished every unit below u, so both conditions hold and it makes
// progress. Credits therefore never wait on the waiter's own producer, and
// no cycle of waits can form. (Releasing the credit of c only after the
// produce of p is what requires Q < S: with Q = S the right neighbour's
// credit for p-S would come from its unit u itself.)
//
// Flow control: without credits, a producer can run ahead of a slow
// consumer by up to N*Q pieces (each rank produces at most Q pieces beyond
// what it consumed), more than the S slots whenever N*Q > S. StepPieces
// keeps Q above S/2 from 4 slots on, so that holds from N = 2 on: the
// no-credit-wait fault switch can corrupt data at every world size. With 2
// slots (Q = 1), or a lane too short for more than one piece a step, it
// holds from N = 3 only: at 2 ranks the left neighbour is the right one,
// and its data for unit u comes after it consumed the piece that u
// overwrites, so the credit is never the wait that matters (RunsAhead).
// Small messages resolve to 2 slots, which is why the ring's stress runs
// with smaller slots (Variant.StressParams).
//
// Barriers: the start barrier keeps a rank from writing into a peer's
// staging before the peer's launch began (its previous launch, of any
// variant, may still use its staging: in-place oneshot copies out of its
// staging after its mid barrier, with no end barrier). No end barrier is
// needed: peers never read this rank's input or output (push model), and
// when this rank's last unit is done it has consumed every piece its left
// neighbour will write into its staging in this launch. The right
// neighbour may still store credits into this rank's SignalBlock after it
// returned; credits only grow and no one else writes that word.

// Ring constants; ring.cuh repeats them (protocol_test.go compares).
const (
	// Unit is the granularity of lanes, chunks and pieces in elements:
	// one 16-byte vector of float32 partial sums.
	Unit = 4
	// PartialBytes is the width of a partial sum in a slot (float32).
	PartialBytes = 4
	// Slot sizes: powers of two from one unit of partial sums to 1 MiB.
	MinSlotBytes = 16
	MaxSlotBytes = 1 << 20
	// DefaultSlotBytes is untuned (the H200 tuning table replaces it for
	// bf16 at 2 and 4 ranks: docs/perf.md): a slot is the unit of one handoff (one system-scope fence, two
	// block barriers and a poll each way, a few microseconds), so it must
	// be large enough to amortise them; 64 KiB of float partials is 32
	// bytes per thread of a 512-thread block and unit. Messages below
	// lanes x slots x 64 KiB get smaller slots anyway (Resolve).
	DefaultSlotBytes = 64 << 10
	// Slots per lane: powers of two. Two is the fewest the deadlock
	// argument allows (Q <= S-1); the maximum is the SignalBlock's.
	MinSlots     = 2
	MaxSlots     = sigblock.RingMaxSlots
	DefaultSlots = 8 // untuned; the H200 tuning table keeps 8
	// MaxLanes is the most lanes (blocks) of a launch: the SignalBlock
	// holds this many lane records.
	MaxLanes = sigblock.RingMaxLanes
	// The auto lane rule (AutoLanes), untuned: on 4 H200 it was half as
	// fast as 32 lanes from 16 MiB (docs/perf.md), which the tuning table
	// uses there. One lane per AutoBytesPerLane
	// of message, a power of two, at most AutoMaxLanes.
	AutoBytesPerLane = 128 << 10
	AutoMaxLanes     = 16
	// StageSlack is how many bytes beyond the message a staging buffer
	// always has: the runner's guard after the message (256 bytes) less the
	// up to 15 bytes that aligning the ring to 16 bytes costs.
	StageSlack = 240
	// MaxPieces bounds a lane's pieces in one launch, so sequence
	// distances stay far inside the signed range Reached compares in.
	MaxPieces = 1 << 30
)

// InjectNoCreditWait is the ring's own fault switch (a kernels.Args.Inject
// bit, INJECT_NO_CREDIT_WAIT in ring.cuh): the producer does not wait for
// credit.
const InjectNoCreditWait uint32 = 1 << 6

// Ring launch parameters (kernels.Args.Param0..2).
const (
	paramLanes     = 0
	paramSlotBytes = 1
	paramSlots     = 2
)

// params are the ring's --param names.
var params = []kernels.Param{
	{Name: "lanes", Slot: paramLanes, Default: 0, Min: 1, Max: MaxLanes,
		Help: "lanes (one ring and one block each); 0: auto by size"},
	{Name: "slot-bytes", Slot: paramSlotBytes, Default: DefaultSlotBytes, Min: MinSlotBytes, Max: MaxSlotBytes,
		Help: "largest slot in bytes, a power of two (others round down); smaller when the message is"},
	{Name: "slots", Slot: paramSlots, Default: DefaultSlots, Min: MinSlots, Max: MaxSlots,
		Help: "ring capacity in slots, a power of two (others round down)"},
}

// AutoLanes is the lane count for a message of bytes bytes on nranks
// ranks when --param lanes is not set (or 0). Provisional (see
// AutoBytesPerLane); nranks is not used yet, but the rule may depend on
// it once measured, and every rank computes the same value either way.
func AutoLanes(bytes int64, nranks int) uint32 {
	_ = nranks
	return uint32(min(pow2Floor(max(bytes/AutoBytesPerLane, 1)), AutoMaxLanes))
}

// StepPieces is Q, the pieces per step, for a ring of slots slots:
// below slots (the deadlock argument) and above slots/2 (so that flow
// control matters from 2 ranks on): 1, 3, 6, 12, 24, 48 for 2..64 slots.
func StepPieces(slots int64) int64 { return slots - max(1, slots/4) }

// LaneElems is L, every lane's share but the last's, in elements.
func LaneElems(count, lanes int64) int64 {
	return roundUp(ceilDiv(count, lanes), Unit)
}

// Resolve fills the ring's parameters for one launch: the lane count
// (auto when 0), then slot bytes and slots as powers of two within range,
// then the effective values this message allows, the same on every rank:
//
//   - no lane without data: lanes <= ceil(count / L);
//   - no slot larger than a lane's chunk needs;
//   - the rings fit the staging buffer: lanes * slots * slot bytes <=
//     count * element size + StageSlack, which every staging buffer
//     has (so the values depend on this message only, not on the other
//     cases of the run). Slot bytes shrink first, then slots, then lanes.
//
// Param0 becomes the lane count (and the grid), Param1 the slot size in
// bytes (also the slot stride), Param2 the slots per lane.
func Resolve(a *kernels.Args, elemBytes int64) {
	count, n := int64(a.Count), int64(a.NRanks)
	lanes := int64(a.Param0)
	if lanes == 0 {
		lanes = int64(AutoLanes(count*elemBytes, int(n)))
	}
	lanes = min(max(lanes, 1), MaxLanes, max(ceilDiv(count, Unit), 1))
	lanes = usedLanes(count, lanes)
	slotBytes := pow2Floor(min(max(int64(a.Param1), MinSlotBytes), MaxSlotBytes))
	slots := pow2Floor(min(max(int64(a.Param2), MinSlots), MaxSlots))
	chunk := roundUp(ceilDiv(LaneElems(count, lanes), max(n, 1)), Unit) * PartialBytes
	slotBytes = min(slotBytes, max(pow2Ceil(chunk), MinSlotBytes))

	// Where the rings do not fit the staging (messages up to a few MiB),
	// fewer slots first, then smaller ones: every piece is a round trip
	// over the link, and smaller slots cut a lane's chunk into more
	// pieces: on 2 H100, 8 slots cut to fit took 115 us at 1 MiB where 2
	// full slots took 30
	// (docs/results/2026-11-26-h200-h100x2-poison-partitions-nccl-tests.md).
	budget := count*elemBytes + StageSlack
	for lanes*slots*slotBytes > budget && slots > MinSlots {
		slots /= 2
	}
	for lanes*slots*slotBytes > budget && slotBytes > MinSlotBytes {
		slotBytes /= 2
	}
	if lanes*slots*slotBytes > budget {
		lanes = usedLanes(count, max(1, budget/(slots*slotBytes)))
	}
	a.Param0, a.Param1, a.Param2 = uint32(lanes), uint32(slotBytes), uint32(slots)
}

// usedLanes drops lanes that the lane share L leaves without data.
func usedLanes(count, lanes int64) int64 {
	if count <= 0 {
		return 1
	}
	return ceilDiv(count, LaneElems(count, lanes))
}

// Grid is the ring's grid: one block per lane (Resolve ran first).
// With another grid (--blocks), block b runs lanes b, b+grid, ... in turn.
func Grid(a *kernels.Args, elemBytes int64, maxBlocks, threads int) int { return int(a.Param0) }

// StagingBytes is the staging each rank's rings take (from the 16-byte aligned
// start of its staging buffer).
func StagingBytes(a *kernels.Args) int64 {
	return int64(a.Param0) * int64(a.Param2) * int64(a.Param1)
}

// StageBase is where the rings start in a staging buffer at addr: the
// next 16-byte boundary. Every rank's mapping of a buffer has the same
// alignment (mappings start on allocation-granularity boundaries), so the
// producer and the consumer agree on it.
func StageBase(addr uint64) uint64 { return (addr + 15) &^ 15 }

// Check reports why a launch of the ring with these arguments would be
// wrong (the kernel traps on the same conditions), or nil. Any grid works
// (blocks run lanes b, b+blocks, ...; Grid gives one block per lane),
// so blocks is not checked; it is there for the caller's symmetry with the
// kernel's check_launch.
func Check(a *kernels.Args, blocks int, elemBytes int64) error {
	lanes, slotBytes, slots := int64(a.Param0), int64(a.Param1), int64(a.Param2)
	switch {
	case lanes < 1 || lanes > MaxLanes:
		return fmt.Errorf("ring: %d lanes, want 1..%d", lanes, MaxLanes)
	case slotBytes < MinSlotBytes || slotBytes > MaxSlotBytes || bits.OnesCount64(uint64(slotBytes)) != 1:
		return fmt.Errorf("ring: slot bytes %d, want a power of two in %d..%d", slotBytes, MinSlotBytes, MaxSlotBytes)
	case slots < MinSlots || slots > MaxSlots || bits.OnesCount64(uint64(slots)) != 1:
		return fmt.Errorf("ring: %d slots, want a power of two in %d..%d", slots, MinSlots, MaxSlots)
	case a.NRanks > 1 && uint64(StagingBytes(a)+15) > a.StageBytes:
		return fmt.Errorf("ring: %d lanes x %d slots x %d bytes do not fit %d bytes of staging", lanes, slots, slotBytes, a.StageBytes)
	}
	for l := int64(0); l < lanes; l++ {
		if p := NewPlan(int64(a.Count), int64(a.NRanks), lanes, slotBytes, slots, l); p.Pieces >= MaxPieces {
			return fmt.Errorf("ring: lane %d would move %d pieces, more than %d", l, p.Pieces, MaxPieces)
		}
	}
	return nil
}

// Plan is one lane's share of a ring launch: its elements, how they
// split into rounds, chunks and pieces, and how many pieces it moves. The
// same numbers on every rank (they depend on the count, the world size and
// the resolved parameters); ring.cuh computes them the same way
// (protocol_test.go compares the two over a table of launches).
type Plan struct {
	Lo, Hi int64 // the lane's elements [Lo, Hi) of the message
	N      int64 // ranks
	Q      int64 // pieces per step (<= StepPieces)
	Rounds int64
	E      int64 // elements per piece in every round but the last
	ELast  int64 // elements per piece in the last round
	Pieces int64 // pieces the lane produces (and consumes): Rounds * 2(N-1) * Q
}

// NewPlan plans lane lane of a launch over count elements on n ranks.
// A round is N chunks of Q pieces: E = slotBytes/4 elements per piece, and
// Q = StepPieces(slots), or fewer when the lane fits one round with
// fewer; the last round's pieces shrink (ELast, a multiple of Unit) so
// that its chunks split the rest evenly instead of leaving empty pieces.
func NewPlan(count, n, lanes, slotBytes, slots, lane int64) Plan {
	l := LaneElems(count, lanes)
	lo := min(lane*l, count)
	p := Plan{Lo: lo, Hi: min(lo+l, count), N: n}
	elems := p.Hi - p.Lo
	if n <= 1 || elems <= 0 {
		return p
	}
	emax := slotBytes / PartialBytes
	p.Q = min(StepPieces(slots), ceilDiv(elems, n*emax))
	p.Rounds = ceilDiv(elems, n*p.Q*emax)
	rest := elems - (p.Rounds-1)*n*p.Q*emax
	p.ELast = roundUp(ceilDiv(rest, n*p.Q), Unit)
	p.E = emax
	if p.Rounds == 1 {
		p.E = p.ELast
	}
	p.Pieces = p.Rounds * 2 * (n - 1) * p.Q
	return p
}

// RunsAhead says whether, in lane plan p on a ring of slots slots, a
// producer may ever be a lap ahead of its reader but for the credit: piece
// u overwrites the slot of piece u-S, which the reader consumes in its unit
// u-S+Q, while the data u needs is the left neighbour's unit u-Q. At 2
// ranks the left neighbour is the reader, so that needs u-S+Q > u-Q, 2Q >
// S, and a lane of more pieces than slots; from 3 ranks the data comes
// from another rank, and a lap is the only condition. A credit check that
// is wrong can corrupt data only where this holds.
func RunsAhead(p Plan, slots int64) bool {
	if p.Pieces <= slots {
		return false
	}
	return p.N > 2 || 2*p.Q > slots
}

// Step splits piece t into its round, its step and its index in the step.
func (p *Plan) Step(t int64) (round, step, j int64) {
	per := 2 * (p.N - 1) * p.Q
	round, w := t/per, t%per
	return round, w / p.Q, w % p.Q
}

// Span is the elements [lo, hi) of the message that piece j of chunk c in
// round holds; lo == hi for a piece past the lane's end.
func (p *Plan) Span(round, c, j int64) (lo, hi int64) {
	e := p.E
	if round == p.Rounds-1 {
		e = p.ELast
	}
	base := p.Lo + round*p.N*p.Q*p.E + (c*p.Q+j)*e
	return min(base, p.Hi), min(base+e, p.Hi)
}

// SendChunk is the chunk rank sends at step s; RecvChunk the one it
// receives.
func SendChunk(rank, s, n int64) int64 { return ((rank-s)%n + n) % n }
func RecvChunk(rank, s, n int64) int64 { return SendChunk(rank-1, s, n) }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }
func roundUp(a, b int64) int64 { return ceilDiv(a, b) * b }

func pow2Floor(x int64) int64 {
	if x < 1 {
		return 1
	}
	return 1 << (63 - bits.LeadingZeros64(uint64(x)))
}

func pow2Ceil(x int64) int64 {
	p := pow2Floor(x)
	if p < x {
		p *= 2
	}
	return p
}
