package plugin

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
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
		{"one name twice", func(t *testing.T) string { return build(t, "testdata/bad.c", "-DDUP_NAME") }, "declares the variant name bad:copy twice (variants 0 and 1)"},
		{"a collective's name", func(t *testing.T) string { return build(t, "testdata/bad.c", `-DNAME="all-gather"`) },
			"the plugin's name all-gather is a collective's: choose another"},
		{"staging of UINT64_MAX", func(t *testing.T) string { return build(t, "testdata/bad.c", "-DSTAGING=UINT64_MAX") },
			"declares staging_bytes 18446744073709551615, at most 1099511627776 (1 TiB) per rank"},
		{"staging of 2^63", func(t *testing.T) string { return build(t, "testdata/bad.c", "-DSTAGING=(1ull<<63)") }, "declares staging_bytes 9223372036854775808"},
		{"staging of -4096", func(t *testing.T) string { return build(t, "testdata/bad.c", "-DSTAGING=((uint64_t)-4096)") }, "declares staging_bytes 18446744073709547520"},
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

	set, err := registry.New(p.Variants)
	require.NoError(t, err)
	got, err := set.Lookup("bad:copy")
	require.NoError(t, err)
	require.Equal(t, p.Owner(), got.External.Owner())
	set, err = registry.New(append(slices.Clone(p.Variants), p.Variants...))
	require.NoError(t, err, "the same plugin's variants again replace themselves")
	require.Len(t, set.All(), len(registry.Builtin)+1)
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

// artest_device.h repeats signal's diagnosis words; a plugin's give-up is
// read by the same code as artest's kernels'.
func TestDeviceHeaderMatchesSignal(t *testing.T) {
	require.Equal(t, map[string]int{
		"state": sigblock.DiagState, "variant": sigblock.DiagVariant, "block": sigblock.DiagBlock,
		"kind": sigblock.DiagKind, "where": sigblock.DiagWhere, "peer": sigblock.DiagPeer,
		"want": sigblock.DiagWant, "seen": sigblock.DiagSeen, "waited_ms": sigblock.DiagWaitedMs,
		"lane": sigblock.DiagLane, "rank": sigblock.DiagRank, "timeout_ms": sigblock.DiagTimeoutMs,
		"words": sigblock.DiagWords, "claimed": int(sigblock.DiagClaimed), "gave_up": int(sigblock.DiagGaveUp),
		"kind_plugin_wait": sigblock.DiagKindPluginWait,
	}, headerDiagWords())
	require.Equal(t, sigblock.OffTraceVariant+4, sigblock.OffTraceCount, "artest_device.trace[1] is the count")
}

func TestLoadRefusesBadDeviceInfo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		define string
		want   string
	}{
		{"NULL", "-DNULL_INFO", "artest_device_info_v1 returned NULL"},
		{"version", "-DINFO_VERSION=2", "device helpers version 2, this artest speaks version 1"},
		{"variant count", "-DINFO_VARIANTS=1", "artest_device_info_v1 describes 1 variants, the plugin has 2"},
		{"uses_helpers", "-DUSES=2", "device:traced: uses_helpers is 2, want 0 or 1"},
		{"too many points", "-DPOINTS=9", "device:traced: 9 wait points, at most 8"},
		{"empty point name", "-DBAD_POINT", "device:traced: wait point 1: its name must be 1 to 32 printable ASCII characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := build(t, "testdata/device.c", tc.define)
			_, err := Load(path)
			require.Error(t, err)
			require.Contains(t, err.Error(), "--plugin "+path)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
		})
	}
}

func TestLoadGivesHelperVariantsATraceID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		define string
		traced bool
	}{
		{"declared", "", true},
		{"no artest_device_info_v1", "-DNO_INFO", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var defs []string
			if tc.define != "" {
				defs = append(defs, tc.define)
			}
			p, err := Load(build(t, "testdata/device.c", defs...))
			require.NoError(t, err)
			require.Len(t, p.Variants, 2)
			traced, plain := &p.Variants[0], &p.Variants[1]
			require.Equal(t, uint32(0), plain.ID, "a variant that does not declare the helpers writes no trace word")
			require.Empty(t, plain.WaitPoints)
			require.Equal(t, ChecksWithoutHelpers, Checks(plain))
			if !tc.traced {
				require.Equal(t, uint32(0), traced.ID)
				require.Equal(t, ChecksWithoutHelpers, Checks(traced))
				return
			}
			require.Equal(t, kernels.ExternalTraceID("device:traced"), traced.ID)
			require.NotZero(t, traced.ID)
			require.Equal(t, []string{"first", "second"}, traced.WaitPoints)
			require.Equal(t, ChecksWithHelpers, Checks(traced))
		})
	}
}

// The header's host path end to end: the device fields reach the plugin
// behind ARTEST_CALL_DEVICE, artest_trace counts calls in the trace words,
// and a wait past the deadline records a give-up that signal decodes.
func TestDeviceHelpersOnTheHost(t *testing.T) {
	p, err := Load(build(t, "testdata/device.c"))
	require.NoError(t, err)
	traced, plain := &p.Variants[0], &p.Variants[1]
	in, st, ctl, sig := mapped(t, 4096), mapped(t, 4096), mapped(t, 4096), mapped(t, sigblock.Size)
	sb := sigblock.Block(sig)
	w := &kernels.ExternalWorld{Size: 1, Device: -1, Backend: "host",
		Input: []uintptr{addr(in)}, Staging: []uintptr{addr(st)}, Control: []uintptr{addr(ctl)},
		InputBytes: 4096, StagingBytes: 4096, ControlBytes: 4096}
	require.NoError(t, traced.External.Setup(w))
	out := mapped(t, 4096)
	const timeout = 50 * time.Millisecond
	dev := &kernels.ExternalDevice{Trace: addr(sig) + sigblock.OffTraceVariant, Diag: addr(sig) + sigblock.OffDiag,
		TimeoutNs: uint64(timeout.Nanoseconds()), TraceID: traced.ID, Rank: 0}
	call := func(v *kernels.Variant, wait uint32, d *kernels.ExternalDevice) []uint64 {
		c := &kernels.ExternalCall{Variant: v, DType: reference.F32, Count: 16, In: addr(in), Out: addr(out),
			Registered: true, Params: [4]uint32{wait}, Device: d}
		require.NoError(t, v.External.Allreduce(c))
		rec := make([]uint64, 6)
		for i := range rec {
			rec[i] = binary.LittleEndian.Uint64(out[8*i:])
		}
		return rec
	}

	rec := call(plain, 0, nil)
	require.Equal(t, []uint64{uint64(callRegistered), 0, 0, 0, 0, 0}, rec, "no device fields without the flag")
	require.Zero(t, sb.Load(sigblock.OffTraceCount), "nothing traced")

	for i := 1; i <= 2; i++ {
		rec = call(traced, 0, dev)
		require.Equal(t, []uint64{uint64(callRegistered | callDevice), uint64(dev.Trace), uint64(dev.Diag),
			dev.TimeoutNs, uint64(traced.ID), 0}, rec)
		require.Equal(t, traced.ID, sb.Load(sigblock.OffTraceVariant))
		require.Equal(t, uint32(i), sb.Load(sigblock.OffTraceCount))
	}
	require.False(t, sb.GaveUp())

	start := time.Now()
	call(traced, 1, dev)
	require.GreaterOrEqual(t, time.Since(start), timeout, "it waited the deadline out")
	require.Equal(t, uint32(2), sb.Load(sigblock.OffTraceCount), "a call that gave up traces nothing")
	g, ok := sigblock.Snapshot(sig).GiveUp()
	require.True(t, ok)
	require.Equal(t, sigblock.GiveUp{Rank: 0, Variant: traced.ID, Block: 0, Kind: sigblock.DiagKindPluginWait, Where: 1,
		Peer: 0, Want: 1, Seen: 0, Waited: g.Waited, Lane: 0, Timeout: timeout}, g)
	require.GreaterOrEqual(t, g.Waited, timeout)

	// Once the rank gave up, a later wait leaves at once, without a new
	// record; even without a deadline it does not hang.
	noDeadline := *dev
	noDeadline.TimeoutNs = 0
	call(traced, 1, &noDeadline)
	again, ok := sigblock.Snapshot(sig).GiveUp()
	require.True(t, ok)
	require.Equal(t, g, again, "the first give-up's record stays")
}
