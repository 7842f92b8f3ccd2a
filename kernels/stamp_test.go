package kernels

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The stamp kernel's parameter: Go and C agree.
func TestStampArgsMatchC(t *testing.T) {
	src := readFile(t, "harness/stamp.cu")
	require.Regexp(t, `struct ArtestStampArgs \{\s+uint64_t slot;[^\n]*\n\};`, src)
	require.Regexp(t, `sizeof\(ArtestStampArgs\) == 8`, src)
	require.Equal(t, uintptr(8), unsafe.Sizeof(StampArgs{}))
	require.Regexp(t, `extern "C" __global__ void __launch_bounds__\(1\) `+StampKernel+`\(`, src)
}
