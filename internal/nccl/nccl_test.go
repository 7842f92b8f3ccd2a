package nccl

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/artest/artest/reference"
	"github.com/stretchr/testify/require"
)

// fakeNCCL is testdata/fakenccl.c built as a shared library, or "" when this
// machine has no C compiler; fakeOldNCCL the same built as NCCL 2.18, which
// lacks registration, windows and ncclMemAlloc.
var fakeNCCL, fakeOldNCCL string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "artest-fakenccl-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lib := filepath.Join(dir, Soname)
	out, err := exec.Command("cc", "-shared", "-fPIC", "-Wall", "-Werror", "-o", lib, "testdata/fakenccl.c").CombinedOutput()
	if _, noCompiler := err.(*exec.Error); err == nil {
		fakeNCCL = lib
	} else if !noCompiler {
		fmt.Fprintf(os.Stderr, "build fake libnccl: %v\n%s", err, out)
		os.Exit(1)
	}
	if fakeNCCL != "" {
		old := filepath.Join(dir, "old", Soname)
		if err := os.MkdirAll(filepath.Dir(old), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out, err := exec.Command("cc", "-shared", "-fPIC", "-Wall", "-Werror", "-DFAKENCCL_OLD", "-o", old, "testdata/fakenccl.c").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build fake libnccl 2.18: %v\n%s", err, out)
			os.Exit(1)
		}
		fakeOldNCCL = old
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func fake(t *testing.T) *Lib {
	t.Helper()
	if fakeNCCL == "" {
		t.Skip("no C compiler to build the fake NCCL")
	}
	l, err := Load(fakeNCCL)
	require.NoError(t, err)
	return l
}

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		code int
		want string
	}{
		{22809, "2.28.9"},
		{23203, "2.32.3"},
		{21403, "2.14.3"},
		{20901, "2.9.1"},
		{2804, "2.8.4"}, // the pre-2.9 encoding
		{2000, "2.0.0"},
		{30001, "3.0.1"},
	} {
		require.Equal(t, tc.want, ParseVersion(tc.code).String(), "code %d", tc.code)
	}
}

func TestEnumMapping(t *testing.T) {
	// Values from nccl.h.
	want := map[reference.DType]DataType{reference.F32: 7, reference.F16: 6, reference.BF16: 9}
	for _, d := range reference.DTypes {
		got, err := DataTypeOf(d)
		require.NoError(t, err, d.String())
		require.Equal(t, want[d], got, d.String())
	}
	_, err := DataTypeOf(reference.DType(42))
	require.ErrorContains(t, err, "dtype(42)")

	wantOp := map[reference.Op]RedOp{reference.Sum: 0, reference.Max: 2, reference.Min: 3}
	for _, o := range reference.Ops {
		got, err := RedOpOf(o)
		require.NoError(t, err, o.String())
		require.Equal(t, wantOp[o], got, o.String())
	}
	_, err = RedOpOf(reference.Op(9))
	require.ErrorContains(t, err, "op(9)")
}

func TestErrorFormatting(t *testing.T) {
	e := &Error{Call: "ncclCommInitRank", Code: 2, Text: "unhandled system error", Detail: "socket connect failed"}
	require.Equal(t, "ncclCommInitRank: ncclSystemError (2): unhandled system error: socket connect failed", e.Error())
	require.ErrorIs(t, fmt.Errorf("init: %w", e), ErrSystemError)
	require.NotErrorIs(t, e, ErrInternalError)
	require.Equal(t, "ncclResult(77) (77)", Result(77).Error())
}

func TestLoadRejectsNonLibraries(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), Soname)
	require.NoError(t, os.WriteFile(notELF, []byte("#!/bin/sh\necho not a library\n"), 0o755))

	for _, tc := range []struct {
		name, path string
		want       []string
	}{
		{"not an ELF file", notELF, []string{"load NCCL", notELF}},
		{"missing file", filepath.Join(t.TempDir(), "none", Soname), []string{"load NCCL", "none/libnccl.so.2"}},
		{"a library that is not NCCL", "libc.so.6", []string{"not an NCCL library", "ncclGetVersion", "ncclAllReduce"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Load(tc.path)
			require.Nil(t, l)
			for _, w := range tc.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestLoadChecksMajorVersion(t *testing.T) {
	if fakeNCCL == "" {
		t.Skip("no C compiler to build the fake NCCL")
	}
	t.Setenv("FAKENCCL_VERSION", "30102")
	l, err := Load(fakeNCCL)
	require.Nil(t, l)
	require.ErrorContains(t, err, "version 3.1.2 (code 30102) is not NCCL 2")
}

func TestLoadTurnsNVLSOffByDefault(t *testing.T) {
	t.Setenv(NVLSEnv, "") // restores the original value afterwards
	require.NoError(t, os.Unsetenv(NVLSEnv))
	l := fake(t)
	require.Equal(t, "2.28.9", l.Version().String())
	require.Equal(t, fakeNCCL, l.Path())
	require.Equal(t, "0", os.Getenv(NVLSEnv))

	t.Setenv(NVLSEnv, "1")
	fake(t)
	require.Equal(t, "1", os.Getenv(NVLSEnv), "an explicit setting is the user's choice")
}

func TestFakeCommunicator(t *testing.T) {
	l := fake(t)
	id, err := l.GetUniqueID()
	require.NoError(t, err)
	require.Equal(t, byte(0x5a), id[0])
	require.Equal(t, byte(127^0x5a), id[127])

	comm, err := l.CommInitRank(2, id, 1)
	require.NoError(t, err)
	require.Equal(t, Comm(0x7012), comm, "the fake encodes rank and nranks")

	_, err = l.CommInitRank(2, id, 2)
	require.ErrorContains(t, err, "rank 2 of 2 ranks")

	bad := id
	bad[9] ^= 1
	_, err = l.CommInitRank(2, bad, 0)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.EqualError(t, err, "ncclCommInitRank: ncclInvalidArgument (4): invalid argument (run with NCCL_DEBUG=WARN for details): bad unique id at byte 9")

	require.NoError(t, l.AllReduce(0x1000, 0x2000, 12345, Bfloat16, Max, comm, 0x4001))
	require.Equal(t, "allreduce send=0x1000 recv=0x2000 count=12345 type=9 op=2 comm=0x7012 stream=0x4001", l.LastError(comm))

	// The other collectives take one rank's chunk as their count.
	require.NoError(t, l.ReduceScatter(0x1000, 0x2000, 777, Float16, Min, comm, 0x4002))
	require.Equal(t, "reducescatter send=0x1000 recv=0x2000 recvcount=777 type=6 op=3 comm=0x7012 stream=0x4002", l.LastError(comm))
	require.NoError(t, l.AllGather(0x1000, 0x2000, 555, Float32, comm, 0x4003))
	require.Equal(t, "allgather send=0x1000 recv=0x2000 sendcount=555 type=7 comm=0x7012 stream=0x4003", l.LastError(comm))

	err = l.AllReduce(0x1000, 0x1000, 1, DataType(99), Sum, comm, 0)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, "ncclAllReduce: ncclInvalidArgument (4)")
	require.ErrorContains(t, err, "invalid data type 99")

	async, err := l.CommAsyncError(comm)
	require.NoError(t, err)
	require.ErrorIs(t, async, ErrRemoteError)
	require.ErrorContains(t, async, "peer 0 exited")

	comm0, err := l.CommInitRank(2, id, 0)
	require.NoError(t, err)
	async, err = l.CommAsyncError(comm0)
	require.NoError(t, err)
	require.True(t, async == nil, "a healthy communicator reports a nil error interface")

	require.NoError(t, l.CommFinalize(comm0))
	require.Equal(t, "finalize comm=0x7002", l.LastError(0))
	require.NoError(t, l.CommDestroy(comm0))
	require.Equal(t, "destroy comm=0x7002", l.LastError(0))
	require.NoError(t, l.CommAbort(comm))
	require.Equal(t, "abort comm=0x7012", l.LastError(0))
	require.ErrorIs(t, l.CommDestroy(0), ErrInvalidArgument)
}
