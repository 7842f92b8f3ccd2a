package cudadrv

/*
#include <stdlib.h>
#include "trampolines.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// The Go and C views of a launch attribute must agree byte for byte; this
// fails to compile if they do not.
var _ = [1]struct{}{}[unsafe.Sizeof(LaunchAttribute{})-C.sizeof_art_launchAttr]

// checkLaunch validates what the driver would reject with a less helpful
// CUDA_ERROR_INVALID_VALUE.
func checkLaunch(call string, grid, block Dim3, arg unsafe.Pointer, argSize uintptr) error {
	switch {
	case !grid.valid():
		return fmt.Errorf("%s: grid %v has a zero dimension", call, grid)
	case !block.valid():
		return fmt.Errorf("%s: block %v has a zero dimension", call, block)
	case arg == nil && argSize != 0:
		return fmt.Errorf("%s: nil argument with size %d", call, argSize)
	case arg != nil && argSize == 0:
		return fmt.Errorf("%s: argument given with size 0", call)
	case argSize > MaxKernelParamBytes:
		return fmt.Errorf("%s: argument of %d bytes exceeds the %d-byte kernel parameter limit", call, argSize, MaxKernelParamBytes)
	}
	return nil
}

// Launch queues fn on s. artest kernels take one struct parameter by value:
// arg points at argSize bytes holding it (nil and 0 for a kernel without
// parameters). The bytes are copied into C memory for the call, so arg may
// be Go memory, but it must not contain Go pointers.
func (d *Driver) Launch(fn Function, grid, block Dim3, sharedBytes uint32, s Stream, arg unsafe.Pointer, argSize uintptr) error {
	if err := checkLaunch(d.t.launchKernel.name, grid, block, arg, argSize); err != nil {
		return err
	}
	carg := cArg(arg, argSize)
	defer C.free(carg)
	return d.check(&d.t.launchKernel, C.art_cuLaunchKernel(d.t.launchKernel.ptr, C.uintptr_t(fn),
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z),
		C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(sharedBytes), C.uintptr_t(s), carg, C.size_t(argSize)))
}

// cArg copies a kernel argument into C memory before the cgo call. Passing
// the Go pointer itself would make the cgo checker inspect the whole Go
// object it points into, and a parameter struct embedded in a larger
// struct that holds Go pointers (a launch description, say) panics there.
func cArg(arg unsafe.Pointer, size uintptr) unsafe.Pointer {
	if arg == nil || size == 0 {
		return nil
	}
	return C.CBytes(unsafe.Slice((*byte)(arg), size))
}

// LaunchArg launches fn with *arg as its single by-value parameter. T must
// match the kernel's parameter struct byte for byte and hold no Go pointers.
func LaunchArg[T any](d *Driver, fn Function, grid, block Dim3, sharedBytes uint32, s Stream, arg *T) error {
	return d.Launch(fn, grid, block, sharedBytes, s, unsafe.Pointer(arg), unsafe.Sizeof(*arg))
}

// LaunchAttributeID is a CUlaunchAttributeID.
type LaunchAttributeID uint32

const (
	LaunchAttrCooperative LaunchAttributeID = 2
	LaunchAttrClusterDim  LaunchAttributeID = 4
	// LaunchAttrProgrammaticStreamSerialization lets this kernel start
	// before the previous kernel in the stream finishes (programmatic
	// dependent launch, sm_90); the kernel must call
	// cudaGridDependencySynchronize before reading what the previous one
	// wrote.
	LaunchAttrProgrammaticStreamSerialization LaunchAttributeID = 6
	LaunchAttrProgrammaticEvent               LaunchAttributeID = 7
	LaunchAttrPriority                        LaunchAttributeID = 8
	LaunchAttrLaunchCompletionEvent           LaunchAttributeID = 12
)

// LaunchAttribute is CUlaunchAttribute: an id and a 64-byte value union.
// The constructors below fill Value for the attributes artest uses; others
// can be written into Value directly (little-endian, as the union's members
// are laid out from byte 0).
type LaunchAttribute struct {
	ID    LaunchAttributeID
	_     uint32
	Value [8]uint64
}

func int32Attr(id LaunchAttributeID, v int32) LaunchAttribute {
	a := LaunchAttribute{ID: id}
	a.Value[0] = uint64(uint32(v))
	return a
}

func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// ProgrammaticStreamSerialization allows (or forbids) programmatic
// dependent launch for this kernel.
func ProgrammaticStreamSerialization(allowed bool) LaunchAttribute {
	return int32Attr(LaunchAttrProgrammaticStreamSerialization, boolInt(allowed))
}

// Cooperative makes the launch cooperative (all blocks co-resident).
func Cooperative(on bool) LaunchAttribute { return int32Attr(LaunchAttrCooperative, boolInt(on)) }

// Priority sets the launch's scheduling priority.
func Priority(p int32) LaunchAttribute { return int32Attr(LaunchAttrPriority, p) }

// ClusterDim sets a thread block cluster shape (sm_90).
func ClusterDim(d Dim3) LaunchAttribute {
	a := LaunchAttribute{ID: LaunchAttrClusterDim}
	a.Value[0] = uint64(d.X) | uint64(d.Y)<<32
	a.Value[1] = uint64(d.Z)
	return a
}

// ProgrammaticEvent records ev when all blocks have triggered (or, with
// triggerAtBlockStart, started), so a dependent kernel on another stream
// can wait for it.
func ProgrammaticEvent(ev Event, flags int32, triggerAtBlockStart bool) LaunchAttribute {
	a := LaunchAttribute{ID: LaunchAttrProgrammaticEvent}
	a.Value[0] = uint64(ev)
	a.Value[1] = uint64(uint32(flags)) | uint64(uint32(boolInt(triggerAtBlockStart)))<<32
	return a
}

// LaunchConfig is a launch for LaunchEx.
type LaunchConfig struct {
	Grid, Block Dim3
	SharedBytes uint32
	Stream      Stream
	Attributes  []LaunchAttribute
}

// HasLaunchEx reports whether the driver has cuLaunchKernelEx (CUDA 11.8
// and newer), which LaunchEx and so programmatic dependent launch need.
func (d *Driver) HasLaunchEx() bool { return d.t.launchKernelEx.ptr != nil }

// LaunchEx is Launch with launch attributes (cuLaunchKernelEx), e.g.
// ProgrammaticStreamSerialization(true) for programmatic dependent launch.
func (d *Driver) LaunchEx(cfg LaunchConfig, fn Function, arg unsafe.Pointer, argSize uintptr) error {
	if d.t.launchKernelEx.ptr == nil {
		return missing(&d.t.launchKernelEx)
	}
	if err := checkLaunch(d.t.launchKernelEx.name, cfg.Grid, cfg.Block, arg, argSize); err != nil {
		return err
	}
	var attrs *C.art_launchAttr
	if len(cfg.Attributes) > 0 {
		attrs = (*C.art_launchAttr)(unsafe.Pointer(&cfg.Attributes[0]))
	}
	carg := cArg(arg, argSize)
	defer C.free(carg)
	return d.check(&d.t.launchKernelEx, C.art_cuLaunchKernelEx(d.t.launchKernelEx.ptr, C.uintptr_t(fn),
		C.uint(cfg.Grid.X), C.uint(cfg.Grid.Y), C.uint(cfg.Grid.Z),
		C.uint(cfg.Block.X), C.uint(cfg.Block.Y), C.uint(cfg.Block.Z),
		C.uint(cfg.SharedBytes), C.uintptr_t(cfg.Stream),
		attrs, C.uint(len(cfg.Attributes)), carg, C.size_t(argSize)))
}
