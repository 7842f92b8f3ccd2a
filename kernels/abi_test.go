package kernels

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/hostcxx"
	"github.com/artest/artest/kernels/internal/cconst"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// The CUDA side of the kernel ABI lives in two headers (signal.cuh and
// abi.cuh); this file checks them against the Go side without a GPU or a
// CUDA toolkit: every constant by name and value (derived from the Go
// declarations, so a constant added in Go without its C twin fails), and
// the ArtestArgs struct field by field, with offsets computed the way a C
// compiler lays out a naturally aligned struct.
// Where a host C++ compiler exists, a second test lets it compute the offsets
// and the flag formula for real.

const (
	signalHeader = "device/signal.cuh"
	abiHeader    = "device/abi.cuh"
)

// Prefixes of C constants that must each have a Go twin.
var checkedCPrefixes = []string{"SIG_", "INJECT_", "FLAG_", "DTYPE_", "OP_"}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestHeadersMatchGo(t *testing.T) {
	sig, abi := readFile(t, signalHeader), readFile(t, abiHeader)
	want := goABIConstants(t)
	require.NoError(t, checkHeaders(sig, abi, want))
}

// TestCheckHeadersRejectsDrift proves the check can fail: each case alters
// one thing in a copy of the real headers, and the check must reject it.
func TestCheckHeadersRejectsDrift(t *testing.T) {
	sig, abi := readFile(t, signalHeader), readFile(t, abiHeader)
	want := goABIConstants(t)

	cases := []struct {
		name    string
		inSig   bool // alter signal.cuh, else abi.cuh
		old     string
		new     string
		errPart string
	}{
		{"constant value", true, "SIG_OFF_DIAG = 128u", "SIG_OFF_DIAG = 132u", "SIG_OFF_DIAG"},
		{"derived constant", true, "SIG_OFF_EPOCH + 8u * SIG_MAX_BLOCKS", "SIG_OFF_EPOCH + 16u * SIG_MAX_BLOCKS", "SIG_OFF_FLAGS"},
		{"missing constant", true, "constexpr uint32_t SIG_OFF_RANK = 8u;", "", "SIG_OFF_RANK"},
		{"inject bit", false, "INJECT_OVERRUN = 1u << 4", "INJECT_OVERRUN = 1u << 7", "INJECT_OVERRUN"},
		{"missing inject bit", false, "constexpr uint32_t INJECT_NO_MID_BARRIER = 1u << 5;", "", "INJECT_NO_MID_BARRIER"},
		{"constant without Go twin", false, "constexpr uint32_t FLAG_IN_PLACE = 1u << 0;",
			"constexpr uint32_t FLAG_IN_PLACE = 1u << 0;\nconstexpr uint32_t FLAG_BOGUS = 1u << 3;", "FLAG_BOGUS"},
		{"dtype number", false, "DTYPE_BF16 = 2u", "DTYPE_BF16 = 3u", "DTYPE_BF16"},
		{"op number", false, "OP_MIN = 2u", "OP_MIN = 0u", "OP_MIN"},
		{"field order", false, "  uint32_t inject;      // INJECT_* bits\n  uint32_t delay_rank;",
			"  uint32_t delay_rank;\n  uint32_t inject;", "field 7 (C delay_rank, Go Inject)"},
		{"field name", false, "  uint32_t nranks;", "  uint32_t n_ranks;", "want C name nranks"},
		{"field width", false, "  uint32_t flags; ", "  uint64_t flags; ", "flags"},
		{"array length", false, "peer_stage[SIG_MAX_RANKS]", "peer_stage[8]", "peer_stage"},
		{"extra field", false, "  uint64_t stage_bytes;", "  uint32_t pad;\n  uint64_t stage_bytes;", "field"},
		{"asserted size", false, "sizeof(ArtestArgs) == 536", "sizeof(ArtestArgs) == 544", "static_assert"},
		{"tag array length", false, "peer_tag[SIG_MAX_RANKS]", "peer_tag[8]", "peer_tag"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c := sig, abi
			target := &c
			if tc.inSig {
				target = &s
			}
			require.Contains(t, *target, tc.old, "mutation no longer applies; update the test")
			*target = strings.Replace(*target, tc.old, tc.new, 1)
			err := checkHeaders(s, c, want)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.errPart)
		})
	}
}

// checkHeaders compares the constants and the ArtestArgs struct of the two
// headers with the Go side; it returns every difference in one error.
func checkHeaders(sigText, abiText string, want map[string]uint64) error {
	got, err := cconst.FromC(sigText + "\n" + abiText)
	if err != nil {
		return err
	}
	var problems []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: missing in the headers (Go value %d)", name, w))
		case g != w:
			problems = append(problems, fmt.Sprintf("%s = %d in the headers, %d in Go", name, g, w))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && hasAnyPrefix(name, checkedCPrefixes) {
			problems = append(problems, fmt.Sprintf("%s: no Go counterpart", name))
		}
	}
	fields, err := parseCStruct(abiText, "ArtestArgs", got)
	if err != nil {
		return err
	}
	problems = append(problems, compareStruct(fields, reflect.TypeOf(Args{}))...)
	problems = append(problems, checkAssertedSize(abiText, "ArtestArgs", reflect.TypeOf(Args{}).Size())...)
	if len(problems) > 0 {
		return fmt.Errorf("kernel ABI differs between Go and the CUDA headers:\n  %s", strings.Join(problems, "\n  "))
	}
	return nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// goABIConstants is what the headers must define: C name -> value, taken
// from the Go declarations themselves so that a new Go constant needs a C
// twin (and this test says so).
func goABIConstants(t *testing.T) map[string]uint64 {
	t.Helper()
	want := map[string]uint64{}
	sig, err := cconst.FromGoFile(filepath.Join("..", "sigblock", "layout.go"))
	require.NoError(t, err)
	require.NotEmpty(t, sig)
	for name, v := range sig {
		want["SIG_"+upperSnake(name)] = v
	}
	abi, err := cconst.FromGoFile("abi.go")
	require.NoError(t, err)
	var bits int
	for name, v := range abi {
		if strings.HasPrefix(name, "Inject") || strings.HasPrefix(name, "Flag") {
			want[upperSnake(name)] = v
			bits++
		}
	}
	require.NotZero(t, bits, "no Inject*/Flag* constants found in abi.go")
	for _, d := range reference.DTypes {
		want["DTYPE_"+strings.ToUpper(d.String())] = uint64(d)
	}
	for _, o := range reference.Ops {
		want["OP_"+strings.ToUpper(o.String())] = uint64(o)
	}
	// Spot checks that the derived names point at the right Go values.
	require.Equal(t, uint64(sigblock.OffFlags), want["SIG_OFF_FLAGS"])
	require.Equal(t, uint64(sigblock.OffNRanks), want["SIG_OFF_NRANKS"])
	require.Equal(t, uint64(InjectNoMidBarrier), want["INJECT_NO_MID_BARRIER"])
	require.Equal(t, uint64(FlagInPlace), want["FLAG_IN_PLACE"])
	return want
}

// upperSnake turns a Go name into the C constant name convention:
// OffTraceVariant -> OFF_TRACE_VARIANT, OffNRanks -> OFF_NRANKS. An
// underscore goes only where an upper-case letter follows a lower-case
// letter or a digit, so acronyms stay in one piece.
func upperSnake(name string) string {
	return strings.ToUpper(lowerSnake(name))
}

// lowerSnake is the C field name convention: PeerIn -> peer_in,
// NRanks -> nranks, VariantID -> variant_id, Param0 -> param0.
func lowerSnake(name string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range name {
		if unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
		prev = r
	}
	return b.String()
}

var cLineCommentR = regexp.MustCompile(`//[^\n]*`)

// cField is one member of a C struct as laid out by a C compiler.
type cField struct {
	name     string
	ctype    string
	elemSize uintptr
	length   int // 0: not an array
	offset   uintptr
}

var cTypeSizes = map[string]uintptr{
	"uint8_t": 1, "int8_t": 1, "uint16_t": 2, "int16_t": 2,
	"uint32_t": 4, "int32_t": 4, "float": 4,
	"uint64_t": 8, "int64_t": 8, "double": 8,
}

var cFieldRe = regexp.MustCompile(`^(\w+)\s+(\w+)\s*(?:\[\s*(\w+)\s*\])?$`)

// parseCStruct reads `struct name { ... };` and lays its fields out with
// natural alignment (each field at a multiple of its element size), which is
// what nvcc and g++ do for these types.
func parseCStruct(text, name string, consts map[string]uint64) ([]cField, error) {
	text = cLineCommentR.ReplaceAllString(text, "")
	start := regexp.MustCompile(`struct\s+` + name + `\s*\{`).FindStringIndex(text)
	if start == nil {
		return nil, fmt.Errorf("struct %s not found", name)
	}
	body := text[start[1]:]
	end := strings.Index(body, "};")
	if end < 0 {
		return nil, fmt.Errorf("struct %s: no closing brace", name)
	}
	var fields []cField
	var off uintptr
	for _, decl := range strings.Split(body[:end], ";") {
		decl = strings.Join(strings.Fields(decl), " ")
		if decl == "" {
			continue
		}
		m := cFieldRe.FindStringSubmatch(decl)
		if m == nil {
			return nil, fmt.Errorf("struct %s: cannot parse member %q", name, decl)
		}
		size, ok := cTypeSizes[m[1]]
		if !ok {
			return nil, fmt.Errorf("struct %s: member %s has unsupported type %s", name, m[2], m[1])
		}
		f := cField{name: m[2], ctype: m[1], elemSize: size}
		if m[3] != "" {
			n, err := strconv.ParseUint(m[3], 0, 32)
			if err != nil {
				v, ok := consts[m[3]]
				if !ok {
					return nil, fmt.Errorf("struct %s: array length %s of %s is unknown", name, m[3], m[2])
				}
				n = v
			}
			f.length = int(n)
		}
		off = (off + size - 1) / size * size
		f.offset = off
		off += size * uintptr(max(f.length, 1))
		fields = append(fields, f)
	}
	return fields, nil
}

// cStructSize rounds the end of the last field up to the largest alignment.
func cStructSize(fields []cField) uintptr {
	var end, align uintptr = 0, 1
	for _, f := range fields {
		end = f.offset + f.elemSize*uintptr(max(f.length, 1))
		align = max(align, f.elemSize)
	}
	return (end + align - 1) / align * align
}

var goKindForC = map[string]reflect.Kind{
	"uint8_t": reflect.Uint8, "int8_t": reflect.Int8, "uint16_t": reflect.Uint16, "int16_t": reflect.Int16,
	"uint32_t": reflect.Uint32, "int32_t": reflect.Int32, "float": reflect.Float32,
	"uint64_t": reflect.Uint64, "int64_t": reflect.Int64, "double": reflect.Float64,
}

// compareStruct checks the C fields against the Go struct: names (by the
// lowerSnake convention), order, element kinds, array lengths, offsets and
// the total size.
func compareStruct(fields []cField, gt reflect.Type) []string {
	var problems []string
	if len(fields) != gt.NumField() {
		problems = append(problems, fmt.Sprintf("ArtestArgs has %d fields, kernels.Args %d", len(fields), gt.NumField()))
	}
	for i := 0; i < min(len(fields), gt.NumField()); i++ {
		c, g := fields[i], gt.Field(i)
		at := fmt.Sprintf("field %d (C %s, Go %s)", i, c.name, g.Name)
		if c.name != lowerSnake(g.Name) {
			problems = append(problems, fmt.Sprintf("%s: names differ (want C name %s)", at, lowerSnake(g.Name)))
		}
		elem, length := g.Type, 0
		if elem.Kind() == reflect.Array {
			elem, length = elem.Elem(), elem.Len()
		}
		if goKindForC[c.ctype] != elem.Kind() {
			problems = append(problems, fmt.Sprintf("%s: C type %s, Go type %s", at, c.ctype, g.Type))
		}
		if c.length != length {
			problems = append(problems, fmt.Sprintf("%s: C array length %d, Go %d", at, c.length, length))
		}
		if c.offset != g.Offset {
			problems = append(problems, fmt.Sprintf("%s: C offset %d, Go offset %d", at, c.offset, g.Offset))
		}
	}
	if cs := cStructSize(fields); cs != gt.Size() {
		problems = append(problems, fmt.Sprintf("sizeof(ArtestArgs) %d, kernels.Args %d", cs, gt.Size()))
	}
	return problems
}

// checkAssertedSize compares the header's static_assert on the struct size
// (which nvcc enforces against its own layout) with the Go size.
func checkAssertedSize(text, name string, goSize uintptr) []string {
	m := regexp.MustCompile(`static_assert\(\s*sizeof\(` + name + `\)\s*==\s*(\d+)`).FindStringSubmatch(text)
	if m == nil {
		return []string{fmt.Sprintf("no static_assert on sizeof(%s)", name)}
	}
	if n, _ := strconv.ParseUint(m[1], 10, 64); uintptr(n) != goSize {
		return []string{fmt.Sprintf("static_assert says sizeof(%s) == %d, kernels.Args is %d bytes", name, n, goSize)}
	}
	return nil
}

// TestHeadersWithHostCompiler lets a real C++ compiler lay out ArtestArgs and
// evaluate sig_flag_offset, sig_epoch_offset and sig_reached, and compares
// the results with Go. Skipped where no host C++ compiler is installed.
func TestHeadersWithHostCompiler(t *testing.T) {
	abi := readFile(t, abiHeader)
	consts, err := cconst.FromC(readFile(t, signalHeader) + "\n" + abi)
	require.NoError(t, err)
	fields, err := parseCStruct(abi, "ArtestArgs", consts)
	require.NoError(t, err)

	var prog strings.Builder
	prog.WriteString("#include <cstddef>\n#include <cstdio>\n#include \"device/abi.cuh\"\nint main() {\n")
	prog.WriteString("  std::printf(\"size %zu\\n\", sizeof(ArtestArgs));\n")
	for _, f := range fields {
		fmt.Fprintf(&prog, "  std::printf(\"field %s %%zu\\n\", offsetof(ArtestArgs, %s));\n", f.name, f.name)
	}
	prog.WriteString(`  for (unsigned ph = 0; ph < SIG_NUM_PHASES; ++ph)
    for (unsigned b = 0; b < SIG_MAX_BLOCKS; ++b)
      for (unsigned p = 0; p < SIG_MAX_RANKS; ++p)
        std::printf("flag %u %u %u %u\n", ph, b, p, sig_flag_offset(ph, b, p));
  for (unsigned b = 0; b < SIG_MAX_BLOCKS; ++b) std::printf("epoch %u %u\n", b, sig_epoch_offset(b));
  const unsigned vals[] = {0u, 1u, 2u, 0x7fffffffu, 0x80000000u, 0x80000001u, 0xfffffffeu, 0xffffffffu};
  for (unsigned s : vals)
    for (unsigned w : vals) std::printf("reached %u %u %d\n", s, w, sig_reached(s, w) ? 1 : 0);
  return 0;
}
`)
	out := hostcxx.Output(t, prog.String(), ".")

	gt := reflect.TypeOf(Args{})
	var flags, epochs, reached int
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		num := func(i int) uint64 {
			v, err := strconv.ParseUint(f[i], 10, 64)
			require.NoError(t, err, "line %q", sc.Text())
			return v
		}
		switch f[0] {
		case "size":
			require.Equal(t, uint64(gt.Size()), num(1), "sizeof(ArtestArgs)")
		case "field":
			g, ok := gt.FieldByNameFunc(func(n string) bool { return lowerSnake(n) == f[1] })
			require.True(t, ok, "C field %s has no Go field", f[1])
			require.Equal(t, uint64(g.Offset), num(2), "offset of %s", f[1])
		case "flag":
			require.Equal(t, uint64(sigblock.FlagOffset(int(num(1)), int(num(2)), int(num(3)))), num(4), "flag offset %v", f[1:4])
			flags++
		case "epoch":
			require.Equal(t, uint64(sigblock.EpochOffset(int(num(1)))), num(2), "epoch offset of block %s", f[1])
			epochs++
		case "reached":
			require.Equal(t, sigblock.Reached(uint32(num(1)), uint32(num(2))), num(3) == 1, "reached(%s, %s)", f[1], f[2])
			reached++
		default:
			t.Fatalf("unexpected line %q", sc.Text())
		}
	}
	require.Equal(t, sigblock.NumPhases*sigblock.MaxBlocks*sigblock.MaxRanks, flags)
	require.Equal(t, sigblock.MaxBlocks, epochs)
	require.Equal(t, 64, reached)
}
