package kernels

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The delay kernel's parameter and bound: Go and C agree.
func TestDelayArgsMatchC(t *testing.T) {
	src := readFile(t, "harness/delay.cu")
	require.Regexp(t, `struct ArtestDelayArgs \{\s+uint64_t ns;[^\n]*\n\};`, src)
	require.Regexp(t, `sizeof\(ArtestDelayArgs\) == 8`, src)
	require.Equal(t, uintptr(8), unsafe.Sizeof(DelayArgs{}))
	require.Regexp(t, `ARTEST_DELAY_MAX_NS = 1000000000ull;`, src)
	require.Equal(t, time.Duration(1000000000), DelayMax)
	require.Regexp(t, `extern "C" __global__ void __launch_bounds__\(1\) `+DelayKernel+`\(`, src)
}
