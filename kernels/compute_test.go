package kernels

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The compute load's parameter and block size: Go and C agree.
func TestComputeArgsMatchC(t *testing.T) {
	src := readFile(t, "harness/compute.cu")
	require.Regexp(t, `struct ArtestComputeArgs \{\s+uint64_t in;[^\n]*\n\s+uint64_t out;[^\n]*\n\s+uint32_t in_tiles;[^\n]*\n\s+uint32_t iters;[^\n]*\n\};`, src)
	require.Regexp(t, `sizeof\(ArtestComputeArgs\) == 24`, src)
	require.Equal(t, uintptr(24), unsafe.Sizeof(ComputeArgs{}))
	require.Equal(t, uintptr(8), unsafe.Offsetof(ComputeArgs{}.Out))
	require.Equal(t, uintptr(16), unsafe.Offsetof(ComputeArgs{}.InTiles))
	require.Equal(t, uintptr(20), unsafe.Offsetof(ComputeArgs{}.Iters))
	require.Regexp(t, `ARTEST_COMPUTE_THREADS = 256;`, src)
	require.Equal(t, 256, ComputeThreads)
	require.Regexp(t, `ARTEST_COMPUTE_TILE = 64;`, src)
	require.Regexp(t, `ARTEST_COMPUTE_K = 16;`, src)
	require.Equal(t, 2*64*16, ComputePairFloats)
	require.Regexp(t, `extern "C" __global__ void __launch_bounds__\(ARTEST_COMPUTE_THREADS\) `+ComputeKernel+`\(`, src)
}
