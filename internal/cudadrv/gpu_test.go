//go:build gpu

package cudadrv

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// These tests need a real GPU and driver; ci/gpu.sh runs them with
// `go test -tags gpu`. Each one locks its goroutine to a thread and makes
// device 0's primary context current there, as the runner does.

func gpu(t *testing.T) *Driver {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	d, err := Load()
	require.NoError(t, err)
	_, err = d.MakeCurrent(0)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.PrimaryCtxRelease(0)) })
	return d
}

func TestGPUDevice(t *testing.T) {
	d := gpu(t)
	require.GreaterOrEqual(t, d.Version(), 12000, "driver supports CUDA %s", VersionString(d.Version()))
	n, err := d.DeviceCount()
	require.NoError(t, err)
	require.Positive(t, n)

	for i := 0; i < n; i++ {
		dev, err := d.DeviceGet(i)
		require.NoError(t, err)
		name, err := d.DeviceName(dev)
		require.NoError(t, err)
		major, minor, err := d.ComputeCapability(dev)
		require.NoError(t, err)
		sms, err := d.DeviceAttribute(dev, AttrMultiprocessorCount)
		require.NoError(t, err)
		mc, err := d.DeviceAttribute(dev, AttrMulticastSupported)
		require.NoError(t, err)
		uuid, err := d.DeviceUUID(dev)
		require.NoError(t, err)
		bus, err := d.DevicePCIBusID(dev)
		require.NoError(t, err)
		total, err := d.DeviceTotalMem(dev)
		require.NoError(t, err)

		t.Logf("GPU%d %s sm_%d%d %d SMs multicast=%d %s %s %d GiB", i, name, major, minor, sms, mc, uuid, bus, total>>30)
		require.NotEmpty(t, name)
		require.GreaterOrEqual(t, major, 7)
		require.Positive(t, sms)
		require.NotEqual(t, UUID{}, uuid)
		require.Regexp(t, `^[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]$`, bus)
		require.Greater(t, total, uint64(1<<30))
	}
	ctx, err := d.CtxGetCurrent()
	require.NoError(t, err)
	require.NotZero(t, ctx)
}

func TestGPUMemoryRoundTrip(t *testing.T) {
	d := gpu(t)
	const n = 1<<20 + 13 // not a multiple of anything convenient
	p, err := d.MemAlloc(n)
	require.NoError(t, err)
	defer d.MemFree(p)

	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	require.NoError(t, d.MemcpyHtoD(p, src))
	got := make([]byte, n)
	require.NoError(t, d.MemcpyDtoH(got, p))
	require.True(t, bytes.Equal(src, got), "synchronous round trip")

	s, err := d.StreamCreate(StreamNonBlocking)
	require.NoError(t, err)
	defer d.StreamDestroy(s)
	pinned, err := d.MemAllocHost(n)
	require.NoError(t, err)
	defer d.MemFreeHost(pinned)

	q, err := d.MemAlloc(n)
	require.NoError(t, err)
	defer d.MemFree(q)
	require.NoError(t, d.MemcpyDtoDAsync(q, p, n, s))
	require.NoError(t, d.MemsetD8Async(q.Add(1), 0xab, 3, s))
	require.NoError(t, d.MemsetD32Async(q.Add(8), 0xdeadbeef, 2, s))
	require.NoError(t, d.MemcpyDtoHAsync(pinned, q, s))
	require.NoError(t, d.StreamSynchronize(s))

	want := append([]byte(nil), src...)
	copy(want[1:4], []byte{0xab, 0xab, 0xab})
	binary.LittleEndian.PutUint32(want[8:], 0xdeadbeef)
	binary.LittleEndian.PutUint32(want[12:], 0xdeadbeef)
	require.True(t, bytes.Equal(want, pinned), "async copies and memsets")

	free, total, err := d.MemGetInfo()
	require.NoError(t, err)
	require.Less(t, free, total)
}

// TestGPUIPC exports an allocation and has a child process (this test
// binary, run again) map it and read it back: a process cannot open its own
// IPC handles.
func TestGPUIPC(t *testing.T) {
	d := gpu(t)
	p, err := d.MemAlloc(4096)
	require.NoError(t, err)
	defer d.MemFree(p)
	payload := []byte("artest ipc payload 0123456789")
	require.NoError(t, d.MemcpyHtoD(p, payload))

	h, err := d.IpcGetMemHandle(p)
	require.NoError(t, err)
	require.NotEqual(t, IPCMemHandle{}, h)

	cmd := exec.Command(os.Args[0], "-test.run=^TestGPUIPCChild$", "-test.v")
	cmd.Env = append(os.Environ(), "ARTEST_IPC_HANDLE="+hex.EncodeToString(h[:]), "ARTEST_IPC_LEN="+hex.EncodeToString([]byte{byte(len(payload))}))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "IPCDATA="+hex.EncodeToString(payload))
}

func TestGPUIPCChild(t *testing.T) {
	hs := os.Getenv("ARTEST_IPC_HANDLE")
	if hs == "" {
		t.Skip("helper process for TestGPUIPC")
	}
	d := gpu(t)
	raw, err := hex.DecodeString(hs)
	require.NoError(t, err)
	n, err := hex.DecodeString(os.Getenv("ARTEST_IPC_LEN"))
	require.NoError(t, err)
	var h IPCMemHandle
	copy(h[:], raw)

	p, err := d.IpcOpenMemHandle(h)
	require.NoError(t, err)
	defer d.IpcCloseMemHandle(p)
	buf := make([]byte, n[0])
	require.NoError(t, d.MemcpyDtoH(buf, p))
	t.Logf("IPCDATA=%s", hex.EncodeToString(buf))
}

func TestGPUStreamEventTiming(t *testing.T) {
	d := gpu(t)
	s, err := d.StreamCreate(StreamNonBlocking)
	require.NoError(t, err)
	defer d.StreamDestroy(s)
	start, err := d.EventCreate(EventDefault)
	require.NoError(t, err)
	defer d.EventDestroy(start)
	end, err := d.EventCreate(EventDefault)
	require.NoError(t, err)
	defer d.EventDestroy(end)

	const n = 256 << 20
	p, err := d.MemAlloc(n)
	require.NoError(t, err)
	defer d.MemFree(p)

	require.NoError(t, d.EventRecord(start, s))
	for i := 0; i < 8; i++ {
		require.NoError(t, d.MemsetD32Async(p, uint32(i), n/4, s))
	}
	require.NoError(t, d.EventRecord(end, s))
	require.NoError(t, d.EventSynchronize(end))
	done, err := d.EventQuery(end)
	require.NoError(t, err)
	require.True(t, done)
	done, err = d.StreamQuery(s)
	require.NoError(t, err)
	require.True(t, done)

	el, err := d.EventElapsed(start, end)
	require.NoError(t, err)
	t.Logf("8 memsets of 256 MiB: %v (%.0f GB/s)", el, 8*n/el.Seconds()/1e9)
	require.Positive(t, el)
}

func TestGPUGraphCaptureOfMemset(t *testing.T) {
	d := gpu(t)
	s, err := d.StreamCreate(StreamNonBlocking)
	require.NoError(t, err)
	defer d.StreamDestroy(s)
	const words = 4096
	p, err := d.MemAlloc(4 * words)
	require.NoError(t, err)
	defer d.MemFree(p)
	require.NoError(t, d.MemsetD32Async(p, 0, words, s))
	require.NoError(t, d.StreamSynchronize(s))

	require.NoError(t, d.StreamBeginCapture(s, CaptureThreadLocal))
	require.NoError(t, d.MemsetD32Async(p, 0x5eed5eed, words, s))
	g, err := d.StreamEndCapture(s)
	require.NoError(t, err)
	defer d.GraphDestroy(g)

	got := make([]byte, 4*words)
	require.NoError(t, d.MemcpyDtoH(got, p))
	require.Equal(t, make([]byte, 4*words), got, "captured work does not run")

	exec, err := d.GraphInstantiate(g, 0)
	require.NoError(t, err)
	defer d.GraphExecDestroy(exec)
	require.NoError(t, d.GraphLaunch(exec, s))
	require.NoError(t, d.StreamSynchronize(s))
	require.NoError(t, d.MemcpyDtoH(got, p))
	for i := 0; i < words; i++ {
		require.Equal(t, uint32(0x5eed5eed), binary.LittleEndian.Uint32(got[4*i:]), "word %d", i)
	}
}

// An event recorded inside a captured graph (CU_EVENT_RECORD_EXTERNAL) is
// timed against one recorded on the stream before the replay: the stress
// witness's stamps in graph modes rely on it.
func TestGPUGraphEventTiming(t *testing.T) {
	d := gpu(t)
	s, err := d.StreamCreate(StreamNonBlocking)
	require.NoError(t, err)
	defer d.StreamDestroy(s)
	before, err := d.EventCreate(EventDefault)
	require.NoError(t, err)
	defer d.EventDestroy(before)
	inGraph, err := d.EventCreate(EventDefault)
	require.NoError(t, err)
	defer d.EventDestroy(inGraph)
	const n = 64 << 20
	p, err := d.MemAlloc(n)
	require.NoError(t, err)
	defer d.MemFree(p)

	require.NoError(t, d.StreamBeginCapture(s, CaptureThreadLocal))
	require.NoError(t, d.MemsetD32Async(p, 7, n/4, s))
	require.NoError(t, d.EventRecordExternal(inGraph, s))
	g, err := d.StreamEndCapture(s)
	require.NoError(t, err)
	defer d.GraphDestroy(g)
	exec, err := d.GraphInstantiate(g, 0)
	require.NoError(t, err)
	defer d.GraphExecDestroy(exec)

	require.NoError(t, d.EventRecord(before, s))
	require.NoError(t, d.GraphLaunch(exec, s))
	require.NoError(t, d.StreamSynchronize(s))
	el, err := d.EventElapsed(before, inGraph)
	require.NoError(t, err)
	t.Logf("a 64 MiB memset replayed in a graph, to its event: %v", el)
	require.Positive(t, el)
}

// recordPTX is a kernel with one 24-byte by-value struct parameter
// {out, a, b}: block 0 thread 0 writes a+b and the grid size to out.
const recordPTX = `
.version 7.8
.target sm_80
.address_size 64

.visible .entry artest_record(
	.param .align 8 .b8 artest_record_param_0[24]
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<7>;

	mov.u32 %r1, %tid.x;
	mov.u32 %r2, %ctaid.x;
	or.b32 %r1, %r1, %r2;
	setp.ne.s32 %p1, %r1, 0;
	@%p1 bra DONE;
	ld.param.u64 %rd1, [artest_record_param_0];
	ld.param.u64 %rd2, [artest_record_param_0+8];
	ld.param.u64 %rd3, [artest_record_param_0+16];
	add.s64 %rd4, %rd2, %rd3;
	cvta.to.global.u64 %rd5, %rd1;
	st.global.u64 [%rd5], %rd4;
	mov.u32 %r3, %nctaid.x;
	cvt.u64.u32 %rd6, %r3;
	st.global.u64 [%rd5+8], %rd6;
DONE:
	ret;
}
`

func TestGPULaunch(t *testing.T) {
	d := gpu(t)
	m, err := d.ModuleLoadData([]byte(recordPTX))
	require.NoError(t, err)
	defer d.ModuleUnload(m)
	fn, err := d.ModuleGetFunction(m, "artest_record")
	require.NoError(t, err)
	_, err = d.ModuleGetFunction(m, "artest_absent")
	require.ErrorIs(t, err, ErrNotFound)

	off, size, err := d.FuncParamInfo(fn, 0)
	require.NoError(t, err)
	require.Equal(t, []uint64{0, 24}, []uint64{off, size})
	type args struct {
		Out  DevicePtr
		A, B uint64
	}
	require.Equal(t, uintptr(size), unsafe.Sizeof(args{}))

	regs, err := d.FuncGetAttribute(fn, FuncNumRegs)
	require.NoError(t, err)
	require.Positive(t, regs)
	require.NoError(t, d.FuncSetAttribute(fn, FuncMaxDynamicSharedSizeBytes, 64<<10))

	s, err := d.StreamCreate(StreamNonBlocking)
	require.NoError(t, err)
	defer d.StreamDestroy(s)
	out, err := d.MemAlloc(16)
	require.NoError(t, err)
	defer d.MemFree(out)
	read := func() [2]uint64 {
		require.NoError(t, d.StreamSynchronize(s))
		var b [16]byte
		require.NoError(t, d.MemcpyDtoH(b[:], out))
		return [2]uint64{binary.LittleEndian.Uint64(b[:]), binary.LittleEndian.Uint64(b[8:])}
	}

	a := args{Out: out, A: 1 << 40, B: 2}
	require.NoError(t, LaunchArg(d, fn, D1(36), D1(512), 0, s, &a))
	require.Equal(t, [2]uint64{1<<40 + 2, 36}, read())

	a.B = 5
	cfg := LaunchConfig{Grid: D1(132), Block: D1(256), SharedBytes: 60 << 10, Stream: s,
		Attributes: []LaunchAttribute{ProgrammaticStreamSerialization(true)}}
	require.NoError(t, d.LaunchEx(cfg, fn, unsafe.Pointer(&a), unsafe.Sizeof(a)))
	require.Equal(t, [2]uint64{1<<40 + 5, 132}, read())

	err = d.Launch(fn, D1(1), D1(4096), 0, s, unsafe.Pointer(&a), unsafe.Sizeof(a))
	require.ErrorIs(t, err, ErrInvalidValue, "a block of 4096 threads is refused by the driver")
}

func TestGPUPeerAccess(t *testing.T) {
	d := gpu(t)
	n, err := d.DeviceCount()
	require.NoError(t, err)
	if n < 2 {
		t.Skip("needs two GPUs")
	}
	can, err := d.CanAccessPeer(0, 1)
	require.NoError(t, err)
	if !can {
		t.Skip("GPU0 cannot access GPU1")
	}
	peer, err := d.PrimaryCtxRetain(1)
	require.NoError(t, err)
	defer d.PrimaryCtxRelease(1)
	require.NoError(t, d.CtxEnablePeerAccess(peer))
	require.NoError(t, d.CtxEnablePeerAccess(peer), "enabling twice is not an error")
}

func TestGPULoadIsOnce(t *testing.T) {
	a, err := Load()
	require.NoError(t, err)
	b, err := Load()
	require.NoError(t, err)
	require.Same(t, a, b)
	require.True(t, strings.HasPrefix(a.lib.(dlLibrary).lib.Name(), "libcuda.so"))
}
