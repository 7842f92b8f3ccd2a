package kernels

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The copy kernel's parameter and block size: Go and C agree.
func TestCopyArgsMatchC(t *testing.T) {
	src := readFile(t, "harness/copy.cu")
	require.Regexp(t, `struct ArtestCopyArgs \{\s+uint64_t dst;[^\n]*\n\s+uint64_t src;[^\n]*\n\s+uint64_t bytes;[^\n]*\n\};`, src)
	require.Regexp(t, `sizeof\(ArtestCopyArgs\) == 24`, src)
	require.Equal(t, uintptr(24), unsafe.Sizeof(CopyArgs{}))
	require.Regexp(t, `constexpr int ARTEST_COPY_THREADS = 256;`, src)
	require.Equal(t, 256, CopyThreads)
	require.Regexp(t, `extern "C" __global__ void __launch_bounds__\(ARTEST_COPY_THREADS\) `+CopyKernel+`\(`, src)
}

func TestCopyBlocks(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		sms  int
		want int
	}{
		{0, 132, 1},
		{1, 132, 1},
		{4096, 132, 1},
		{4097, 132, 2},
		{64 << 10, 132, 16},
		{1<<20 + 12, 132, 257},
		{256 << 20, 132, 264},
		{64 << 10, 0, 2},
	} {
		require.Equal(t, tc.want, CopyBlocks(tc.n, tc.sms), "n=%d sms=%d", tc.n, tc.sms)
	}
}
