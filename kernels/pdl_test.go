package kernels

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The producer's parameter struct: Go and C must agree byte for byte, and
// its block size must be the kernel's __launch_bounds__.
func TestPdlFillArgsMatchesC(t *testing.T) {
	src := readFile(t, "harness/pdl.cu")
	m := regexp.MustCompile(`(?s)struct ArtestPdlFillArgs \{(.*?)\};`).FindStringSubmatch(src)
	require.NotNil(t, m, "ArtestPdlFillArgs not found in pdl.cu")
	fields := regexp.MustCompile(`uint64_t (\w+);`).FindAllStringSubmatch(m[1], -1)
	var a PdlFillArgs
	goFields := []struct {
		name string
		off  uintptr
	}{
		{"Dst", unsafe.Offsetof(a.Dst)}, {"Src", unsafe.Offsetof(a.Src)},
		{"Bytes", unsafe.Offsetof(a.Bytes)}, {"DelayNs", unsafe.Offsetof(a.DelayNs)},
	}
	require.Len(t, fields, len(goFields), "every C field is a uint64_t with a Go twin")
	for i, f := range goFields {
		require.Equal(t, lowerSnake(f.name), fields[i][1], "field %d", i)
		require.Equal(t, uintptr(8*i), f.off, "field %s", f.name)
	}
	require.Equal(t, uintptr(32), unsafe.Sizeof(a))
	require.Regexp(t, `sizeof\(ArtestPdlFillArgs\) == 32`, src)
	require.Regexp(t, `ARTEST_PDL_FILL_THREADS = 256u;`, src)
	require.Equal(t, 256, PdlFillThreads)
	require.Regexp(t, `extern "C" __global__ void __launch_bounds__\(ARTEST_PDL_FILL_THREADS\)\s+`+PdlFillKernel+`\(`, src)
}

// Every family's run() (run_<collective>() where a family implements
// several) waits for the producer first: pdl_wait(a) is its first
// statement (after type aliases), in every kernel source there is, so a
// new family cannot forget it. The harness's own kernels (harness/:
// the producer, the stress checker, skew's delay, the straggler's load,
// bench --overlap's compute load, the timer stamp) are no allreduce
// families: they take no ArtestArgs.
func TestEveryKernelCallsPdlWaitFirst(t *testing.T) {
	files, err := filepath.Glob("*/*.cu") // the variants' folders and harness/
	require.NoError(t, err)
	entry := regexp.MustCompile(`void run\w*\(const ArtestArgs& a\) \{`)
	first := regexp.MustCompile(`void run\w*\(const ArtestArgs& a\) \{\n(?:\s+using [^;]+;\n)*\s+pdl_wait\(a\);`)
	families := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.cu") || filepath.Dir(f) == "harness" {
			continue
		}
		families++
		t.Run(f, func(t *testing.T) {
			src := readFile(t, f)
			entries := len(entry.FindAllString(src, -1))
			require.Positive(t, entries, "no run() in %s", f)
			require.Len(t, first.FindAllString(src, -1), entries, "a run of %s does not call pdl_wait first", f)
		})
	}
	require.GreaterOrEqual(t, families, 5, "oneshot, twoshot, oneshot_cpasync, ring, multimem at least")
	require.Regexp(t, `griddepcontrol\.wait`, readFile(t, "device/sync.cuh"))
}
