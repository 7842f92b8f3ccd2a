package kernels

import (
	"fmt"
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

// ExternalCall is one allreduce call of an External variant.
type ExternalCall struct {
	Variant    *Variant
	DType      reference.DType
	Op         reference.Op
	Count      uint64
	Offset     uint64  // bytes from every rank's registered input buffer to the message
	In, Out    uintptr // this rank's input and output, as real pointers
	InPlace    bool
	Registered bool   // In is this rank's registered buffer at Offset
	Stream     uint64 // the CUDA stream; 0 on the host backend
	Params     [4]uint32
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
// own ids, which are small. AddExternal refuses two variants with one id.
func ExternalTraceID(name string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return 1<<31 | h.Sum32()
}

// AddExternal appends variants implemented outside artest to the Registry,
// so --variant, the matrix and the reports see them as any other. Each must
// have External set and a name no built-in variant has; adding a variant of
// the same name and owner again (a second load of the same plugin) replaces
// it.
func AddExternal(vs []Variant) error {
	for i := range vs {
		v := vs[i]
		if v.External == nil {
			return fmt.Errorf("external variant %s has no implementation", v.Name)
		}
		replaced := false
		for j := range Registry {
			o := &Registry[j]
			if o.Name != v.Name {
				if v.ID != 0 && o.ID == v.ID {
					return fmt.Errorf("variant %s of %s: its trace id %#x is %s's: rename one of them", v.Name, v.External.Owner(), v.ID, o.Name)
				}
				continue
			}
			if o.External == nil || o.External.Owner() != v.External.Owner() {
				owner := "artest"
				if o.External != nil {
					owner = o.External.Owner()
				}
				return fmt.Errorf("variant %s of %s: %s already has a variant of that name", v.Name, v.External.Owner(), owner)
			}
			Registry[j] = v
			replaced = true
		}
		if !replaced {
			Registry = append(Registry, v)
		}
	}
	return nil
}

// controlAlign separates the control regions of two owners: a page, so no
// two plugins' flags share a cache line (or a host page).
const controlAlign = 4096

// externalControlLayout gives each External owner of the Registry (a
// plugin) its own control region, in Registry order: owner -> offset, and
// the bytes all of them need per rank. Two plugins in one job never share
// barrier flags or call counters: one's state left in the other's region
// would make the other's barriers wait for values that never come.
func externalControlLayout() (map[string][2]int64, int64) {
	regions := map[string][2]int64{}
	var total int64
	for i := range Registry {
		e := Registry[i].External
		c, ok := e.(interface{ ControlBytes() int64 })
		if !ok || c.ControlBytes() == 0 {
			continue
		}
		if _, seen := regions[e.Owner()]; seen {
			continue
		}
		regions[e.Owner()] = [2]int64{total, c.ControlBytes()}
		total += (c.ControlBytes() + controlAlign - 1) / controlAlign * controlAlign
	}
	return regions, total
}

// ExternalControlBytes is the control memory per rank that the External
// variants of the Registry need together (0 when there is none): the
// backends give every rank one block of that size, zeroed once.
func ExternalControlBytes() int64 {
	_, total := externalControlLayout()
	return total
}

// ExternalControlRegion is owner's own control region within that block:
// its offset and the bytes it declared (0, 0 for an owner that declared
// none).
func ExternalControlRegion(owner string) (offset, size int64) {
	regions, _ := externalControlLayout()
	r := regions[owner]
	return r[0], r[1]
}
