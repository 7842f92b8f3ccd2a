package cudadrv

import (
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// recordingLibrary is fullLibrary plus the VMM and multicast exports, and a
// log of every name looked up. Nothing may call through its addresses.
type recordingLibrary struct {
	*fakeLibrary
	mu     sync.Mutex
	lookup []string
}

func newRecordingLibrary() *recordingLibrary {
	lib := fullLibrary()
	for _, s := range (&vmmSymbols{}).specs() {
		lib.syms[s.names[0]] = true
	}
	for _, n := range MulticastSymbolNames() {
		lib.syms[n] = true
	}
	return &recordingLibrary{fakeLibrary: lib}
}

func (r *recordingLibrary) Lookup(name string) (unsafe.Pointer, error) {
	r.mu.Lock()
	r.lookup = append(r.lookup, name)
	r.mu.Unlock()
	return r.fakeLibrary.Lookup(name)
}

func (r *recordingLibrary) multicastLookups() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range r.lookup {
		if strings.Contains(strings.ToLower(n), "multicast") {
			out = append(out, n)
		}
	}
	return out
}

// openPermit stands for an open gate's permit (the gate's own tests check
// that it grants one only when it opens, and that a closed gate's is the
// zero value).
func openPermit(t *testing.T) MulticastPermit {
	t.Helper()
	p := GrantMulticast()
	require.True(t, p.Valid())
	return p
}

// The safety property that replaced "no multicast entry point is bound":
// while the gate is closed, no multicast symbol is even looked up, and
// every multicast method fails without calling the driver. Only a permit
// from an open gate resolves them.
func TestMulticastSymbolsResolvedOnlyWithPermit(t *testing.T) {
	lib := newRecordingLibrary()
	tab, err := resolve(lib)
	require.NoError(t, err)
	d := &Driver{lib: lib, t: tab}
	require.Empty(t, lib.multicastLookups(), "Load looks up no multicast entry point")

	// Every multicast method, before the gate opened.
	_, err = d.MulticastGranularity(2, 4<<20, HandlePOSIXFD)
	require.ErrorIs(t, err, ErrMulticastDisabled)
	_, err = d.MulticastCreate(2, 4<<20, HandlePOSIXFD)
	require.ErrorIs(t, err, ErrMulticastDisabled)
	require.ErrorIs(t, d.MulticastAddDevice(1, 0), ErrMulticastDisabled)
	require.ErrorIs(t, d.MulticastBindMem(1, 0, 2, 0, 4<<20), ErrMulticastDisabled)
	require.ErrorIs(t, d.MulticastUnbind(1, 0, 0, 4<<20), ErrMulticastDisabled)

	// A closed gate's permit (the zero value) does not open anything.
	require.False(t, MulticastPermit{}.Valid())
	require.ErrorIs(t, d.EnableMulticast(MulticastPermit{}), ErrMulticastDisabled)
	_, err = d.MulticastCreate(2, 4<<20, HandlePOSIXFD)
	require.ErrorIs(t, err, ErrMulticastDisabled)
	require.Empty(t, lib.multicastLookups(), "no multicast symbol was looked up while the gate was closed")

	// The open gate's permit resolves exactly the multicast group, once.
	require.NoError(t, d.EnableMulticast(openPermit(t)))
	require.ElementsMatch(t, MulticastSymbolNames(), lib.multicastLookups())
	require.NoError(t, d.EnableMulticast(openPermit(t)))
	require.Len(t, lib.multicastLookups(), len(MulticastSymbolNames()), "resolved once")
	_, err = d.multicastTable()
	require.NoError(t, err)
}

func TestMulticastNeedsEveryEntryPoint(t *testing.T) {
	lib := newRecordingLibrary()
	delete(lib.syms, "cuMulticastBindMem")
	d := &Driver{lib: lib}
	err := d.EnableMulticast(openPermit(t))
	require.ErrorIs(t, err, ErrSymbolMissing)
	require.ErrorContains(t, err, "cuMulticastBindMem")
	_, err = d.multicastTable()
	require.ErrorIs(t, err, ErrMulticastDisabled, "a failed EnableMulticast leaves multicast off")
}

func TestVMMResolvedOnFirstUse(t *testing.T) {
	lib := newRecordingLibrary()
	delete(lib.syms, "cuMemMap")
	d := &Driver{lib: lib}
	_, err := d.MemCreate(2<<20, 0, HandlePOSIXFD)
	require.ErrorIs(t, err, ErrSymbolMissing)
	require.ErrorContains(t, err, "cuMemMap")
	require.Empty(t, lib.multicastLookups(), "VMM use does not touch multicast")
}

// The trampolines against the C fake: struct layouts and argument order.
func TestFakeVMM(t *testing.T) {
	d := fake(t)
	g, err := d.MemAllocationGranularity(1, HandlePOSIXFD)
	require.NoError(t, err)
	require.Equal(t, uint64(2<<20|1<<4|1), g, "2 MiB, device 1, POSIX fd handles")

	_, err = d.MemCreate(3, 1, HandlePOSIXFD)
	require.ErrorIs(t, err, ErrInvalidValue, "not a multiple of the granularity")
	h, err := d.MemCreate(4<<20, 1, HandlePOSIXFD)
	require.NoError(t, err)
	require.Equal(t, MemHandle(0x71002), h)

	fd, err := d.MemExportFD(h)
	require.NoError(t, err)
	require.Equal(t, 1000+0x1002, fd)
	back, err := d.MemImportFD(fd)
	require.NoError(t, err)
	require.Equal(t, h, back)

	p, err := d.MemAddressReserve(4<<20, 2<<20)
	require.NoError(t, err)
	require.Equal(t, DevicePtr(32<<20), p, "the fake returns 16 x the alignment")
	require.NoError(t, d.MemMap(p, 4<<20, h))
	require.NoError(t, d.MemSetAccess(p, 4<<20, 1))
	require.ErrorIs(t, d.MemSetAccess(p, 4<<20, 5), ErrInvalidDevice, "the device travels in the access descriptor")
	require.NoError(t, d.MemUnmap(p, 4<<20))
	require.NoError(t, d.MemAddressFree(p, 4<<20))
	require.NoError(t, d.MemRelease(h))
}

func TestFakeMulticast(t *testing.T) {
	d := fake(t)
	_, err := d.MulticastCreate(2, 4<<20, HandlePOSIXFD)
	require.ErrorIs(t, err, ErrMulticastDisabled)

	require.NoError(t, d.EnableMulticast(openPermit(t)))
	g, err := d.MulticastGranularity(2, 4<<20, HandlePOSIXFD)
	require.NoError(t, err)
	require.Equal(t, uint64(2<<20+2), g)
	mc, err := d.MulticastCreate(2, 4<<20, HandlePOSIXFD)
	require.NoError(t, err)
	require.Equal(t, MemHandle(0x80202), mc, "2 devices, 2 granules")
	require.NoError(t, d.MulticastAddDevice(mc, 1))
	require.ErrorIs(t, d.MulticastAddDevice(mc, 7), ErrInvalidDevice)

	mem, err := d.MemCreate(4<<20, 1, HandlePOSIXFD)
	require.NoError(t, err)
	require.NoError(t, d.MulticastBindMem(mc, 0, mem, 0, 4<<20))
	require.ErrorIs(t, d.MulticastBindMem(mem, 0, mc, 0, 4<<20), ErrInvalidValue, "handles in the right order")
	require.ErrorIs(t, d.MulticastBindMem(mc, 1, mem, 0, 4<<20), ErrInvalidValue, "offsets in granules")
	require.NoError(t, d.MulticastUnbind(mc, 1, 0, 4<<20))
	require.NoError(t, d.MemRelease(mc))
	require.NoError(t, d.MemRelease(mem))
}
