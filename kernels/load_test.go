package kernels

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// The load kernel's parameter, bound and block size: Go and C agree.
func TestLoadArgsMatchC(t *testing.T) {
	src := readFile(t, "harness/load.cu")
	require.Regexp(t, `struct ArtestLoadArgs \{\s+uint64_t buf;[^\n]*\n\s+uint64_t bytes;[^\n]*\n\s+uint64_t ns;[^\n]*\n\s+uint64_t peers\[ARTEST_LOAD_MAX_PEERS\];[^\n]*\n\s+uint64_t peer_bytes;[^\n]*\n\s+uint32_t npeers;[^\n]*\n\s+uint32_t kind;[^\n]*\n\};`, src)
	require.Regexp(t, `sizeof\(ArtestLoadArgs\) == 104`, src)
	require.Equal(t, uintptr(104), unsafe.Sizeof(LoadArgs{}))
	require.Equal(t, uintptr(8), unsafe.Offsetof(LoadArgs{}.Bytes))
	require.Equal(t, uintptr(16), unsafe.Offsetof(LoadArgs{}.Ns))
	require.Equal(t, uintptr(24), unsafe.Offsetof(LoadArgs{}.Peers))
	require.Equal(t, uintptr(88), unsafe.Offsetof(LoadArgs{}.PeerBytes))
	require.Equal(t, uintptr(96), unsafe.Offsetof(LoadArgs{}.NPeers))
	require.Equal(t, uintptr(100), unsafe.Offsetof(LoadArgs{}.Kind))
	require.Regexp(t, `ARTEST_LOAD_MEMORY = 0;`, src)
	require.Regexp(t, `ARTEST_LOAD_SM = 1;`, src)
	require.Equal(t, uint32(0), LoadKindMemory)
	require.Equal(t, uint32(1), LoadKindSM)
	require.Regexp(t, `ARTEST_LOAD_MAX_PEERS = 8;`, src)
	require.Equal(t, 8, LoadMaxPeers)
	require.Regexp(t, `ARTEST_LOAD_MAX_NS = 10000000ull;`, src)
	require.Equal(t, time.Duration(10000000), LoadMax)
	require.Regexp(t, `ARTEST_LOAD_THREADS = 64;`, src)
	require.Equal(t, 64, LoadThreads)
	require.Regexp(t, `ARTEST_LOAD_HEAD = 16;`, src)
	require.Equal(t, 16, LoadHead)
	require.Regexp(t, `extern "C" __global__ void __launch_bounds__\(ARTEST_LOAD_THREADS\) `+LoadKernel+`\(`, src)
}
