package cuda

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/nccl"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
)

// baselineBackend is one rank on the fake driver with the fake NCCL (2.28)
// and a communicator: what the NCCL baselines' regions need.
func baselineBackend(t *testing.T, capacity int64) (*nccl.Lib, *Backend, *backend.World, comm.Comm) {
	t.Helper()
	lib := fakeNCCL(t, false)
	bs, ws := setupWorld(t, registry.Builtins(), 1, capacity)
	b := bs[0]
	b.nccl, b.ncclComm, b.ncclReason = lib, nccl.Comm(0x7001), ""
	return lib, b, ws[0], comm.NewLocalWorld(1).Rank(0)
}

// TestNCCLWindowBuffers runs nccl-win on the fake driver and the fake
// NCCL: its regions are two ncclMemAlloc allocations of the world's
// capacity, registered as symmetric windows once, at the first ask; a call
// must read the input window and write a window, and Close's
// closeRegions undoes both registrations and frees the memory.
func TestNCCLWindowBuffers(t *testing.T) {
	const capacity = 1 << 16
	lib, b, w, c := baselineBackend(t, capacity)
	win := lookup(t, "nccl-win")
	wr := &b.ncclMem[kernels.NCCLWindow]

	require.True(t, b.KeepsOwnRegions(win))
	require.False(t, b.OwnRegionsOptional(win), "a window must be in its region")
	require.False(t, b.KeepsOwnRegions(lookup(t, "oneshot")))

	in, out, ok, err := b.OwnRegions(c, win)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotZero(t, in)
	require.NotZero(t, out)
	require.NotEqual(t, in, out)
	require.Len(t, wr.wins, 2)
	require.Contains(t, lib.LastError(b.ncclComm), fmt.Sprintf("size=%d flags=1", capacity), "registered symmetric, whole")
	require.Contains(t, lib.LastError(b.ncclComm), "live=2", "both windows registered")
	in2, out2, _, err := b.OwnRegions(c, win)
	require.NoError(t, err)
	require.Equal(t, []uint64{in, out}, []uint64{in2, out2}, "made once")
	require.Len(t, wr.wins, 2)

	call := func(send, recv uint64) error {
		l := launch(win, w, 0, 0, 16, false)
		l.Args.PeerIn[0], l.Args.Out = send, recv
		l.DType, l.Op = reference.F32, reference.Sum
		return b.Allreduce(l)
	}
	require.NoError(t, call(in+256, out+256))
	require.Contains(t, lib.LastError(b.ncclComm), fmt.Sprintf("send=%#x recv=%#x count=16", in+256, out+256))
	require.NoError(t, call(in+256, in+256), "in place: the input window")
	require.ErrorContains(t, call(w.Input[0], out), "is not in the input window")
	require.ErrorContains(t, call(in, w.Staging[0]), "is in neither window")

	require.NoError(t, b.closeRegions())
	require.Empty(t, wr.wins)
	require.Zero(t, wr.in)
	require.Contains(t, lib.LastError(0), "memfree")
	// A registration now is the only live one: both windows were undone.
	h, err := lib.CommRegister(b.ncclComm, cu.DevicePtr(w.Staging[0]), 16)
	require.NoError(t, err)
	require.Contains(t, lib.LastError(b.ncclComm), "live=1", "every window deregistered")
	require.NoError(t, lib.CommDeregister(b.ncclComm, h))
}

// nccl and nccl-reg keep regions of their own too, as nccl-tests
// allocates with ncclMemAlloc (NCCL registers only that memory in a
// graph): one pair each, no window on either, nccl-reg's registered whole
// at its first call and deregistered before Close frees them. They are
// optional: stress runs both on the world's buffers.
func TestNCCLBaselineRegions(t *testing.T) {
	_, b, w, c := baselineBackend(t, 1<<16)
	plain, reg := lookup(t, "nccl"), lookup(t, "nccl-reg")
	for _, v := range []*kernels.Variant{plain, reg} {
		require.True(t, b.KeepsOwnRegions(v), v.Name)
		require.True(t, b.OwnRegionsOptional(v), v.Name)
	}
	pin, pout, ok, err := b.OwnRegions(c, plain)
	require.NoError(t, err)
	require.True(t, ok)
	rin, rout, ok, err := b.OwnRegions(c, reg)
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, map[uint64]bool{pin: true, pout: true, rin: true, rout: true}, 4, "a pair each")
	require.Empty(t, b.ncclMem[kernels.NCCLPlain].wins)
	require.Empty(t, b.ncclMem[kernels.NCCLRegistered].wins)

	call := func(v *kernels.Variant, send, recv uint64) error {
		l := launch(v, w, 0, 0, 16, false)
		l.Args.PeerIn[0], l.Args.Out = send, recv
		l.DType, l.Op = reference.F32, reference.Sum
		return b.Allreduce(l)
	}
	require.NoError(t, call(plain, pin+256, pout+256))
	require.Empty(t, b.regs.handles, "nccl registers nothing")
	require.NoError(t, call(reg, rin+256, rout+256))
	require.Len(t, b.regs.handles, 2, "nccl-reg's input and output region, each whole")
	require.Contains(t, b.regs.handles, cu.DevicePtr(rin))
	require.Contains(t, b.regs.handles, cu.DevicePtr(rout))

	require.NoError(t, b.deregisterAll())
	require.NoError(t, b.closeRegions())
	for i := range b.ncclMem {
		require.Zero(t, b.ncclMem[i].in)
	}
}

// An NCCL without ncclMemAlloc (before 2.19) leaves nccl and nccl-reg on
// the world's buffers; nccl-win cannot run there at all (SkipReason).
func TestNCCLBaselineRegionsNeedMemAlloc(t *testing.T) {
	bs, _ := setupWorld(t, registry.Builtins(), 1, 1<<16)
	b := bs[0]
	b.nccl, b.ncclComm, b.ncclReason = fakeNCCL(t, true), nccl.Comm(0x7001), ""
	if b.nccl.MemAllocReason() == "" {
		t.Skip("the old fake NCCL has ncclMemAlloc")
	}
	_, _, ok, err := b.OwnRegions(comm.NewLocalWorld(1).Rank(0), lookup(t, "nccl"))
	require.NoError(t, err)
	require.False(t, ok)
}

// Without a communicator the windows cannot be made, and the reason
// sticks: later asks fail alike without trying again.
func TestNCCLWindowWithoutCommunicator(t *testing.T) {
	bs, _ := setupWorld(t, registry.Builtins(), 1, 1<<16)
	b := bs[0]
	b.nccl = fakeNCCL(t, false)
	c := comm.NewLocalWorld(1).Rank(0)
	win := lookup(t, "nccl-win")
	for i := 0; i < 2; i++ {
		_, _, ok, err := b.OwnRegions(c, win)
		require.True(t, ok)
		require.ErrorContains(t, err, "nccl-win: no NCCL communicator")
	}
}

// NCCL 2.28.9's symmetric allreduce gets 16-bit sums wrong at offsets of
// 2 mod 4 bytes: those nccl-win cases, and only those, are known defects,
// from 2.28.9 up to the fixed 2.30.3.
func TestNCCLWindowKnownDefect(t *testing.T) {
	newLib, oldLib := fakeNCCL(t, false), fakeNCCL(t, true)
	require.Equal(t, windowDefectFrom, newLib.Version(), "the fake is the NCCL the defect was seen with")
	for _, tc := range []struct {
		name    string
		variant string
		lib     *nccl.Lib
		dt      reference.DType
		offset  int64
		want    string
	}{
		{"bf16 at 2 bytes", "nccl-win", newLib, reference.BF16, 2, windowDefect},
		{"f16 at 6 bytes", "nccl-win", newLib, reference.F16, 6, windowDefect},
		{"bf16 at 4 bytes", "nccl-win", newLib, reference.BF16, 4, ""},
		{"bf16 aligned", "nccl-win", newLib, reference.BF16, 0, ""},
		{"f32 at 4 bytes", "nccl-win", newLib, reference.F32, 4, ""},
		{"nccl-reg", "nccl-reg", newLib, reference.BF16, 2, ""},
		{"nccl", "nccl", newLib, reference.BF16, 2, ""},
		{"another NCCL", "nccl-win", oldLib, reference.BF16, 2, ""},
		{"no NCCL", "nccl-win", nil, reference.BF16, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{nccl: tc.lib}
			require.Equal(t, tc.want, b.KnownDefect(lookup(t, tc.variant), tc.dt, tc.offset))
		})
	}
}

func TestNCCLVersionBefore(t *testing.T) {
	v := func(a, b, c int) nccl.Version { return nccl.Version{Major: a, Minor: b, Patch: c} }
	for _, tc := range []struct {
		a, b nccl.Version
		want bool
	}{
		{v(2, 28, 8), v(2, 28, 9), true},
		{v(2, 28, 9), v(2, 28, 9), false},
		{v(2, 29, 7), v(2, 30, 3), true},
		{v(2, 30, 3), v(2, 30, 3), false},
		{v(2, 31, 0), v(2, 30, 3), false},
		{v(2, 27, 9), v(2, 28, 0), true},
		{v(3, 0, 0), v(2, 30, 3), false},
	} {
		require.Equal(t, tc.want, versionBefore(tc.a, tc.b), "%v < %v", tc.a, tc.b)
	}
}
