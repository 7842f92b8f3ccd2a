package cuda

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/nccl"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
)

// fakeNCCL loads internal/nccl's fake libnccl, built as 2.28.9 or, with
// old, as 2.18.5 (no registration, windows or ncclMemAlloc).
func fakeNCCL(t *testing.T, old bool) *nccl.Lib {
	t.Helper()
	name, flags := "nccl-new/libnccl.so.2", []string(nil)
	if old {
		name, flags = "nccl-old/libnccl.so.2", []string{"-DFAKENCCL_OLD"}
	}
	require.NoError(t, osMkdirAll(testTmp, name))
	l, err := nccl.Load(cc(t, name, "../../nccl/testdata/fakenccl.c", flags...))
	require.NoError(t, err)
	return l
}

func lookup(t *testing.T, name string) *kernels.Variant {
	t.Helper()
	v, err := registry.Builtins().Lookup(name)
	require.NoError(t, err)
	return v
}

func TestNCCLModeSkipReasons(t *testing.T) {
	newLib, oldLib := fakeNCCL(t, false), fakeNCCL(t, true)
	for _, tc := range []struct {
		name, variant string
		lib           *nccl.Lib
		ncclReason    string
		want          string
	}{
		{"nccl runs on 2.18", "nccl", oldLib, "", ""},
		{"nccl-reg runs on 2.28", "nccl-reg", newLib, "", ""},
		{"nccl-reg on 2.18", "nccl-reg", oldLib, "", "nccl: libnccl 2.18.5 has no ncclCommRegister, ncclCommDeregister"},
		{"nccl-win on 2.18", "nccl-win", oldLib, "", "nccl: libnccl 2.18.5 has no ncclCommWindowRegister, ncclCommWindowDeregister, ncclMemAlloc, ncclMemFree"},
		{"nccl-win runs on 2.28", "nccl-win", newLib, "", ""},
		{"shared GPU comes first", "nccl-reg", newLib, "NCCL cannot run two ranks on one GPU (ranks 0 and 1 share GPU 0)",
			"nccl: NCCL cannot run two ranks on one GPU (ranks 0 and 1 share GPU 0)"},
		{"no NCCL at all", "nccl-win", nil, "could not load libnccl.so.2", "nccl: could not load libnccl.so.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{cc: 90, nccl: tc.lib, ncclReason: tc.ncclReason}
			v := lookup(t, tc.variant)
			require.Equal(t, tc.want, b.SkipReason(v, false))
			require.Equal(t, tc.want, b.SkipReason(v, true))
		})
	}
}

// TestNCCLRegisteredBuffers runs nccl-reg calls on the fake driver and the
// fake NCCL: the input and output allocations are registered whole, once,
// at the first call that uses them; freeing the output deregisters it, and
// Close deregisters the rest before it destroys the communicator.
func TestNCCLRegisteredBuffers(t *testing.T) {
	lib := fakeNCCL(t, false)
	bs, ws := setupWorld(t, registry.Builtins(), 1, 1<<16)
	b, w := bs[0], ws[0]
	b.nccl, b.ncclComm, b.ncclReason = lib, nccl.Comm(0x7001), ""
	reg, plain := lookup(t, "nccl-reg"), lookup(t, "nccl")

	out, err := b.Alloc(1 << 12)
	require.NoError(t, err)
	call := func(v *kernels.Variant, offset uint64, inPlace bool) {
		l := launch(v, w, 0, offset, 16, inPlace)
		if !inPlace {
			l.Args.Out = out + offset
		}
		l.DType, l.Op = reference.F32, reference.Sum
		require.NoError(t, b.Allreduce(l))
	}

	call(plain, 64, false)
	require.Empty(t, b.regs.handles, "nccl registers nothing")

	call(reg, 64, false)
	require.Len(t, b.regs.handles, 2)
	require.Contains(t, b.regs.handles, cu.DevicePtr(w.Input[0]))
	require.Contains(t, b.regs.handles, cu.DevicePtr(out))
	require.Contains(t, lib.LastError(b.ncclComm), fmt.Sprintf("send=%#x recv=%#x count=16", w.Input[0]+64, out+64))

	// Other offsets and in place reuse the same registrations.
	call(reg, 256, false)
	call(reg, 128, true)
	require.Len(t, b.regs.handles, 2)

	require.NoError(t, b.Free(out))
	require.Len(t, b.regs.handles, 1, "freeing an allocation deregisters it")
	require.Contains(t, lib.LastError(0), "deregister handle=")

	l := launch(reg, w, 0, 0, 16, false)
	l.Args.Out = 0x10 // in no buffer of this rank's
	l.DType, l.Op = reference.F32, reference.Sum
	require.ErrorContains(t, b.Allreduce(l), "nccl-reg: 0x10 is in no buffer of this rank's")

	require.NoError(t, b.deregisterAll())
	require.Empty(t, b.regs.handles)
	require.Contains(t, lib.LastError(0), "live=0", "every registration undone")
}

func osMkdirAll(dir, name string) error {
	return os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
}

// The NCCL baselines' other collectives reach ncclReduceScatter and
// ncclAllGather with one rank's chunk as the count (the launch's Count is
// the full buffer), on the buffers the runner gave; the allreduce keeps
// the whole count.
func TestNCCLCollectives(t *testing.T) {
	lib := fakeNCCL(t, false)
	bs, ws := setupWorld(t, registry.Builtins(), 1, 1<<16)
	b, w := bs[0], ws[0]
	b.nccl, b.ncclComm, b.ncclReason = lib, nccl.Comm(0x7001), ""
	out, err := b.Alloc(1 << 12)
	require.NoError(t, err)
	for _, tc := range []struct {
		coll reference.Coll
		want string
	}{
		{reference.AllReduce, fmt.Sprintf("allreduce send=%#x recv=%#x count=96 type=7 op=0", w.Input[0], out)},
		{reference.ReduceScatter, fmt.Sprintf("reducescatter send=%#x recv=%#x recvcount=48 type=7 op=0", w.Input[0], out)},
		{reference.AllGather, fmt.Sprintf("allgather send=%#x recv=%#x sendcount=48 type=7 comm=", w.Input[0], out)},
	} {
		l := launch(lookup(t, "nccl"), w, 0, 0, 96, false)
		l.Args.Out = out
		l.Args.NRanks = 2 // as rank 0 of 2 would call: 48 elements a rank
		l.Args.SetColl(tc.coll)
		l.DType, l.Op = reference.F32, reference.Sum
		require.NoError(t, b.Allreduce(l), tc.coll)
		require.Contains(t, lib.LastError(b.ncclComm), tc.want, tc.coll)
	}
}
