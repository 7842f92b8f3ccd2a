package kernels

import (
	"hash/fnv"

	"github.com/artest/artest/reference"
)

// External is the implementation of a variant artest did not write: a
// plugin's (internal/plugin). The backends call it instead of a kernel of
// the fatbin or a host model; the runner treats the variant like any other.
type External interface {
	// Owner names what implements the variant, for messages and reports:
	// "plugin example (/path/host_oneshot.so)".
	Owner() string
	// Setup is collective: every rank calls it once per world, before the
	// first Allreduce of any variant of the same owner. Calls after the
	// first return the first one's result.
	Setup(w *ExternalWorld) error
	// Allreduce makes one call: on the host backend it returns when the
	// call is done, on cuda when it is enqueued on c.Stream.
	Allreduce(c *ExternalCall) error
	// Busy says which call of the owner is in progress on this rank ("" when
	// none), for the hang diagnosis: it is safe to call while Allreduce runs.
	Busy() string
}

// ExternalWorld is what an External's Setup gets: this rank and every rank's
// shared memory as this process addresses it (real pointers, not backend
// addresses).
type ExternalWorld struct {
	Rank, Size, LocalRank int
	Device                int    // CUDA device ordinal; -1 on the host backend
	Backend               string // "cuda" or "host"
	Input, Staging        []uintptr
	Control               []uintptr // zeroed before Setup, never touched by artest afterwards
	InputBytes            int64
	StagingBytes          int64
	ControlBytes          int64
}

// ExternalCall is one call of an External variant: an allreduce, or
// another collective it declares (Variant.Colls).
type ExternalCall struct {
	Variant *Variant
	Coll    reference.Coll
	DType   reference.DType
	Op      reference.Op
	// Count is the collective's full buffer (Args.Count).
	Count   uint64
	Offset  uint64  // bytes from every rank's registered input buffer to the message
	In, Out uintptr // this rank's input and output, as real pointers
	// InPlace: input and output share one buffer at NCCL's offsets (the
	// allreduce's are one address).
	InPlace    bool
	Registered bool   // In is this rank's registered buffer at Offset
	Stream     uint64 // the CUDA stream; 0 on the host backend
	Params     [4]uint32
	// Faults are the variant's own fault switches on for this call: bit i
	// is its Faults[i] (a plugin's artest_faults_v1), which --inject
	// PLUGIN:NAME sets; 0: none.
	Faults uint32
	// Device is set for a variant that uses the device helpers (ID != 0).
	Device *ExternalDevice
}

// ExternalDevice is what a call of a variant that uses the device helpers
// (plugin/artest_device.h) gives its kernels: where this rank's trace and
// diagnosis words are (in its SignalBlock: the words artest's own kernels
// write), as real pointers, and the deadline.
type ExternalDevice struct {
	Trace     uintptr // SignalBlock + signal.OffTraceVariant: variant id, then count
	Diag      uintptr // SignalBlock + signal.OffDiag
	TimeoutNs uint64  // Args.WaitTimeoutNs
	TraceID   uint32  // Variant.ID
	Rank      uint32
}

// ExternalTraceID is the trace id of an External variant that uses the
// device helpers: a hash of its full name with the top bit set, so that it
// is the same on every rank and in every run (a repro bundle's rerun
// included) whatever the order plugins load in, and never one of artest's
// own ids, which are small. registry.New refuses two variants with one id.
func ExternalTraceID(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 1<<31 | h.Sum32()
}
