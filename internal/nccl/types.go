package nccl

import (
	"errors"
	"fmt"

	"github.com/artest/artest/reference"
)

// Comm is an NCCL communicator (ncclComm_t), kept as an integer.
type Comm uintptr

// RegHandle is a buffer registration (ncclCommRegister's void* handle).
type RegHandle uintptr

// Window is a registered window (ncclWindow_t).
type Window uintptr

// WinFlags are ncclCommWindowRegister's flags (nccl.h's NCCL_WIN_*).
type WinFlags int32

const (
	WinDefault       WinFlags = 0x00 // NCCL_WIN_DEFAULT
	WinCollSymmetric WinFlags = 0x01 // NCCL_WIN_COLL_SYMMETRIC
	// WinRequiredAlignment is NCCL_WIN_REQUIRED_ALIGNMENT: a window's
	// address and size are multiples of it.
	WinRequiredAlignment = 4096
)

// UniqueID is ncclUniqueId: rank 0 creates it, every rank passes the same
// bytes to CommInitRank.
type UniqueID [128]byte

// Version is an NCCL release.
type Version struct{ Major, Minor, Patch int }

// ParseVersion decodes ncclGetVersion's code. Releases up to 2.8 encode
// X*1000+Y*100+Z; later ones X*10000+Y*100+Z (nccl.h's NCCL_VERSION).
func ParseVersion(code int) Version {
	if code < 10000 {
		return Version{Major: code / 1000, Minor: code % 1000 / 100, Patch: code % 100}
	}
	return Version{Major: code / 10000, Minor: code % 10000 / 100, Patch: code % 100}
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// DataType is ncclDataType_t.
type DataType int32

const (
	Int8     DataType = 0
	Uint8    DataType = 1
	Int32    DataType = 2
	Uint32   DataType = 3
	Int64    DataType = 4
	Uint64   DataType = 5
	Float16  DataType = 6
	Float32  DataType = 7
	Float64  DataType = 8
	Bfloat16 DataType = 9
)

// RedOp is ncclRedOp_t (the built-in operators).
type RedOp int32

const (
	Sum  RedOp = 0
	Prod RedOp = 1
	Max  RedOp = 2
	Min  RedOp = 3
	Avg  RedOp = 4
)

// DataTypeOf maps an artest element type to NCCL's.
func DataTypeOf(d reference.DType) (DataType, error) {
	switch d {
	case reference.F32:
		return Float32, nil
	case reference.F16:
		return Float16, nil
	case reference.BF16:
		return Bfloat16, nil
	}
	return 0, fmt.Errorf("no NCCL data type for %v", d)
}

// RedOpOf maps an artest operator to NCCL's.
func RedOpOf(o reference.Op) (RedOp, error) {
	switch o {
	case reference.Sum:
		return Sum, nil
	case reference.Max:
		return Max, nil
	case reference.Min:
		return Min, nil
	}
	return 0, fmt.Errorf("no NCCL reduction operator for %v", o)
}

// Result is an ncclResult_t. The named codes are sentinels for errors.Is.
type Result int

const (
	ErrUnhandledCudaError Result = 1
	ErrSystemError        Result = 2
	ErrInternalError      Result = 3
	ErrInvalidArgument    Result = 4
	ErrInvalidUsage       Result = 5
	ErrRemoteError        Result = 6
	ErrInProgress         Result = 7
	ErrTimeout            Result = 8
)

var resultNames = map[Result]string{
	0: "ncclSuccess", 1: "ncclUnhandledCudaError", 2: "ncclSystemError",
	3: "ncclInternalError", 4: "ncclInvalidArgument", 5: "ncclInvalidUsage",
	6: "ncclRemoteError", 7: "ncclInProgress", 8: "ncclTimeout",
}

// Name is the nccl.h enum name of the code.
func (r Result) Name() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("ncclResult(%d)", int(r))
}

func (r Result) Error() string { return fmt.Sprintf("%s (%d)", r.Name(), int(r)) }

// Error is a failed NCCL call, or an asynchronous error of a communicator.
type Error struct {
	Call   string // e.g. ncclCommInitRank
	Code   int    // the ncclResult_t
	Text   string // ncclGetErrorString
	Detail string // ncclGetLastError: NCCL's own account of the last failure; may be empty
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s: %s", e.Call, Result(e.Code))
	if e.Text != "" {
		s += ": " + e.Text
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is matches a Result sentinel with the same code.
func (e *Error) Is(target error) bool {
	r, ok := target.(Result)
	return ok && int(r) == e.Code
}

// ErrSymbolMissing is wrapped by calls whose optional entry point this NCCL
// does not export.
var ErrSymbolMissing = errors.New("entry point not exported by this NCCL")
