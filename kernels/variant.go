// Package kernels holds what every variant shares: the Variant type (what
// an allreduce variant is, what it supports and how it is launched), the
// kernel argument ABI shared with the CUDA sources beside this file, and
// the grid partition rules that the CUDA kernels and their host models
// both follow. Each built-in variant is a folder below this one
// (kernels/<variant>/) that returns its complete Variant; the list of them
// is kernels/registry.
package kernels

import (
	"fmt"
	"strings"

	"github.com/artest/artest/reference"
)

// Needs is what a variant requires of the machine.
type Needs uint32

const (
	NeedSM80      Needs = 1 << 0 // compute capability 8.0 or newer
	NeedSM90      Needs = 1 << 1 // compute capability 9.0 or newer
	NeedP2P       Needs = 1 << 2 // peer access between every pair of GPUs
	NeedMulticast Needs = 1 << 3 // NVLS multicast objects (behind the safety gate)
	NeedNCCL      Needs = 1 << 4 // libnccl.so.2
	NeedCUDA      Needs = 1 << 5 // runs on the cuda backend only
)

func (n Needs) String() string {
	var parts []string
	for _, x := range []struct {
		bit  Needs
		name string
	}{{NeedSM80, "sm_80"}, {NeedSM90, "sm_90"}, {NeedP2P, "p2p"}, {NeedMulticast, "multicast"}, {NeedNCCL, "nccl"}, {NeedCUDA, "cuda"}} {
		if n&x.bit != 0 {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

// NCCLMode is how an NCCL baseline passes its buffers to ncclAllReduce.
type NCCLMode uint8

const (
	NCCLPlain      NCCLMode = iota // unregistered buffers (nccl-tests' default)
	NCCLRegistered                 // ncclCommRegister'ed buffers (nccl-tests -R 1)
	NCCLWindow                     // a symmetric window, NCCL_WIN_COLL_SYMMETRIC (nccl-tests -R 2)
)

// Variant is one implementation under test of an allreduce, or of the
// other collectives it declares (Colls).
type Variant struct {
	Name    string
	ID      uint32 // written into the trace word by every launch; 0: writes none (nccl, a plugin's without the device helpers)
	Summary string
	// Slower, when set, says that another variant was measured faster at
	// every size, by how much, and why as far as that was measured: a
	// variant kept for what it exercises (a protocol, an instruction), not
	// for speed. `artest --list` prints it for the variants it selects.
	Slower string

	// Colls are the collectives the variant implements; nil: the
	// allreduce alone. A case is built for each (variant, collective) pair
	// the variant declares, so a variant that declares none keeps exactly
	// its allreduce cases.
	Colls []reference.Coll

	DTypes   []reference.DType
	Ops      []reference.Op
	MinRanks int
	MaxRanks int
	Needs    Needs
	// Order is the reduction order the variant guarantees; it decides whether
	// random-input sums are compared bit for bit.
	Order reference.Order
	// Kind is what implements the variant: artest's kernel, a plugin's
	// (External) or an NCCL call (NCCL).
	Kind Kind
	// NCCL is how a KindNCCL variant calls ncclAllReduce: on plain buffers
	// (nccl), on registered ones (nccl-reg) or on a symmetric window
	// (nccl-win).
	NCCL NCCLMode

	// Kernel is the CUDA symbol stem: the function of the allreduce for
	// dtype d and op o is "artest_<Kernel>_<d>_<o>" (KernelName), of the
	// other collectives "artest_<Kernel>_rs_<d>_<o>" and
	// "artest_<Kernel>_ag_<d>" (CollKernelName).
	Kernel string
	// Launch defaults on the cuda backend. Blocks is an upper bound: a launch
	// uses fewer when the message has fewer 16-byte vectors than Blocks *
	// Threads (GridBlocks), the same number on every rank.
	Blocks  int
	Threads int
	// HostBlocks is the number of goroutines that play the blocks on the host
	// backend; 0: as many as Grid gives on cuda (where the grid is part of
	// the protocol, as the ring's one block per lane).
	HostBlocks int

	// Params are the variant's own launch parameters (stages, lanes, slot
	// sizes), carried in Args.Param0..3 and set with --param NAME=VALUE.
	Params []Param
	// Resolve, when set, fills the parameters that are 0 ("auto") from the
	// message (size, world); it runs on the host before every launch, the
	// same on every rank and on both backends.
	Resolve func(a *Args, elemBytes int64)
	// StressParams, when set, are the parameter values a stress run
	// launches the variant with when no flag names it (ahead of the tuning
	// table and the defaults): settings that stretch its protocol at the
	// stress matrix's small sizes, where its defaults resolve to a shape
	// in which some of its checks are never needed (the ring's: smaller
	// slots, so that a producer can run ahead of its reader at 2 ranks).
	// The case's report says "from": "stress" and the values resolved.
	StressParams map[string]uint32
	// ThreadsFunc, when set, is the block size of a launch on the
	// registry's defaults (no tuned entry, no --threads) for the message
	// in a; Threads is then the largest it may return (DefaultThreads).
	ThreadsFunc func(a *Args, elemBytes int64) int
	// GridFunc, when set, replaces Grid's formula for this variant.
	GridFunc func(a *Args, elemBytes int64, maxBlocks, threads int) int
	// SharedBytes, when set, is the dynamic shared memory a CUDA launch
	// needs (set through the launch attribute when above the 48 KiB default).
	SharedBytes func(a *Args, threads int) int
	// TooBig, when set, says why a message of that many bytes is not for
	// this variant (its case is skipped with the reason), or "".
	TooBig func(msgBytes int64) string
	// StageNeed, when set, is the staging buffer a message needs on n
	// ranks when that is more than the message itself (the runner sizes
	// the shared buffers by it).
	StageNeed func(msgBytes int64, n int) int64

	// Align, when above 1, is the alignment in bytes the variant needs of
	// its input and output addresses and of the message size: cases that
	// break it are skipped with the reason.
	Align int64
	// EarlyReturn, when set, says why a rank may return before its peers
	// finish (it pushes its data into their buffers instead of letting
	// them read its own): stress's end-barrier witness then reports the
	// leads without a warning.
	EarlyReturn string
	// StagesOwnInput: for a staged case the variant gets the private input
	// (backend.Launch.Src) and copies it into its registered buffer itself,
	// instead of the runner copying it there before each call.
	StagesOwnInput bool
	// ZeroStaging: the protocol reads all-zero staging as empty (its slots
	// carry no launch number), so the runner zeroes this rank's staging,
	// the part the case uses (StageNeed), before a case's first launch;
	// no rank launches before every rank has (they agree on readiness
	// after it). Other variants leave their data there.
	ZeroStaging bool
	// External, when set, implements the variant outside artest (a plugin,
	// internal/plugin): the backends call it instead of a kernel or a host
	// model. Such a variant writes no trace word (ID 0) unless its kernels
	// use the device helpers (plugin/artest_device.h): then ID is the trace
	// id the loader gave it (ExternalTraceID), its calls carry
	// ExternalCall.Device, and WaitPoints name its wait points.
	External   External
	WaitPoints []string

	// Tune is the space artest tune sweeps for this variant: an empty axis
	// means the launch default only (TuneBlocks and TuneThreads are the
	// usual axes).
	Tune TuneSpace
	// Faults are the fault switches of this variant's own protocol, beside
	// the ones every custom kernel has (Inject* in abi.go): --inject NAME
	// sets Bit on every launch.
	Faults []Fault
	// Host is the variant's host (CPU) model, which the host backend runs;
	// nil: the variant does not run there (nccl) or is External.
	Host HostModel
}

// Kind is what implements a variant.
type Kind uint8

const (
	// KindNCCL: an NCCL call (Variant.NCCL says which): no kernel of
	// artest's, no signal protocol, no trace word, no launch parameters.
	// The zero Kind: a variant that declares nothing runs none of artest's
	// machinery.
	KindNCCL Kind = iota
	// KindKernel: artest's own kernel (Variant.Kernel) and its host model
	// (Variant.Host).
	KindKernel
	// KindPlugin: a plugin's implementation (Variant.External), which gets
	// the IPC buffers and may use the device helpers.
	KindPlugin
)

func (k Kind) String() string {
	switch k {
	case KindNCCL:
		return "nccl"
	case KindKernel:
		return "kernel"
	case KindPlugin:
		return "plugin"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Custom says whether the variant runs on artest's buffers and signal
// protocol (its kernel or a plugin's), rather than being an NCCL call.
func (v *Variant) Custom() bool { return v.Kind != KindNCCL }

// HostModel is a variant's host model: a hostmodel.Body (the type lives in
// kernels/hostmodel, which sits above this package).
type HostModel interface{ IsHostModel() }

// Fault is one fault switch of a variant's own protocol.
type Fault struct {
	Name string // as in --inject NAME
	Bit  uint32 // the Args.Inject bit the kernel and the host model test
	Help string
}

// TuneSpace is the launch parameters artest tune tries for one variant.
type TuneSpace struct {
	Blocks  []int
	Threads []int
	// Params are candidate values by parameter name; a parameter not named
	// keeps its default.
	Params map[string][]uint32
}

// The usual tuning axes. Blocks: 132 is H200's SM count, 256 the
// SignalBlock's limit (sigblock.MaxBlocks); the rest spread between 8 and
// it. Threads: every warp multiple from 128 up to the kernels'
// __launch_bounds__ (MaxThreads); fewer than 128 leaves too few loads in
// flight per SM to matter. Which of these win is for measurements on H200
// to say.
var (
	TuneBlocks  = []int{8, 16, 24, 32, 48, 64, 96, 132, 192, 256}
	TuneThreads = []int{128, 256, 512}
)

// Param is one launch parameter of a variant.
type Param struct {
	Name     string // as in --param NAME=VALUE
	Slot     int    // 0..3: Args.Param0..Param3
	Default  uint32 // used when --param does not name it; 0 may mean auto (see Help)
	Min, Max uint32 // valid values (0 is always accepted when Default is 0: auto)
	Help     string
}

// ParamSlot returns a pointer to Args.Param<slot>.
func (a *Args) ParamSlot(slot int) *uint32 {
	switch slot {
	case 0:
		return &a.Param0
	case 1:
		return &a.Param1
	case 2:
		return &a.Param2
	case 3:
		return &a.Param3
	}
	panic(fmt.Sprintf("param slot %d out of range 0..3", slot))
}

// SetParams writes v's parameters into a: the value in set when it names
// the parameter, else the default; then Resolve fills the auto ones.
func (v *Variant) SetParams(a *Args, set map[string]uint32, elemBytes int64) {
	for _, p := range v.Params {
		val, ok := set[p.Name]
		if !ok {
			val = p.Default
		}
		*a.ParamSlot(p.Slot) = val
	}
	if v.Resolve != nil {
		v.Resolve(a, elemBytes)
	}
}

// Param finds v's parameter by name.
func (v *Variant) Param(name string) (Param, bool) {
	for _, p := range v.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// KernelName is the CUDA function that implements v for one dtype and op.
func (v *Variant) KernelName(d reference.DType, o reference.Op) string {
	return fmt.Sprintf("artest_%s_%s_%s", v.Kernel, d, o)
}

// CollKernelName is the CUDA function that implements collective c of v
// for one dtype and op: KernelName's for the allreduce; another
// collective's has its tag (reference.Collective.KernelTag: "rs" for the
// reduce-scatter) before the dtype, and no op when it reduces nothing
// ("artest_pull_ag_bf16").
func (v *Variant) CollKernelName(c reference.Coll, d reference.DType, o reference.Op) string {
	desc := c.Desc()
	switch {
	case desc.KernelTag == "":
		return v.KernelName(d, o)
	case desc.Reduces:
		return fmt.Sprintf("artest_%s_%s_%s_%s", v.Kernel, desc.KernelTag, d, o)
	}
	return fmt.Sprintf("artest_%s_%s_%s", v.Kernel, desc.KernelTag, d)
}

// Collectives is what v implements: Colls, or the allreduce alone when it
// declares none.
func (v *Variant) Collectives() []reference.Coll {
	if len(v.Colls) == 0 {
		return []reference.Coll{reference.AllReduce}
	}
	return v.Colls
}

// Implements reports whether v implements collective c.
func (v *Variant) Implements(c reference.Coll) bool {
	for _, x := range v.Collectives() {
		if x == c {
			return true
		}
	}
	return false
}

// SupportsDType reports whether v implements dtype d.
func (v *Variant) SupportsDType(d reference.DType) bool {
	for _, x := range v.DTypes {
		if x == d {
			return true
		}
	}
	return false
}

// SupportsOp reports whether v implements op o.
func (v *Variant) SupportsOp(o reference.Op) bool {
	for _, x := range v.Ops {
		if x == o {
			return true
		}
	}
	return false
}

// RanksReason says why v cannot run on n ranks, or "" if it can.
func (v *Variant) RanksReason(n int) string {
	if n < v.MinRanks || n > v.MaxRanks {
		return fmt.Sprintf("%s supports %d to %d ranks, not %d", v.Name, v.MinRanks, v.MaxRanks, n)
	}
	return ""
}

// AllDTypes and AllOps are what a variant that implements every dtype and
// op lists.
var (
	AllDTypes = []reference.DType{reference.F32, reference.F16, reference.BF16}
	AllOps    = []reference.Op{reference.Sum, reference.Max, reference.Min}
)

// DefaultThreads is the block size of v's launch on the registry's
// defaults for the message in a: ThreadsFunc's, else Threads.
func (v *Variant) DefaultThreads(a *Args, elemBytes int64) int {
	if v.ThreadsFunc != nil {
		return v.ThreadsFunc(a, elemBytes)
	}
	return v.Threads
}
