package cudadrv

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// fakeLibrary resolves the names in syms to dummy addresses. Nothing may
// call through them: tests using it stop before the first driver call.
type fakeLibrary struct {
	syms   map[string]bool
	closed bool
}

var dummy byte

func (f *fakeLibrary) Lookup(name string) (unsafe.Pointer, error) {
	if f.syms[name] {
		return unsafe.Pointer(&dummy), nil
	}
	return nil, fmt.Errorf("undefined symbol: %s", name)
}

func (f *fakeLibrary) Close() error { f.closed = true; return nil }

// fullLibrary exports the preferred name of every entry point, minus drop.
func fullLibrary(drop ...string) *fakeLibrary {
	f := &fakeLibrary{syms: map[string]bool{}}
	for _, s := range (&table{}).specs() {
		f.syms[s.names[0]] = true
	}
	for _, d := range drop {
		delete(f.syms, d)
	}
	return f
}

func TestLoadWithoutLibrary(t *testing.T) {
	open := func(path string) (library, error) {
		return nil, fmt.Errorf("dlopen %s: cannot open shared object file: No such file or directory", path)
	}
	d, err := load(LibraryName, open)
	require.Nil(t, d)
	require.ErrorContains(t, err, "CUDA driver not available")
	require.ErrorContains(t, err, "libcuda.so.1")

	// The real loader on a name no machine has.
	d, err = load("libartest-no-such-cuda.so.1", openDL)
	require.Nil(t, d)
	require.ErrorContains(t, err, "libartest-no-such-cuda.so.1")
}

func TestLoadMissingSymbolsNamesThem(t *testing.T) {
	lib := fullLibrary("cuMemAlloc_v2", "cuStreamBeginCapture_v2")
	// The unversioned exports have other ABIs; their presence must not help.
	lib.syms["cuMemAlloc"] = true
	lib.syms["cuStreamBeginCapture"] = true

	d, err := load(LibraryName, func(string) (library, error) { return lib, nil })
	require.Nil(t, d)
	require.ErrorContains(t, err, "cuMemAlloc_v2")
	require.ErrorContains(t, err, "cuStreamBeginCapture_v2")
	require.True(t, lib.closed, "a library that cannot be used is closed again")
}

func TestResolve(t *testing.T) {
	t.Run("optional entry points may be missing", func(t *testing.T) {
		tab, err := resolve(fullLibrary("cuLaunchKernelEx", "cuFuncGetParamInfo"))
		require.NoError(t, err)
		require.Nil(t, tab.launchKernelEx.ptr)
		require.Equal(t, "cuLaunchKernelEx", tab.launchKernelEx.name)
		require.NotNil(t, tab.launchKernel.ptr)
	})
	t.Run("older export with the same ABI is the fallback", func(t *testing.T) {
		lib := fullLibrary("cuEventElapsedTime_v2", "cuDeviceGetUuid_v2")
		lib.syms["cuEventElapsedTime"] = true
		lib.syms["cuDeviceGetUuid"] = true
		tab, err := resolve(lib)
		require.NoError(t, err)
		require.Equal(t, "cuEventElapsedTime", tab.eventElapsed.name)
		require.Equal(t, "cuDeviceGetUuid", tab.deviceGetUUID.name)
	})
	t.Run("newest export wins", func(t *testing.T) {
		lib := fullLibrary()
		lib.syms["cuEventElapsedTime"] = true
		tab, err := resolve(lib)
		require.NoError(t, err)
		require.Equal(t, "cuEventElapsedTime_v2", tab.eventElapsed.name)
	})
	t.Run("every required entry point is checked", func(t *testing.T) {
		for _, s := range (&table{}).specs() {
			if s.optional {
				continue
			}
			_, err := resolve(fullLibrary(s.names...))
			require.ErrorContains(t, err, s.names[0])
		}
	})
}

// Multicast objects can take a shared machine's GPUs down: Load resolves
// no multicast entry point. They are resolved only by EnableMulticast, with
// a permit from the safety gate (vmm_test.go proves nothing looks them up
// before that).
func TestLoadResolvesNoMulticastEntryPoint(t *testing.T) {
	for _, s := range (&table{}).specs() {
		for _, n := range s.names {
			require.NotContains(t, strings.ToLower(n), "multicast", n)
		}
	}
}

func TestErrorFormatting(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		want string
	}{
		{&Error{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Text: "out of memory"},
			"cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{&Error{Call: "cuStreamQuery", Code: 600, Name: "CUDA_ERROR_NOT_READY"},
			"cuStreamQuery: CUDA_ERROR_NOT_READY (600)"},
	} {
		require.Equal(t, tc.want, tc.err.Error())
	}
	require.Equal(t, "CUDA_ERROR_NOT_READY (600)", ErrNotReady.Error())
	require.Equal(t, "CUDA_ERROR_ILLEGAL_ADDRESS", ErrIllegalAddress.Name())
	require.Equal(t, "CUresult(12345)", Result(12345).Name())
}

func TestErrorIs(t *testing.T) {
	oom := &Error{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	wrapped := fmt.Errorf("alloc staging buffer: %w", oom)
	require.ErrorIs(t, wrapped, ErrOutOfMemory)
	require.NotErrorIs(t, wrapped, ErrNotReady)
	require.NotErrorIs(t, wrapped, errors.New("CUDA_ERROR_OUT_OF_MEMORY (2)"))

	var e *Error
	require.ErrorAs(t, wrapped, &e)
	require.Equal(t, "cuMemAlloc_v2", e.Call)
}

func TestSticky(t *testing.T) {
	for _, tc := range []struct {
		code   Result
		sticky bool
	}{
		{ErrIllegalAddress, true},
		{ErrLaunchFailed, true},
		{ErrMisalignedAddress, true},
		{ErrOutOfMemory, false},
		{ErrNotReady, false},
		{ErrInvalidValue, false},
	} {
		err := fmt.Errorf("case: %w", &Error{Call: "cuStreamSynchronize", Code: int(tc.code)})
		require.Equal(t, tc.sticky, IsSticky(err), tc.code.Name())
	}
	require.False(t, IsSticky(errors.New("not a CUDA error")))
}

func TestCheckLaunch(t *testing.T) {
	arg := new([24]byte)
	p := unsafe.Pointer(arg)
	for _, tc := range []struct {
		name        string
		grid, block Dim3
		arg         unsafe.Pointer
		size        uintptr
		want        string // empty: valid
	}{
		{"one struct", D1(36), D1(512), p, 24, ""},
		{"no parameters", D1(1), D1(1), nil, 0, ""},
		{"largest parameter block", Dim3{2, 2, 2}, D1(32), p, MaxKernelParamBytes, ""},
		{"parameter block too large", D1(1), D1(1), p, MaxKernelParamBytes + 1, "exceeds the 32764-byte"},
		{"nil argument with a size", D1(1), D1(1), nil, 8, "nil argument with size 8"},
		{"argument without a size", D1(1), D1(1), p, 0, "size 0"},
		{"zero grid", Dim3{4, 0, 1}, D1(1), nil, 0, "grid (4,0,1)"},
		{"zero-value block", D1(1), Dim3{}, nil, 0, "block (0,0,0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLaunch("cuLaunchKernel", tc.grid, tc.block, tc.arg, tc.size)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "cuLaunchKernel")
		})
	}
}

func TestLaunchAttributeLayout(t *testing.T) {
	require.Equal(t, uintptr(72), unsafe.Sizeof(LaunchAttribute{}))
	require.Equal(t, uintptr(8), unsafe.Offsetof(LaunchAttribute{}.Value))

	for _, tc := range []struct {
		name string
		attr LaunchAttribute
		id   LaunchAttributeID
		v0   uint64
		v1   uint64
	}{
		{"pdl on", ProgrammaticStreamSerialization(true), 6, 1, 0},
		{"pdl off", ProgrammaticStreamSerialization(false), 6, 0, 0},
		{"cooperative", Cooperative(true), 2, 1, 0},
		{"negative priority keeps 32 bits", Priority(-1), 8, 0xffffffff, 0},
		{"cluster", ClusterDim(Dim3{2, 3, 4}), 4, 2 | 3<<32, 4},
		{"programmatic event", ProgrammaticEvent(Event(0xabc), 5, true), 7, 0xabc, 5 | 1<<32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.id, tc.attr.ID)
			require.Equal(t, tc.v0, tc.attr.Value[0])
			require.Equal(t, tc.v1, tc.attr.Value[1])
		})
	}
}

func TestFormatting(t *testing.T) {
	u := UUID{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	require.Equal(t, "GPU-12345678-9abc-def0-0123-456789abcdef", u.String())
	require.Equal(t, "13.0", VersionString(13000))
	require.Equal(t, "12.8", VersionString(12080))
	require.Equal(t, "(36,1,1)", D1(36).String())
	require.Equal(t, 1500*time.Microsecond, msToDuration(1.5))
	require.Equal(t, DevicePtr(0x1010), DevicePtr(0x1000).Add(16))
}
