package oneshotsentinel

import (
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/internal/cconst"
	"github.com/artest/artest/reference"
)

func TestSentinelStaging(t *testing.T) {
	for _, tc := range []struct {
		name     string
		msg      int64
		n        int
		stageFor int64 // StageBytes(msg, n)
	}{
		{"one element", 2, 2, 2*2*16 + 16},
		{"a partial slot counts whole", 17, 4, 2*4*2*16 + 16},
		{"the largest message on 8 ranks", MaxBytes, 8, 2*8*MaxBytes + 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			need := StageBytes(tc.msg, tc.n)
			require.Equal(t, tc.stageFor, need)
			// Both halves of n regions fit after the staging pointer's
			// first 16-byte boundary, however misaligned it is.
			slots := (tc.msg + kernels.VecBytes - 1) / kernels.VecBytes
			for mis := uint64(0); mis < 16; mis++ {
				p := uint64(1<<20) + mis
				require.LessOrEqual(t, Align(p)-p+2*uint64(tc.n)*uint64(slots)*kernels.VecBytes, uint64(need))
			}
		})
	}
	require.Equal(t, uint64(32), Align(17))
	require.Empty(t, TooBig(MaxBytes))
	require.Contains(t, TooBig(MaxBytes+1), "oneshot-sentinel takes messages up to")
}

// Every 16-bit pattern: staging never holds a zero, and decoding gives
// the pattern back, but for all ones, which comes back a NaN of f16 and
// of bf16 (all ones is one of each too), so no sum, max or min can differ.
func TestEncode16EveryPattern(t *testing.T) {
	for x := 0; x <= math.MaxUint16; x++ {
		bits := uint16(x)
		e := Encode16(bits)
		require.NotZero(t, e, "%#04x", bits)
		back := uint16(DecodeWord(uint32(e)))
		if bits != 0xffff {
			require.Equal(t, bits, back, "%#04x", bits)
			continue
		}
		for _, d := range []reference.DType{reference.F16, reference.BF16} {
			require.True(t, math.IsNaN(float64(d.GetF32([]byte{byte(back), byte(back >> 8)}, 0))), "%s %#04x", d, back)
		}
	}
	// Both halves of a word, each on its own.
	for _, w := range []uint32{0, 0xffffffff, 0xffff0000, 0x0000ffff, 0x80000000, 0x12345678} {
		e := EncodeWord(w, 2)
		require.True(t, WordFull(e, 2), "%#08x", w)
		require.Equal(t, uint32(Encode16(uint16(w)))|uint32(Encode16(uint16(w>>16)))<<16, e)
	}
	require.False(t, WordFull(0x00010000, 2))
	require.False(t, WordFull(0x00000001, 2))
	require.False(t, WordFull(0, 4))
}

// 32-bit patterns: the edges and a fuzz corpus; the one that is not sent as
// it is comes back a NaN of f32.
func TestEncode32(t *testing.T) {
	for _, bits := range []uint32{0, 1, 0x80000000, 0x7f800000, 0xff800000, 0x7fffffff, 0xfffffffe} {
		require.Equal(t, bits, DecodeWord(Encode32(bits)), "%#08x", bits)
		require.True(t, WordFull(EncodeWord(bits, 4), 4))
	}
	back := DecodeWord(Encode32(0xffffffff))
	require.True(t, math.IsNaN(float64(math.Float32frombits(back))), "%#08x", back)
	require.NotZero(t, Encode32(0xffffffff))
}

func FuzzEncode32(f *testing.F) {
	f.Add(uint32(0))
	f.Add(uint32(0xffffffff))
	f.Fuzz(func(t *testing.T, bits uint32) {
		e := Encode32(bits)
		require.NotZero(t, e)
		if bits != 0xffffffff {
			require.Equal(t, bits, DecodeWord(e))
		}
	})
}

// The fault switches' bits are written on both sides of the launch ABI.
func TestSentinelFaultBitsMatchCUDA(t *testing.T) {
	src, err := os.ReadFile("oneshot_sentinel.cuh")
	require.NoError(t, err)
	consts, err := cconst.FromC(string(src))
	require.NoError(t, err)
	require.Equal(t, map[string]uint64{
		"INJECT_SENTINEL_NO_WAIT":  uint64(InjectSentinelNoWait),
		"INJECT_SENTINEL_NO_CLEAR": uint64(InjectSentinelNoClear),
	}, consts)
}

// The registry's launch of each size tune measured: its rule's blocks x
// threads.
func TestSentinelLaunchRule(t *testing.T) {
	for _, tc := range []struct {
		bytes           int64
		blocks, threads int
	}{
		{1 << 10, 1, 64}, {4 << 10, 4, 64}, {16 << 10, 16, 64}, {64 << 10, 64, 64},
		{256 << 10, 128, 128}, {1 << 20, 128, 512}, {4 << 20, 132, 512}, {2, 1, 64},
	} {
		a := kernels.Args{Count: uint64(tc.bytes / 2), NRanks: 2}
		v := Variant()
		threads := v.DefaultThreads(&a, 2)
		require.Equal(t, tc.threads, threads, "%d bytes", tc.bytes)
		require.Equal(t, tc.blocks, kernels.Grid(&v, &a, 2, v.Blocks, threads), "%d bytes", tc.bytes)
	}
}
