package plugin

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// build compiles testdata/bad.c (or src) with the given -D flags into a
// shared library under a fresh temporary directory.
func build(t *testing.T, src string, defines ...string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	require.NoError(t, err, "a C compiler is needed to build test plugins")
	out := filepath.Join(t.TempDir(), "plugin.so")
	args := append([]string{"-std=c11", "-fPIC", "-shared", "-I../../plugin", "-o", out, src}, defines...)
	msg, err := exec.Command(cc, args...).CombinedOutput()
	require.NoError(t, err, "cc: %s", msg)
	return out
}

func TestLoadRefusesBadPlugins(t *testing.T) {
	notELF := filepath.Join(t.TempDir(), "text.so")
	require.NoError(t, os.WriteFile(notELF, []byte("not a library"), 0o644))
	for _, tc := range []struct {
		name string
		path func(t *testing.T) string
		want string
	}{
		{"missing file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none.so") }, "no such file"},
		{"not a library", func(*testing.T) string { return notELF }, "dlopen"},
		{"no entry symbol", func(t *testing.T) string { return build(t, "testdata/bad.c", "-DNO_ENTRY") }, "no artest_plugin_v1: not an artest plugin"},
		{"wrong ABI version", func(t *testing.T) string { return build(t, "testdata/bad.c", "-DABI=2") }, "ABI version 2, this artest speaks version 1"},
		{"no dtype", func(t *testing.T) string { return build(t, "testdata/bad.c", "-DNO_DTYPES") }, "copy: dtypes mask 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path(t)
			_, err := Load(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), "--plugin "+path)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
		})
	}
}

func TestLoadDescribesVariants(t *testing.T) {
	path := build(t, "testdata/bad.c")
	p, err := Load(path)
	require.NoError(t, err)
	again, err := Load(path)
	require.NoError(t, err)
	require.Same(t, p, again, "a second load of the same file is the same plugin")
	require.Equal(t, "bad", p.Name)
	require.Len(t, p.SHA256, 64)
	require.Len(t, p.Variants, 1)
	v := p.Variants[0]
	require.Equal(t, "bad:copy", v.Name)
	require.Equal(t, uint32(0), v.ID, "a plugin writes no trace word")
	require.Equal(t, []reference.DType{reference.F32, reference.BF16}, v.DTypes)
	require.Equal(t, []reference.Op{reference.Sum}, v.Ops)
	require.Equal(t, 1, v.MinRanks)
	require.Equal(t, 4, v.MaxRanks)
	require.Equal(t, reference.OrderUnknown, v.Order)
	require.Equal(t, int64(16), v.Align)
	require.False(t, v.StagesOwnInput, "needs_registered_input is 1")
	require.Equal(t, []kernels.Param{{Name: "width", Slot: 0, Default: 2, Min: 1, Max: 8, Help: "a parameter"}}, v.Params)
	require.Equal(t, "", v.TooBig(1<<20))
	require.Contains(t, v.TooBig(1<<20+1), "up to 1048576 bytes")
	require.Equal(t, int64(4096), v.External.(interface{ ControlBytes() int64 }).ControlBytes())

	require.NoError(t, p.Register())
	got, err := kernels.Lookup("bad:copy")
	require.NoError(t, err)
	require.Equal(t, p.Owner(), got.External.Owner())
	require.NoError(t, p.Register(), "registering the same plugin again replaces its variants")
}

// mapped returns n bytes outside the Go heap, as a plugin may be given.
func mapped(t *testing.T, n int) []byte {
	t.Helper()
	m, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(m) })
	return m
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

func TestCallsReportStatus(t *testing.T) {
	for _, tc := range []struct {
		name      string
		define    string
		setupErr  string
		reduceErr string
	}{
		{"copies", "", "", ""},
		{"setup fails", "-DSETUP_FAIL", "setup returned status 7: no peers today", ""},
		{"allreduce fails", "-DCALL_FAIL", "", "allreduce of bad:copy returned status 9: count out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var defs []string
			if tc.define != "" {
				defs = append(defs, tc.define)
			}
			p, err := Load(build(t, "testdata/bad.c", defs...))
			require.NoError(t, err)
			e := p.Variants[0].External
			in, st, ctl := mapped(t, 4096), mapped(t, 4096), mapped(t, 4096)
			w := &kernels.ExternalWorld{Size: 1, Device: -1, Backend: "host",
				Input: []uintptr{addr(in)}, Staging: []uintptr{addr(st)}, Control: []uintptr{addr(ctl)},
				InputBytes: 4096, StagingBytes: 4096, ControlBytes: 4096}
			err = e.Setup(w)
			if tc.setupErr != "" {
				require.ErrorContains(t, err, p.Owner()+": "+tc.setupErr)
				require.Equal(t, err, e.Setup(w), "setup runs once; later calls return its result")
				return
			}
			require.NoError(t, err)
			out := mapped(t, 4096)
			copy(in, []byte{1, 2, 3, 4, 5, 6, 7, 8})
			call := &kernels.ExternalCall{Variant: &p.Variants[0], DType: reference.F32, Count: 2,
				In: addr(in), Out: addr(out), Registered: true}
			err = e.Allreduce(call)
			if tc.reduceErr != "" {
				require.ErrorContains(t, err, p.Owner()+": "+tc.reduceErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, in[:8], out[:8])
			require.Equal(t, "", e.Busy(), "no call in progress")
		})
	}
}
