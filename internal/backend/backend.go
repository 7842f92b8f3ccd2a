// Package backend is the seam between the runner and what executes the
// allreduce: the cuda backend (GPU kernels, IPC handles, NCCL) and the host
// backend (shared-memory segments and Go models of the same kernels). The
// runner holds all the test logic; a backend supplies memory, a stream of
// ordered work, timing, graphs and the collective launches.
package backend

import (
	"errors"
	"fmt"
	"time"

	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// Ptr is an address of backend memory valid in this process: a device
// address on cuda, a synthetic address of a mapped segment on host.
type Ptr = uint64

// World is this rank's view of the buffers every rank shares.
type World struct {
	Rank, Size int
	// Per rank r: the registered input buffer, the staging buffer and the
	// SignalBlock, as addresses this rank can use (its own and the opened
	// handles of its peers).
	Input   []Ptr
	Staging []Ptr
	Signal  []Ptr
	// Capacity of each Input and Staging buffer in bytes.
	Capacity int64
	// Control[r] is rank r's control region of ControlBytes (zeroed at
	// set-up, then owned by the External variants: their barrier flags);
	// nil when no External variant needs one.
	Control      []Ptr
	ControlBytes int64
	// Gen[r] is the registration generation of rank r's Input as this
	// rank holds it: 0 as set up, +1 at each ReregisterInput of rank r
	// (nil until the first). It goes into the launch tags (SetTags), so a
	// launch that still holds older pointers is told apart at its first
	// barrier.
	Gen []uint32
}

// Launch is one call of a collective: an allreduce, or the collective its
// Args name (kernels.Args.Coll).
type Launch struct {
	Variant *kernels.Variant
	DType   reference.DType
	Op      reference.Op
	// Args carries the buffers, count, rank, injected faults and the
	// variant's parameters, exactly as the kernel receives them.
	Args kernels.Args
	// Blocks and Threads: the grid on cuda, goroutines (Blocks) on host.
	// The runner resolves both before a custom kernel's launch (an
	// External variant launches its own grid); a backend refuses a launch
	// without them instead of choosing its own.
	Blocks, Threads int
	// PDL launches the kernel with programmatic stream serialization
	// (programmatic dependent launch, sm_90): it may start while the
	// producer enqueued before it (Produce) still runs, and waits for it
	// (griddepcontrol.wait) before it reads its input.
	PDL bool
	// Faults, for an External variant, are its own fault switches on for
	// this call (kernels.ExternalCall.Faults): the bits of its Faults that
	// --inject named. Artest's kernels read theirs from Args.Inject.
	Faults uint32
	// Src, when set, is the private input of a staged call to a variant
	// that stages its input itself (kernels.Variant.StagesOwnInput): the
	// runner did not copy it into the registered buffer.
	Src Ptr
}

// Unresolved says why l cannot be launched as a custom kernel as it is
// ("" when it can): the runner left its grid or block size open.
func (l *Launch) Unresolved() string {
	if l.Blocks <= 0 || l.Threads <= 0 {
		return fmt.Sprintf("launch of %s with %d blocks of %d threads: the runner resolves every launch", l.Variant.Name, l.Blocks, l.Threads)
	}
	return ""
}

// KernelName is the CUDA function of l's variant for its collective,
// dtype and op (kernels.Variant.CollKernelName).
func (l *Launch) KernelName() string {
	return l.Variant.CollKernelName(l.Args.Coll(), l.DType, l.Op)
}

// GridBlocks is the blocks kernels.Grid gives l's message under the
// variant's own block count (kernels.Variant.Blocks) at l.Threads: the
// registry's grid of a GPU launch.
func GridBlocks(l *Launch) int {
	return kernels.Grid(l.Variant, &l.Args, int64(l.DType.Size()), l.Variant.Blocks, l.Threads)
}

// ExternalSet is what a backend's Setup needs of the run's variant set
// (registry.Set, which sits above this package): the External variants'
// control memory (their control regions and private staging) and their
// owners.
type ExternalSet interface {
	// ExternalControlBytes is the control memory per rank all External
	// variants need together (0: none).
	ExternalControlBytes() int64
	// ExternalControlRegion is owner's region within it: offset and bytes.
	ExternalControlRegion(owner string) (offset, size int64)
	// ExternalStagingRegion is owner's private staging within the same
	// block (0, 0: it uses the shared staging buffers).
	ExternalStagingRegion(owner string) (offset, size int64)
	// ExternalOwners are the owners with a variant for a world of size
	// ranks, in the same order on every rank.
	ExternalOwners(size int) []kernels.External
}

// Sharer is a backend whose ranks may share a GPU (cuda with --share-gpus).
// A custom kernel's blocks wait for the same blocks of the other ranks, so
// the grids of all ranks on a GPU must be resident together: the runner
// caps every custom launch at GridCap, agreed over the ranks.
type Sharer interface {
	// RanksPerGPU is the most ranks one GPU of this node serves; 1 when
	// each rank has its own.
	RanksPerGPU() int
	// GridCap is the most blocks this rank may launch of l's kernel at
	// l.Threads so that every sharing rank's grid is resident at once (0:
	// not even one block each), and how that number was reached. late:
	// one rank may start well after its peers (coresident.Limits.Late).
	GridCap(l *Launch, late bool) (blocks int, from string, err error)
}

// Waiter is a backend that can say which call of an External variant
// (kernels.External) this rank is inside, for the hang diagnosis: a call
// that never returns has no SignalBlock to read.
type Waiter interface {
	// Waiting is that call, or "" when the stream is in none.
	Waiting() string
}

// ProgressMarker is a backend whose Sync sees its stream's progress only at
// points marked in it (cuda: an event recorded there). Sync times out when
// no step finished within its timeout; with marks, passing a mark counts
// as a step, so a long queue of quick calls (a stress batch) is no hang.
// The host backend sees every operation of its stream finish and needs no
// marks.
type ProgressMarker interface {
	// MarkProgress marks the end of the work enqueued so far; the next
	// Sync counts its completion as progress and forgets the mark. Not
	// inside a capture.
	MarkProgress() error
}

// SignalPeeker is a backend whose SignalBlocks can be read from any
// goroutine at any time without a driver call (the host backend's are
// shared memory): the runner's watchdog reads them while the main thread
// is blocked.
type SignalPeeker interface {
	PeekSignal(r int) ([]byte, error)
}

// ProgressNotifier is a backend that can tell the runner's watchdog, which
// runs beside the main thread, each time its stream makes progress (an
// operation finished, a progress mark passed): a rank whose main thread
// waits for a long stream of quick calls is alive, one whose stream stopped
// is not.
type ProgressNotifier interface {
	// NotifyProgress has f called at each step of progress, from any
	// goroutine; f must be quick and safe for concurrent use.
	NotifyProgress(f func())
}

// Reregisterer is a backend that can give a rank a new registered input
// buffer: the reregister hang scenario (--inject reregister:rank=R).
type Reregisterer interface {
	// ReregisterInput is collective: rank owner replaces its registered
	// input buffer with a new allocation of the same capacity and shares
	// it again; every rank opens the new one and updates World.Input[owner]
	// and World.Gen[owner]. The old buffer stays allocated and mapped until
	// Close, so a graph that still holds its address faults nothing (the
	// launch tags stop it at its first barrier).
	ReregisterInput(c comm.Comm, owner int) error
}

// OwnRegioner is a backend that keeps some variants' input and output in
// memory of its own instead of the world's shared input buffer and
// Alloc's outputs: the NCCL baselines, in ncclMemAlloc memory as
// nccl-tests allocates theirs (nccl-win's windows can lie in nothing else).
// Only a variant that reads no peer's
// input through the world's buffers can have regions of its own (a peer
// reads World.Input, not them).
type OwnRegioner interface {
	// OwnRegions is this rank's input and output region for v, each of
	// the world's capacity, made at its first use and kept until Close;
	// ok is false for a variant that uses the world's buffers. It is
	// collective the first time: every rank asks at the same case.
	OwnRegions(c comm.Comm, v *kernels.Variant) (in, out Ptr, ok bool, err error)
	// KeepsOwnRegions says whether v's buffers are the backend's own,
	// without making them.
	KeepsOwnRegions(v *kernels.Variant) bool
}

// OptionalRegioner is an OwnRegioner whose regions some variants can do
// without: they run on the world's buffers too, as --stress runs them (a
// stress batch needs an output per iteration); their regions are for their
// timing's sake (the cuda backend's nccl and nccl-reg: NCCL registers only
// its own kind of memory in a CUDA graph).
type OptionalRegioner interface {
	OwnRegionsOptional(v *kernels.Variant) bool
}

// DefectKnower is a backend that knows cases a baseline it runs gets
// wrong for a reason outside artest (a library's bug, each with a findings
// page): the runner skips them, naming the defect, unless told to run them
// (--run-known-defects).
type DefectKnower interface {
	// KnownDefect is the defect a case of v on dt, its buffers offsetBytes
	// past an aligned address, would show with the loaded library, or "".
	KnownDefect(v *kernels.Variant, dt reference.DType, offsetBytes int64) string
}

// ConcurrentLauncher is a backend with a second stream: the two-streams
// hang scenario (--inject two-streams).
type ConcurrentLauncher interface {
	// AllreduceConcurrent enqueues l on a second stream of this rank,
	// not ordered with the first: two allreduces in flight on one
	// SignalBlock. Sync waits for both.
	AllreduceConcurrent(l *Launch) error
}

// Delayer is a backend that can hold its stream for a time, ordered with
// the rest of its work: what follows starts d later than it would have.
// Stress's skew schedule uses it to make one rank late. The host backend
// sleeps in its stream goroutine; cuda launches one thread of artest_delay
// (kernels/harness/delay.cu).
type Delayer interface {
	Delay(d time.Duration) error
}

// SMCopier is a backend whose stream-ordered copies can also run on the
// multiprocessors, as the collectives' own kernels move data, rather than
// on a copy engine: bench times both into a peer's memory to show what
// the links carry (a copy engine's copy over NVLink moved less than
// oneshot's kernel on 2 H100). cuda launches artest_copy
// (kernels/harness/copy.cu); the host backend has no multiprocessors.
type SMCopier interface {
	// SMCopyReason says why CopySM cannot run here ("" when it can): a
	// fatbin built before artest_copy existed.
	SMCopyReason() string
	// CopySM copies n bytes from src to dst in stream order, like Copy;
	// the ranges do not overlap.
	CopySM(dst, src Ptr, n int64) error
}

// Stamper is a backend that can record, in stream order, when its stream
// reached a point: stress's witness stamps every call's return on every
// rank and compares the times across ranks (a rank whose call returned long
// before a peer's finished did not wait for it). The host backend reads
// the wall clock in its stream goroutine; cuda records an event (or, where
// events recorded in a graph cannot be timed, launches artest_stamp).
type Stamper interface {
	// PrepareStamps readies slots 0..n-1; called with the stream idle.
	PrepareStamps(n int) error
	// Stamp marks slot j with the moment the stream reaches it;
	// capturing: the stream is being captured into a graph, and each
	// replay marks it again.
	Stamp(j int, capturing bool) error
	// Stamps reads slots 0..n-1 once the stream has passed them, in ns of
	// the stream clock; called before the ClockSync that follows them.
	Stamps(n int) ([]int64, error)
	// FreeStamps releases what PrepareStamps took.
	FreeStamps()
	// ClockSync relates the stream clock to the host's wall clock; called
	// with the stream idle.
	ClockSync() (ClockSync, error)
}

// SMStamper is a Stamper whose stamps may wait for room on the GPU's
// multiprocessors (a kernel launch): a stamp between a call and the copy
// after it then delays the copy, and a stamp on a rank whose SMs are busy
// comes late.
type SMStamper interface {
	StampsWaitForSMs() bool
}

// ClockSync relates a stream's clock to the host's wall clock (Unix ns).
type ClockSync struct {
	// Offset is the stream clock minus the wall clock, and Uncertainty
	// how far off Offset may be: stamps of ranks on one host become
	// comparable by subtracting each rank's Offset.
	Offset, Uncertainty time.Duration
	// Domain names the stream clock: ranks with one Domain (one GPU's
	// global timer) compare their stamps as they are, exactly. Host is
	// the host whose wall clock Offset refers to.
	Domain, Host string
	// Stamps names what the stamps are: "events" (cuda's default),
	// "kernel" (artest_stamp) or "wall clock" (the host backend).
	Stamps string
}

// Straggler is a backend that can load its own device beside its stream
// for a while: stress's straggler schedule uses it to make one rank's
// blocks read slowly while its peers run at full speed. The host backend
// spins goroutines on every core; cuda runs artest_load (kernels/harness/load.cu),
// a memory-streaming kernel, on a side stream forked from the main one.
type Straggler interface {
	// PrepareStraggle allocates what Straggle needs; it is called once
	// before any call is enqueued or captured.
	PrepareStraggle() error
	// Straggle starts a load of about d in stream order (after the work
	// enqueued before it) that runs beside what is enqueued after it: no
	// later work waits for it until JoinStraggle, so a load that cannot
	// find room on a GPU whose other ranks spin at a barrier never holds
	// up this rank's own calls. Inside a capture it is a branch of the
	// graph.
	Straggle(d time.Duration) error
	// JoinStraggle makes the stream wait for every load started since the
	// last join (inside a capture: before the capture ends).
	JoinStraggle() error
}

// LoadStamper is a Stamper that can also stamp the straggler's loads on
// their own stream, on the stamp clock: the witness then sees whether the
// loaded rank's call ended while its load still ran or only once it had
// ended (a load that starves a rank's blocks holds a correct kernel's exit
// too).
type LoadStamper interface {
	// LoadStampReason says why loads cannot be stamped here ("" when they
	// can): kernel stamps would wait for the load's own room on the SMs.
	LoadStampReason() string
	// StraggleStamped is Straggle, StraggleOverLink or StraggleMemory as
	// kind says, with the load's start and end marked in slot j (of the n
	// PrepareStamps readied) on the load's own stream; capturing as for
	// Stamp.
	StraggleStamped(d time.Duration, kind LoadKind, j int, capturing bool) error
	// LoadStamps reads slot j's start and end once the stream has passed
	// them, in ns of the stamp clock (Stamps').
	LoadStamps(j int) (start, end int64, err error)
}

// LinkStraggler is a Straggler whose load can instead read its peers'
// memory (--schedule link): the straggling rank's own reads of its peers
// then queue behind the load's on the links, while the peers' reads of it
// do not.
// LoadKind is what a straggler's load stresses.
type LoadKind uint8

const (
	// LoadOwn is Straggle's load: the loaded rank's own multiprocessors.
	LoadOwn LoadKind = iota
	// LoadLink is StraggleOverLink's: the peers' buffers over the links.
	LoadLink
	// LoadMemory is StraggleMemory's: the device's memory.
	LoadMemory
)

// MemoryStraggler is a Straggler whose load can stream the device's
// memory instead: where ranks share a GPU, every rank's reads of its
// peers' data (which are this GPU's memory reads, often L2 hits) then wait
// behind it, so a peer's data arrives late as it does over a link.
type MemoryStraggler interface {
	// MemoryLoadReason says why the memory load is not run here ("" when
	// it is).
	MemoryLoadReason() string
	// StraggleMemory starts, like Straggle, a load of d that streams a
	// scratch larger than the device's L2 with read-modify-writes.
	StraggleMemory(d time.Duration) error
}

type LinkStraggler interface {
	// StraggleOverLink starts, like Straggle, a load of d that reads the
	// peers' input buffers over the links instead of this GPU's memory.
	StraggleOverLink(d time.Duration) error
}

// Overlapper is a backend that can run a compute load beside its calls:
// bench --overlap times the allreduce while the load runs on the same
// device, as a tensor-parallel layer's matrix multiplies run beside its
// allreduce, and the load's slowdown. The host backend runs goroutines of
// fixed arithmetic; cuda runs artest_compute (kernels/harness/compute.cu), a
// GEMM-like kernel, on a side stream forked from the main one.
type Overlapper interface {
	// OverlapReason says why the load cannot run here ("" if it can): a
	// fatbin built before artest_compute existed.
	OverlapReason() string
	// PrepareOverlap allocates what the load needs, for loads of blocks
	// blocks (goroutines on host); it is called once, before any load.
	PrepareOverlap(blocks int) error
	// StartOverlap starts, in stream order (after the work enqueued before
	// it), a load of units fixed units of work that runs beside what is
	// enqueued after it: no later work waits for it until JoinOverlap. It
	// returns two events around the load itself, to be read (Since) after
	// JoinOverlap and a Sync, and destroyed by the caller. Not inside a
	// capture.
	StartOverlap(units int) (start, end Event, err error)
	// JoinOverlap makes the stream wait for every load started since the
	// last join.
	JoinOverlap() error
}

// SMCounter is a backend whose devices have streaming multiprocessors to
// share between a collective and a compute load (bench --sm-budget).
type SMCounter interface {
	// SMs is the multiprocessor count of this rank's GPU.
	SMs() int
}

// DeviceChecker is a backend that checks outputs on the device that wrote
// them (the cuda backend, with the artest_check kernel of kernels/harness/check.cu):
// stress checks every iteration there and spot-checks a few on the host
// with the Go reference, which stays the truth.
type DeviceChecker interface {
	// DeviceCheckReason says why the device checker cannot run here ("" if
	// it can): a fatbin built before artest_check existed.
	DeviceCheckReason() string
	// CheckOnDevice checks req.Slots output regions in stream order, waits
	// at most timeout for the check, and returns one verdict per slot.
	CheckOnDevice(req DeviceCheck, timeout time.Duration) ([]kernels.CheckSlot, error)
}

// DeviceCheck is one batch of output regions for DeviceChecker: slot j's
// region starts at Region + j*SlotBytes and holds [Lead guard bytes][Count
// elements][GuardAfter guard bytes], and its elements are the output of
// generator iteration Spec.Iter + j (Spec.First is the element index of
// each message's element 0).
type DeviceCheck struct {
	Spec             reference.CheckSpec
	Region           Ptr
	SlotBytes        int64
	Lead, GuardAfter int64
	Count            uint64
	Slots            int
	Guard            byte
}

// Info describes the backend for the report header.
type Info struct {
	Versions map[string]string
	Devices  []string
	Topology any
	// Sharing says how ranks share GPUs when some GPU serves several
	// ("" otherwise): their times then mean nothing.
	Sharing string
}

// Errors every backend uses for conditions the runner handles.
var (
	// ErrTimeout: Sync's deadline passed with work still running.
	ErrTimeout = errors.New("timed out waiting for the stream")
	// ErrUnsupported: the backend cannot do this (e.g. graphs on host).
	ErrUnsupported = errors.New("not supported by this backend")
	// ErrNoDevice: no GPU (or no driver) on this machine; with --backend
	// auto the host backend takes over.
	ErrNoDevice = errors.New("no CUDA driver or GPU")
)

// Graph is a captured sequence of stream work that can be replayed.
type Graph interface {
	Launch() error
	Destroy() error
}

// Event marks a point in the stream; two of them give elapsed time.
type Event interface {
	// Since is the time from earlier to this event; both must have
	// completed (call after Sync).
	Since(earlier Event) (time.Duration, error)
	// Destroy releases the event.
	Destroy() error
}

// Backend executes allreduces for one rank. Every method is called from the
// runner's goroutine (locked to its OS thread), except ReadSignal, which
// the watchdog may also call. What only some backends do (Sharer, Waiter,
// Delayer, Reregisterer, ConcurrentLauncher) are separate interfaces the
// runner checks for.
type Backend interface {
	Name() string
	Info() Info
	// Setup allocates this rank's shared buffers with capacity bytes each
	// (and the control regions of ext's External variants), exchanges
	// their handles over c and opens every peer's. It is collective.
	Setup(c comm.Comm, capacity int64, ext ExternalSet) (*World, error)
	// SkipReason says why a variant cannot run here for this mode ("" if it
	// can): a missing library, P2P, GPU feature, graphs on a backend
	// without them.
	SkipReason(v *kernels.Variant, graph bool) string
	// DefaultBlocks is the grid of a custom launch l at l.Threads when
	// neither the flags nor a tuned entry chose one (the registry's): on
	// cuda GridBlocks; on host the goroutines the variant's model plays
	// the blocks with.
	DefaultBlocks(l *Launch) int

	// Alloc returns private (not shared) memory; Free releases it.
	Alloc(n int64) (Ptr, error)
	Free(p Ptr) error
	// Upload and Download copy synchronously between host and backend memory;
	// Download waits for the stream's work first.
	Upload(dst Ptr, src []byte) error
	Download(dst []byte, src Ptr) error

	// Stream-ordered work: runs after everything enqueued before it.
	Copy(dst, src Ptr, n int64) error
	Allreduce(l *Launch) error
	// Produce enqueues --pdl's producer kernel: it writes n bytes from src
	// to dst (slowly, on purpose) and lets the next kernel, when launched
	// with Launch.PDL, start before it ends.
	Produce(dst, src Ptr, n int64) error
	// PDLSkipReason says why variant v cannot run with programmatic
	// dependent launch here ("" if it can): a GPU below sm_90, a driver
	// without cuLaunchKernelEx, a fatbin without the producer.
	PDLSkipReason(v *kernels.Variant) string
	Record() (Event, error)
	// Capture records the stream work fn enqueues into a graph instead of
	// running it.
	Capture(fn func() error) (Graph, error)
	// Sync waits until the stream is idle; ErrTimeout if no step of it
	// finished within timeout (an operation on host, a marked point on
	// cuda: ProgressMarker). Errors of the work itself come back here.
	Sync(timeout time.Duration) error

	// ReadSignal copies rank r's SignalBlock, even while a launch hangs.
	ReadSignal(r int) ([]byte, error)

	Close() error
}
