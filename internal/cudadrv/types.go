package cudadrv

import (
	"fmt"
	"time"
)

// Handles are the driver's opaque pointers kept as integers: the Go side
// never dereferences them, and integers keep them out of the cgo pointer
// checks. The zero Stream is the legacy default stream.
type (
	Device    int32 // CUdevice: an ordinal, not a pointer
	Context   uintptr
	Stream    uintptr
	Event     uintptr
	Module    uintptr
	Function  uintptr
	Graph     uintptr
	GraphExec uintptr
)

// DevicePtr is a device address (CUdeviceptr). With unified addressing it
// is also what a kernel sees as a pointer.
type DevicePtr uint64

// Add offsets a device address by n bytes.
func (p DevicePtr) Add(n uint64) DevicePtr { return p + DevicePtr(n) }

// IPCMemHandle is CUipcMemHandle: the 64 bytes a process sends to a peer so
// the peer can map this process's allocation.
type IPCMemHandle [64]byte

// UUID identifies a GPU (CUuuid).
type UUID [16]byte

// String formats the UUID the way nvidia-smi and NVML do:
// GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func (u UUID) String() string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// D1 is a one-dimensional shape.
func D1(x uint32) Dim3 { return Dim3{X: x, Y: 1, Z: 1} }

func (d Dim3) String() string { return fmt.Sprintf("(%d,%d,%d)", d.X, d.Y, d.Z) }

func (d Dim3) valid() bool { return d.X > 0 && d.Y > 0 && d.Z > 0 }

// DeviceAttribute is a CUdevice_attribute.
type DeviceAttribute int32

const (
	AttrMaxThreadsPerBlock           DeviceAttribute = 1
	AttrClockRateKHz                 DeviceAttribute = 13
	AttrMultiprocessorCount          DeviceAttribute = 16
	AttrPCIBusID                     DeviceAttribute = 33
	AttrPCIDeviceID                  DeviceAttribute = 34
	AttrMemoryClockRateKHz           DeviceAttribute = 36
	AttrGlobalMemoryBusWidth         DeviceAttribute = 37
	AttrL2CacheSize                  DeviceAttribute = 38
	AttrUnifiedAddressing            DeviceAttribute = 41
	AttrPCIDomainID                  DeviceAttribute = 50
	AttrComputeCapabilityMajor       DeviceAttribute = 75
	AttrComputeCapabilityMinor       DeviceAttribute = 76
	AttrMaxSharedMemoryPerSM         DeviceAttribute = 81
	AttrCooperativeLaunch            DeviceAttribute = 95
	AttrMaxSharedMemoryPerBlockOptin DeviceAttribute = 97
	AttrMaxBlocksPerSM               DeviceAttribute = 106
	// AttrMulticastSupported only reads a capability; it creates nothing.
	// Whether multicast may be used is the safety gate's decision, not this
	// attribute's.
	AttrMulticastSupported DeviceAttribute = 132
)

// FuncAttribute is a CUfunction_attribute.
type FuncAttribute int32

const (
	FuncMaxThreadsPerBlock         FuncAttribute = 0
	FuncSharedSizeBytes            FuncAttribute = 1
	FuncConstSizeBytes             FuncAttribute = 2
	FuncLocalSizeBytes             FuncAttribute = 3
	FuncNumRegs                    FuncAttribute = 4
	FuncPTXVersion                 FuncAttribute = 5
	FuncBinaryVersion              FuncAttribute = 6
	FuncMaxDynamicSharedSizeBytes  FuncAttribute = 8
	FuncPreferredSharedMemCarveout FuncAttribute = 9
)

// Stream creation flags (CU_STREAM_*).
const (
	StreamDefault     uint32 = 0x0
	StreamNonBlocking uint32 = 0x1 // does not synchronise with the legacy default stream
)

// Event creation flags (CU_EVENT_*).
const (
	EventDefault       uint32 = 0x0
	EventBlockingSync  uint32 = 0x1
	EventDisableTiming uint32 = 0x2
)

// CaptureMode is a CUstreamCaptureMode.
type CaptureMode int32

const (
	CaptureGlobal      CaptureMode = 0
	CaptureThreadLocal CaptureMode = 1
	CaptureRelaxed     CaptureMode = 2
)

// Graph instantiation flags (CUDA_GRAPH_INSTANTIATE_FLAG_*).
const (
	GraphInstantiateAutoFreeOnLaunch uint64 = 1
	GraphInstantiateUpload           uint64 = 2
	GraphInstantiateUseNodePriority  uint64 = 8
)

// ipcLazyEnablePeerAccess is CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS, the only
// flag cuIpcOpenMemHandle accepts.
const ipcLazyEnablePeerAccess = 0x1

// MaxKernelParamBytes is the largest kernel parameter block the driver
// accepts (32764 bytes since CUDA 12.1 on Volta and newer).
const MaxKernelParamBytes = 32764

// VersionString turns a driver version number (13000) into "13.0".
func VersionString(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

func msToDuration(ms float32) time.Duration {
	return time.Duration(float64(ms) * float64(time.Millisecond))
}
