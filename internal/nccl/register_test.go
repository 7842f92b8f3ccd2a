package nccl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWinFlagsMatchNCCLH(t *testing.T) {
	// nccl.h of 2.28.9: NCCL_WIN_DEFAULT 0x00, NCCL_WIN_COLL_SYMMETRIC 0x01,
	// NCCL_WIN_REQUIRED_ALIGNMENT 4096.
	require.Equal(t, WinFlags(0), WinDefault)
	require.Equal(t, WinFlags(1), WinCollSymmetric)
	require.Equal(t, 4096, WinRequiredAlignment)
}

// TestOptionalEntryPoints loads an NCCL with and one without registration
// and windows: the one without loads all the same, says what it lacks, and
// every call it cannot make is an error wrapping ErrSymbolMissing.
func TestOptionalEntryPoints(t *testing.T) {
	if fakeNCCL == "" {
		t.Skip("no C compiler to build the fake NCCL")
	}
	for _, tc := range []struct {
		name, path, version    string
		registerWhy, windowWhy string
	}{
		{"2.28.9 has everything", fakeNCCL, "2.28.9", "", ""},
		{"2.18.5 has none of it", fakeOldNCCL, "2.18.5",
			"libnccl 2.18.5 has no ncclCommRegister, ncclCommDeregister",
			"libnccl 2.18.5 has no ncclCommWindowRegister, ncclCommWindowDeregister, ncclMemAlloc, ncclMemFree"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(tc.path)
			require.NoError(t, err)
			require.Equal(t, tc.version, l.Version().String())
			require.Equal(t, tc.registerWhy, l.RegisterReason())
			require.Equal(t, tc.windowWhy, l.WindowReason())
			if tc.registerWhy == "" {
				return
			}
			_, err = l.CommRegister(0x7002, 0x1000, 64)
			require.ErrorIs(t, err, ErrSymbolMissing)
			require.EqualError(t, err, "libnccl 2.18.5 has no ncclCommRegister: "+ErrSymbolMissing.Error())
			require.ErrorIs(t, l.CommDeregister(0x7002, 1), ErrSymbolMissing)
			_, err = l.CommWindowRegister(0x7002, 0x1000, 4096, WinCollSymmetric)
			require.ErrorContains(t, err, "libnccl 2.18.5 has no ncclCommWindowRegister")
			require.ErrorIs(t, l.CommWindowDeregister(0x7002, 1), ErrSymbolMissing)
			_, err = l.MemAlloc(4096)
			require.ErrorContains(t, err, "has no ncclMemAlloc")
			require.ErrorIs(t, l.MemFree(0x1000), ErrSymbolMissing)
		})
	}
}

func TestFakeRegistration(t *testing.T) {
	l := fake(t)
	const comm = Comm(0x7002)
	h, err := l.CommRegister(comm, 0x10000, 1<<20)
	require.NoError(t, err)
	require.NotZero(t, h)
	require.Contains(t, l.LastError(comm), "register comm=0x7002 buf=0x10000 size=1048576")
	require.NoError(t, l.CommDeregister(comm, h))
	require.Contains(t, l.LastError(comm), "deregister handle=")

	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"register an empty buffer", func() error { _, err := l.CommRegister(comm, 0x10000, 0); return err }, "register: "},
		{"deregister an unknown handle", func() error { return l.CommDeregister(comm, 0x1) }, "unknown handle 0x1"},
		{"window at a misaligned address", func() error {
			_, err := l.CommWindowRegister(comm, 0x10010, 4096, WinCollSymmetric)
			return err
		}, "window register: "},
		{"window with an unknown flag", func() error {
			_, err := l.CommWindowRegister(comm, 0x10000, 4096, WinFlags(6))
			return err
		}, "flags=6"},
		{"deregister an unknown window", func() error { return l.CommWindowDeregister(comm, 0x2) }, "unknown window 0x2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestFakeWindowOnNCCLMemory(t *testing.T) {
	l := fake(t)
	const comm = Comm(0x7002)
	p, err := l.MemAlloc(10000)
	require.NoError(t, err)
	require.NotZero(t, p)
	require.Zero(t, uint64(p)%WinRequiredAlignment)
	w, err := l.CommWindowRegister(comm, p, 12288, WinCollSymmetric)
	require.NoError(t, err)
	require.NotZero(t, w)
	require.Contains(t, l.LastError(comm), "size=12288 flags=1")
	require.NoError(t, l.CommWindowDeregister(comm, w))
	require.NoError(t, l.MemFree(p))
}
