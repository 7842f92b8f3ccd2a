// Package multicast sets up the memory the multimem variant runs on: on
// every rank an allocation made with the CUDA virtual memory API
// (cuMemCreate, exportable as a POSIX file descriptor), bound to one NVLS
// multicast object that rank 0 creates, and mapped twice on each rank: its
// own memory at a unicast address, and the multicast object at a multicast
// address, where a multimem.ld_reduce of offset o reduces offset o of every
// rank's memory and a multimem.st writes it on every rank. Every peer's
// memory is mapped too (unicast), for the kernels' P2P paths.
//
// Nothing here runs without a Permit from the safety gate
// (internal/multicast/gate): Setup checks it on every rank, agrees on it
// with the others, and returns before the first driver call when any rank
// lacks one.
//
// Handles travel as file descriptors. A descriptor cannot be sent over MPI
// as bytes, so they go over Unix domain sockets with SCM_RIGHTS
// (SocketExchange). pidfd_getfd (Linux 5.6) would avoid the sockets, but it
// needs ptrace rights over the peer, which Yama's default ptrace_scope=1
// (Ubuntu, Debian) denies between sibling MPI ranks.
//
// The sequence, with an agreement between ranks (comm.Agree: the first
// failing rank's error reaches every rank) after every step that can fail, so that a failure anywhere
// makes every rank tear down what it built, in reverse order, instead of
// waiting for ever in a call that blocks until all ranks arrive
// (cuMulticastBindMem and the multicast cuMemMap block until every device
// was added):
//
//  1. every rank: EnableMulticast (resolves the entry points), granularities,
//     and the same size everywhere
//  2. every rank: cuMemCreate, export as fd, reserve, map, set access
//  3. rank 0: cuMulticastCreate, export as fd
//  4. every rank: fds over the sockets (every peer's memory, rank 0's
//     multicast object)
//  5. every rank: import the multicast object (ranks > 0), import and map
//     every peer's memory
//  6. every rank: cuMulticastAddDevice
//  7. every rank: cuMulticastBindMem, reserve and map the multicast object
//
// Close undoes it in reverse order: unmap the multicast address, unbind,
// unmap and release the peers, release the multicast object, unmap and
// release the own memory.
package multicast

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/artest/artest/internal/comm"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/multicast/gate"
)

// Driver is what the setup needs from the CUDA driver; *cuda.Driver
// implements it, and the tests use a fake that checks the sequence.
type Driver interface {
	EnableMulticast(p gate.Permit) error

	MemAllocationGranularity(dev cu.Device, ht cu.MemHandleType) (uint64, error)
	MemCreate(bytes uint64, dev cu.Device, ht cu.MemHandleType) (cu.MemHandle, error)
	MemRelease(h cu.MemHandle) error
	MemExportFD(h cu.MemHandle) (int, error)
	MemImportFD(fd int) (cu.MemHandle, error)
	MemAddressReserve(bytes, align uint64) (cu.DevicePtr, error)
	MemAddressFree(p cu.DevicePtr, bytes uint64) error
	MemMap(p cu.DevicePtr, bytes uint64, h cu.MemHandle) error
	MemUnmap(p cu.DevicePtr, bytes uint64) error
	MemSetAccess(p cu.DevicePtr, bytes uint64, dev cu.Device) error

	MulticastGranularity(devices int, bytes uint64, ht cu.MemHandleType) (uint64, error)
	MulticastCreate(devices int, bytes uint64, ht cu.MemHandleType) (cu.MemHandle, error)
	MulticastAddDevice(mc cu.MemHandle, dev cu.Device) error
	MulticastBindMem(mc cu.MemHandle, mcOffset uint64, mem cu.MemHandle, memOffset, bytes uint64) error
	MulticastUnbind(mc cu.MemHandle, dev cu.Device, mcOffset, bytes uint64) error
}

var _ Driver = (*cu.Driver)(nil)

// Comm is the part of the communicator the setup uses (comm.Peers, which
// comm.Comm has).
// Every rank of the communicator must run on one node: the handles are file
// descriptors, and NVLS multicast does not cross nodes here.
type Comm interface {
	Rank() int
	Size() int
	Allgather(send []byte) ([]byte, error)
	Bcast(buf []byte, root int) error
}

// Config is one Setup.
type Config struct {
	// Permit from the safety gate; Setup refuses to start without one.
	Permit gate.Permit
	// Device is this rank's GPU.
	Device cu.Device
	// Bytes each rank needs; Setup rounds it up to the granularity.
	Bytes uint64
	// Exchange moves the file descriptors; nil means SocketExchange.
	Exchange FDExchange
	// CloseFD closes a descriptor; nil means syscall.Close. (Tests count.)
	CloseFD func(fd int) error
}

// Segment is the multicast-bound memory of every rank, as this rank sees it.
type Segment struct {
	// Bytes of each rank's allocation, and of the multicast object.
	Bytes uint64
	// Local is this rank's memory (unicast); Peers[r] is rank r's memory as
	// mapped here, Peers[rank] == Local.
	Local cu.DevicePtr
	Peers []cu.DevicePtr
	// Multicast is the multicast address of offset 0: Multicast + o is a
	// multimem address for offset o of every rank's memory.
	Multicast cu.DevicePtr

	undo undoStack
}

// Delta is what a kernel adds to a unicast address inside Local to get the
// multicast address of the same offset (modulo 2^64).
func (s *Segment) Delta() uint64 { return uint64(s.Multicast) - uint64(s.Local) }

// Close releases everything Setup built, in reverse order. It keeps going
// after a failed step and returns every failure.
func (s *Segment) Close() error {
	if s == nil {
		return nil
	}
	return s.undo.run()
}

// FD names offered in the exchange.
const (
	fdMemory    = "memory"
	fdMulticast = "multicast"
)

// Setup builds the segment on every rank; it is collective. On error every
// rank has released what it built, and the error names the step and the
// rank that failed first.
func Setup(d Driver, c Comm, cfg Config) (seg *Segment, err error) {
	var permitErr error
	if !cfg.Permit.Valid() {
		permitErr = errors.New("no permit from the multicast safety gate")
	}
	// Agree before the first driver call: a rank whose gate is closed makes
	// every rank stop here, having called nothing.
	if err := comm.Agree(c, permitErr); err != nil {
		return nil, fmt.Errorf("multicast setup: safety gate: %w", err)
	}
	if cfg.Exchange == nil {
		cfg.Exchange = SocketExchange{}
	}
	if cfg.CloseFD == nil {
		cfg.CloseFD = syscall.Close
	}
	b := &builder{d: d, c: c, cfg: cfg, seg: &Segment{}, memFD: -1, mcFD: -1}
	defer func() {
		if err != nil {
			if uerr := b.seg.undo.run(); uerr != nil {
				err = fmt.Errorf("%w (and while tearing down: %v)", err, uerr)
			}
			seg = nil
		}
	}()
	steps := []struct {
		name string
		fn   func() error
	}{
		{"enable multicast and size the segment", b.size},
		{"compare the segment's size", b.sameSize},
		{"allocate and map this rank's memory", b.allocate},
		{"create the multicast object on rank 0", b.create},
		{"exchange file descriptors", b.exchange},
		{"import the multicast object and the peers' memory", b.importAll},
		{"add this rank's GPU to the multicast object", b.addDevice},
		{"bind and map the multicast object", b.bind},
	}
	for _, st := range steps {
		if err := comm.Agree(c, st.fn()); err != nil {
			return nil, fmt.Errorf("multicast setup: %s: %w", st.name, err)
		}
	}
	return b.seg, nil
}

type builder struct {
	d   Driver
	c   Comm
	cfg Config
	seg *Segment

	align  uint64 // of every reservation and of the segment's size
	mem    cu.MemHandle
	mc     cu.MemHandle
	memFD  int
	mcFD   int
	peerFD []int // per rank: the received descriptor of its memory, -1 when none or closed
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }

// size enables the multicast entry points and rounds the segment up to
// both granularities.
func (b *builder) size() error {
	if b.cfg.Bytes == 0 {
		return errors.New("segment of 0 bytes")
	}
	if err := b.d.EnableMulticast(b.cfg.Permit); err != nil {
		return err
	}
	memGran, err := b.d.MemAllocationGranularity(b.cfg.Device, cu.HandlePOSIXFD)
	if err != nil {
		return err
	}
	mcGran, err := b.d.MulticastGranularity(b.c.Size(), b.cfg.Bytes, cu.HandlePOSIXFD)
	if err != nil {
		return err
	}
	if memGran == 0 || mcGran == 0 {
		return fmt.Errorf("granularity 0 (memory %d, multicast %d)", memGran, mcGran)
	}
	b.align = memGran / gcd(memGran, mcGran) * mcGran
	b.seg.Bytes = roundUp(b.cfg.Bytes, b.align)
	return nil
}

// sameSize checks that every rank sized its segment alike: one multicast
// object binds the same range of every rank's memory.
func (b *builder) sameSize() error {
	mine := []byte(fmt.Sprintf("%020d %020d", b.seg.Bytes, b.align))
	all, err := b.c.Allgather(mine)
	if err != nil {
		return fmt.Errorf("compare sizes: %w", err)
	}
	for r := 0; r < b.c.Size(); r++ {
		if got := all[r*len(mine) : (r+1)*len(mine)]; string(got) != string(mine) {
			return fmt.Errorf("rank %d sized its segment %s, this rank %s (size, alignment): different GPUs?", r, got, mine)
		}
	}
	return nil
}

// mapHere reserves address space for h and maps it for this rank's GPU.
func (b *builder) mapHere(h cu.MemHandle, what string) (cu.DevicePtr, error) {
	d, n := b.d, b.seg.Bytes
	p, err := d.MemAddressReserve(n, b.align)
	if err != nil {
		return 0, fmt.Errorf("reserve %s: %w", what, err)
	}
	b.seg.undo.push("free the address range of "+what, func() error { return d.MemAddressFree(p, n) })
	if err := d.MemMap(p, n, h); err != nil {
		return 0, fmt.Errorf("map %s: %w", what, err)
	}
	b.seg.undo.push("unmap "+what, func() error { return d.MemUnmap(p, n) })
	if err := d.MemSetAccess(p, n, b.cfg.Device); err != nil {
		return 0, fmt.Errorf("set access to %s: %w", what, err)
	}
	return p, nil
}

// ownFD records a descriptor to close on teardown (or earlier, through
// closeFD, which makes the teardown step a no-op).
func (b *builder) ownFD(fd *int, what string) {
	b.seg.undo.push("close the descriptor of "+what, func() error { return b.closeFD(fd) })
}

func (b *builder) closeFD(fd *int) error {
	if *fd < 0 {
		return nil
	}
	err := b.cfg.CloseFD(*fd)
	*fd = -1
	return err
}

func (b *builder) allocate() error {
	d, n := b.d, b.seg.Bytes
	h, err := d.MemCreate(n, b.cfg.Device, cu.HandlePOSIXFD)
	if err != nil {
		return err
	}
	b.mem = h
	b.seg.undo.push("release this rank's memory", func() error { return d.MemRelease(h) })
	if b.memFD, err = d.MemExportFD(h); err != nil {
		return err
	}
	b.ownFD(&b.memFD, "this rank's memory")
	b.seg.Local, err = b.mapHere(h, "this rank's memory")
	return err
}

func (b *builder) create() error {
	if b.c.Rank() != 0 {
		return nil
	}
	d := b.d
	mc, err := d.MulticastCreate(b.c.Size(), b.seg.Bytes, cu.HandlePOSIXFD)
	if err != nil {
		return err
	}
	b.mc = mc
	b.seg.undo.push("release the multicast object", func() error { return d.MemRelease(mc) })
	if b.mcFD, err = d.MemExportFD(mc); err != nil {
		return err
	}
	b.ownFD(&b.mcFD, "the multicast object")
	return nil
}

func (b *builder) exchange() error {
	me, n := b.c.Rank(), b.c.Size()
	offer := map[string]int{fdMemory: b.memFD}
	if me == 0 {
		offer[fdMulticast] = b.mcFD
	}
	var want []FDRequest
	for r := 0; r < n; r++ {
		if r != me {
			want = append(want, FDRequest{Rank: r, Name: fdMemory})
		}
	}
	if me != 0 {
		want = append(want, FDRequest{Rank: 0, Name: fdMulticast})
	}
	got, err := b.cfg.Exchange.Exchange(b.c, offer, want)
	// Whatever arrived is ours to close, error or not.
	b.peerFD = make([]int, n)
	for r := range b.peerFD {
		b.peerFD[r] = -1
	}
	for req, fd := range got {
		switch {
		case req.Name == fdMulticast && req.Rank == 0 && me != 0:
			b.mcFD = fd
			b.ownFD(&b.mcFD, "the multicast object (received)")
		case req.Name == fdMemory && req.Rank >= 0 && req.Rank < n && req.Rank != me:
			b.peerFD[req.Rank] = fd
			b.ownFD(&b.peerFD[req.Rank], fmt.Sprintf("rank %d's memory (received)", req.Rank))
		default:
			_ = b.cfg.CloseFD(fd)
		}
	}
	if err != nil {
		return err
	}
	for _, req := range want {
		if _, ok := got[req]; !ok {
			return fmt.Errorf("no %s descriptor from rank %d", req.Name, req.Rank)
		}
	}
	// The peers hold their own copies now.
	if me == 0 {
		if err := b.closeFD(&b.mcFD); err != nil {
			return err
		}
	}
	return b.closeFD(&b.memFD)
}

func (b *builder) importAll() error {
	d, me, n := b.d, b.c.Rank(), b.c.Size()
	if me != 0 {
		mc, err := d.MemImportFD(b.mcFD)
		if err != nil {
			return fmt.Errorf("import the multicast object: %w", err)
		}
		b.mc = mc
		b.seg.undo.push("release the multicast object (imported)", func() error { return d.MemRelease(mc) })
		if err := b.closeFD(&b.mcFD); err != nil {
			return err
		}
	}
	b.seg.Peers = make([]cu.DevicePtr, n)
	b.seg.Peers[me] = b.seg.Local
	for r := 0; r < n; r++ {
		if r == me {
			continue
		}
		h, err := d.MemImportFD(b.peerFD[r])
		if err != nil {
			return fmt.Errorf("import rank %d's memory: %w", r, err)
		}
		b.seg.undo.push(fmt.Sprintf("release rank %d's memory (imported)", r), func() error { return d.MemRelease(h) })
		if err := b.closeFD(&b.peerFD[r]); err != nil {
			return err
		}
		if b.seg.Peers[r], err = b.mapHere(h, fmt.Sprintf("rank %d's memory", r)); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) addDevice() error {
	// No undo: a device stays in the team for the object's lifetime.
	return b.d.MulticastAddDevice(b.mc, b.cfg.Device)
}

func (b *builder) bind() error {
	d, mc, dev, n := b.d, b.mc, b.cfg.Device, b.seg.Bytes
	if err := d.MulticastBindMem(mc, 0, b.mem, 0, n); err != nil {
		return err
	}
	b.seg.undo.push("unbind this rank's memory from the multicast object", func() error { return d.MulticastUnbind(mc, dev, 0, n) })
	var err error
	b.seg.Multicast, err = b.mapHere(mc, "the multicast object")
	return err
}

// undoStack is the teardown, run last step first.
type undoStack struct {
	steps []undoStep
}

type undoStep struct {
	what string
	fn   func() error
}

func (u *undoStack) push(what string, fn func() error) {
	u.steps = append(u.steps, undoStep{what, fn})
}

// run executes every step, last first, even after one fails, and empties
// the stack.
func (u *undoStack) run() error {
	var errs []error
	for i := len(u.steps) - 1; i >= 0; i-- {
		if err := u.steps[i].fn(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u.steps[i].what, err))
		}
	}
	u.steps = nil
	return errors.Join(errs...)
}
