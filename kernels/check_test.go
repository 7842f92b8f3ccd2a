package kernels

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/hostcxx"
	"github.com/artest/artest/reference"
)

// The device checker's arithmetic (check.cuh) is compared with the Go
// reference without a GPU: a host C++ compiler builds testdata/checkhost.cc
// around the very header artest_check runs, and the tests drive it over a
// pipe. Without a compiler they skip, unless ARTEST_REQUIRE_CXX is set (make
// test sets it, after checking that g++ exists), where they fail.

const checkHeader = "harness/check.cuh"

// cxx is the host C++ compiler, or a skip (a failure under
// ARTEST_REQUIRE_CXX).
func cxx(t *testing.T) string { return hostcxx.Find(t) }

// buildCheckHost compiles checkhost with the given -D defines into dir.
func buildCheckHost(t *testing.T, dir string, defines ...string) string {
	t.Helper()
	cc := cxx(t)
	incl, err := filepath.Abs(".")
	require.NoError(t, err)
	bin := filepath.Join(dir, "checkhost"+strings.Join(defines, ""))
	// -ffp-contract=off: the host side must not fuse a*b+c either (x86-64
	// without -mfma cannot, but another host might).
	args := []string{"-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-ffp-contract=off", "-I", incl}
	for _, d := range defines {
		args = append(args, "-D"+d)
	}
	args = append(args, "-o", bin, filepath.Join("testdata", "checkhost.cc"))
	out, err := exec.Command(cc, args...).CombinedOutput()
	require.NoError(t, err, "compile checkhost with %s:\n%s", cc, out)
	return bin
}

var checkHostBin struct {
	once sync.Once
	dir  string
	path string
}

// checkHostPath builds the unplanted checkhost once per test binary.
func checkHostPath(t *testing.T) string {
	t.Helper()
	cxx(t)
	checkHostBin.once.Do(func() {
		dir, err := os.MkdirTemp("", "artest-checkhost-")
		require.NoError(t, err)
		checkHostBin.dir = dir
		checkHostBin.path = buildCheckHost(t, dir)
	})
	require.NotEmpty(t, checkHostBin.path, "checkhost did not build (see the first test that tried)")
	return checkHostBin.path
}

func TestMain(m *testing.M) {
	code := m.Run()
	if checkHostBin.dir != "" {
		os.RemoveAll(checkHostBin.dir)
	}
	os.Exit(code)
}

// hostChecker is a running checkhost.
type hostChecker struct {
	cmd *exec.Cmd
	in  *bufio.Writer
	out *bufio.Reader
}

func startHostChecker(t *testing.T, bin string) *hostChecker {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	require.NoError(t, err)
	r, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	h := &hostChecker{cmd: cmd, in: bufio.NewWriter(w), out: bufio.NewReaderSize(r, 1<<16)}
	t.Cleanup(func() {
		w.Close()
		_ = cmd.Wait()
	})
	return h
}

func (h *hostChecker) request(line string, payload []byte) error {
	if _, err := h.in.WriteString(line + "\n"); err != nil {
		return fmt.Errorf("checkhost request %q: %w", line, err)
	}
	if _, err := h.in.Write(payload); err != nil {
		return fmt.Errorf("checkhost payload of %q: %w", line, err)
	}
	if err := h.in.Flush(); err != nil {
		return fmt.Errorf("checkhost request %q: %w", line, err)
	}
	return nil
}

func (h *hostChecker) read(n int) ([]byte, error) {
	b := make([]byte, n)
	if _, err := io.ReadFull(h.out, b); err != nil {
		return nil, fmt.Errorf("checkhost answer of %d bytes: %w", n, err)
	}
	return b, nil
}

// gen is reference.Gen.Fill as check.cuh computes it.
func (h *hostChecker) gen(g reference.Gen, rank, iter int, first uint64, count int) ([]byte, error) {
	if err := h.request(fmt.Sprintf("gen %d %d %d %d %d %d %d", g.DType, g.Kind, g.Seed, rank, iter, first, count), nil); err != nil {
		return nil, err
	}
	return h.read(count * g.DType.Size())
}

// expect is CheckSpec.Expect for count elements from spec.First.
func (h *hostChecker) expect(spec reference.CheckSpec, count int) ([]reference.Expectation, error) {
	if err := h.request("expect "+specWords(spec, count), nil); err != nil {
		return nil, err
	}
	b, err := h.read(24 * count)
	if err != nil {
		return nil, err
	}
	out := make([]reference.Expectation, count)
	for i := range out {
		r := b[24*i:]
		out[i] = reference.Expectation{
			BitExact: binary.LittleEndian.Uint32(r) == 1, Bits: binary.LittleEndian.Uint32(r[4:]),
			Value: math.Float64frombits(binary.LittleEndian.Uint64(r[8:])),
			Bound: math.Float64frombits(binary.LittleEndian.Uint64(r[16:])),
		}
	}
	return out, nil
}

// hostVerdict is check.cuh's verdict on an output buffer: the wrong count
// and the lowest wrong elements.
type hostVerdict struct {
	wrong  uint64
	listed []CheckRecord
}

func (h *hostChecker) check(spec reference.CheckSpec, got []byte) (hostVerdict, error) {
	count := len(got) / spec.Gen.DType.Size()
	if err := h.request("check "+specWords(spec, count), got); err != nil {
		return hostVerdict{}, err
	}
	head, err := h.read(16)
	if err != nil {
		return hostVerdict{}, err
	}
	v := hostVerdict{wrong: binary.LittleEndian.Uint64(head)}
	n := int(binary.LittleEndian.Uint64(head[8:]))
	b, err := h.read(24 * n)
	if err != nil {
		return hostVerdict{}, err
	}
	for i := 0; i < n; i++ {
		r := b[24*i:]
		v.listed = append(v.listed, CheckRecord{Index: binary.LittleEndian.Uint64(r), Got: binary.LittleEndian.Uint32(r[8:]),
			Want: binary.LittleEndian.Uint32(r[12:]), RefBits: binary.LittleEndian.Uint64(r[16:])})
	}
	return v, nil
}

func (h *hostChecker) convert(what string, in []uint32) ([]uint32, error) {
	payload := make([]byte, 4*len(in))
	for i, v := range in {
		binary.LittleEndian.PutUint32(payload[4*i:], v)
	}
	if err := h.request(fmt.Sprintf("convert %s %d", what, len(in)), payload); err != nil {
		return nil, err
	}
	b, err := h.read(4 * len(in))
	if err != nil {
		return nil, err
	}
	out := make([]uint32, len(in))
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out, nil
}

func specWords(s reference.CheckSpec, count int) string {
	return fmt.Sprintf("%d %d %d %d %d %d %d %d %d", s.Gen.DType, s.Op, s.Order, s.Gen.Kind, s.NRanks, s.Gen.Seed, s.Iter, s.First, count)
}

// agreeGen compares check.cuh's inputs with Gen.Fill for every rank below
// maxRank.
func agreeGen(h *hostChecker, g reference.Gen, iter int, first uint64, count, maxRank int) error {
	for rank := 0; rank < maxRank; rank++ {
		got, err := h.gen(g, rank, iter, first, count)
		if err != nil {
			return err
		}
		want := make([]byte, count*g.DType.Size())
		g.Fill(want, rank, iter, first)
		if !bytes.Equal(got, want) {
			for i := 0; i < count; i++ {
				if a, b := g.DType.GetBits(got, i), g.DType.GetBits(want, i); a != b {
					return fmt.Errorf("device checker disagrees with the Go reference: input of rank %d, %v %v iter %d element %d: %#x, Go %#x",
						rank, g.Kind, g.DType, iter, first+uint64(i), a, b)
				}
			}
		}
	}
	return nil
}

// agreeSpec compares check.cuh with the reference on count elements of
// spec: every expectation, then the verdict on an output that is right
// except for planted wrong elements (poison, a NaN, a sign flip, and every
// value within two ulps of the expectation).
func agreeSpec(h *hostChecker, spec reference.CheckSpec, count int) error {
	d := spec.Gen.DType
	got, err := h.expect(spec, count)
	if err != nil {
		return err
	}
	out := make([]byte, count*d.Size())
	for i := range got {
		index := spec.First + uint64(i)
		want := spec.Expect(index)
		g := got[i]
		same := g.BitExact == want.BitExact && math.Float64bits(g.Value) == math.Float64bits(want.Value) &&
			math.Float64bits(g.Bound) == math.Float64bits(want.Bound) && (!want.BitExact || g.Bits == want.Bits)
		if !same {
			return fmt.Errorf("device checker disagrees with the Go reference: %s element %d: expects %+v, Go %+v", specName(spec), index, g, want)
		}
		d.SetBits(out, i, want.Bits)
	}
	// Planted wrong (or, under a bound, perhaps right) elements.
	plant := func(i int, bits uint32) {
		if i < count {
			d.SetBits(out, i, bits)
		}
	}
	mask := uint32(1)<<(8*d.Size()) - 1
	plant(0, reference.PoisonBits(d))
	if count > 1 {
		plant(1, d.GetBits(out, 1)^(1<<(8*d.Size()-1))) // sign flip
	}
	if count > 2 {
		plant(2, d.FromF32(float32(math.NaN())))
	}
	for k, delta := range []int32{-2, -1, 1, 2} {
		if i := 3 + k; i < count {
			plant(i, uint32(int32(d.GetBits(out, i))+delta)&mask)
		}
	}
	want := reference.Check(spec, out)
	v, err := h.check(spec, out)
	if err != nil {
		return err
	}
	if v.wrong != want.Wrong {
		return fmt.Errorf("device checker disagrees with the Go reference: %s: %d wrong, Go %d (%s)", specName(spec), v.wrong, want.Wrong, want)
	}
	for i, m := range want.First {
		if i >= len(v.listed) {
			return fmt.Errorf("device checker disagrees with the Go reference: %s: lists %d wrong elements, Go %d", specName(spec), len(v.listed), len(want.First))
		}
		l := v.listed[i]
		refOK := spec.BitExact() && l.Want == m.WantBits || !spec.BitExact() && l.Ref() == m.Want
		if l.Index != m.Index || l.Got != m.GotBits || !refOK {
			return fmt.Errorf("device checker disagrees with the Go reference: %s: wrong element %d is [%d] got %#x want %#x ref %v, Go [%d] got %#x want %#x ref %v",
				specName(spec), i, l.Index, l.Got, l.Want, l.Ref(), m.Index, m.GotBits, m.WantBits, m.Want)
		}
	}
	return nil
}

func specName(s reference.CheckSpec) string {
	return fmt.Sprintf("%v %v %v %v np%d seed %d iter %d first %d", s.Gen.Kind, s.Gen.DType, s.Op, s.Order, s.NRanks, s.Gen.Seed, s.Iter, s.First)
}

// agreementMatrix is the sweep: every dtype, op, input kind and order, over
// rank counts, iterations and first element indices (offsets into the
// message, up to past 2^40). full widens it (outside -short).
type agreementMatrix struct {
	ranks  []int
	places [][2]uint64 // {iter, first}
	count  int
}

func matrixFor(full bool) agreementMatrix {
	if full {
		m := agreementMatrix{count: 1024}
		for n := 1; n <= 16; n++ {
			m.ranks = append(m.ranks, n)
		}
		m.places = [][2]uint64{{0, 0}, {1, 1}, {2, 3}, {7, 4095}, {99, 1 << 20}, {12345, 1<<32 - 5}, {9999999, 1<<40 + 3}, {1<<31 - 1, 1<<62 + 11}}
		return m
	}
	return agreementMatrix{count: 64, ranks: []int{1, 2, 3, 4, 5, 8, 9, 16},
		places: [][2]uint64{{0, 0}, {1, 1}, {7, 4095}, {123456, 1<<40 + 3}}}
}

// agree runs the whole matrix and returns the first disagreements (at most
// a few, so that a planted bug's report stays short).
func agree(h *hostChecker, m agreementMatrix, seed uint64) error {
	var errs []error
	note := func(err error) bool {
		if err != nil {
			errs = append(errs, err)
		}
		return len(errs) < 4
	}
	for _, kind := range []reference.InputKind{reference.Random, reference.Exact} {
		for _, d := range reference.DTypes {
			g := reference.Gen{Seed: seed, Kind: kind, DType: d}
			for _, p := range m.places {
				if !note(agreeGen(h, g, int(p[0]), p[1], m.count, 16)) {
					return errors.Join(errs...)
				}
			}
			for _, op := range reference.Ops {
				for _, order := range []reference.Order{reference.OrderUnknown, reference.OrderRankAscendingF32} {
					for _, n := range m.ranks {
						for _, p := range m.places {
							spec := reference.CheckSpec{Gen: g, Op: op, NRanks: n, Iter: int(p[0]), Order: order, First: p[1]}
							if !note(agreeSpec(h, spec, m.count)) {
								return errors.Join(errs...)
							}
						}
					}
				}
			}
		}
	}
	return errors.Join(errs...)
}

// TestDeviceCheckerAgreesWithReference: check.cuh's inputs, expectations
// and verdicts equal the Go reference's bit for bit over the matrix (the
// full one outside -short), for two seeds.
func TestDeviceCheckerAgreesWithReference(t *testing.T) {
	h := startHostChecker(t, checkHostPath(t))
	m := matrixFor(!testing.Short())
	for _, seed := range []uint64{1, 0xdeadbeefcafef00d} {
		require.NoError(t, agree(h, m, seed), "seed %d", seed)
	}
}

// TestDeviceCheckerAgreementCatchesPlant proves the agreement test can
// fail: checkhost built with ARTEST_CHECK_PLANT decodes one field value in
// 256 to another input, and the sweep must say so for inputs and sums.
func TestDeviceCheckerAgreementCatchesPlant(t *testing.T) {
	cxx(t)
	h := startHostChecker(t, buildCheckHost(t, t.TempDir(), "ARTEST_CHECK_PLANT"))
	err := agree(h, matrixFor(false), 1)
	require.Error(t, err)
	require.Contains(t, err.Error(), "device checker disagrees with the Go reference: input of rank")

	// A check alone (no generator comparison) must fail too: the planted
	// input changes sums and extremes.
	errs := 0
	for _, kind := range []reference.InputKind{reference.Random, reference.Exact} {
		spec := reference.CheckSpec{Gen: reference.Gen{Seed: 1, Kind: kind, DType: reference.BF16}, Op: reference.Sum,
			NRanks: 8, Order: reference.OrderRankAscendingF32}
		if agreeSpec(h, spec, 1024) != nil {
			errs++
		}
	}
	require.Equal(t, 2, errs, "the planted input shows in both kinds' sums")
}

// TestDeviceCheckerConversions: check.cuh's f16 and bf16 rounding and f16
// widening equal the reference's for every f16 value, each float32 next to
// a 16-bit value or halfway between two, and random float32 bit patterns
// (every one of the 2^32 in TestDeviceCheckerConversionsAllInputs).
func TestDeviceCheckerConversions(t *testing.T) {
	h := startHostChecker(t, checkHostPath(t))
	var in []uint32
	for v := uint32(0); v < 1<<16; v++ {
		for _, w := range []uint32{math.Float32bits(reference.F16ToF32(uint16(v))), v << 16} {
			// The value, its neighbours, and the halfway points to the
			// next 16-bit value of either format.
			in = append(in, w, w-1, w+1, w+0x1000, w+0x8000, w+0x0fff, w+0x7fff)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		in = append(in, rng.Uint32())
	}
	for _, tc := range []struct {
		what string
		want func(uint32) uint32
	}{
		{"f16", func(b uint32) uint32 { return uint32(reference.F16FromF32(math.Float32frombits(b))) }},
		{"bf16", func(b uint32) uint32 { return uint32(reference.BF16FromF32(math.Float32frombits(b))) }},
	} {
		t.Run(tc.what, func(t *testing.T) {
			got, err := h.convert(tc.what, in)
			require.NoError(t, err)
			for i, b := range in {
				if w := tc.want(b); got[i] != w {
					require.Equal(t, w, got[i], "%s of float32 bits %#08x", tc.what, b)
				}
			}
		})
	}
	t.Run("f16tof32", func(t *testing.T) {
		all := make([]uint32, 1<<16)
		for i := range all {
			all[i] = uint32(i)
		}
		got, err := h.convert("f16tof32", all)
		require.NoError(t, err)
		for i, g := range got {
			if w := math.Float32bits(reference.F16ToF32(uint16(i))); g != w {
				require.Equal(t, w, g, "f16 %#04x", i)
			}
		}
	})
}

// TestDeviceCheckerConversionsAllInputs: f16 and bf16 rounding of every
// float32 bit pattern, compared through a digest (outside -short: tens of
// seconds on two cores).
func TestDeviceCheckerConversionsAllInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("2^32 conversions per format: make test-exhaustive")
	}
	h := startHostChecker(t, checkHostPath(t))
	require.NoError(t, h.request("digest", nil))
	b, err := h.read(16)
	require.NoError(t, err)
	const basis, prime = 0xcbf29ce484222325, 0x100000001b3 // FNV-1a, 64 bits
	fnv := func(h uint64, v uint32) uint64 {
		for i := 0; i < 4; i++ {
			h = (h ^ uint64(v>>(8*i)&0xff)) * prime
		}
		return h
	}
	var f16, bf16 uint64 = basis, basis
	for x := uint64(0); x <= math.MaxUint32; x++ {
		f := math.Float32frombits(uint32(x))
		f16 = fnv(f16, uint32(reference.F16FromF32(f)))
		bf16 = fnv(bf16, uint32(reference.BF16FromF32(f)))
	}
	require.Equal(t, f16, binary.LittleEndian.Uint64(b), "f16 digest")
	require.Equal(t, bf16, binary.LittleEndian.Uint64(b[8:]), "bf16 digest")
}

// TestCheckABIWithHostCompiler lets a C++ compiler lay out the checker's
// three structs and compares every field's name, offset and size with the
// Go twins, and checks the constants the two sides share.
func TestCheckABIWithHostCompiler(t *testing.T) {
	cc := cxx(t)
	hdr := readFile(t, checkHeader)
	types := []struct {
		c   string
		goT reflect.Type
	}{
		{"ArtestCheckArgs", reflect.TypeOf(CheckArgs{})},
		{"ArtestCheckRecord", reflect.TypeOf(CheckRecord{})},
		{"ArtestCheckSlot", reflect.TypeOf(CheckSlot{})},
	}
	cName := func(goName string) string {
		switch goName {
		case "Records":
			return "rec"
		case "DType":
			return "dtype"
		case "NRanks":
			return "nranks"
		case "Iter0":
			return "iter0"
		}
		return lowerSnake(goName)
	}
	var prog strings.Builder
	prog.WriteString("#include <cstddef>\n#include <cstdio>\n#include \"harness/check.cuh\"\nint main() {\n")
	for _, ty := range types {
		// As many C fields as Go fields: one declaration per line.
		body := regexp.MustCompile(`(?s)struct ` + ty.c + ` \{(.*?)\};`).FindStringSubmatch(hdr)
		require.NotNil(t, body, "struct %s in %s", ty.c, checkHeader)
		decls := regexp.MustCompile(`(?m)^\s+\w+ \w+(\[\w+\])?;`).FindAllString(body[1], -1)
		require.Len(t, decls, ty.goT.NumField(), "%s: one C field per Go field", ty.c)
		fmt.Fprintf(&prog, "  std::printf(\"size %s %%zu\\n\", sizeof(%s));\n", ty.c, ty.c)
		for i := 0; i < ty.goT.NumField(); i++ {
			f := ty.goT.Field(i)
			fmt.Fprintf(&prog, "  std::printf(\"field %s %s %%zu %%zu\\n\", offsetof(%s, %s), sizeof(%s::%s));\n",
				ty.c, f.Name, ty.c, cName(f.Name), ty.c, cName(f.Name))
		}
	}
	prog.WriteString(`  std::printf("const %u %u %u %u %u %u\n", KIND_RANDOM, KIND_EXACT, ORDER_UNKNOWN, ORDER_RANK_ASCENDING_F32,
              ARTEST_CHECK_RECORDS, ARTEST_CHECK_THREADS);
  return 0;
}
`)
	dir := t.TempDir()
	src := filepath.Join(dir, "checkabi.cc")
	require.NoError(t, os.WriteFile(src, []byte(prog.String()), 0o644))
	bin := filepath.Join(dir, "checkabi")
	incl, err := filepath.Abs(".")
	require.NoError(t, err)
	out, err := exec.Command(cc, "-std=c++17", "-Wall", "-Werror", "-I", incl, "-o", bin, src).CombinedOutput()
	require.NoError(t, err, "compile check.cuh's structs with %s:\n%s", cc, out)
	out, err = exec.Command(bin).Output()
	require.NoError(t, err)
	byC := map[string]reflect.Type{}
	for _, ty := range types {
		byC[ty.c] = ty.goT
	}
	lines := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		num := func(i int) uint64 {
			v, err := strconv.ParseUint(f[i], 10, 64)
			require.NoError(t, err, "line %q", line)
			return v
		}
		switch f[0] {
		case "size":
			require.Equal(t, uint64(byC[f[1]].Size()), num(2), "sizeof(%s)", f[1])
		case "field":
			gf, ok := byC[f[1]].FieldByName(f[2])
			require.True(t, ok, line)
			require.Equal(t, [2]uint64{uint64(gf.Offset), uint64(gf.Type.Size())}, [2]uint64{num(3), num(4)}, "%s.%s: offset, size", f[1], f[2])
		case "const":
			require.Equal(t, []uint64{uint64(reference.Random), uint64(reference.Exact), uint64(reference.OrderUnknown),
				uint64(reference.OrderRankAscendingF32), CheckRecords, CheckThreads},
				[]uint64{num(1), num(2), num(3), num(4), num(5), num(6)}, "kinds, orders, records, threads")
		}
		lines++
	}
	fields := 0
	for _, ty := range types {
		fields += ty.goT.NumField()
	}
	require.Equal(t, len(types)+fields+1, lines, "every size, every field and the constants printed")

	cu := readFile(t, "harness/check.cu")
	require.Regexp(t, `extern "C" __global__ void __launch_bounds__\(ARTEST_CHECK_THREADS\)\s+`+CheckKernel+`\(`, cu)
	for _, ty := range types {
		require.Regexp(t, `sizeof\(`+ty.c+`\) == `+strconv.Itoa(int(ty.goT.Size())), hdr, "the static_assert nvcc enforces")
	}
}

// TestCheckGrid: one block row per slot, at least one block per slot, no
// more blocks than elements need, and at most checkMaxBlocks in all where
// the slots allow it.
func TestCheckGrid(t *testing.T) {
	for _, tc := range []struct {
		count uint64
		slots int
		x, y  uint32
	}{
		{1, 1, 1, 1},
		{256, 1, 1, 1},
		{257, 1, 2, 1},
		{64 << 20, 1, checkMaxBlocks, 1},
		{32 << 10, 1024, 8, 1024},  // 64 KiB bf16, a full batch: 8 blocks per slot
		{1 << 20, 16384, 1, 16384}, // more slots than blocks: one each
		{2050, 4, 9, 4},            // 2050 elements need 9 blocks
		{100 << 20, 3, 2730, 3},    // 8192/3 per slot
	} {
		x, y := CheckGrid(tc.count, tc.slots)
		require.Equal(t, [2]uint32{tc.x, tc.y}, [2]uint32{x, y}, "count %d, %d slots", tc.count, tc.slots)
	}
}
