// Package host is the backend that runs anywhere: each rank's "device
// memory" is a shared-memory segment whose name is exchanged over the
// communicator exactly like a CUDA IPC handle, a goroutine plays the stream,
// and the kernels are the variants' Go models (kernels/<variant>/host.go),
// run by kernels/hostmodel.
package host

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/sigblock"
)

// Synthetic addresses: region i lives at (i+1)<<regionShift, so any address
// resolves to its region with a shift, and 0 is never valid.
const (
	regionShift = 40
	offsetMask  = 1<<regionShift - 1
	// handleBytes is the fixed size of an exchanged segment name.
	handleBytes = 256
	// pageAlign keeps the parts of a segment on their own pages.
	pageAlign = 4096
)

type region struct {
	mem       []byte
	mapped    bool // munmap on Close
	anon      bool // private anonymous mapping (Alloc): munmap on Free and Close
	multicast bool // the multicast window (multicast.go): no bytes of its own
}

// Backend is the host backend for one rank.
type Backend struct {
	dir string

	mu      sync.Mutex
	regions []*region // index i holds address (i+1)<<regionShift; nil when freed

	stream  *stream
	stopped atomic.Bool
	// producer is the --pdl producer enqueued last and not yet waited
	// for (pdl.go); only stream operations touch it.
	producer *hostmodel.Producer
	// stamps are the stress witness's slots (Stamp), written by the
	// stream's goroutine.
	stampMu sync.Mutex
	stamps  []int64
	// spinners are the straggler's load goroutines (straggle.go).
	spinners sync.WaitGroup
	// overlapping are bench --overlap's load goroutines and overlapBlocks
	// how many each load starts (overlap.go).
	overlapping   sync.WaitGroup
	overlapBlocks int

	world   *backend.World
	signals []sigblock.Block
	mcBase  uint64  // the multicast window's address (multicast.go)
	side    *stream // AllreduceConcurrent's second stream (concurrent.go), made on first use
	ext     externals
}

// New returns a host backend whose segments live in dir (usually /dev/shm).
func New(dir string) *Backend {
	b := &Backend{dir: dir}
	b.stream = newStream()
	return b
}

func (b *Backend) Name() string { return "host" }

func (b *Backend) Info() backend.Info {
	return backend.Info{
		Versions: map[string]string{"go": runtime.Version(), "multicast": multicastInfo},
		Devices:  []string{fmt.Sprintf("host: %d CPUs, %s/%s", runtime.NumCPU(), runtime.GOOS, runtime.GOARCH)},
	}
}

// SkipReason: the host backend models every custom variant that has a host
// model, graphs included; NCCL needs a GPU.
// DefaultBlocks is backend.Backend's: the goroutines that play the blocks,
// kernels.Variant.HostBlocks, or where that is 0 (the grid is part of the
// protocol, as the ring's one block per lane) the same grid as on cuda.
// The launch's threads stay what cuda would launch: they are part of the
// launch tag, though the host models have no threads.
func (b *Backend) DefaultBlocks(l *backend.Launch) int {
	if l.Variant.HostBlocks > 0 {
		return l.Variant.HostBlocks
	}
	return backend.GridBlocks(l)
}

func (b *Backend) SkipReason(v *kernels.Variant, graph bool) string {
	if v.External != nil {
		return ""
	}
	if v.Needs&kernels.NeedCUDA != 0 || !v.Custom() {
		return fmt.Sprintf("%s needs the cuda backend (a GPU and libnccl)", v.Name)
	}
	if v.Host == nil {
		return fmt.Sprintf("%s has no host model", v.Name)
	}
	return ""
}

func (b *Backend) addRegion(r *region) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.regions {
		if x == nil {
			b.regions[i] = r
			return uint64(i+1) << regionShift
		}
	}
	b.regions = append(b.regions, r)
	return uint64(len(b.regions)) << regionShift
}

// Bytes resolves an address; it panics on an address nothing maps, which the
// kernel models turn into an error like CUDA's illegal address.
func (b *Backend) Bytes(p uint64, n int64) []byte {
	b.mu.Lock()
	idx := int(p>>regionShift) - 1
	var r *region
	if idx >= 0 && idx < len(b.regions) {
		r = b.regions[idx]
	}
	b.mu.Unlock()
	off := int64(p & offsetMask)
	if r == nil || n < 0 || off+n > int64(len(r.mem)) {
		panic(fmt.Sprintf("illegal address %#x (+%d bytes)", p, n))
	}
	return r.mem[off : off+n : off+n]
}

func (b *Backend) Alloc(n int64) (backend.Ptr, error) {
	if n <= 0 {
		return 0, fmt.Errorf("host alloc of %d bytes", n)
	}
	if n > offsetMask {
		return 0, fmt.Errorf("host alloc of %d bytes exceeds the address scheme", n)
	}
	// Outside the Go heap, so that an External variant (C code) may be
	// given its address.
	mem, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS)
	if err != nil {
		return 0, fmt.Errorf("host alloc of %d bytes: %w", n, err)
	}
	return b.addRegion(&region{mem: mem, anon: true}), nil
}

func (b *Backend) Free(p backend.Ptr) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	idx := int(p>>regionShift) - 1
	if p&offsetMask != 0 || idx < 0 || idx >= len(b.regions) || b.regions[idx] == nil {
		return fmt.Errorf("host free of %#x: not an allocation", p)
	}
	if b.regions[idx].mapped || b.regions[idx].multicast {
		return fmt.Errorf("host free of %#x: a shared segment", p)
	}
	if b.regions[idx].anon {
		if err := syscall.Munmap(b.regions[idx].mem); err != nil {
			return fmt.Errorf("host free of %#x: %w", p, err)
		}
	}
	b.regions[idx] = nil
	return nil
}

func (b *Backend) Upload(dst backend.Ptr, src []byte) error {
	if !b.stream.idle() {
		return errors.New("host upload while the stream is busy (call Sync first)")
	}
	return catch(func() { copy(b.Bytes(dst, int64(len(src))), src) })
}

func (b *Backend) Download(dst []byte, src backend.Ptr) error {
	if !b.stream.idle() {
		return errors.New("host download while the stream is busy (call Sync first)")
	}
	return catch(func() { copy(dst, b.Bytes(src, int64(len(dst)))) })
}

// catch turns a panic from Bytes into an error.
func catch(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	fn()
	return nil
}

func (b *Backend) Copy(dst, src backend.Ptr, n int64) error {
	return b.enqueue(func() error {
		return catch(func() { copy(b.Bytes(dst, n), b.Bytes(src, n)) })
	})
}

func (b *Backend) Allreduce(l *backend.Launch) error {
	if l.Variant.External != nil {
		return b.allreduceExternal(l)
	}
	if why := l.Unresolved(); why != "" {
		return errors.New(why)
	}
	launch := &hostmodel.Launch{
		Variant: l.Variant, DType: l.DType, Op: l.Op, Blocks: l.Blocks,
		Stop: b.stopped.Load,
	}
	backend.SetTags(l, b.world, l.Threads)
	args := l.Args // the launch owns a copy, as a kernel's parameters are copied at launch
	if l.Variant.Needs&kernels.NeedMulticast != 0 {
		kernels.SetMulticastDelta(&args, b.multicastDelta())
	}
	launch.Args = &args
	return b.enqueueLaunch(launch, l.PDL)
}

type event struct{ at time.Time }

func (e *event) Since(earlier backend.Event) (time.Duration, error) {
	o, ok := earlier.(*event)
	if !ok || o.at.IsZero() || e.at.IsZero() {
		return 0, errors.New("host event not recorded")
	}
	return e.at.Sub(o.at), nil
}

func (e *event) Destroy() error { return nil }

func (b *Backend) Record() (backend.Event, error) {
	e := &event{}
	return e, b.enqueue(func() error { e.at = time.Now(); return nil })
}

type graph struct {
	s   *stream
	ops []func() error
}

func (g *graph) Launch() error {
	for _, op := range g.ops {
		if err := g.s.enqueue(op); err != nil {
			return err
		}
	}
	return nil
}

func (g *graph) Destroy() error { g.ops = nil; return nil }

// Capture records the work fn enqueues, as stream capture does on CUDA; the
// graph replays the same operations (same addresses, same arguments).
func (b *Backend) Capture(fn func() error) (backend.Graph, error) {
	ops, err := b.stream.capture(fn)
	if err != nil {
		return nil, err
	}
	return &graph{s: b.stream, ops: ops}, nil
}

func (b *Backend) Sync(timeout time.Duration) error { return b.syncStreams(timeout) }

// PeekSignal is ReadSignal (backend.SignalPeeker): atomic loads of shared
// memory, safe from any goroutine.
func (b *Backend) PeekSignal(r int) ([]byte, error) { return b.ReadSignal(r) }

var _ backend.SignalPeeker = (*Backend)(nil)

// ReadSignal copies rank r's SignalBlock word by word with atomic loads.
func (b *Backend) ReadSignal(r int) ([]byte, error) {
	if b.world == nil || r < 0 || r >= len(b.signals) {
		return nil, fmt.Errorf("no SignalBlock for rank %d", r)
	}
	s := b.signals[r]
	out := make([]byte, sigblock.Size)
	for off := 0; off < sigblock.Size; off += 4 {
		v := s.Load(off)
		out[off], out[off+1], out[off+2], out[off+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	return out, nil
}

// Segment layout: SignalBlock, the control region of External variants
// (when any is registered), the input buffer, then staging, each page
// aligned. A new segment reads as zeros, so the control region starts
// zeroed.
func alignUp(n, a int64) int64 { return (n + a - 1) / a * a }

// Setup creates this rank's segment, exchanges its name like an IPC handle,
// maps every peer's and removes the names once everyone holds a mapping, so
// a crash leaves nothing behind in the directory.
func (b *Backend) Setup(c comm.Comm, capacity int64, ext backend.ExternalSet) (*backend.World, error) {
	if st, err := os.Stat(b.dir); err != nil {
		return nil, exitcode.Usagef("shared-memory directory %s does not exist (pass --shm-dir DIR)", b.dir)
	} else if !st.IsDir() {
		return nil, exitcode.Usagef("--shm-dir %s is not a directory (pass --shm-dir DIR)", b.dir)
	}
	job := make([]byte, 8)
	if c.Rank() == 0 {
		if _, err := rand.Read(job); err != nil {
			return nil, fmt.Errorf("job id: %w", err)
		}
	}
	if err := c.Bcast(job, 0); err != nil {
		return nil, fmt.Errorf("broadcast job id: %w", err)
	}
	sigBytes := alignUp(sigblock.Size, pageAlign)
	capBytes := alignUp(capacity, pageAlign)
	b.ext.set = ext
	ctlBytes := alignUp(ext.ExternalControlBytes(), pageAlign)
	total := sigBytes + ctlBytes + 2*capBytes
	name := filepath.Join(b.dir, fmt.Sprintf("artest-%s-r%d", hex.EncodeToString(job), c.Rank()))
	if len(name) >= handleBytes {
		return nil, exitcode.Usagef("shared-memory path %s is longer than %d bytes", name, handleBytes-1)
	}
	mine, err := createSegment(name, total)
	// Every rank learns whether every other rank got its segment before
	// anyone waits on a peer's.
	handle := make([]byte, handleBytes)
	if err == nil {
		copy(handle, name)
	}
	all, gerr := c.Allgather(handle)
	if err != nil {
		return nil, err
	}
	if gerr != nil {
		os.Remove(name)
		return nil, fmt.Errorf("exchange segment names: %w", gerr)
	}
	w := &backend.World{Rank: c.Rank(), Size: c.Size(), Capacity: capBytes, ControlBytes: ctlBytes}
	b.signals = make([]sigblock.Block, c.Size())
	var openErr error
	for r := 0; r < c.Size(); r++ {
		h := all[r*handleBytes : (r+1)*handleBytes]
		peerName := strings.TrimRight(string(h), "\x00")
		var mem []byte
		if r == c.Rank() {
			mem = mine
		} else if peerName == "" {
			openErr = exitcode.Envf("rank %d could not create its shared-memory segment", r)
			break
		} else if mem, err = openSegment(peerName, total); err != nil {
			openErr = fmt.Errorf("open rank %d segment: %w", r, err)
			break
		}
		base := b.addRegion(&region{mem: mem, mapped: true})
		w.Signal = append(w.Signal, base)
		if ctlBytes > 0 {
			w.Control = append(w.Control, base+uint64(sigBytes))
		}
		w.Input = append(w.Input, base+uint64(sigBytes+ctlBytes))
		w.Staging = append(w.Staging, base+uint64(sigBytes+ctlBytes+capBytes))
		b.signals[r] = sigblock.Block(mem[:sigblock.Size])
	}
	// Everyone has mapped (or failed, and every rank learns who did): the
	// names can go.
	aerr := comm.Agree(c, openErr)
	os.Remove(name)
	if aerr != nil {
		return nil, aerr
	}
	b.signals[c.Rank()].Init(c.Rank(), c.Size())
	if err := c.Barrier(); err != nil {
		return nil, fmt.Errorf("barrier after signal init: %w", err)
	}
	b.mcBase = b.addRegion(&region{multicast: true})
	b.world = w
	if err := b.setupExternals(c); err != nil {
		return nil, err
	}
	return w, nil
}

func createSegment(name string, size int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, exitcode.Envf("create shared-memory segment: %v", err)
	}
	defer f.Close()
	// Reserve the pages now: a full tmpfs then fails here with ENOSPC
	// instead of killing the process with SIGBUS on first touch.
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		os.Remove(name)
		if errors.Is(err, syscall.ENOSPC) {
			return nil, exitcode.Envf("no space for a %d-byte shared-memory segment in %s (use --shm-dir or smaller sizes)", size, filepath.Dir(name))
		}
		if err := f.Truncate(size); err != nil {
			return nil, exitcode.Envf("size shared-memory segment %s: %v", name, err)
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		os.Remove(name)
		return nil, exitcode.Envf("map shared-memory segment %s: %v", name, err)
	}
	return mem, nil
}

func openSegment(name string, size int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() != size {
		return nil, fmt.Errorf("segment %s has %d bytes, want %d (ranks started with different sizes?)", name, st.Size(), size)
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

// Close stops waiting kernels, drains the stream and unmaps everything.
func (b *Backend) Close() error {
	b.stopped.Store(true)
	if err := b.stream.sync(5 * time.Second); err != nil && errors.Is(err, backend.ErrTimeout) {
		// A kernel goroutine still runs and may touch the segments:
		// leave them mapped rather than crash it.
		return fmt.Errorf("host stream did not drain on close: %w", err)
	}
	if err := b.closeSide(); err != nil {
		return err
	}
	b.stream.close()
	b.mu.Lock()
	defer b.mu.Unlock()
	var first error
	for i, r := range b.regions {
		if r != nil && (r.mapped || r.anon) {
			if err := syscall.Munmap(r.mem); err != nil && first == nil {
				first = err
			}
		}
		b.regions[i] = nil
	}
	return first
}
