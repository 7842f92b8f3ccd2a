package cuda

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/multicast/gate"
	"github.com/artest/artest/internal/plugin"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/sigblock"
)

// The backend on internal/cudadrv's fake driver (testdata/fakecuda.c there),
// built with cc: its "device memory" is host memory and an IPC handle
// carries the address, so ranks played by goroutines of one process open
// each other's buffers at the very addresses their owners allocated.
var fakeDrv struct {
	once sync.Once
	d    *cu.Driver
	err  error
}

var testTmp string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "artest-backend-cuda-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testTmp = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cc compiles src into a shared library, name under the test directory
// (or name itself when absolute), or skips the test when this machine has
// no C compiler.
func cc(t *testing.T, name, src string, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler to build", src)
	}
	out := name
	if !filepath.IsAbs(name) {
		out = filepath.Join(testTmp, name)
	}
	args := append([]string{"-std=c11", "-shared", "-fPIC", "-Wall", "-Werror", "-o", out, src}, flags...)
	msg, err := exec.Command("cc", args...).CombinedOutput()
	require.NoError(t, err, "cc %s: %s", src, msg)
	return out
}

func fakeDriver(t *testing.T) *cu.Driver {
	t.Helper()
	if _, err := exec.LookPath("cc"); err != nil {
		t.Skip("no C compiler to build the fake driver")
	}
	fakeDrv.once.Do(func() {
		lib := cc(t, "libcuda.so.1", "../../cudadrv/testdata/fakecuda.c")
		fakeDrv.d, fakeDrv.err = cu.LoadFrom(lib)
	})
	require.NoError(t, fakeDrv.err)
	return fakeDrv.d
}

// fakeBackend is one rank's backend on the fake driver, as Open leaves it
// minus the fatbin and NCCL: device 0, an idle stream (the fake's
// non-blocking streams never finish), the multicast gate closed.
func fakeBackend(t *testing.T, d *cu.Driver, rank int) *Backend {
	t.Helper()
	s, err := d.StreamCreate(0)
	require.NoError(t, err)
	// AllreduceConcurrent's second stream, made here: the fake names a
	// stream by its flags, so this one differs from the first and is idle.
	side, err := d.StreamCreate(2)
	require.NoError(t, err)
	return &Backend{
		d: d, fns: map[string]cu.Function{}, sharedSet: map[string]int{}, caps: map[capKey]gridCap{},
		stream: s, side: side, rank: rank, mc: mcState{decision: gate.Closed("no multicast in tests")},
		ncclReason: "no NCCL in tests",
	}
}

// setWith is the variant set of the built-ins and the External variants vs.
func setWith(t *testing.T, vs ...kernels.Variant) *registry.Set {
	t.Helper()
	set, err := registry.New(vs)
	require.NoError(t, err)
	return set
}

// setupWorld runs Setup on n ranks (goroutines) for a run of the variants
// of set and returns their backends and worlds; the backends close at the
// end of the test.
func setupWorld(t *testing.T, set *registry.Set, n int, capacity int64) ([]*Backend, []*backend.World) {
	t.Helper()
	d := fakeDriver(t)
	world := comm.NewLocalWorld(n)
	bs := make([]*Backend, n)
	ws := make([]*backend.World, n)
	errs := make([]error, n)
	for r := range bs {
		bs[r] = fakeBackend(t, d, r)
	}
	var wg sync.WaitGroup
	for r := range bs {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			ws[r], errs[r] = bs[r].Setup(world.Rank(r), capacity, set)
		}(r)
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, b := range bs {
			_ = b.Close()
		}
	})
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
	}
	return bs, ws
}

// fakeExt is an External that records what it gets, per rank.
type fakeExt struct {
	owner string
	ctl   int64
	fail  map[int]error // Setup's result per rank

	mu     sync.Mutex
	worlds map[int]*kernels.ExternalWorld
	calls  []*kernels.ExternalCall // in the order made, all ranks'
}

func newFakeExt(owner string, ctl int64) *fakeExt {
	return &fakeExt{owner: owner, ctl: ctl, fail: map[int]error{},
		worlds: map[int]*kernels.ExternalWorld{}}
}

func (f *fakeExt) Owner() string       { return f.owner }
func (f *fakeExt) Busy() string        { return "" }
func (f *fakeExt) ControlBytes() int64 { return f.ctl }
func (f *fakeExt) Setup(w *kernels.ExternalWorld) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.worlds[w.Rank] = w
	return f.fail[w.Rank]
}

func (f *fakeExt) Allreduce(c *kernels.ExternalCall) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	return nil
}

func (f *fakeExt) variant(name string, minRanks, maxRanks int, ownInput bool) kernels.Variant {
	return kernels.Variant{
		Name: name, Kind: kernels.KindPlugin, HostBlocks: 1, MinRanks: minRanks, MaxRanks: maxRanks,
		StagesOwnInput: ownInput, External: f,
		Params: []kernels.Param{{Name: "blocks", Slot: 0, Default: 7, Min: 1, Max: 64}},
	}
}

func TestSetupSharesControlRegions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ranks int
		ctl   int64 // 0: no External registered
	}{
		{"no plugin", 3, 0},
		{"one rank", 1, 4096},
		{"three ranks", 3, 4096},
		{"a plugin with no control bytes", 2, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Device memory holds garbage until artest clears it.
			t.Setenv("FAKECUDA_DIRTY_ALLOC", "1")
			var ext *fakeExt
			want := max(tc.ctl, 0)
			set := registry.Builtins()
			if tc.ctl != 0 {
				ext = newFakeExt("plugin fake-"+tc.name, want)
				set = setWith(t, ext.variant("fake:x", 1, 16, false))
			}
			bs, ws := setupWorld(t, set, tc.ranks, 1<<16)
			for r, w := range ws {
				require.Equal(t, want, w.ControlBytes, "rank %d", r)
				if want == 0 {
					require.Empty(t, w.Control, "rank %d", r)
					require.Len(t, bs[r].own, 3, "rank %d allocates no control region", r)
				} else {
					require.Len(t, bs[r].own, 4)
					require.Len(t, w.Control, tc.ranks)
					for p := range ws {
						// Rank p's region, opened at the address p allocated.
						require.Equal(t, backend.Ptr(bs[p].own[sharedCtl]), w.Control[p], "rank %d's view of rank %d", r, p)
						require.NotContains(t, []backend.Ptr{w.Input[p], w.Staging[p], w.Signal[p]}, w.Control[p])
					}
					zero := make([]byte, want)
					got := make([]byte, want)
					require.NoError(t, bs[r].Download(got, w.Control[r]))
					require.Equal(t, zero, got, "rank %d's control region is zeroed", r)
				}
				for p := range ws {
					require.Equal(t, backend.Ptr(bs[p].own[sharedInput]), w.Input[p])
					require.Equal(t, backend.Ptr(bs[p].own[sharedStage]), w.Staging[p])
				}
				if ext == nil {
					continue
				}
				// The plugin was set up at Setup, with the world as it sees it.
				ew := ext.worlds[r]
				require.NotNil(t, ew, "rank %d set up", r)
				require.Equal(t, r, ew.Rank)
				require.Equal(t, tc.ranks, ew.Size)
				require.Equal(t, r, ew.LocalRank)
				require.Equal(t, 0, ew.Device)
				require.Equal(t, "cuda", ew.Backend)
				require.Equal(t, int64(1<<16), ew.InputBytes)
				require.Equal(t, int64(1<<16), ew.StagingBytes)
				require.Equal(t, want, ew.ControlBytes)
				for p := range ws {
					require.Equal(t, uintptr(w.Input[p]), ew.Input[p])
					require.Equal(t, uintptr(w.Staging[p]), ew.Staging[p])
					if want > 0 {
						require.Equal(t, uintptr(w.Control[p]), ew.Control[p])
					} else {
						require.Zero(t, ew.Control[p])
					}
				}
			}
		})
	}
}

func TestSameControlBytes(t *testing.T) {
	rec := func(n uint64) []byte {
		b := make([]byte, setupRecord)
		for i := 0; i < 8; i++ {
			b[offCtlBytes+i] = byte(n >> (8 * i))
		}
		return b
	}
	for _, tc := range []struct {
		name string
		all  []uint64
		mine int64
		want string
	}{
		{"all alike", []uint64{4096, 4096, 4096}, 4096, ""},
		{"none", []uint64{0, 0}, 0, ""},
		{"rank 1 differs", []uint64{4096, 0, 4096}, 4096, "rank 1 has 0 bytes of plugin control region, this rank 4096: every rank must load the same --plugin libraries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var all []byte
			for _, n := range tc.all {
				all = append(all, rec(n)...)
			}
			err := sameControlBytes(all, tc.mine)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

// A plugin's setup that fails on one rank fails that plugin's calls on
// every rank, at their first call, with the failing rank's message; the
// Setup of the backend and another plugin's calls go on.
func TestPluginSetupErrorIsAgreed(t *testing.T) {
	bad, good := newFakeExt("plugin bad (bad.so)", 64), newFakeExt("plugin good (good.so)", 128)
	bad.fail[1] = fmt.Errorf("plugin bad (bad.so): setup returned status 7: no peers today")
	unused := newFakeExt("plugin big (big.so)", 0) // no variant for 3 ranks: never set up
	set := setWith(t, bad.variant("bad:x", 1, 16, false), good.variant("good:x", 1, 16, false), unused.variant("big:x", 8, 16, false))
	bs, ws := setupWorld(t, set, 3, 1<<16)
	require.Empty(t, unused.worlds)
	for r, b := range bs {
		require.Equal(t, int64(2*4096), ws[r].ControlBytes, "a page of its own for each plugin that declared a region")
		// Each plugin sees its own region, at its own offset, of the size it declared.
		require.Equal(t, int64(64), bad.worlds[r].ControlBytes)
		require.Equal(t, int64(128), good.worlds[r].ControlBytes)
		for p := range ws[r].Control {
			require.Equal(t, uintptr(ws[r].Control[p]), bad.worlds[r].Control[p])
			require.Equal(t, uintptr(ws[r].Control[p])+4096, good.worlds[r].Control[p])
		}
		for _, name := range []string{"bad:x", "good:x"} {
			v, err := set.Lookup(name)
			require.NoError(t, err)
			l := launch(v, ws[r], r, 0, 64, false)
			err = b.Allreduce(l)
			if name == "good:x" {
				require.NoError(t, err, "rank %d", r)
				continue
			}
			require.Error(t, err, "rank %d", r)
			require.Contains(t, err.Error(), "setup returned status 7: no peers today")
			if r != 1 {
				require.Contains(t, err.Error(), "rank 1: plugin bad (bad.so)")
			}
		}
	}
	require.Len(t, good.calls, 3)
	require.Empty(t, bad.calls)
}

// launch is a call of v on rank r of w: the message at offset bytes into
// every registered input, count f32 elements, in place or into a private
// output (0 here: the test sets Out).
func launch(v *kernels.Variant, w *backend.World, r int, offset uint64, count uint64, inPlace bool) *backend.Launch {
	l := &backend.Launch{Variant: v, Args: kernels.Args{Count: count, Rank: uint32(r), NRanks: uint32(w.Size)}}
	for p := 0; p < w.Size; p++ {
		l.Args.PeerIn[p] = w.Input[p] + offset
		l.Args.PeerStage[p] = w.Staging[p]
	}
	l.Args.Out = w.Staging[r] + offset
	if inPlace {
		l.Args.Out = l.Args.PeerIn[r]
	}
	l.Args.Param0 = 9
	return l
}

func TestExternalCallPlumbing(t *testing.T) {
	ext := newFakeExt("plugin fake (fake.so)", 256)
	set := setWith(t, ext.variant("fake:own", 1, 16, true), ext.variant("fake:reg", 1, 16, false))
	bs, ws := setupWorld(t, set, 2, 1<<16)
	own, err := set.Lookup("fake:own")
	require.NoError(t, err)
	reg, err := set.Lookup("fake:reg")
	require.NoError(t, err)
	for _, tc := range []struct {
		name       string
		v          *kernels.Variant
		offset     uint64
		inPlace    bool
		src        bool // a staged call whose private input the variant copies itself
		concurrent bool
	}{
		{"registered, in place", reg, 0, true, false, false},
		{"registered, out of place, offset", reg, 256, false, false, false},
		{"staged into the registered buffer by the runner", reg, 64, false, false, false},
		{"staged by the plugin", own, 128, false, true, false},
		{"staged by the plugin, in place", own, 0, true, true, false},
		{"second stream", reg, 0, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for r, b := range bs {
				w := ws[r]
				l := launch(tc.v, w, r, tc.offset, 1000, tc.inPlace)
				var priv backend.Ptr
				if tc.src {
					priv, err = b.Alloc(4000)
					require.NoError(t, err)
					defer b.Free(priv)
					l.Src = priv
				}
				before := len(ext.calls)
				if tc.concurrent {
					require.NoError(t, b.AllreduceConcurrent(l))
				} else {
					require.NoError(t, b.Allreduce(l))
				}
				require.Len(t, ext.calls, before+1)
				c := ext.calls[before]
				require.Equal(t, tc.v.Name, c.Variant.Name)
				require.Equal(t, uint64(1000), c.Count)
				require.Equal(t, tc.offset, c.Offset)
				wantIn := uintptr(w.Input[r]) + uintptr(tc.offset)
				if tc.src {
					wantIn = uintptr(priv)
				}
				require.Equal(t, wantIn, c.In)
				require.Equal(t, uintptr(l.Args.Out), c.Out)
				require.Equal(t, !tc.src, c.Registered)
				require.Equal(t, tc.inPlace && !tc.src, c.InPlace)
				require.Equal(t, uint32(9), c.Params[0])
				stream := b.stream
				if tc.concurrent {
					stream = b.side
				}
				require.Equal(t, uint64(stream), c.Stream)
				require.NotZero(t, c.Stream)
				require.NotEqual(t, b.stream, b.side)
				require.Contains(t, b.Waiting(), "plugin fake (fake.so): allreduce of "+tc.v.Name+" (f32 sum, 1000 elements)")
			}
		})
	}
	// An allreduce that is not a plugin's leaves nothing to say.
	v, err := set.Lookup("nccl")
	require.NoError(t, err)
	require.Error(t, bs[0].Allreduce(launch(v, ws[0], 0, 0, 16, false)))
	require.Empty(t, bs[0].Waiting())
}

func TestExternalSkipReasons(t *testing.T) {
	ext := newFakeExt("plugin fake (fake.so)", 0)
	v := ext.variant("fake:x", 1, 16, false)
	for _, tc := range []struct {
		name, p2p, want string
	}{
		{"P2P everywhere", "", ""},
		{"no P2P", "no P2P access between GPU 0 (rank 0) and GPU 1 (rank 1)", "no P2P access between GPU 0 (rank 0) and GPU 1 (rank 1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Backend{cc: 90, p2pReason: tc.p2p}
			require.Equal(t, tc.want, b.SkipReason(&v, false))
			require.Equal(t, tc.want, b.SkipReason(&v, true))
			// The driver is nil here: the reason comes before any driver call.
			require.Equal(t, kernels.PdlExternalSkip, b.PDLSkipReason(&v))
			_, _, err := b.GridCap(&backend.Launch{Variant: &v}, false)
			require.ErrorContains(t, err, "fake:x launches its own grid")
		})
	}
}

// The example's path end to end on the fake driver: a real plugin
// (testdata/record.c) loaded by internal/plugin, set up by the backend's
// Setup and called by its Allreduce, writes what it got into its output,
// and the test reads it back as a kernel's result. One rank: a plugin is
// set up once per process, and here a process is one rank.
func TestRecordPluginOnFakeDriver(t *testing.T) {
	// A fresh file per run: a process loads a plugin once, and sets it up
	// once, by path.
	so := cc(t, filepath.Join(t.TempDir(), "record.so"), "testdata/record.c", "-I../../../plugin")
	p, err := plugin.Load(so)
	require.NoError(t, err)
	set := setWith(t, p.Variants...)
	bs, ws := setupWorld(t, set, 1, 1<<16)
	b, w := bs[0], ws[0]
	defer p.Teardown()

	const (
		fMark = iota
		fStream
		fInput
		fOutput
		fOffset
		fCount
		fFlags
		fParam0
		fVariant
		fDType
		fOp
		fRank
		fSize
		fLocalRank
		fDevice
		fBackend
		fInputBytes
		fStagingBytes
		fControlBytes
		fControlWasZero
		fSetups
		fReserved
		fWorld // input, staging, control per rank
	)
	out, err := b.Alloc(4096)
	require.NoError(t, err)
	defer b.Free(out)
	priv, err := b.Alloc(4096)
	require.NoError(t, err)
	defer b.Free(priv)
	for _, tc := range []struct {
		name    string
		variant string
		offset  uint64
		src     bool
		flags   uint64
		index   uint64
	}{
		{"registered", "record:reg", 512, false, 2, 1},
		{"staged by the plugin", "record:own", 256, true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := set.Lookup(tc.variant)
			require.NoError(t, err)
			l := launch(v, w, 0, tc.offset, 256, false)
			l.Args.Out = out
			if tc.src {
				l.Src = priv
			}
			require.NoError(t, b.Allreduce(l))
			raw := make([]byte, 8*(fWorld+3))
			require.NoError(t, b.Download(raw, out))
			rec := make([]uint64, len(raw)/8)
			for i := range rec {
				rec[i] = binary.LittleEndian.Uint64(raw[8*i:])
			}
			wantIn := uint64(w.Input[0]) + tc.offset
			if tc.src {
				wantIn = uint64(priv)
			}
			require.Equal(t, []uint64{
				0x5245434f5244, uint64(b.stream), wantIn, uint64(out), tc.offset, 256, tc.flags, 9, tc.index, 0, 0,
				0, 1, 0, 0, 0 /* ARTEST_BACKEND_CUDA */, 1 << 16, 1 << 16, 4096, 1, 1, 0,
				uint64(w.Input[0]), uint64(w.Staging[0]), uint64(w.Control[0]),
			}, rec)
		})
	}
	// Inside a capture (the graph modes) the call goes to the same stream
	// and the plugin is not set up again.
	v, err := set.Lookup("record:reg")
	require.NoError(t, err)
	l := launch(v, w, 0, 0, 256, false)
	l.Args.Out = out
	require.NoError(t, b.Upload(out, make([]byte, 8*fWorld)))
	g, err := b.Capture(func() error { return b.Allreduce(l) })
	require.NoError(t, err)
	require.NoError(t, g.Launch())
	require.NoError(t, g.Destroy())
	raw := make([]byte, 8*fWorld)
	require.NoError(t, b.Download(raw, out))
	require.Equal(t, uint64(0x5245434f5244), binary.LittleEndian.Uint64(raw[8*fMark:]))
	require.Equal(t, uint64(b.stream), binary.LittleEndian.Uint64(raw[8*fStream:]))
	require.Equal(t, uint64(1), binary.LittleEndian.Uint64(raw[8*fSetups:]))

	// An error status names the plugin and the call.
	l = launch(v, w, 0, 0, 8, false)
	err = b.Allreduce(l)
	require.EqualError(t, err, p.Owner()+": allreduce of record:reg returned status 5: record: the output is too small for the record")
}

// A variant that uses the device helpers (a trace id) gets, in every call,
// the device addresses of this rank's trace and diagnosis words in its
// SignalBlock and the launch's deadline; one that does not gets none.
func TestExternalCallDeviceFields(t *testing.T) {
	ext := newFakeExt("plugin fake (fake.so)", 256)
	traced := ext.variant("fake:traced", 1, 16, false)
	traced.ID = kernels.ExternalTraceID(traced.Name)
	set := setWith(t, traced, ext.variant("fake:plain", 1, 16, false))
	bs, ws := setupWorld(t, set, 2, 1<<16)
	for _, tc := range []struct {
		name   string
		device bool
	}{
		{"fake:traced", true},
		{"fake:plain", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := set.Lookup(tc.name)
			require.NoError(t, err)
			for r, b := range bs {
				l := launch(v, ws[r], r, 0, 1000, false)
				l.Args.WaitTimeoutNs = 1500000000
				before := len(ext.calls)
				require.NoError(t, b.Allreduce(l))
				c := ext.calls[before]
				if !tc.device {
					require.Nil(t, c.Device)
					continue
				}
				require.Equal(t, &kernels.ExternalDevice{
					Trace:     uintptr(ws[r].Signal[r]) + sigblock.OffTraceVariant,
					Diag:      uintptr(ws[r].Signal[r]) + sigblock.OffDiag,
					TimeoutNs: 1500000000, TraceID: traced.ID, Rank: uint32(r),
				}, c.Device)
			}
		})
	}
}

// The helpers' path end to end on the fake driver: a C plugin that uses
// artest_device.h (testdata/device.c) traces each call in the SignalBlock
// words the runner's trace check reads, and a wait past the deadline
// leaves the give-up record the runner's hang diagnosis reads.
func TestDevicePluginOnFakeDriver(t *testing.T) {
	so := cc(t, filepath.Join(t.TempDir(), "device.so"), "testdata/device.c", "-I../../../plugin")
	p, err := plugin.Load(so)
	require.NoError(t, err)
	set := setWith(t, p.Variants...)
	bs, ws := setupWorld(t, set, 1, 1<<16)
	b, w := bs[0], ws[0]
	defer p.Teardown()
	v, err := set.Lookup("device:traced")
	require.NoError(t, err)
	require.Equal(t, kernels.ExternalTraceID("device:traced"), v.ID)

	out, err := b.Alloc(4096)
	require.NoError(t, err)
	defer b.Free(out)
	const timeout = 50 * time.Millisecond
	call := func(wait uint32) []uint64 {
		l := launch(v, w, 0, 0, 256, false)
		l.Args.Out = out
		l.Args.Param0 = wait
		l.Args.WaitTimeoutNs = uint64(timeout.Nanoseconds())
		require.NoError(t, b.Allreduce(l))
		raw := make([]byte, 8*6)
		require.NoError(t, b.Download(raw, out))
		rec := make([]uint64, 6)
		for i := range rec {
			rec[i] = binary.LittleEndian.Uint64(raw[8*i:])
		}
		return rec
	}
	snap := func() sigblock.Snapshot {
		raw, err := b.ReadSignal(0)
		require.NoError(t, err)
		return sigblock.Snapshot(raw)
	}

	for i := uint32(1); i <= 2; i++ {
		rec := call(0)
		require.Equal(t, []uint64{2 /* REGISTERED */ | 4 /* DEVICE */, w.Signal[0] + sigblock.OffTraceVariant,
			w.Signal[0] + sigblock.OffDiag, uint64(timeout.Nanoseconds()), uint64(v.ID), 0}, rec)
		require.Equal(t, v.ID, snap().Word(sigblock.OffTraceVariant))
		require.Equal(t, i, snap().Word(sigblock.OffTraceCount))
	}
	call(1)
	g, ok := snap().GiveUp()
	require.True(t, ok, "the wait gave up and recorded it")
	require.Equal(t, uint32(2), snap().Word(sigblock.OffTraceCount), "a call that gave up traces nothing")
	require.Equal(t, sigblock.DiagKindPluginWait, g.Kind)
	require.Equal(t, v.ID, g.Variant)
	require.Equal(t, 1, g.Where)
	require.Equal(t, 0, g.Peer)
	require.Equal(t, timeout, g.Timeout)
	require.Equal(t, "end barrier", v.WaitPoints[g.Where])
}
