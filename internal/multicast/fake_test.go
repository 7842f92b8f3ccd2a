package multicast

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"syscall"

	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/internal/multicast/gate"
)

// fakeSystem is one node's driver state, shared by the fake drivers of the
// in-process ranks as the real driver's state is shared through the GPUs.
// It turns every misuse the real driver would punish (or block on) into an
// error: a bind or multicast map before every device was added, a handle
// used after release, an unmap of what is not mapped. It also exports
// handles as real file descriptors (of unlinked temporary files), so the
// real socket exchange moves them, and finds the object again from the
// descriptor's inode on import.
type fakeSystem struct {
	mu      sync.Mutex
	next    uint64
	handles map[cu.MemHandle]*fakeObject // live handles
	vas     map[cu.DevicePtr]*fakeVA     // live reservations
	inodes  map[uint64]*fakeObject       // exported descriptors
	objects []*fakeObject
	log     []string // every call of every rank, in order: "rank N Call"
	dir     string

	// fail makes call number nth (1-based) of name on rank fail.
	failRank int
	failName string
	failNth  int
}

type fakeObject struct {
	multicast bool
	dev       int
	bytes     uint64
	handles   int // live handles to it
	maps      int // live mappings of it
	// multicast objects
	devices, want int
	added         map[int]bool
	bound         map[int]bool
}

type fakeVA struct {
	bytes  uint64
	mapped *fakeObject
}

const fakeGran = 2 << 20

func newFakeSystem(dir string) *fakeSystem {
	return &fakeSystem{
		next: 0x100, handles: map[cu.MemHandle]*fakeObject{}, vas: map[cu.DevicePtr]*fakeVA{},
		inodes: map[uint64]*fakeObject{}, dir: dir, failRank: -1,
	}
}

// leaks describes what is still allocated, mapped or bound ("" if nothing).
func (s *fakeSystem) leaks() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for h := range s.handles {
		out = append(out, fmt.Sprintf("handle %#x", h))
	}
	for p, va := range s.vas {
		out = append(out, fmt.Sprintf("address range %#x (mapped: %v)", p, va.mapped != nil))
	}
	for i, o := range s.objects {
		for dev, b := range o.bound {
			if b {
				out = append(out, fmt.Sprintf("object %d: device %d still bound", i, dev))
			}
		}
		if o.maps != 0 {
			out = append(out, fmt.Sprintf("object %d: %d mappings", i, o.maps))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprint(out)
}

// calls returns the log of one rank's calls.
func (s *fakeSystem) calls(rank int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	prefix := fmt.Sprintf("rank %d ", rank)
	for _, l := range s.log {
		if len(l) > len(prefix) && l[:len(prefix)] == prefix {
			out = append(out, l[len(prefix):])
		}
	}
	return out
}

func (s *fakeSystem) indexOf(entry string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, l := range s.log {
		if l == entry {
			return i
		}
	}
	return -1
}

// fakeDriver is one rank's view.
type fakeDriver struct {
	s       *fakeSystem
	rank    int
	enabled bool
	count   map[string]int
}

func newFakeDriver(s *fakeSystem, rank int) *fakeDriver {
	return &fakeDriver{s: s, rank: rank, count: map[string]int{}}
}

var errInjected = errors.New("injected failure")

// call logs name and reports an injected failure; it holds s.mu on return
// (the caller unlocks).
func (d *fakeDriver) call(name string) error {
	d.s.mu.Lock()
	d.count[name]++
	d.s.log = append(d.s.log, fmt.Sprintf("rank %d %s", d.rank, name))
	if d.rank == d.s.failRank && name == d.s.failName && d.count[name] == d.s.failNth {
		return fmt.Errorf("%s: %w", name, errInjected)
	}
	return nil
}

func (d *fakeDriver) handle(h cu.MemHandle) (*fakeObject, error) {
	o, ok := d.s.handles[h]
	if !ok {
		return nil, fmt.Errorf("handle %#x is not live", h)
	}
	return o, nil
}

func (d *fakeDriver) newHandle(o *fakeObject) cu.MemHandle {
	d.s.next++
	h := cu.MemHandle(d.s.next)
	d.s.handles[h] = o
	o.handles++
	return h
}

func (d *fakeDriver) EnableMulticast(p gate.Permit) error {
	defer d.s.mu.Unlock()
	if err := d.call("EnableMulticast"); err != nil {
		return err
	}
	if !p.Valid() {
		return cu.ErrMulticastDisabled
	}
	d.enabled = true
	return nil
}

func (d *fakeDriver) MemAllocationGranularity(dev cu.Device, ht cu.MemHandleType) (uint64, error) {
	defer d.s.mu.Unlock()
	if err := d.call("MemAllocationGranularity"); err != nil {
		return 0, err
	}
	if int(dev) != d.rank || ht != cu.HandlePOSIXFD {
		return 0, fmt.Errorf("granularity for device %d, handle type %d", dev, ht)
	}
	return fakeGran, nil
}

func (d *fakeDriver) MemCreate(bytes uint64, dev cu.Device, ht cu.MemHandleType) (cu.MemHandle, error) {
	defer d.s.mu.Unlock()
	if err := d.call("MemCreate"); err != nil {
		return 0, err
	}
	if bytes == 0 || bytes%fakeGran != 0 || int(dev) != d.rank || ht != cu.HandlePOSIXFD {
		return 0, fmt.Errorf("MemCreate(%d, %d, %d)", bytes, dev, ht)
	}
	o := &fakeObject{dev: int(dev), bytes: bytes}
	d.s.objects = append(d.s.objects, o)
	return d.newHandle(o), nil
}

func (d *fakeDriver) MemRelease(h cu.MemHandle) error {
	defer d.s.mu.Unlock()
	if err := d.call("MemRelease"); err != nil {
		return err
	}
	o, err := d.handle(h)
	if err != nil {
		return err
	}
	if o.multicast && o.bound[d.rank] {
		return fmt.Errorf("release of a multicast object this device is still bound to")
	}
	delete(d.s.handles, h)
	o.handles--
	return nil
}

func (d *fakeDriver) MemExportFD(h cu.MemHandle) (int, error) {
	defer d.s.mu.Unlock()
	if err := d.call("MemExportFD"); err != nil {
		return -1, err
	}
	o, err := d.handle(h)
	if err != nil {
		return -1, err
	}
	f, err := os.CreateTemp(d.s.dir, "handle")
	if err != nil {
		return -1, err
	}
	defer f.Close()
	defer os.Remove(f.Name())
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return -1, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	d.s.inodes[st.Ino] = o
	return fd, nil
}

func (d *fakeDriver) MemImportFD(fd int) (cu.MemHandle, error) {
	defer d.s.mu.Unlock()
	if err := d.call("MemImportFD"); err != nil {
		return 0, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return 0, fmt.Errorf("import of descriptor %d: %w", fd, err)
	}
	o, ok := d.s.inodes[st.Ino]
	if !ok {
		return 0, fmt.Errorf("descriptor %d is no exported handle", fd)
	}
	return d.newHandle(o), nil
}

func (d *fakeDriver) MemAddressReserve(bytes, align uint64) (cu.DevicePtr, error) {
	defer d.s.mu.Unlock()
	if err := d.call("MemAddressReserve"); err != nil {
		return 0, err
	}
	if bytes == 0 || align == 0 || align%fakeGran != 0 || bytes%align != 0 {
		return 0, fmt.Errorf("reserve %d bytes aligned %d", bytes, align)
	}
	d.s.next++
	p := cu.DevicePtr(d.s.next << 40)
	d.s.vas[p] = &fakeVA{bytes: bytes}
	return p, nil
}

func (d *fakeDriver) MemAddressFree(p cu.DevicePtr, bytes uint64) error {
	defer d.s.mu.Unlock()
	if err := d.call("MemAddressFree"); err != nil {
		return err
	}
	va, ok := d.s.vas[p]
	switch {
	case !ok:
		return fmt.Errorf("free of %#x: not reserved", p)
	case va.mapped != nil:
		return fmt.Errorf("free of %#x: still mapped", p)
	case va.bytes != bytes:
		return fmt.Errorf("free of %#x: %d bytes, reserved %d", p, bytes, va.bytes)
	}
	delete(d.s.vas, p)
	return nil
}

func (d *fakeDriver) MemMap(p cu.DevicePtr, bytes uint64, h cu.MemHandle) error {
	defer d.s.mu.Unlock()
	if err := d.call("MemMap"); err != nil {
		return err
	}
	o, err := d.handle(h)
	if err != nil {
		return err
	}
	va, ok := d.s.vas[p]
	switch {
	case !ok || va.mapped != nil:
		return fmt.Errorf("map at %#x: not reserved, or mapped already", p)
	case bytes != va.bytes || bytes > o.bytes:
		return fmt.Errorf("map of %d bytes", bytes)
	case o.multicast && len(o.added) != o.want:
		// The real driver blocks here until every device was added.
		return fmt.Errorf("map of a multicast object with %d of %d devices added", len(o.added), o.want)
	}
	va.mapped = o
	o.maps++
	return nil
}

func (d *fakeDriver) MemUnmap(p cu.DevicePtr, bytes uint64) error {
	defer d.s.mu.Unlock()
	if err := d.call("MemUnmap"); err != nil {
		return err
	}
	va, ok := d.s.vas[p]
	if !ok || va.mapped == nil || va.bytes != bytes {
		return fmt.Errorf("unmap of %#x: not mapped", p)
	}
	va.mapped.maps--
	va.mapped = nil
	return nil
}

func (d *fakeDriver) MemSetAccess(p cu.DevicePtr, bytes uint64, dev cu.Device) error {
	defer d.s.mu.Unlock()
	if err := d.call("MemSetAccess"); err != nil {
		return err
	}
	va, ok := d.s.vas[p]
	if !ok || va.mapped == nil || int(dev) != d.rank {
		return fmt.Errorf("set access at %#x for device %d", p, dev)
	}
	return nil
}

func (d *fakeDriver) multicastCall(name string) error {
	if err := d.call(name); err != nil {
		return err
	}
	if !d.enabled {
		return fmt.Errorf("%s: %w", name, cu.ErrMulticastDisabled)
	}
	return nil
}

func (d *fakeDriver) MulticastGranularity(devices int, bytes uint64, ht cu.MemHandleType) (uint64, error) {
	defer d.s.mu.Unlock()
	if err := d.multicastCall("MulticastGranularity"); err != nil {
		return 0, err
	}
	if devices < 1 || bytes == 0 || ht != cu.HandlePOSIXFD {
		return 0, fmt.Errorf("multicast granularity for %d devices, %d bytes", devices, bytes)
	}
	// A larger granularity than the memory's, as on real GPUs.
	return 2 * fakeGran, nil
}

func (d *fakeDriver) MulticastCreate(devices int, bytes uint64, ht cu.MemHandleType) (cu.MemHandle, error) {
	defer d.s.mu.Unlock()
	if err := d.multicastCall("MulticastCreate"); err != nil {
		return 0, err
	}
	if devices < 1 || bytes%(2*fakeGran) != 0 || ht != cu.HandlePOSIXFD {
		return 0, fmt.Errorf("MulticastCreate(%d, %d, %d)", devices, bytes, ht)
	}
	o := &fakeObject{multicast: true, bytes: bytes, want: devices, added: map[int]bool{}, bound: map[int]bool{}}
	d.s.objects = append(d.s.objects, o)
	return d.newHandle(o), nil
}

func (d *fakeDriver) MulticastAddDevice(mc cu.MemHandle, dev cu.Device) error {
	defer d.s.mu.Unlock()
	if err := d.multicastCall("MulticastAddDevice"); err != nil {
		return err
	}
	o, err := d.handle(mc)
	if err != nil {
		return err
	}
	if !o.multicast || o.added[int(dev)] || len(o.added) == o.want || int(dev) != d.rank {
		return fmt.Errorf("add device %d", dev)
	}
	o.added[int(dev)] = true
	return nil
}

func (d *fakeDriver) MulticastBindMem(mc cu.MemHandle, mcOffset uint64, mem cu.MemHandle, memOffset, bytes uint64) error {
	defer d.s.mu.Unlock()
	if err := d.multicastCall("MulticastBindMem"); err != nil {
		return err
	}
	o, err := d.handle(mc)
	if err != nil {
		return err
	}
	m, err := d.handle(mem)
	if err != nil {
		return err
	}
	switch {
	case !o.multicast || m.multicast:
		return errors.New("bind: handles swapped")
	case len(o.added) != o.want:
		// The real driver blocks here until every device was added.
		return fmt.Errorf("bind with %d of %d devices added", len(o.added), o.want)
	case !o.added[m.dev] || o.bound[m.dev]:
		return fmt.Errorf("bind of device %d's memory", m.dev)
	case mcOffset != 0 || memOffset != 0 || bytes != m.bytes || bytes > o.bytes:
		return fmt.Errorf("bind of %d bytes at %d/%d", bytes, mcOffset, memOffset)
	}
	o.bound[m.dev] = true
	return nil
}

func (d *fakeDriver) MulticastUnbind(mc cu.MemHandle, dev cu.Device, mcOffset, bytes uint64) error {
	defer d.s.mu.Unlock()
	if err := d.multicastCall("MulticastUnbind"); err != nil {
		return err
	}
	o, err := d.handle(mc)
	if err != nil {
		return err
	}
	if !o.bound[int(dev)] || mcOffset != 0 {
		return fmt.Errorf("unbind of device %d: not bound", dev)
	}
	o.bound[int(dev)] = false
	return nil
}

var _ Driver = (*fakeDriver)(nil)
