package kernels

import (
	"math"

	"github.com/artest/artest/reference"
)

// The device checker, artest_check (kernels/harness/check.cu, arithmetic
// in kernels/harness/check.cuh): it checks the output regions of a batch
// of stress iterations on the GPU that wrote them, every element against
// the expected output in the variant's declared order (within the
// reference's bound where the order is unknown) and every guard byte, and
// writes one CheckSlot per iteration. check_test.go compares its
// arithmetic with the Go reference on the host.
const CheckKernel = "artest_check"

// CheckArgs is artest_check's one parameter, by value: the C struct
// ArtestCheckArgs in kernels/harness/check.cuh (check_test.go has a host
// compiler lay it out and compares).
type CheckArgs struct {
	Region     uint64 // slot 0's region: [Lead bytes][message][GuardAfter bytes]
	SlotBytes  uint64 // from one slot's region to the next
	Lead       uint64 // bytes of guard and offset gap before each message
	GuardAfter uint64 // bytes of guard after each message
	Count      uint64 // elements in each message
	First      uint64 // element index of each message's element 0
	Seed       uint64
	Result     uint64 // CheckSlot[Slots], zeroed before the launch
	Iter0      uint32 // generator iteration of slot 0; slot j is Iter0+j
	Slots      uint32
	NRanks     uint32
	DType      uint32 // reference.DType
	Op         uint32 // reference.Op
	Order      uint32 // reference.Order
	Kind       uint32 // reference.InputKind
	Guard      uint32 // the guard byte, in the low 8 bits
}

// CheckRecords is how many wrong elements a CheckSlot describes
// (ARTEST_CHECK_RECORDS).
const CheckRecords = 4

// CheckRecord is one wrong element as the device saw it
// (ArtestCheckRecord).
type CheckRecord struct {
	Index   uint64
	Got     uint32 // dtype bits found
	Want    uint32 // expected dtype bits; 0 where the check is bounded
	RefBits uint64 // the expected value or the float64 reference, as float64 bits
}

// Ref is the expected value (bit-exact checks) or the exact float64
// reference sum (bounded checks).
func (r CheckRecord) Ref() float64 { return math.Float64frombits(r.RefBits) }

// CheckSlot is one iteration's verdict (ArtestCheckSlot). Records holds the
// first min(Claimed, CheckRecords) wrong elements to claim a record: some
// of the wrong ones, not necessarily the lowest.
type CheckSlot struct {
	Wrong    uint64 // wrong elements
	GuardBad uint64 // guard bytes that no longer hold the guard byte
	Claimed  uint32
	Spare    uint32
	Records  [CheckRecords]CheckRecord
}

// Recorded is the records the kernel wrote.
func (s *CheckSlot) Recorded() []CheckRecord {
	return s.Records[:min(int(s.Claimed), CheckRecords)]
}

// CheckThreads is artest_check's block size (ARTEST_CHECK_THREADS, its
// __launch_bounds__).
const CheckThreads = 256

// checkMaxBlocks bounds a check launch's blocks over all slots: 8192 blocks
// of 256 threads are about 16 resident blocks per SM on 132 SMs, enough to
// keep the loads in flight; past that each thread grid-strides.
const checkMaxBlocks = 8192

// CheckGrid is the grid of a check launch: x blocks per slot (each
// grid-strides over the slot's count elements), y = slots.
func CheckGrid(count uint64, slots int) (x, y uint32) {
	per := max(1, checkMaxBlocks/max(slots, 1))
	want := (count + CheckThreads - 1) / CheckThreads
	return uint32(max(1, min(uint64(per), want))), uint32(slots)
}

// NewCheckArgs fills the spec part of CheckArgs from a reference spec; the
// caller sets the buffers, Iter0 and Slots.
func NewCheckArgs(spec reference.CheckSpec) CheckArgs {
	return CheckArgs{
		First: spec.First, Seed: spec.Gen.Seed, NRanks: uint32(spec.NRanks),
		DType: uint32(spec.Gen.DType), Op: uint32(spec.Op), Order: uint32(spec.Order), Kind: uint32(spec.Gen.Kind),
	}
}
