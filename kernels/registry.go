// Package kernels holds the variant registry (what each allreduce variant is,
// what it supports and how it is launched), the kernel argument ABI shared
// with the CUDA sources beside this file, and the grid partition rules that
// the CUDA kernels and their host models both follow.
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

// Variant is one allreduce implementation under test.
type Variant struct {
	Name    string
	ID      uint32 // written into the trace word by every launch; 0: writes none (nccl, a plugin's without the device helpers)
	Summary string

	DTypes   []reference.DType
	Ops      []reference.Op
	MinRanks int
	MaxRanks int
	Needs    Needs
	// Order is the reduction order the variant guarantees; it decides whether
	// random-input sums are compared bit for bit.
	Order reference.Order
	// Custom variants use the signal protocol, the IPC buffers and the trace
	// word; nccl does not.
	Custom bool

	// Kernel is the CUDA symbol stem: the function for dtype d and op o is
	// "artest_<Kernel>_<d>_<o>" (KernelName).
	Kernel string
	// Launch defaults on the cuda backend. Blocks is an upper bound: a launch
	// uses fewer when the message has fewer 16-byte vectors than Blocks *
	// Threads (GridBlocks), the same number on every rank.
	Blocks  int
	Threads int
	// HostBlocks is the number of goroutines that play the blocks on the host
	// backend.
	HostBlocks int

	// Params are the variant's own launch parameters (stages, lanes, slot
	// sizes), carried in Args.Param0..3 and set with --param NAME=VALUE.
	Params []Param
	// Resolve, when set, fills the parameters that are 0 ("auto") from the
	// message (size, world); it runs on the host before every launch, the
	// same on every rank and on both backends.
	Resolve func(a *Args, elemBytes int64)
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
	// StagesOwnInput: for a staged case the variant gets the private input
	// (backend.Launch.Src) and copies it into its registered buffer itself,
	// instead of the runner copying it there before each call.
	StagesOwnInput bool
	// External, when set, implements the variant outside artest (a plugin,
	// internal/plugin): the backends call it instead of a kernel or a host
	// model. Such a variant writes no trace word (ID 0) unless its kernels
	// use the device helpers (plugin/artest_device.h): then ID is the trace
	// id the loader gave it (ExternalTraceID), its calls carry
	// ExternalCall.Device, and WaitPoints name its wait points.
	External   External
	WaitPoints []string
}

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

var allDTypes = []reference.DType{reference.F32, reference.F16, reference.BF16}
var allOps = []reference.Op{reference.Sum, reference.Max, reference.Min}

// Variant ids written into the trace word. Never reuse a number.
const (
	IDOneshot uint32 = 0x0051 // 'Q' for one-shot
	IDTwoshot uint32 = 0x0052
	// The IDs of the later variants.
	IDOneshotCpasync uint32 = 0x0053
	IDRing           uint32 = 0x0054
	IDMultimem       uint32 = 0x0055
	IDOneshotLL      uint32 = 0x0056
)

// Registry is every variant artest knows, in the order reports list them.
// It is data, not init-time self-registration, so what exists is visible here.
var Registry = []Variant{
	{
		Name:    "oneshot",
		ID:      IDOneshot,
		Summary: "every rank reads all peers' inputs and reduces all of it; start and end barriers",
		DTypes:  allDTypes, Ops: allOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:  NeedP2P,
		Order:  reference.OrderRankAscendingF32,
		Custom: true,
		Kernel: "oneshot",
		// 36 x 512 is vLLM's one-shot default on H100; re-measured by artest tune.
		Blocks: 36, Threads: 512,
		HostBlocks: 4,
	},
	{
		Name:    "twoshot",
		ID:      IDTwoshot,
		Summary: "reduce-scatter into staging, mid barrier, all-gather from peers' staging, end barrier",
		DTypes:  allDTypes, Ops: allOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:  NeedP2P,
		Order:  reference.OrderRankAscendingF32,
		Custom: true,
		Kernel: "twoshot",
		Blocks: 36, Threads: 512,
		HostBlocks: 4,
		Params:     twoshotParams,
		Resolve:    TwoshotResolve,
	},
	{
		Name:    "oneshot-cpasync",
		ID:      IDOneshotCpasync,
		Summary: "oneshot with a cp.async pipeline (stages x 16-byte copies from every peer into shared memory); start and end barriers",
		DTypes:  allDTypes, Ops: allOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:  NeedP2P | NeedSM80,
		Order:  reference.OrderRankAscendingF32,
		Custom: true,
		Kernel: "oneshot_cpasync",
		// Guesses until measured on H200: 256 threads keep 3
		// stages at 8 ranks to 96 KiB of shared memory (CpasyncSharedBytes),
		// two blocks per SM; 72 blocks x 256 threads is oneshot's thread count.
		Blocks: 72, Threads: 256,
		HostBlocks: 4,
		Params: []Param{{Name: "stages", Slot: 0, Default: CpasyncDefaultStages,
			Min: CpasyncMinStages, Max: CpasyncMaxStages, Help: "cp.async pipeline stages"}},
		SharedBytes: CpasyncSharedBytes,
	},
	{
		Name:    "oneshot-ll",
		ID:      IDOneshotLL,
		Summary: "oneshot without barriers: every rank pushes its input into every rank's staging as LL words (data and sequence in one 8-byte store), then reduces locally",
		DTypes:  allDTypes, Ops: allOps,
		MinRanks: 1, MaxRanks: 8,
		Needs:  NeedP2P,
		Order:  reference.OrderRankAscendingF32,
		Custom: true,
		Kernel: "oneshot_ll",
		// oneshot's 36 x 512 until artest tune measures it on H200.
		Blocks: 36, Threads: 512,
		HostBlocks: 4,
		TooBig:     LLTooBig,
		StageNeed:  LLStageBytes,
	},
	{
		Name:    "ring",
		ID:      IDRing,
		Summary: "Disruptor-style slot rings per lane (sequences, credits) in peers' staging: ring reduce-scatter and all-gather in one persistent producer/consumer kernel",
		DTypes:  allDTypes, Ops: allOps,
		MinRanks: 1, MaxRanks: 8,
		Needs: NeedP2P,
		// Chunk c is summed from rank c around the ring in float32 (ring.go):
		// not rank-ascending, so random sums are checked within the bound.
		Order:  reference.OrderUnknown,
		Custom: true,
		Kernel: "ring",
		// One block per lane (RingGrid); 512 threads is a guess until the
		// lead measures on H200.
		Blocks: RingMaxLanes, Threads: 512,
		HostBlocks: 1, // unused: the host backend launches RingGrid's blocks too
		Params:     RingParams,
		Resolve:    RingResolve,
		GridFunc:   RingGrid,
	},
	{
		Name:    "multimem",
		ID:      IDMultimem,
		Summary: "NVLink SHARP: multimem.ld_reduce from the multicast address, multimem.st to every rank (two-shot, or one-shot); cuda needs --allow-multicast",
		// Sum only: the switch reduces f16 and bf16 max/min but not f32's.
		DTypes: allDTypes, Ops: []reference.Op{reference.Sum},
		MinRanks: 1, MaxRanks: 8,
		Needs: NeedMulticast | NeedSM90 | NeedP2P,
		// The switch's reduction order (and, for f32, precision) is not
		// specified: random sums are checked within the bound, as nccl's.
		Order:  reference.OrderUnknown,
		Custom: true,
		Kernel: "multimem",
		// 36 x 512 as the other one-slot-per-thread kernels; a guess until
		// measured on an NVLS node.
		Blocks: 36, Threads: 512,
		HostBlocks: 4,
		Params: []Param{{Name: "shots", Slot: 0, Default: 0, Min: MultimemOneShot, Max: MultimemTwoShot,
			Help: "1: one-shot, 2: two-shot, 0: auto by size"}},
		Resolve:  MultimemResolve,
		GridFunc: MultimemGrid,
	},
	{
		Name:    "nccl",
		Summary: "ncclAllReduce on the same buffers: baseline and cross-check",
		DTypes:  allDTypes, Ops: allOps,
		MinRanks: 1, MaxRanks: 1 << 20,
		Needs: NeedNCCL | NeedCUDA,
		Order: reference.OrderUnknown,
	},
}

// Names lists the registered variant names.
func Names() []string {
	names := make([]string, len(Registry))
	for i := range Registry {
		names[i] = Registry[i].Name
	}
	return names
}

// Lookup finds a variant by name; an unknown name lists the valid ones.
func Lookup(name string) (*Variant, error) {
	for i := range Registry {
		if Registry[i].Name == name {
			return &Registry[i], nil
		}
	}
	return nil, fmt.Errorf("unknown variant %q (valid: %s)", name, strings.Join(Names(), ", "))
}

// ByID finds the variant that writes trace id id.
func ByID(id uint32) *Variant {
	for i := range Registry {
		if Registry[i].ID == id && id != 0 {
			return &Registry[i]
		}
	}
	return nil
}
