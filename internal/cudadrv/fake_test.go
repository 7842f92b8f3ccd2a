package cudadrv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// fakeDriver is testdata/fakecuda.c built as a shared library, or "" when
// this machine has no C compiler.
var fakeDriver string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "artest-fakecuda-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lib := filepath.Join(dir, "libcuda.so.1")
	out, err := exec.Command("cc", "-shared", "-fPIC", "-Wall", "-Werror", "-o", lib, "testdata/fakecuda.c").CombinedOutput()
	switch {
	case err == nil:
		fakeDriver = lib
	case isNotFound(err):
		// No compiler: the tests that need the fake skip.
	default:
		fmt.Fprintf(os.Stderr, "build fake libcuda: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func isNotFound(err error) bool {
	_, ok := err.(*exec.Error)
	return ok
}

func fake(t *testing.T) *Driver {
	t.Helper()
	if fakeDriver == "" {
		t.Skip("no C compiler to build the fake driver")
	}
	d, err := load(fakeDriver, openDL)
	require.NoError(t, err)
	return d
}

func TestFakeInitFailure(t *testing.T) {
	if fakeDriver == "" {
		t.Skip("no C compiler to build the fake driver")
	}
	t.Setenv("FAKECUDA_INIT_RESULT", "100")
	d, err := load(fakeDriver, openDL)
	require.Nil(t, d)
	require.EqualError(t, err, "initialise CUDA driver: cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected")
	require.ErrorIs(t, err, ErrNoDevice)
}

// The go-nvml trap: success must come back as a nil error interface.
func TestSuccessIsNilInterface(t *testing.T) {
	d := fake(t)
	err := d.result("cuCtxSynchronize", 0)
	require.True(t, err == nil, "got %#v", err)
	require.True(t, d.CtxSynchronize() == nil)
}

func TestErrorNameFallback(t *testing.T) {
	d := fake(t)
	// The fake's cuGetErrorName does not know 700; the built-in table does.
	err := d.result("cuStreamSynchronize", 700)
	require.EqualError(t, err, "cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700)")
	require.True(t, IsSticky(err))
}

func TestMPSClient(t *testing.T) {
	for _, c := range []struct {
		env  string
		want bool
	}{{"", false}, {"0", false}, {"1", true}} {
		t.Setenv("FAKECUDA_MPS", c.env)
		d := fake(t)
		got, err := d.MPSClient(0)
		require.NoError(t, err)
		require.Equal(t, c.want, got, "FAKECUDA_MPS=%q", c.env)
	}
	d := fake(t)
	n, err := d.ContextSMs()
	require.NoError(t, err)
	require.Equal(t, 132, n)
	t.Setenv("FAKECUDA_CTX_SMS", "7")
	n, err = d.ContextSMs()
	require.NoError(t, err)
	require.Equal(t, 7, n)
}

func TestFakeDevices(t *testing.T) {
	d := fake(t)
	require.Equal(t, 13000, d.Version())

	n, err := d.DeviceCount()
	require.NoError(t, err)
	require.Equal(t, 2, n)

	dev, err := d.DeviceGet(1)
	require.NoError(t, err)
	require.Equal(t, Device(1), dev)

	_, err = d.DeviceGet(5)
	require.ErrorIs(t, err, ErrInvalidDevice)
	require.ErrorContains(t, err, "cuDeviceGet: CUDA_ERROR_INVALID_DEVICE (101)")

	name, err := d.DeviceName(dev)
	require.NoError(t, err)
	require.Equal(t, "Fake GPU 1", name)

	v, err := d.DeviceAttribute(dev, AttrMulticastSupported)
	require.NoError(t, err)
	require.Equal(t, 1321, v, "the fake returns attr*10+device")

	major, minor, err := d.ComputeCapability(dev)
	require.NoError(t, err)
	require.Equal(t, []int{751, 761}, []int{major, minor})

	u, err := d.DeviceUUID(dev)
	require.NoError(t, err)
	require.Equal(t, "GPU-01112131-4151-6171-8191-a1b1c1d1e1f1", u.String())

	bus, err := d.DevicePCIBusID(dev)
	require.NoError(t, err)
	require.Equal(t, "0000:19:00.0", bus)

	total, err := d.DeviceTotalMem(dev)
	require.NoError(t, err)
	require.Equal(t, uint64(2<<30), total)

	can, err := d.CanAccessPeer(0, 1)
	require.NoError(t, err)
	require.True(t, can)
	can, err = d.CanAccessPeer(1, 1)
	require.NoError(t, err)
	require.False(t, can)
}

func TestFakeContexts(t *testing.T) {
	d := fake(t)
	ctx, err := d.MakeCurrent(1)
	require.NoError(t, err)
	require.Equal(t, Context(0x1001), ctx)
	cur, err := d.CtxGetCurrent()
	require.NoError(t, err)
	require.Equal(t, ctx, cur)
	require.NoError(t, d.PrimaryCtxRelease(1))

	require.NoError(t, d.CtxEnablePeerAccess(0x1001), "already enabled counts as success")
	require.ErrorIs(t, d.CtxEnablePeerAccess(0x1000), ErrInvalidValue)
}

func TestFakeMemory(t *testing.T) {
	d := fake(t)
	p, err := d.MemAlloc(64)
	require.NoError(t, err)
	defer d.MemFree(p)

	src := make([]byte, 64)
	for i := range src {
		src[i] = byte(i + 1)
	}
	require.NoError(t, d.MemcpyHtoD(p, src))
	require.NoError(t, d.MemsetD8Async(p.Add(8), 0xee, 4, 0))
	require.NoError(t, d.MemsetD32Async(p.Add(16), 0x01020304, 2, 0))
	got := make([]byte, 64)
	require.NoError(t, d.MemcpyDtoH(got, p))

	want := append([]byte(nil), src...)
	copy(want[8:12], []byte{0xee, 0xee, 0xee, 0xee})
	copy(want[16:24], []byte{4, 3, 2, 1, 4, 3, 2, 1})
	require.Equal(t, want, got)

	free, total, err := d.MemGetInfo()
	require.NoError(t, err)
	require.Equal(t, []uint64{1 << 30, 2 << 30}, []uint64{free, total})

	_, err = d.MemAlloc(1 << 41)
	require.EqualError(t, err, "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory")
	require.ErrorIs(t, err, ErrOutOfMemory)
}

func TestFakeAsyncCopiesNeedPinnedMemory(t *testing.T) {
	d := fake(t)
	p, err := d.MemAlloc(32)
	require.NoError(t, err)
	defer d.MemFree(p)

	goMem := make([]byte, 32)
	require.ErrorContains(t, d.MemcpyHtoDAsync(p, goMem, 0), "not page-locked")
	require.ErrorContains(t, d.MemcpyDtoHAsync(goMem, p, 0), "not page-locked")

	pinned, err := d.MemAllocHost(32)
	require.NoError(t, err)
	for i := range pinned {
		pinned[i] = byte(100 + i)
	}
	require.NoError(t, d.MemcpyHtoDAsync(p, pinned, 0))
	require.NoError(t, d.MemcpyDtoDAsync(p, p.Add(16), 16, 0))
	require.NoError(t, d.MemcpyDtoHAsync(pinned[4:20], p, 0), "a subslice of pinned memory is pinned")
	require.Equal(t, byte(116), pinned[4], "DtoD moved bytes 16.. to 0..")

	require.ErrorContains(t, d.MemFreeHost(pinned[1:]), "not the start")
	require.NoError(t, d.MemFreeHost(pinned))
	require.ErrorContains(t, d.MemFreeHost(pinned), "not the start", "double free is caught")

	_, err = d.MemAllocHost(0)
	require.Error(t, err)
}

func TestFakeIPC(t *testing.T) {
	d := fake(t)
	p, err := d.MemAlloc(16)
	require.NoError(t, err)
	defer d.MemFree(p)

	h, err := d.IpcGetMemHandle(p)
	require.NoError(t, err)
	require.Equal(t, "FAKEIPC", string(h[:7]))
	q, err := d.IpcOpenMemHandle(h)
	require.NoError(t, err, "the wrapper passes CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS")
	require.Equal(t, p, q)
	require.NoError(t, d.IpcCloseMemHandle(q))
}

func TestFakeModules(t *testing.T) {
	d := fake(t)
	_, err := d.ModuleLoadData([]byte("garbage"))
	require.ErrorIs(t, err, ErrInvalidImage)
	_, err = d.ModuleLoadData(nil)
	require.ErrorContains(t, err, "empty image")

	m, err := d.ModuleLoadData([]byte("FAKE image"))
	require.NoError(t, err)
	_, err = d.ModuleGetFunction(m, "artest_oneshot_bf16_sum")
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorContains(t, err, `kernel "artest_oneshot_bf16_sum": cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (500)`)

	fn, err := d.ModuleGetFunction(m, "record")
	require.NoError(t, err)
	require.NoError(t, d.FuncSetAttribute(fn, FuncMaxDynamicSharedSizeBytes, 200<<10))
	v, err := d.FuncGetAttribute(fn, FuncMaxDynamicSharedSizeBytes)
	require.NoError(t, err)
	require.Equal(t, 200<<10, v)
	off, size, err := d.FuncParamInfo(fn, 0)
	require.NoError(t, err)
	require.Equal(t, []uint64{0, 24}, []uint64{off, size})

	for _, c := range []struct{ threads, shared, want int }{
		{512, 0, 4}, {32, 0, 32}, {256, 48 << 10, 1}, {128, 16 << 10, 4},
	} {
		n, err := d.OccupancyMaxActiveBlocks(fn, c.threads, c.shared)
		require.NoError(t, err)
		require.Equal(t, c.want, n, "%d threads, %d shared bytes", c.threads, c.shared)
	}
	_, err = d.OccupancyMaxActiveBlocks(fn, 0, 0)
	require.ErrorContains(t, err, "cuOccupancyMaxActiveBlocksPerMultiprocessor: CUDA_ERROR_INVALID_VALUE (1)")

	require.NoError(t, d.ModuleUnload(m))
	require.Empty(t, d.images, "the image copy is freed at unload")
}

// recordArgs is the parameter of the fake "record" kernel.
type recordArgs struct {
	Out  DevicePtr
	A, B uint64
}

// recordKernel loads the fake module and returns its "record" kernel; the
// module is unloaded when the test ends.
func recordKernel(t *testing.T, d *Driver) Function {
	t.Helper()
	m, err := d.ModuleLoadData([]byte("FAKE"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.ModuleUnload(m) })
	fn, err := d.ModuleGetFunction(m, "record")
	require.NoError(t, err)
	return fn
}

func TestFakeLaunch(t *testing.T) {
	d := fake(t)
	fn := recordKernel(t, d)
	s, err := d.StreamCreate(StreamDefault)
	require.NoError(t, err)

	out, err := d.MemAlloc(16 * 8)
	require.NoError(t, err)
	defer d.MemFree(out)
	read := func() []uint64 {
		b := make([]byte, 16*8)
		require.NoError(t, d.MemcpyDtoH(b, out))
		return unsafe.Slice((*uint64)(unsafe.Pointer(&b[0])), 16)
	}

	args := recordArgs{Out: out, A: 40, B: 2}
	require.NoError(t, d.Launch(fn, Dim3{2, 3, 4}, D1(256), 1024, s, unsafe.Pointer(&args), unsafe.Sizeof(args)))
	require.Equal(t, []uint64{42, 2, 3, 4, 256, 1, 1, 1024, uint64(s)}, read()[:9])

	args.B = 100
	require.NoError(t, LaunchArg(d, fn, D1(7), D1(32), 0, 0, &args))
	require.Equal(t, []uint64{140, 7, 1, 1, 32, 1, 1, 0, 0}, read()[:9])

	cfg := LaunchConfig{
		Grid: D1(132), Block: D1(512), SharedBytes: 4096, Stream: s,
		Attributes: []LaunchAttribute{ProgrammaticStreamSerialization(true), Priority(-2)},
	}
	args.B = 1
	require.NoError(t, d.LaunchEx(cfg, fn, unsafe.Pointer(&args), unsafe.Sizeof(args)))
	got := read()
	require.Equal(t, []uint64{41, 132, 1, 1, 512, 1, 1, 4096, uint64(s)}, got[:9])
	require.Equal(t, []uint64{2, 6, 1, 8, 0xfffffffe}, got[9:14], "attribute count, then id/value pairs")

	require.ErrorContains(t, d.Launch(fn, D1(1), D1(1), 0, s, nil, 24), "nil argument")
}

// A parameter struct embedded in a Go struct that holds Go pointers (as
// backend.Launch holds its *Variant) must launch without tripping the cgo
// pointer checker: the panic that first met the GPU.
func TestFakeLaunchArgInsidePointerStruct(t *testing.T) {
	d := fake(t)
	fn := recordKernel(t, d)
	out, err := d.MemAlloc(16 * 8)
	require.NoError(t, err)
	defer d.MemFree(out)
	type launch struct {
		name *string
		args recordArgs
		more []int
	}
	name := "x"
	l := &launch{name: &name, args: recordArgs{Out: out, A: 1, B: 2}, more: []int{1}}
	require.NoError(t, d.Launch(fn, D1(1), D1(32), 0, 0, unsafe.Pointer(&l.args), unsafe.Sizeof(l.args)))
	require.NoError(t, d.LaunchEx(LaunchConfig{Grid: D1(1), Block: D1(32)}, fn, unsafe.Pointer(&l.args), unsafe.Sizeof(l.args)))
	b := make([]byte, 8)
	require.NoError(t, d.MemcpyDtoH(b, out))
	require.Equal(t, byte(3), b[0])
}

func TestFakeLaunchExMissing(t *testing.T) {
	d := fake(t)
	d.t.launchKernelEx.ptr = nil // as on a driver older than CUDA 11.8
	err := d.LaunchEx(LaunchConfig{Grid: D1(1), Block: D1(1)}, 0, nil, 0)
	require.ErrorIs(t, err, ErrSymbolMissing)
	require.ErrorContains(t, err, "cuLaunchKernelEx")
}

func TestFakeStreamsEventsGraphs(t *testing.T) {
	d := fake(t)
	s, err := d.StreamCreate(StreamNonBlocking)
	require.NoError(t, err)
	require.Equal(t, Stream(0x4001), s)

	done, err := d.StreamQuery(s)
	require.NoError(t, err, "NOT_READY is not an error")
	require.False(t, done)
	done, err = d.StreamQuery(0)
	require.NoError(t, err)
	require.True(t, done)

	start, err := d.EventCreate(EventDefault)
	require.NoError(t, err)
	_, err = d.EventCreate(EventDefault)
	require.NoError(t, err)
	end, err := d.EventCreate(EventDisableTiming)
	require.NoError(t, err)
	require.NoError(t, d.EventRecord(start, s))
	require.NoError(t, d.EventRecord(end, s))
	require.NoError(t, d.EventSynchronize(end))
	done, err = d.EventQuery(end)
	require.NoError(t, err)
	require.True(t, done)
	el, err := d.EventElapsed(start, end)
	require.NoError(t, err)
	require.Equal(t, "1.5ms", el.String(), "the fake's clock advances 1.5 ms per record")
	require.NoError(t, d.EventRecordExternal(start, s), "the fake takes only CU_EVENT_RECORD_EXTERNAL")
	el, err = d.EventElapsed(start, end)
	require.NoError(t, err)
	require.Equal(t, "-1.5ms", el.String())
	require.NoError(t, d.EventDestroy(start))
	require.ErrorIs(t, d.EventDestroy(0), ErrInvalidValue)

	require.ErrorIs(t, d.StreamBeginCapture(s, CaptureMode(7)), ErrInvalidValue)
	require.NoError(t, d.StreamBeginCapture(s, CaptureRelaxed))
	g, err := d.StreamEndCapture(s)
	require.NoError(t, err)
	require.Equal(t, Graph(0x6002), g)
	exec, err := d.GraphInstantiate(g, GraphInstantiateUpload)
	require.NoError(t, err)
	require.Equal(t, GraphExec(0x6102), exec)
	require.NoError(t, d.GraphLaunch(exec, s))
	require.NoError(t, d.StreamSynchronize(s))
	require.NoError(t, d.GraphExecDestroy(exec))
	require.NoError(t, d.GraphDestroy(g))
	require.NoError(t, d.StreamDestroy(s))
}

func TestFakeSMPartition(t *testing.T) {
	d := fake(t)
	for _, tc := range []struct {
		sms           string
		groups, index int
		want          int
		err           string
	}{
		{"132", 2, 0, 64, ""},
		{"132", 2, 1, 64, ""},
		{"132", 4, 3, 32, ""},
		{"132", 8, 7, 16, ""},
		{"132", 1, 0, 128, ""},
		{"78", 4, 0, 16, ""}, // 19 per group rounds down to 16
		{"132", 32, 0, 0, "132 SMs do not split into 32 groups"},
		{"132", 2, 2, 0, "no such group"},
		{"132", 0, 0, 0, "no such group"},
	} {
		t.Setenv("FAKECUDA_SMS", tc.sms)
		g, n, err := d.SMPartition(0, tc.groups, tc.index)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, "%+v", tc)
			continue
		}
		require.NoError(t, err, "%+v", tc)
		require.Equal(t, tc.want, n, "%+v", tc)
		require.NotZero(t, g)
		s, err := d.GreenCtxStreamCreate(g, StreamNonBlocking)
		require.NoError(t, err)
		require.NotZero(t, s)
		require.NoError(t, d.StreamDestroy(s))
		require.NoError(t, d.GreenCtxDestroy(g))
	}
}
