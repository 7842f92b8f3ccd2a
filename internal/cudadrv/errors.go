package cudadrv

import (
	"errors"
	"fmt"
)

// Result is a CUresult code. The named codes are sentinels for errors.Is:
//
//	if errors.Is(err, cuda.ErrNotReady) { ... }
//
// matches any *Error carrying that code.
type Result int

// Codes from CUDA 13's cuda.h that artest tests for or that explain common
// failures. Every other code still arrives in an *Error with its name.
const (
	ErrInvalidValue             Result = 1
	ErrOutOfMemory              Result = 2
	ErrNotInitialized           Result = 3
	ErrDeinitialized            Result = 4
	ErrStubLibrary              Result = 34
	ErrNoDevice                 Result = 100
	ErrInvalidDevice            Result = 101
	ErrInvalidImage             Result = 200
	ErrInvalidContext           Result = 201
	ErrNoBinaryForGPU           Result = 209
	ErrPeerAccessUnsupported    Result = 217
	ErrInvalidPTX               Result = 218
	ErrUnsupportedPTXVersion    Result = 222
	ErrInvalidHandle            Result = 400
	ErrNotFound                 Result = 500
	ErrNotReady                 Result = 600
	ErrIllegalAddress           Result = 700
	ErrLaunchOutOfResources     Result = 701
	ErrLaunchTimeout            Result = 702
	ErrPeerAccessAlreadyEnabled Result = 704
	ErrPeerAccessNotEnabled     Result = 705
	ErrAssert                   Result = 710
	ErrHardwareStackError       Result = 714
	ErrIllegalInstruction       Result = 715
	ErrMisalignedAddress        Result = 716
	ErrInvalidAddressSpace      Result = 717
	ErrInvalidPC                Result = 718
	ErrLaunchFailed             Result = 719
	ErrNotPermitted             Result = 800
	ErrNotSupported             Result = 801
	ErrStreamCaptureUnsupported Result = 900
	ErrStreamCaptureInvalidated Result = 901
	ErrStreamCaptureImplicit    Result = 906
	ErrStreamCaptureWrongThread Result = 908
	ErrTimeout                  Result = 909
	ErrUnknown                  Result = 999
)

// resultNames are the enum names of cuda.h, used when the driver's own
// cuGetErrorName is unavailable or does not know a code.
var resultNames = map[Result]string{
	0: "CUDA_SUCCESS", 1: "CUDA_ERROR_INVALID_VALUE", 2: "CUDA_ERROR_OUT_OF_MEMORY",
	3: "CUDA_ERROR_NOT_INITIALIZED", 4: "CUDA_ERROR_DEINITIALIZED",
	5: "CUDA_ERROR_PROFILER_DISABLED", 6: "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
	7: "CUDA_ERROR_PROFILER_ALREADY_STARTED", 8: "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
	34: "CUDA_ERROR_STUB_LIBRARY", 36: "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER",
	46: "CUDA_ERROR_DEVICE_UNAVAILABLE", 100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE", 102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
	200: "CUDA_ERROR_INVALID_IMAGE", 201: "CUDA_ERROR_INVALID_CONTEXT",
	202: "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", 205: "CUDA_ERROR_MAP_FAILED",
	206: "CUDA_ERROR_UNMAP_FAILED", 207: "CUDA_ERROR_ARRAY_IS_MAPPED",
	208: "CUDA_ERROR_ALREADY_MAPPED", 209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	210: "CUDA_ERROR_ALREADY_ACQUIRED", 211: "CUDA_ERROR_NOT_MAPPED",
	212: "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", 213: "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
	214: "CUDA_ERROR_ECC_UNCORRECTABLE", 215: "CUDA_ERROR_UNSUPPORTED_LIMIT",
	216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", 217: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
	218: "CUDA_ERROR_INVALID_PTX", 219: "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
	220: "CUDA_ERROR_NVLINK_UNCORRECTABLE", 221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", 223: "CUDA_ERROR_JIT_COMPILATION_DISABLED",
	224: "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", 225: "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC",
	226: "CUDA_ERROR_CONTAINED", 300: "CUDA_ERROR_INVALID_SOURCE",
	301: "CUDA_ERROR_FILE_NOT_FOUND", 302: "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
	303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", 304: "CUDA_ERROR_OPERATING_SYSTEM",
	400: "CUDA_ERROR_INVALID_HANDLE", 401: "CUDA_ERROR_ILLEGAL_STATE",
	402: "CUDA_ERROR_LOSSY_QUERY", 500: "CUDA_ERROR_NOT_FOUND", 600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS", 701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT", 703: "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
	704: "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", 705: "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	708: "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", 709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	710: "CUDA_ERROR_ASSERT", 711: "CUDA_ERROR_TOO_MANY_PEERS",
	712: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", 713: "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR", 715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS", 717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	718: "CUDA_ERROR_INVALID_PC", 719: "CUDA_ERROR_LAUNCH_FAILED",
	720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", 721: "CUDA_ERROR_TENSOR_MEMORY_LEAK",
	800: "CUDA_ERROR_NOT_PERMITTED", 801: "CUDA_ERROR_NOT_SUPPORTED",
	802: "CUDA_ERROR_SYSTEM_NOT_READY", 803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", 805: "CUDA_ERROR_MPS_CONNECTION_FAILED",
	806: "CUDA_ERROR_MPS_RPC_FAILURE", 807: "CUDA_ERROR_MPS_SERVER_NOT_READY",
	808: "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", 809: "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
	810: "CUDA_ERROR_MPS_CLIENT_TERMINATED", 811: "CUDA_ERROR_CDP_NOT_SUPPORTED",
	812: "CUDA_ERROR_CDP_VERSION_MISMATCH", 900: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	901: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", 902: "CUDA_ERROR_STREAM_CAPTURE_MERGE",
	903: "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", 904: "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
	905: "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", 906: "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
	907: "CUDA_ERROR_CAPTURED_EVENT", 908: "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
	909: "CUDA_ERROR_TIMEOUT", 910: "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
	911: "CUDA_ERROR_EXTERNAL_DEVICE", 912: "CUDA_ERROR_INVALID_CLUSTER_SIZE",
	913: "CUDA_ERROR_FUNCTION_NOT_LOADED", 914: "CUDA_ERROR_INVALID_RESOURCE_TYPE",
	915: "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", 916: "CUDA_ERROR_KEY_ROTATION",
	999: "CUDA_ERROR_UNKNOWN",
}

// Name is the cuda.h enum name of the code.
func (r Result) Name() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("CUresult(%d)", int(r))
}

func (r Result) Error() string { return fmt.Sprintf("%s (%d)", r.Name(), int(r)) }

// Error is a failed driver call.
type Error struct {
	Call string // exported name of the entry point, e.g. cuMemAlloc_v2
	Code int    // the CUresult
	Name string // e.g. CUDA_ERROR_OUT_OF_MEMORY, from cuGetErrorName
	Text string // e.g. "out of memory", from cuGetErrorString; may be empty
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Text != "" {
		s += ": " + e.Text
	}
	return s
}

// Is matches a Result sentinel with the same code.
func (e *Error) Is(target error) bool {
	r, ok := target.(Result)
	return ok && int(r) == e.Code
}

// Sticky reports whether the error left the context unusable: after a
// kernel fault every later call in this process fails, so the caller should
// stop rather than run further cases.
func (e *Error) Sticky() bool {
	switch Result(e.Code) {
	case 214, ErrIllegalAddress, ErrLaunchTimeout, ErrAssert, ErrHardwareStackError,
		ErrIllegalInstruction, ErrMisalignedAddress, ErrInvalidAddressSpace,
		ErrInvalidPC, ErrLaunchFailed, 720, 226:
		return true
	}
	return false
}

// IsSticky reports whether err carries a CUDA error that left the context
// unusable (see Error.Sticky).
func IsSticky(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Sticky()
}

// ErrSymbolMissing is wrapped by calls whose optional entry point this
// driver does not export.
var ErrSymbolMissing = errors.New("entry point not exported by this driver")
