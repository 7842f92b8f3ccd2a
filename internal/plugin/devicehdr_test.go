package plugin

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/hostcxx"
	"github.com/artest/artest/reference"
)

// The number helpers of plugin/artest_device.h (f16 and bf16 conversions,
// max and min) are compared with the Go reference without a GPU: g++ builds
// testdata/devicehdr.cc around the header as plain C++ (no __CUDACC__), and
// the tests drive it over a pipe. Without a C++ compiler they skip, unless
// ARTEST_REQUIRE_CXX is set (make test sets it), where they fail.

// buildDeviceHdr compiles testdata/devicehdr.cc into a temporary directory.
func buildDeviceHdr(t *testing.T) string {
	t.Helper()
	cxx := hostcxx.Find(t)
	bin := filepath.Join(t.TempDir(), "devicehdr")
	// -ffp-contract=off as the host plugins are built: the sums stay
	// single roundings.
	args := []string{"-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off",
		"-I", filepath.Join("..", "..", "plugin"), "-o", bin, filepath.Join("testdata", "devicehdr.cc")}
	out, err := exec.Command(cxx, args...).CombinedOutput()
	require.NoError(t, err, "compile devicehdr.cc with %s:\n%s", cxx, out)
	return bin
}

// runDeviceHdr runs the driver in one mode with in as its stdin (uint32
// words, little endian) and returns its stdout.
func runDeviceHdr(t *testing.T, bin string, in []uint32, args ...string) []byte {
	t.Helper()
	stdin := make([]byte, 4*len(in))
	for i, w := range in {
		binary.LittleEndian.PutUint32(stdin[4*i:], w)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "devicehdr %s: %s", strings.Join(args, " "), stderr.String())
	return out
}

func TestDeviceHeaderNumbers(t *testing.T) {
	bin := buildDeviceHdr(t)
	t.Run("decode every 16-bit pattern", func(t *testing.T) { testDecode(t, bin) })
	t.Run("encode float32 samples", func(t *testing.T) { testEncode(t, bin) })
	t.Run("max and min", func(t *testing.T) { testExtremeTable(t, bin) })
	t.Run("reductions artest checks", func(t *testing.T) { testReductions(t, bin) })
}

// Every f16 and bf16 pattern widens to the reference's float bits (a NaN's
// payload and quiet bit included).
func testDecode(t *testing.T, bin string) {
	out := runDeviceHdr(t, bin, nil, "decode")
	require.Len(t, out, 2*4*65536)
	bad := 0
	for h := range 65536 {
		gotF16 := binary.LittleEndian.Uint32(out[8*h:])
		gotBF16 := binary.LittleEndian.Uint32(out[8*h+4:])
		wantF16 := math.Float32bits(reference.F16ToF32(uint16(h)))
		wantBF16 := math.Float32bits(reference.BF16ToF32(uint16(h)))
		if gotF16 != wantF16 || gotBF16 != wantBF16 {
			if bad++; bad <= 10 {
				t.Errorf("%#04x: artest_f16_to_f32 %#08x, reference %#08x; artest_bf16_to_f32 %#08x, reference %#08x",
					h, gotF16, wantF16, gotBF16, wantBF16)
			}
		}
	}
	require.Zero(t, bad, "16-bit patterns decoded unlike the reference")
}

// encodeSample is the float32 inputs of the encode test: every step of
// 2^32/2^20 (2^32/2^24 without -short), the same steps with pseudo-random
// low bits (the dropped bits of both formats, where rounding happens), and
// the edges: per sign and exponent, the mantissas around each bit (ties,
// just above and below, the odd kept bit, carries into the exponent), NaN
// payloads, the largest finite values and the subnormals.
func encodeSample(short bool) []uint32 {
	shift := 12
	if !short {
		shift = 8
	}
	var in []uint32
	for i := uint64(0); i < 1<<(32-shift); i++ {
		x := uint32(i << shift)
		h := (i + 1) * 0x9e3779b97f4a7c15
		h ^= h >> 29
		in = append(in, x, x|uint32(h)&(1<<shift-1))
	}
	for _, sign := range []uint32{0, 1 << 31} {
		for exp := uint32(0); exp < 256; exp++ {
			for k := range 23 {
				bit := uint32(1) << k
				for _, m := range []uint32{bit, bit - 1, bit + 1, bit | bit<<1, bit | bit<<1 - 1, bit | bit<<1 + 1,
					0x7fffff &^ (bit - 1), 0x7fffff &^ bit, 0x400000 | bit} {
					in = append(in, sign|exp<<23|m&0x7fffff)
				}
			}
		}
	}
	in = append(in,
		0x7f7fffff, 0xff7fffff, 0x7f7f8000, 0x7f7f7fff, 0x477fe000, 0x477fefff, 0x477ff000, 0x477ff001, // largest finite, ties to Inf
		0x38800000, 0x387fe000, 0x387fc000, 0x33800000, 0x33000000, 0x33000001, 0x33c00000, 0xb3000001, // f16 subnormal edges
		0x00000001, 0x80000001, 0x007fffff, 0x00800000, 0x00008000, 0x00018000, 0x00028000, // f32 subnormals, bf16 ties there
		0x7f800000, 0xff800000, 0x00000000, 0x80000000, // Inf, zeros
		0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fa00000, 0x7fbfffff, 0x7fffffff, 0xffffffff, // NaNs
		0x7f802000, 0x7f801fff, 0x7f810000, 0x7f80ffff, 0x7fc00001, 0x7fe12345, 0x7fbadbad, 0xffbadbad,
	)
	return in
}

// A large sample of float32 inputs rounds to the reference's f16 and bf16
// bits.
func testEncode(t *testing.T, bin string) {
	in := encodeSample(testing.Short())
	out := runDeviceHdr(t, bin, in, "encode")
	require.Len(t, out, 4*len(in))
	bad := 0
	for i, x := range in {
		f := math.Float32frombits(x)
		gotF16 := binary.LittleEndian.Uint16(out[4*i:])
		gotBF16 := binary.LittleEndian.Uint16(out[4*i+2:])
		wantF16, wantBF16 := reference.F16FromF32(f), reference.BF16FromF32(f)
		if gotF16 != wantF16 || gotBF16 != wantBF16 {
			if bad++; bad <= 10 {
				t.Errorf("%#08x: artest_f32_to_f16 %#04x, reference %#04x; artest_f32_to_bf16 %#04x, reference %#04x",
					x, gotF16, wantF16, gotBF16, wantBF16)
			}
		}
	}
	require.Zero(t, bad, "of %d float32 inputs, some rounded unlike the reference", len(in))
}

// The float operands of the max and min table.
var extremeValues = []uint32{
	0x7fc00000, 0xffc00000, 0x7fc12345, // quiet NaNs
	0x7f800001, 0xff800001, 0x7fa00000, 0x7fbadbad, // signalling NaNs, the f32 poison among them
	0x00000000, 0x80000000, // +0, -0
	0x7f800000, 0xff800000, // +Inf, -Inf
	0x3f800000, 0xbf800000, 0x40400000, 0x40000000, // 1, -1, 3, 2
	0x7f7fffff, 0xff7fffff, // the largest finite
	0x00000001, 0x80000001, 0x00800000, // subnormals, the smallest normal
}

func isNaN32(u uint32) bool { return u&0x7fffffff > 0x7f800000 }

// extremeWant is max (isMax) or min of a and b as reference/reduce.go
// specifies them (specialExpect): the extreme of the operands that are not
// NaNs, a NaN of either kind being missing data; of two zeros the one
// IEEE 754-2019 maximum and minimum give (+0 for max, -0 for min: what the
// reference's Bits hold where either zero is right); two NaNs: the
// canonical quiet NaN (the reference's quietNaN of f32; any NaN is right).
func extremeWant(isMax bool, a, b uint32) uint32 {
	switch {
	case isNaN32(a) && isNaN32(b):
		return 0x7fc00000
	case isNaN32(a):
		return b
	case isNaN32(b):
		return a
	}
	fa, fb := math.Float32frombits(a), math.Float32frombits(b)
	switch {
	case fa == fb && isMax:
		return a & b
	case fa == fb:
		return a | b
	case isMax == (fa > fb):
		return a
	}
	return b
}

func testExtremeTable(t *testing.T, bin string) {
	// A few by name, so that the rules are read here, not only in
	// extremeWant.
	for _, tc := range []struct {
		a, b     uint32
		max, min uint32
		why      string
	}{
		{0x40400000, 0x7fa00000, 0x40400000, 0x40400000, "3 and a signalling NaN: 3 (glibc's fmaxf gives a quiet NaN)"},
		{0x7fa00000, 0x40400000, 0x40400000, 0x40400000, "a signalling NaN and 3: 3"},
		{0x7fc00000, 0xbf800000, 0xbf800000, 0xbf800000, "a quiet NaN and -1: -1"},
		{0x7f800001, 0xffc00000, 0x7fc00000, 0x7fc00000, "two NaNs: the quiet NaN"},
		{0x00000000, 0x80000000, 0x00000000, 0x80000000, "+0 and -0: max +0, min -0"},
		{0x80000000, 0x00000000, 0x00000000, 0x80000000, "-0 and +0: the same"},
		{0x80000000, 0x80000000, 0x80000000, 0x80000000, "-0 twice: -0"},
		{0x7f800000, 0xff800000, 0x7f800000, 0xff800000, "the infinities"},
		{0xff800000, 0x7fbadbad, 0xff800000, 0xff800000, "-Inf and the poison: -Inf"},
	} {
		require.Equal(t, tc.max, extremeWant(true, tc.a, tc.b), tc.why)
		require.Equal(t, tc.min, extremeWant(false, tc.a, tc.b), tc.why)
	}
	var in []uint32
	for _, a := range extremeValues {
		for _, b := range extremeValues {
			in = append(in, a, b)
		}
	}
	out := runDeviceHdr(t, bin, in, "extreme")
	require.Len(t, out, 4*len(in))
	for i := 0; i < len(in); i += 2 {
		a, b := in[i], in[i+1]
		gotMax, gotMin := binary.LittleEndian.Uint32(out[4*i:]), binary.LittleEndian.Uint32(out[4*i+4:])
		require.Equal(t, fmt.Sprintf("%#08x", extremeWant(true, a, b)), fmt.Sprintf("%#08x", gotMax), "artest_max_f32(%#08x, %#08x)", a, b)
		require.Equal(t, fmt.Sprintf("%#08x", extremeWant(false, a, b)), fmt.Sprintf("%#08x", gotMin), "artest_min_f32(%#08x, %#08x)", a, b)
	}
}

// A reduction in rank order in fp32 with the helpers, rounded once, passes
// artest's own check (reference.Check) for every dtype, op and input kind,
// special inputs included, and its max and min give the very bits the
// reference expects (its Bits, where either zero or a NaN is also right;
// where only a NaN is, any NaN).
func testReductions(t *testing.T, bin string) {
	const count = 4096 // 32 cycles of the special layout's 16 tiles of 8
	for _, kind := range []reference.InputKind{reference.Special, reference.Random, reference.Exact} {
		for _, d := range reference.DTypes {
			for _, op := range reference.Ops {
				for _, n := range []int{1, 2, 3, 8} {
					for iter := range 2 {
						spec := reference.CheckSpec{Gen: reference.Gen{Seed: 46, Kind: kind, DType: d}, Op: op, NRanks: n,
							Iter: iter, Order: reference.OrderRankAscendingF32}
						in := make([]uint32, 0, count*n)
						for i := range uint64(count) {
							for r := range n {
								in = append(in, spec.Gen.Bits(r, iter, i))
							}
						}
						out := runDeviceHdr(t, bin, in, "reduce", strconv.Itoa(int(d)), strconv.Itoa(int(op)), strconv.Itoa(n))
						require.Len(t, out, 4*count)
						got := make([]byte, count*d.Size())
						for i := range count {
							d.SetBits(got, i, binary.LittleEndian.Uint32(out[4*i:]))
						}
						name := fmt.Sprintf("%s %s %s np%d iter %d", kind, d, op, n, iter)
						res := reference.Check(spec, got)
						require.True(t, res.OK(), "%s: %s", name, res)
						if op == reference.Sum {
							continue
						}
						for i := range uint64(count) {
							e := spec.Expect(i)
							if e.NaN {
								continue // any NaN (Check took it): one rank's input NaN at np1
							}
							if g, want := d.GetBits(got, int(i)), e.Bits; g != want {
								ins := in[int(i)*n : int(i+1)*n]
								t.Fatalf("%s element %d: got %s, the reference's bits %s; inputs %s",
									name, i, d.Describe(g), d.Describe(want), reference.DescribeInputs(d, ins))
							}
						}
					}
				}
			}
		}
	}
}

// hostBuildMarker heads the fenced block in plugin/README.md that holds the
// documented host build command.
const hostBuildMarker = "<!-- host build: internal/plugin/devicehdr_test.go runs this line -->"

// documentedHostBuild returns the command of the marked block: one line,
// building x.so from x.c.
func documentedHostBuild(t *testing.T) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join("..", "..", "plugin", "README.md"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(readme), hostBuildMarker+"\n")
	require.True(t, ok, "plugin/README.md has no line %q", hostBuildMarker)
	sc := bufio.NewScanner(strings.NewReader(after))
	require.True(t, sc.Scan())
	require.True(t, strings.HasPrefix(sc.Text(), "```"), "the marker is followed by a fenced block, not %q", sc.Text())
	var lines []string
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "```") {
		lines = append(lines, sc.Text())
	}
	require.Len(t, lines, 1, "the block holds one command line")
	args := strings.Fields(lines[0])
	require.Contains(t, args, "x.c")
	require.Contains(t, args, "x.so")
	return args
}

// libmPlugin is the smallest plugin that calls libm, as a kernel author's
// first host plugin does (fmaxf for max).
const libmPlugin = `#include <math.h>
#include "artest_plugin.h"
static volatile float a = 1.0f, b = 2.0f;
static int setup(const artest_world *w) { (void)w; return fmaxf(a, b) == fminf(b, a) ? ARTEST_ERROR : ARTEST_OK; }
static int allreduce(const artest_call *c) { (void)c; return ARTEST_OK; }
static const artest_variant variants[] = {{.name = "v", .dtypes = 1, .ops = 1, .min_ranks = 1, .max_ranks = 2}};
static const artest_plugin plugin = {.abi_version = ARTEST_PLUGIN_ABI_VERSION, .nvariants = 1, .name = "libm",
	.variants = variants, .setup = setup, .allreduce = allreduce};
const artest_plugin *artest_plugin_v1(void) { return &plugin; }
`

// The host build line plugin/README.md documents links the example plugin
// and one that calls libm (fmaxf, fminf), from the repository root, and
// artest loads what it built.
func TestDocumentedHostBuildLinks(t *testing.T) {
	args := documentedHostBuild(t)
	cc, err := exec.LookPath(args[0])
	require.NoError(t, err, "the documented compiler %s", args[0])
	dir := t.TempDir()
	libm := filepath.Join(dir, "libm.c")
	require.NoError(t, os.WriteFile(libm, []byte(libmPlugin), 0o644))
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	for _, tc := range []struct{ src, name string }{
		{filepath.Join("plugin", "example", "host_oneshot.c"), "example"},
		{libm, "libm"},
	} {
		out := filepath.Join(dir, tc.name+".so")
		cmd := make([]string, len(args)-1)
		for i, a := range args[1:] {
			switch a {
			case "x.c":
				a = tc.src
			case "x.so":
				a = out
			}
			cmd[i] = a
		}
		c := exec.Command(cc, cmd...)
		c.Dir = root
		msg, err := c.CombinedOutput()
		require.NoError(t, err, "the documented build of %s (%s %s):\n%s", tc.src, args[0], strings.Join(cmd, " "), msg)
		p, err := Load(out)
		require.NoError(t, err)
		require.Equal(t, tc.name, p.Name)
	}
}
