package cuda

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// Without artest_check in the fatbin the device checker says why, and a
// check fails with the kernel's name instead of launching anything.
func TestDeviceCheckWithoutKernel(t *testing.T) {
	d := fakeDriver(t)
	b := fakeBackend(t, d, 0)
	b.fatbin = "/x/artest.fatbin"
	require.Equal(t, "the fatbin has no artest_check (/x/artest.fatbin): rebuild with make kernels", b.DeviceCheckReason())
	_, err := b.CheckOnDevice(backend.DeviceCheck{Slots: 1, Count: 1}, time.Second)
	require.ErrorContains(t, err, "kernel artest_check")
}

// CheckOnDevice on the fake driver, whose "record" kernel stands in for
// artest_check: it writes SlotBytes+Lead (its struct's second and third
// words) and the launch shape into the first words of Region. The verdicts
// are zeroed before the launch (the fake's allocations are dirty here), so
// a clean batch decodes as no wrong element in any slot.
func TestCheckOnDeviceLaunch(t *testing.T) {
	t.Setenv("FAKECUDA_DIRTY_ALLOC", "1")
	d := fakeDriver(t)
	b := fakeBackend(t, d, 0)
	m, err := d.ModuleLoadData([]byte("FAKE image"))
	require.NoError(t, err)
	b.module = m
	rec, err := d.ModuleGetFunction(m, "record")
	require.NoError(t, err)
	b.fns[kernels.CheckKernel] = rec
	require.Empty(t, b.DeviceCheckReason())

	region, err := b.Alloc(256)
	require.NoError(t, err)
	spec := reference.CheckSpec{Gen: reference.Gen{Seed: 3, DType: reference.BF16}, NRanks: 4, Iter: 10}
	for _, slots := range []int{3, 1000, 2} { // grows the verdict buffer, then reuses it
		got, err := b.CheckOnDevice(backend.DeviceCheck{Spec: spec, Region: region, SlotBytes: 4096, Lead: 300,
			GuardAfter: 256, Count: 70000, Slots: slots, Guard: 0xa5}, time.Second)
		require.NoError(t, err)
		require.Len(t, got, slots)
		for _, s := range got {
			require.Equal(t, kernels.CheckSlot{}, s)
		}
		out := make([]byte, 72)
		require.NoError(t, b.Download(out, region))
		words := make([]uint64, 9)
		for i := range words {
			words[i] = binary.LittleEndian.Uint64(out[8*i:])
		}
		x, y := kernels.CheckGrid(70000, slots)
		require.Equal(t, []uint64{4096 + 300, uint64(x), uint64(y), 1, kernels.CheckThreads, 1, 1, 0}, words[:8], "%d slots", slots)
	}
	require.Equal(t, int64(1000)*checkSlotBytes, b.checkBytes)
}

// decodeCheckSlots reads the C layout: wrong at 0, guard_bad at 8, claimed
// at 16, record k at 24+24k as {index, got, want, ref_bits}.
func TestDecodeCheckSlots(t *testing.T) {
	raw := make([]byte, 2*checkSlotBytes)
	s1 := raw[checkSlotBytes:]
	binary.LittleEndian.PutUint64(s1[0:], 5)
	binary.LittleEndian.PutUint64(s1[8:], 2)
	binary.LittleEndian.PutUint32(s1[16:], 7)
	binary.LittleEndian.PutUint64(s1[24+24:], 1234)
	binary.LittleEndian.PutUint32(s1[24+24+8:], 0x7fad)
	binary.LittleEndian.PutUint32(s1[24+24+12:], 0x3f80)
	binary.LittleEndian.PutUint64(s1[24+24+16:], 0x3ff0000000000000)
	got, err := decodeCheckSlots(raw, 2)
	require.NoError(t, err)
	require.Equal(t, kernels.CheckSlot{}, got[0])
	require.Equal(t, uint64(5), got[1].Wrong)
	require.Equal(t, uint64(2), got[1].GuardBad)
	require.Len(t, got[1].Recorded(), kernels.CheckRecords, "7 claimed, 4 written")
	require.Equal(t, kernels.CheckRecord{Index: 1234, Got: 0x7fad, Want: 0x3f80, RefBits: 0x3ff0000000000000}, got[1].Records[1])
	require.Equal(t, 1.0, got[1].Records[1].Ref())
	require.Equal(t, uintptr(checkSlotBytes), unsafe.Sizeof(kernels.CheckSlot{}))

	_, err = decodeCheckSlots(raw[:100], 2)
	require.ErrorContains(t, err, "decode 2 device check verdicts from 100 bytes")
}
