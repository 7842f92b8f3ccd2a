package tune

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/hostcxx"
	"github.com/artest/artest/kernels"
)

// The Go table must compile beside kernels/tunedtable.go (the types): the
// test builds a module of the two files alone and vets it.
func TestGoSourceCompiles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table kernels.TunedTable
	}{
		{"measured", sampleTable().Tuned()},
		{"empty", (&Table{}).Tuned()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := GoSource(tc.table, builtins)
			require.NoError(t, err)
			_, err = parser.ParseFile(token.NewFileSet(), "tuned.go", src, parser.ParseComments)
			require.NoError(t, err)
			require.Contains(t, string(src), "var Tuned = TunedTable{")
			goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
			if _, err := os.Stat(goBin); err != nil {
				t.Skipf("no go tool at %s: parsed only", goBin)
			}
			dir := t.TempDir()
			types, err := os.ReadFile("../../kernels/tunedtable.go")
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tunedcheck\n\ngo 1.21\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "tunedtable.go"), types, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "tuned.go"), src, 0o644))
			cmd := exec.Command(goBin, "vet", ".")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOPROXY=off", "GOWORK=off")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "go vet of the emitted table:\n%s\n%s", out, src)
		})
	}
}

// What the checked-in kernels/tuned.go holds must be in the shape GoSource
// writes, so a measured table replaces it as a whole.
func TestCheckedInTableIsInTheEmittedShape(t *testing.T) {
	src, err := os.ReadFile("../../kernels/tuned.go")
	require.NoError(t, err)
	require.Contains(t, string(src), "var Tuned = TunedTable{")
}

// The header compiles as C++17 and its best() picks the bucket that holds
// a size, falling back to the largest (checked at compile time).
func TestHeaderCompiles(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteHeader(&b, sampleTable().Tuned(), builtins))
	h := b.String()
	require.Contains(t, h, "constexpr std::array<Launch, 2> kBest{{")
	require.Contains(t, h, "constexpr std::array<Launch, 4> kPerVariant{{")
	require.Contains(t, h, `{2, "bf16", true, 1048576ull, 0x54u, "ring", 8, 512, {8u, 65536u, 8u, 0u}, 15.00, 30.00},  // 1MiB lanes=8 slot-bytes=65536 slots=8`)
	require.Contains(t, h, "//   nccl:    2.28.9")
	for _, line := range strings.Split(h, "\n") {
		require.Equal(t, strings.TrimRight(line, " "), line, "trailing space")
	}

	var empty bytes.Buffer
	require.NoError(t, WriteHeader(&empty, (&Table{}).Tuned(), builtins))
	require.Contains(t, empty.String(), "constexpr std::array<Launch, 0> kBest{{")

	cxx := hostcxx.Find(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tuned.h"), b.Bytes(), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.h"), empty.Bytes(), 0o644))
	check := `#include "tuned.h"
static_assert(artest_tuned::best(2, "bf16", true, 100)->max_bytes == 1024, "smallest bucket");
static_assert(artest_tuned::best(2, "bf16", true, 1024)->max_bytes == 1024, "bound is inclusive");
static_assert(artest_tuned::best(2, "bf16", true, 1025)->variant_id == 0x54, "next bucket: ring");
static_assert(artest_tuned::best(2, "bf16", true, 1u << 30)->max_bytes == 1048576, "above all: the largest");
static_assert(artest_tuned::best(4, "bf16", true, 100) == nullptr, "other world size");
static_assert(artest_tuned::best(2, "f16", true, 100) == nullptr, "other dtype");
static_assert(artest_tuned::best(2, "bf16", false, 100) == nullptr, "other launch kind");
int main() { return 0; }
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "check.cc"), []byte(check), 0o644))
	emptyCheck := `#include "empty.h"
static_assert(artest_tuned::best(2, "bf16", true, 100) == nullptr, "an empty table finds nothing");
int main() { return 0; }
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty.cc"), []byte(emptyCheck), 0o644))
	for _, f := range []string{"check.cc", "empty.cc"} {
		cmd := exec.Command(cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-x", "c++", f)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s:\n%s\n%s", f, out, h)
	}
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteText(&b, sampleTable()))
	out := b.String()
	require.Contains(t, out, "# artest tune: 2 ranks, cuda backend")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Regexp(t, `^np\s+type\s+launch\s+size\s+best\s+launch \(blocks x threads, params\)\s+time\(us\)\s+nccl\(us\)\s+speedup\s+measured$`, lines[1])
	require.Regexp(t, `^2\s+bf16\s+graph\s+1MiB\s+ring\s+8x512 lanes=8 slot-bytes=65536 slots=8\s+15\.00\s+30\.00\s+2\.00x\s+2/2$`, lines[3])
	require.Regexp(t, `16MiB\s+oneshot .* 1/2 unfinished$`, lines[4])
	require.Contains(t, out, "# unfinished: bf16 graph 16MiB: the budget of 1m0s ran out")
}
