// Package cuda is the backend artest's users run: one GPU per rank, the
// variants' kernels loaded from the fatbin that `make kernels` builds, the
// world's buffers shared through CUDA IPC handles exchanged over the
// communicator, and NCCL as baseline and cross-check.
//
// Every method, ReadSignal included, must be called from the OS thread that
// opened the backend: the primary context is current there. The runner's
// watchdog runs on that thread too (Sync polls with a deadline), so no
// other thread ever needs the context.
package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/knobs"
	"github.com/artest/artest/internal/mps"
	"github.com/artest/artest/internal/nccl"
	"github.com/artest/artest/internal/topo"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/sigblock"
)

// Options are the flags the cuda backend takes.
type Options struct {
	Fatbin    string // path of the fatbin; "" searches
	NCCL      string // path of libnccl.so.2; "" searches
	ShareGPUs bool   // allow more local ranks than GPUs
	// TimeSlicing lets ranks share a GPU without MPS (mps.Decide).
	TimeSlicing bool
	// AllowMulticast is --allow-multicast: one input of the multicast
	// safety gate (multicast.go).
	AllowMulticast bool
	// NCCLMaxCTAs, when above 0, is set as NCCL_MAX_CTAS before the
	// communicator is made (bench --sm-budget): NCCL reads it once, at
	// ncclCommInitRank, so it holds for the whole run.
	NCCLMaxCTAs int
	// Knobs are the ARTEST_* settings the command line read (the SM
	// partition, the straggler's load, the witness's stamps, the fatbin).
	Knobs knobs.Settings
}

// FatbinName is the file `make kernels` writes beside the binary.
const FatbinName = "artest.fatbin"

// Backend is one rank's GPU.
type Backend struct {
	d       *cu.Driver
	dev     cu.Device
	ordinal int
	ctx     cu.Context
	cc      int // compute capability, e.g. 90
	name    string
	module  cu.Module
	fatbin  string
	// knobs are Options.Knobs.
	knobs knobs.Settings
	fns   map[string]cu.Function
	// sharedSet: the dynamic shared memory each kernel was opted in to.
	sharedSet map[string]int
	stream    cu.Stream
	side      cu.Stream // AllreduceConcurrent's second stream (concurrent.go), made on first use
	// marks are the progress marks (MarkProgress) the next Sync has not
	// seen passed, oldest first.
	marks []cu.Event

	nccl       *nccl.Lib
	ncclReason string // why nccl cannot run ("" when it can)
	ncclComm   nccl.Comm
	regs       ncclRegs    // nccl-reg's registrations (ncclreg.go)
	ncclMem    ncclRegions // the NCCL baselines' memory (ncclmem.go)

	world     *backend.World
	own       []cu.DevicePtr // signal, input, staging of this rank
	opened    []cu.DevicePtr // peers' mappings
	p2pReason string
	// sharedReason, when ranks share a GPU, names two of them: there is
	// no link between them for the link load to busy.
	sharedReason string
	// green, when ranks share this GPU, is this rank's green context:
	// greenSMs multiprocessors of its own (sms.go); smNote says how the
	// ranks share the SMs, for the report.
	green     cu.GreenCtx
	greenSMs  int
	smNote    string
	devices   []string
	topology  any
	rank      int
	localRank int

	ext externals // the External variants' set-up and last call (external.go)
	// progress is NotifyProgress's function, called by Sync at each step
	// of the stream it sees.
	progress func()

	mc mcState // the multicast gate and segment (multicast.go)

	// share is how this node's ranks use its GPUs; when some GPU serves
	// several ranks, caps holds each kernel's grid cap (share.go).
	share mps.Sharing
	sms   int // multiprocessors of this rank's GPU
	// ncclMaxCTAs is Options.NCCLMaxCTAs.
	ncclMaxCTAs int
	caps        map[capKey]gridCap

	stamp stampState   // the stress witness's stamps (stamp.go)
	load  loadState    // the straggler schedule's side load (straggle.go)
	ovl   overlapState // bench --overlap's compute load (overlap.go)

	// The device checker's verdicts (check.go), grown to the largest batch.
	checkBuf   cu.DevicePtr
	checkBytes int64
}

// Open picks this rank's GPU, makes its primary context current, loads the
// fatbin and NCCL. It returns an error wrapping backend.ErrNoDevice when the
// machine has no driver or GPU at all.
func Open(o Options, c comm.Comm) (*Backend, error) {
	d, err := cu.Load()
	if err != nil {
		// A driver that loads but fails to initialise is a broken GPU or
		// MPS server, not a machine without GPUs: never fall back to host.
		var ce *cu.Error
		if errors.As(err, &ce) && !errors.Is(err, cu.ErrNoDevice) {
			return nil, mps.ContextError(err, ce.Code, os.Getenv)
		}
		return nil, fmt.Errorf("%w: %v", backend.ErrNoDevice, err)
	}
	n, err := d.DeviceCount()
	if err != nil || n == 0 {
		return nil, fmt.Errorf("%w: cuDeviceGetCount found no GPU (%v)", backend.ErrNoDevice, err)
	}
	b := &Backend{d: d, ordinal: c.LocalRank() % n, fns: map[string]cu.Function{}, sharedSet: map[string]int{}, rank: c.Rank(), caps: map[capKey]gridCap{},
		ncclMaxCTAs: o.NCCLMaxCTAs, knobs: o.Knobs}
	if b.dev, err = d.DeviceGet(b.ordinal); err != nil {
		return nil, exitcode.Envf("GPU %d: %v", b.ordinal, err)
	}
	b.share, err = mps.Decide(mps.Request{
		Host: c.Hostname(), LocalRanks: c.LocalSize(), GPUs: n, Share: o.ShareGPUs, TimeSlicing: o.TimeSlicing,
		MPSClient: func() (bool, error) { return d.MPSClient(b.dev) },
	})
	if err != nil {
		return nil, err
	}
	if b.ctx, err = d.MakeCurrent(b.dev); err != nil {
		var ce *cu.Error
		if errors.As(err, &ce) {
			return nil, mps.ContextError(fmt.Errorf("GPU %d primary context: %w", b.ordinal, err), ce.Code, os.Getenv)
		}
		return nil, exitcode.Envf("GPU %d primary context: %v", b.ordinal, err)
	}
	if b.sms, err = d.DeviceAttribute(b.dev, cu.AttrMultiprocessorCount); err != nil {
		b.Close()
		return nil, exitcode.Envf("GPU %d: %v", b.ordinal, err)
	}
	major, minor, err := d.ComputeCapability(b.dev)
	if err != nil {
		return nil, exitcode.Envf("GPU %d: %v", b.ordinal, err)
	}
	b.cc = major*10 + minor
	// The multicast gate, decided before anything else can touch multicast.
	b.openMulticast(o.AllowMulticast)
	b.name, _ = d.DeviceName(b.dev)
	if err := b.loadFatbin(o.Fatbin); err != nil {
		b.Close()
		return nil, err
	}
	if b.share.Shared() {
		b.partitionSMs(c.LocalRank() / n)
	}
	if b.stream, err = b.newStream(); err != nil {
		b.Close()
		return nil, exitcode.Envf("create stream: %v", err)
	}
	b.loadNCCL(o.NCCL)
	return b, nil
}

func (b *Backend) loadFatbin(flagPath string) error {
	var tried []string
	candidates := []string{flagPath, b.knobs.Fatbin}
	if exe, err := os.Executable(); err == nil {
		candidates = append(candidates, filepath.Join(filepath.Dir(exe), FatbinName))
	}
	for i, p := range candidates {
		if p == "" {
			continue
		}
		tried = append(tried, p)
		img, err := os.ReadFile(p)
		if err != nil {
			if i < 2 { // named explicitly: no fallback
				return exitcode.Envf("kernel fatbin %s: %v", p, err)
			}
			continue
		}
		m, err := b.d.ModuleLoadData(img)
		if err != nil {
			if errors.Is(err, cu.ErrNoBinaryForGPU) {
				return exitcode.Envf("kernel fatbin %s has no code for this GPU (sm_%d): rebuild with make kernels", p, b.cc)
			}
			return exitcode.Envf("load kernel fatbin %s: %v", p, err)
		}
		b.module, b.fatbin = m, p
		return nil
	}
	return exitcode.Envf("kernel fatbin not found (tried %s): run make kernels, or pass --fatbin", strings.Join(tried, ", "))
}

func (b *Backend) loadNCCL(flagPath string) {
	path, tried, err := nccl.Find(flagPath)
	if err != nil {
		b.ncclReason = fmt.Sprintf("libnccl.so.2 not found (tried %d places: %s)", len(tried), strings.Join(tried, ", "))
		if len(b.ncclReason) > 200 {
			b.ncclReason = b.ncclReason[:200] + "...)"
		}
		return
	}
	lib, err := nccl.Load(path)
	if err != nil {
		b.ncclReason = err.Error()
		return
	}
	b.nccl = lib
}

func (b *Backend) Name() string { return "cuda" }

func (b *Backend) Info() backend.Info {
	v := map[string]string{"cuda_driver": cu.VersionString(b.d.Version()), "fatbin": b.fatbin, "multicast": b.multicastInfo()}
	if b.nccl != nil {
		v["nccl"] = b.nccl.Version().String()
		v["nccl_path"] = b.nccl.Path()
	}
	info := backend.Info{Versions: v, Devices: b.devices, Topology: b.topology}
	if b.share.Shared() {
		info.Sharing = b.share.String()
		if b.smNote != "" {
			info.Sharing += "; " + b.smNote
		}
	}
	return info
}

// fn finds a kernel in the fatbin, once.
func (b *Backend) fn(name string) (cu.Function, error) {
	if f, ok := b.fns[name]; ok {
		return f, nil
	}
	f, err := b.d.ModuleGetFunction(b.module, name)
	if err != nil {
		return 0, err
	}
	b.fns[name] = f
	return f, nil
}

func (b *Backend) SkipReason(v *kernels.Variant, graph bool) string {
	if v.External != nil {
		// A plugin reads its peers' memory through the IPC mappings.
		return b.p2pReason
	}
	if reason := b.multicastSkip(v); reason != "" {
		return reason
	}
	if v.Needs&kernels.NeedNCCL != 0 && b.ncclReason != "" {
		return "nccl: " + b.ncclReason
	}
	if v.Needs&kernels.NeedNCCL != 0 && !v.Custom() {
		if reason := b.ncclModeSkip(v); reason != "" {
			return reason
		}
	}
	if v.Needs&kernels.NeedSM90 != 0 && b.cc < 90 {
		return fmt.Sprintf("%s needs sm_90, GPU is sm_%d", v.Name, b.cc)
	}
	if v.Needs&kernels.NeedSM80 != 0 && b.cc < 80 {
		return fmt.Sprintf("%s needs sm_80, GPU is sm_%d", v.Name, b.cc)
	}
	if v.Needs&kernels.NeedP2P != 0 && b.p2pReason != "" {
		return b.p2pReason
	}
	if v.Custom() {
		if _, err := b.fn(v.CollKernelName(v.Collectives()[0], 0, 0)); err != nil {
			return fmt.Sprintf("the fatbin has no %s kernels (%s): rebuild with make kernels", v.Name, b.fatbin)
		}
	}
	return ""
}

// DefaultBlocks is backend.Backend's: the registry's grid for the message.
func (b *Backend) DefaultBlocks(l *backend.Launch) int { return backend.GridBlocks(l) }

// fatal marks errors after which the context is unusable.
type fatal struct{ error }

func (f fatal) Fatal() bool   { return true }
func (f fatal) Unwrap() error { return f.error }

func wrap(err error) error {
	if err != nil && cu.IsSticky(err) {
		return fatal{err}
	}
	return err
}

func (b *Backend) Alloc(n int64) (backend.Ptr, error) {
	p, err := b.d.MemAlloc(uint64(n))
	if err == nil {
		b.trackAlloc(p, n)
	}
	return backend.Ptr(p), wrap(err)
}

func (b *Backend) Free(p backend.Ptr) error {
	return errors.Join(b.untrackAlloc(cu.DevicePtr(p)), wrap(b.d.MemFree(cu.DevicePtr(p))))
}

func (b *Backend) Upload(dst backend.Ptr, src []byte) error {
	return wrap(b.d.MemcpyHtoD(cu.DevicePtr(dst), src))
}

func (b *Backend) Download(dst []byte, src backend.Ptr) error {
	return wrap(b.d.MemcpyDtoH(dst, cu.DevicePtr(src)))
}

func (b *Backend) Copy(dst, src backend.Ptr, n int64) error {
	return wrap(b.d.MemcpyDtoDAsync(cu.DevicePtr(dst), cu.DevicePtr(src), uint64(n), b.stream))
}

func (b *Backend) Allreduce(l *backend.Launch) error {
	a := &l.Args
	if l.Variant.External != nil {
		return b.allreduceExternal(l)
	}
	b.ext.last.Store(nil)
	if !l.Variant.Custom() {
		return b.ncclAllreduce(l)
	}
	if err := b.multicastArgs(l.Variant, a); err != nil {
		return err
	}
	if why := l.Unresolved(); why != "" {
		return errors.New(why)
	}
	threads := l.Threads
	f, shared, err := b.kernel(l)
	if err != nil {
		return err
	}
	backend.SetTags(l, b.world, threads)
	return wrap(b.launch(f, l, threads, shared))
}

// kernel finds l's kernel and the dynamic shared memory a launch at
// l.Threads needs, opted in on the function. The default cap is 48 KiB of
// static plus dynamic shared memory, so a kernel with any static shared
// memory fails at exactly 48 KiB dynamic (CUDA_ERROR_INVALID_VALUE: seen on
// H200 with oneshot-cpasync, 3 stages x 4 ranks x 256 threads x 16 B). The
// opt-in happens whenever dynamic memory is used, once per function and
// size: the attribute is the largest dynamic size it may be launched with.
func (b *Backend) kernel(l *backend.Launch) (cu.Function, int, error) {
	name := l.KernelName()
	f, err := b.fn(name)
	if err != nil {
		return 0, 0, fmt.Errorf("kernel %s: %w", name, err)
	}
	shared := 0
	if l.Variant.SharedBytes != nil {
		shared = l.Variant.SharedBytes(&l.Args, l.Threads)
	}
	if shared > 0 && b.sharedSet[name] < shared {
		if err := b.d.FuncSetAttribute(f, cu.FuncMaxDynamicSharedSizeBytes, shared); err != nil {
			return 0, 0, fmt.Errorf("kernel %s: %d bytes of shared memory: %w", name, shared, err)
		}
		b.sharedSet[name] = shared
	}
	return f, shared, nil
}

func (b *Backend) ncclAllreduce(l *backend.Launch) error {
	if b.ncclComm == 0 {
		return fmt.Errorf("nccl: %s", b.ncclReason)
	}
	dt, err := nccl.DataTypeOf(l.DType)
	if err != nil {
		return err
	}
	op, err := nccl.RedOpOf(l.Op)
	if err != nil {
		return err
	}
	a := &l.Args
	send, recv := cu.DevicePtr(a.PeerIn[a.Rank]), cu.DevicePtr(a.Out)
	if err := b.ncclBuffers(l.Variant, send, recv); err != nil {
		return err
	}
	// Count is the full buffer; NCCL takes the count of a rank's chunked
	// side (a reduce-scatter's recvcount, an all-gather's sendcount). In
	// place the runner's pointers are NCCL's offsets
	// (reference.Coll.InPlaceInAt).
	coll := a.Coll()
	if coll.Desc().NCCL == "" {
		return fmt.Errorf("nccl: NCCL has no %s", coll)
	}
	n, count := int(a.NRanks), int64(a.Count)
	return b.nccl.Collective(coll.Desc().NCCL, send, recv, uint64(min(coll.InCount(count, n), coll.OutCount(count, n))), dt, op, b.ncclComm, b.stream)
}

type event struct {
	b *Backend
	e cu.Event
}

func (e *event) Since(earlier backend.Event) (time.Duration, error) {
	o, ok := earlier.(*event)
	if !ok {
		return 0, errors.New("cuda event from another backend")
	}
	return e.b.d.EventElapsed(o.e, e.e)
}

func (e *event) Destroy() error { return e.b.d.EventDestroy(e.e) }

func (b *Backend) Record() (backend.Event, error) {
	ev, err := b.d.EventCreate(0)
	if err != nil {
		return nil, wrap(err)
	}
	if err := b.d.EventRecord(ev, b.stream); err != nil {
		_ = b.d.EventDestroy(ev)
		return nil, wrap(err)
	}
	return &event{b: b, e: ev}, nil
}

type graph struct {
	b    *Backend
	exec cu.GraphExec
}

func (g *graph) Launch() error  { return wrap(g.b.d.GraphLaunch(g.exec, g.b.stream)) }
func (g *graph) Destroy() error { return g.b.d.GraphExecDestroy(g.exec) }

// Capture records what fn enqueues on the stream into a CUDA graph.
func (b *Backend) Capture(fn func() error) (backend.Graph, error) {
	if err := b.d.StreamBeginCapture(b.stream, cu.CaptureThreadLocal); err != nil {
		return nil, wrap(err)
	}
	ferr := fn()
	g, err := b.d.StreamEndCapture(b.stream)
	if ferr != nil {
		if err == nil {
			_ = b.d.GraphDestroy(g)
		}
		return nil, ferr
	}
	if err != nil {
		return nil, wrap(err)
	}
	defer b.d.GraphDestroy(g)
	exec, err := b.d.GraphInstantiate(g, 0)
	if err != nil {
		return nil, wrap(err)
	}
	return &graph{b: b, exec: exec}, nil
}

// Sync polls the stream until it is idle or the deadline passes; polling,
// not cuStreamSynchronize, so that a hung kernel cannot hang the host.
// Every progress mark (MarkProgress) found passed moves the deadline to
// timeout from then.
func (b *Backend) Sync(timeout time.Duration) error {
	defer b.dropMarks()
	deadline := time.Now().Add(timeout)
	pause := time.Microsecond
	for {
		done, err := b.streamsIdle()
		if err != nil {
			return wrap(err)
		}
		if done {
			if b.progress != nil {
				b.progress()
			}
			return nil
		}
		passed, err := b.passMarks()
		if err != nil {
			return wrap(err)
		}
		if passed {
			deadline = time.Now().Add(timeout)
			if b.progress != nil {
				b.progress()
			}
		}
		if time.Now().After(deadline) {
			return backend.ErrTimeout
		}
		time.Sleep(pause)
		pause = min(pause*2, 200*time.Microsecond)
	}
}

// NotifyProgress is backend.ProgressNotifier's: Sync calls f each time it
// sees the stream pass a progress mark, and when the stream is done.
func (b *Backend) NotifyProgress(f func()) { b.progress = f }

var _ backend.ProgressNotifier = (*Backend)(nil)

// MarkProgress records an event without timing after the work enqueued so
// far (backend.ProgressMarker).
func (b *Backend) MarkProgress() error {
	ev, err := b.d.EventCreate(cu.EventDisableTiming)
	if err != nil {
		return fmt.Errorf("progress mark: %w", wrap(err))
	}
	if err := b.d.EventRecord(ev, b.stream); err != nil {
		_ = b.d.EventDestroy(ev)
		return fmt.Errorf("progress mark: %w", wrap(err))
	}
	b.marks = append(b.marks, ev)
	return nil
}

// passMarks forgets the marks the stream has passed, oldest first, and
// reports whether there were any.
func (b *Backend) passMarks() (bool, error) {
	n := 0
	for ; n < len(b.marks); n++ {
		done, err := b.d.EventQuery(b.marks[n])
		if err != nil {
			return false, err
		}
		if !done {
			break
		}
		_ = b.d.EventDestroy(b.marks[n])
	}
	b.marks = b.marks[n:]
	return n > 0, nil
}

// dropMarks forgets every mark; an event the stream has not passed yet is
// released by the driver when it completes.
func (b *Backend) dropMarks() {
	for _, ev := range b.marks {
		_ = b.d.EventDestroy(ev)
	}
	b.marks = nil
}

// ReadSignal copies rank r's SignalBlock through this rank's mapping of it.
// The copy goes on the legacy default stream, which does not wait for the
// backend's non-blocking stream, so it works while a kernel spins.
func (b *Backend) ReadSignal(r int) ([]byte, error) {
	if b.world == nil || r < 0 || r >= len(b.world.Signal) {
		return nil, fmt.Errorf("no SignalBlock for rank %d", r)
	}
	out := make([]byte, sigblock.Size)
	if err := b.d.MemcpyDtoH(out, cu.DevicePtr(b.world.Signal[r])); err != nil {
		return nil, err
	}
	return out, nil
}

const handleBytes = 64

// The handle exchange at set-up: one record per rank of the IPC handles of
// its SignalBlock, input, staging and control region (the last all zeros
// when no External variant needs one), its control region's size and its
// device identity.
const (
	nShared      = 4
	offCtlBytes  = nShared * handleBytes
	offIdent     = offCtlBytes + 8
	identBytes   = 64
	setupRecord  = offIdent + identBytes
	sharedSignal = 0
	sharedInput  = 1
	sharedStage  = 2
	sharedCtl    = 3
)

// Setup allocates this rank's SignalBlock, input and staging buffers (and
// the control region of the External variants, when any needs one),
// exchanges their IPC handles, opens every peer's, checks P2P between every
// pair of GPUs, creates the NCCL communicator and sets up every plugin.
func (b *Backend) Setup(c comm.Comm, capacity int64, ext backend.ExternalSet) (*backend.World, error) {
	// Every step up to the first collective may fail on one rank only; the
	// ranks agree on it first, so that every rank stops there instead of
	// the others waiting in the handle exchange.
	b.ext.set = ext
	ctlBytes := ext.ExternalControlBytes()
	handles, prepErr := b.allocShared(c, capacity, ctlBytes)
	if err := comm.Agree(c, prepErr); err != nil {
		return nil, err
	}
	me := make([]byte, setupRecord)
	copy(me, handles)
	binary.LittleEndian.PutUint64(me[offCtlBytes:], uint64(ctlBytes))
	bus, _ := b.d.DevicePCIBusID(b.dev)
	ident := fmt.Sprintf("%d|%s|%s", b.ordinal, bus, b.name)
	copy(me[offIdent:offIdent+identBytes], ident)
	// Exchange handles and device identities in one collective.
	all, err := c.Allgather(me)
	if err != nil {
		return nil, fmt.Errorf("exchange IPC handles: %w", err)
	}
	if err := sameControlBytes(all, ctlBytes); err != nil {
		return nil, err
	}
	w := &backend.World{Rank: c.Rank(), Size: c.Size(), Capacity: capacity, ControlBytes: ctlBytes}
	ordinals := make([]int, c.Size())
	var openErr error
	for r := 0; r < c.Size(); r++ {
		blob := all[r*setupRecord : (r+1)*setupRecord]
		id := strings.TrimRight(string(blob[offIdent:offIdent+identBytes]), "\x00")
		parts := strings.SplitN(id, "|", 3)
		fmt.Sscan(parts[0], &ordinals[r])
		if len(parts) == 3 {
			b.devices = append(b.devices, fmt.Sprintf("rank %d: GPU %s %s (bus %s)", r, parts[0], parts[2], parts[1]))
		}
		var ptrs [nShared]cu.DevicePtr
		for i := 0; i < nShared; i++ {
			if i == sharedCtl && ctlBytes == 0 {
				continue
			}
			if r == c.Rank() {
				ptrs[i] = b.own[i]
				continue
			}
			var h cu.IPCMemHandle
			copy(h[:], blob[i*handleBytes:(i+1)*handleBytes])
			p, err := b.d.IpcOpenMemHandle(h)
			if err != nil && openErr == nil {
				openErr = exitcode.Envf("open rank %d IPC handle %d (%s): %v", r, i, sharedNames[i], err)
			}
			if err == nil {
				b.opened = append(b.opened, p)
			}
			ptrs[i] = p
		}
		w.Signal = append(w.Signal, backend.Ptr(ptrs[sharedSignal]))
		w.Input = append(w.Input, backend.Ptr(ptrs[sharedInput]))
		w.Staging = append(w.Staging, backend.Ptr(ptrs[sharedStage]))
		if ctlBytes > 0 {
			w.Control = append(w.Control, backend.Ptr(ptrs[sharedCtl]))
		}
	}
	// Opening may fail on some ranks only, and collectives follow.
	if err := comm.Agree(c, openErr); err != nil {
		return nil, err
	}
	b.p2pReason = b.checkP2P(ordinals)
	b.sharedReason = sharedGPUReason(ordinals)
	if err := b.setupMulticast(c, capacity, w, ordinals); err != nil {
		return nil, err
	}
	if err := b.setupNCCL(c, ordinals); err != nil {
		return nil, err
	}
	if c.Rank() == 0 {
		if t, err := topo.Discover(); err == nil {
			b.topology = t
		} else {
			b.topology = map[string]string{"error": err.Error()}
		}
	}
	b.world = w
	b.localRank = c.LocalRank()
	if err := b.setupExternals(c); err != nil {
		return nil, err
	}
	return w, nil
}

// sharedNames name the shared buffers in messages, by index.
var sharedNames = [nShared]string{"SignalBlock", "input", "staging", "control region"}

// sameControlBytes checks that every rank sized its control region alike
// (every rank must load the same plugins): a rank that did not would hand
// its plugin a peer's region of another size.
func sameControlBytes(all []byte, mine int64) error {
	for r := 0; (r+1)*setupRecord <= len(all); r++ {
		theirs := int64(binary.LittleEndian.Uint64(all[r*setupRecord+offCtlBytes:]))
		if theirs != mine {
			return exitcode.Usagef("rank %d has %d bytes of plugin control region, this rank %d: every rank must load the same --plugin libraries", r, theirs, mine)
		}
	}
	return nil
}

// allocShared allocates, clears and exports this rank's SignalBlock,
// input and staging buffers and, when ctlBytes > 0, the control region of
// the External variants (zeroed here, once: artest never touches it again),
// and returns their IPC handles, nShared of them (a missing control
// region's all zeros).
func (b *Backend) allocShared(c comm.Comm, capacity, ctlBytes int64) ([]byte, error) {
	need := uint64(2*capacity + sigblock.Size + ctlBytes)
	free, total, err := b.d.MemGetInfo()
	if err == nil && need > free {
		return nil, exitcode.Envf("GPU %d has %d MiB free of %d MiB; the cases need %d MiB of shared buffers: choose smaller --size", b.ordinal, free>>20, total>>20, need>>20)
	}
	sizes := []int64{sigblock.Size, capacity, capacity}
	if ctlBytes > 0 {
		sizes = append(sizes, ctlBytes)
	}
	handles := make([]byte, 0, nShared*handleBytes)
	for i, n := range sizes {
		p, err := b.d.MemAlloc(uint64(n))
		if err != nil {
			return nil, exitcode.Envf("allocate shared %s (%d bytes): %v", sharedNames[i], n, err)
		}
		b.own = append(b.own, p)
		if err := b.d.MemsetD8Async(p, 0, uint64(n), b.stream); err != nil {
			return nil, fmt.Errorf("clear shared %s: %w", sharedNames[i], err)
		}
		h, err := b.d.IpcGetMemHandle(p)
		if err != nil {
			return nil, exitcode.Envf("IPC handle of shared %s: %v", sharedNames[i], err)
		}
		handles = append(handles, h[:]...)
	}
	if err := b.d.StreamSynchronize(b.stream); err != nil {
		return nil, err
	}
	hdr := make([]byte, 16)
	binary.LittleEndian.PutUint32(hdr[0:], sigblock.Magic)
	binary.LittleEndian.PutUint32(hdr[4:], sigblock.Version)
	binary.LittleEndian.PutUint32(hdr[8:], uint32(c.Rank()))
	binary.LittleEndian.PutUint32(hdr[12:], uint32(c.Size()))
	if err := b.d.MemcpyHtoD(b.own[0], hdr); err != nil {
		return nil, err
	}
	return handles, nil
}

// checkP2P says why some pair of GPUs cannot reach each other ("" if all can).
// Every rank computes the same answer from the same gathered ordinals.
// sharedGPUReason names two ranks that share a GPU ("" when none do).
func sharedGPUReason(ordinals []int) string {
	seen := map[int]int{}
	for r, o := range ordinals {
		if first, dup := seen[o]; dup {
			return fmt.Sprintf("ranks %d and %d share GPU %d", first, r, o)
		}
		seen[o] = r
	}
	return ""
}

func (b *Backend) checkP2P(ordinals []int) string {
	for i, oi := range ordinals {
		for j, oj := range ordinals {
			if i >= j || oi == oj {
				continue
			}
			di, err1 := b.d.DeviceGet(oi)
			dj, err2 := b.d.DeviceGet(oj)
			if err1 != nil || err2 != nil {
				return fmt.Sprintf("cannot query GPUs %d and %d", oi, oj)
			}
			ok, err := b.d.CanAccessPeer(di, dj)
			if err != nil || !ok {
				return fmt.Sprintf("no P2P access between GPU %d (rank %d) and GPU %d (rank %d)", oi, i, oj, j)
			}
		}
	}
	return ""
}

// setupNCCL creates the communicator when every rank loaded NCCL; ranks
// agree first, since ncclCommInitRank is collective.
func (b *Backend) setupNCCL(c comm.Comm, ordinals []int) error {
	// NCCL refuses two ranks on one GPU (--share-gpus); every rank sees the
	// same ordinals, so every rank skips it alike.
	if shared := sharedGPUReason(ordinals); shared != "" {
		if b.ncclReason == "" {
			b.ncclReason = "NCCL cannot run two ranks on one GPU (" + shared + ")"
		}
		return nil
	}
	missing := ""
	if b.nccl == nil {
		missing = "could not load libnccl.so.2"
	}
	agreed, err := comm.AgreeReason(c, missing)
	if err != nil {
		return err
	}
	if agreed != "" {
		if b.ncclReason == "" {
			b.ncclReason = agreed
		}
		return nil
	}
	// Ranks may see different environments: agree, so that every rank
	// skips NCCL alike when one cannot keep to the budget.
	ctaReason := setNCCLMaxCTAs(b.ncclMaxCTAs, os.Getenv, os.Setenv)
	if ctaReason != "" {
		ctaReason = fmt.Sprintf("rank %d: %s", c.Rank(), ctaReason)
	}
	if agreed, err := comm.AgreeReason(c, ctaReason); err != nil {
		return err
	} else if agreed != "" {
		if b.ncclReason == "" {
			b.ncclReason = agreed
		}
		return nil
	}
	var id nccl.UniqueID
	if c.Rank() == 0 {
		if id, err = b.nccl.GetUniqueID(); err != nil {
			return exitcode.Envf("ncclGetUniqueId: %v", err)
		}
	}
	if err := c.Bcast(id[:], 0); err != nil {
		return err
	}
	if b.ncclComm, err = b.nccl.CommInitRank(c.Size(), id, c.Rank()); err != nil {
		return exitcode.Envf("ncclCommInitRank: %v", err)
	}
	return nil
}

// setNCCLMaxCTAs sets NCCL_MAX_CTAS to n when n is above 0 (bench
// --sm-budget). A value already in the environment that differs is left
// as it is, and the reason NCCL cannot run within the budget is returned.
func setNCCLMaxCTAs(n int, getenv func(string) string, setenv func(string, string) error) string {
	if n <= 0 {
		return ""
	}
	want := strconv.Itoa(n)
	if have := getenv("NCCL_MAX_CTAS"); have != "" && have != want {
		return fmt.Sprintf("NCCL_MAX_CTAS=%s is set, but --sm-budget %d needs NCCL_MAX_CTAS=%d", have, n, n)
	}
	if err := setenv("NCCL_MAX_CTAS", want); err != nil {
		return fmt.Sprintf("set NCCL_MAX_CTAS=%d: %v", n, err)
	}
	return ""
}

// SMs is backend.SMCounter's: this rank's GPU's multiprocessors.
func (b *Backend) SMs() int { return b.sms }

// Close releases everything in reverse order of creation.
func (b *Backend) Close() error {
	var errs []error
	if b.ncclComm != 0 {
		if b.stream != 0 {
			_ = b.Sync(5 * time.Second) // no registered buffer may still be in use
		}
		errs = append(errs, b.deregisterAll())
		errs = append(errs, b.closeRegions())
		errs = append(errs, b.nccl.CommDestroy(b.ncclComm))
	}
	if b.stream != 0 {
		_ = b.Sync(5 * time.Second)
	}
	errs = append(errs, b.closeMulticast())
	for _, p := range b.opened {
		errs = append(errs, b.d.IpcCloseMemHandle(p))
	}
	for _, p := range b.own {
		errs = append(errs, b.d.MemFree(p))
	}
	if b.checkBuf != 0 {
		errs = append(errs, b.d.MemFree(b.checkBuf))
	}
	errs = append(errs, b.closeLoad()...)
	errs = append(errs, b.closeStamps()...)
	errs = append(errs, b.closeOverlap()...)
	if b.stream != 0 {
		errs = append(errs, b.d.StreamDestroy(b.stream))
	}
	if b.side != 0 {
		errs = append(errs, b.d.StreamDestroy(b.side))
	}
	if b.module != 0 {
		errs = append(errs, b.d.ModuleUnload(b.module))
	}
	if b.green != 0 {
		errs = append(errs, b.d.GreenCtxDestroy(b.green))
	}
	errs = append(errs, b.d.PrimaryCtxRelease(b.dev))
	return errors.Join(errs...)
}

var _ backend.Backend = (*Backend)(nil)
