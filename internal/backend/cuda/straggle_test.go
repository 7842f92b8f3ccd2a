package cuda

import (
	"encoding/binary"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/kernels"
)

// The link load reads every other rank's input, nearest first, at most
// kernels.LoadMaxPeers of them, over whole 16-byte vectors of the capacity.
func TestLinkPeers(t *testing.T) {
	world := func(rank, size int) *backend.World {
		w := &backend.World{Rank: rank, Size: size, Capacity: 4100}
		for r := 0; r < size; r++ {
			w.Input = append(w.Input, backend.Ptr(0x1000*(r+1)))
		}
		return w
	}
	for _, tc := range []struct {
		name  string
		w     *backend.World
		peers []uint64
	}{
		{"no world", nil, nil},
		{"one rank", world(0, 1), nil},
		{"two ranks", world(0, 2), []uint64{0x2000}},
		{"four ranks, rank 2", world(2, 4), []uint64{0x4000, 0x1000, 0x2000}},
		{"ten ranks: eight peers", world(9, 10), []uint64{0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x6000, 0x7000, 0x8000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a kernels.LoadArgs
			linkPeers(&a, tc.w)
			require.Equal(t, len(tc.peers), int(a.NPeers))
			require.Equal(t, tc.peers, append([]uint64(nil), a.Peers[:a.NPeers]...)[:len(tc.peers):len(tc.peers)])
			if len(tc.peers) > 0 {
				require.Equal(t, uint64(4096), a.PeerBytes)
			}
		})
	}
}

// The straggler's load: one rank per GPU streams memory, LoadBlocksPerSM
// blocks a multiprocessor; ranks that share a GPU get the SM kind,
// LoadSMBlocksPerSM blocks a multiprocessor of the rank's own.
func TestStraggleKindAndGrid(t *testing.T) {
	for _, tc := range []struct {
		name     string
		perGPU   int
		sms      int
		green    int    // the rank's own SMs (0: no partition)
		memory   bool   // ARTEST_LOAD_KIND=memory
		smBlocks string // ARTEST_LOAD_SM_BLOCKS
		wantKind uint32
		wantGrid uint64
	}{
		{"one rank per GPU", 1, 132, 0, false, "", kernels.LoadKindSM, 132 * kernels.LoadSMBlocksPerSM},
		{"one rank per GPU, the memory load asked for", 1, 132, 0, true, "", kernels.LoadKindMemory, 132 * kernels.LoadBlocksPerSM},
		{"one rank per GPU, 2 blocks a multiprocessor asked for", 1, 132, 0, false, "2", kernels.LoadKindSM, 132 * 2},
		{"the memory load keeps its blocks", 1, 132, 0, true, "2", kernels.LoadKindMemory, 132 * kernels.LoadBlocksPerSM},
		{"4 ranks on one GPU, partitioned", 4, 132, 32, false, "", kernels.LoadKindSM, 32 * kernels.LoadSMBlocksPerSM},
		{"2 ranks on one GPU, no partition", 2, 132, 0, false, "", kernels.LoadKindSM, 132 * kernels.LoadSMBlocksPerSM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := fakeDriver(t)
			b := fakeBackend(t, d, 0)
			if tc.memory {
				b.knobs.LoadKind = "memory"
			}
			if tc.smBlocks != "" {
				n, err := strconv.Atoi(tc.smBlocks)
				require.NoError(t, err)
				b.knobs.LoadSMBlocks = n
			}
			b.fns[kernels.LoadKernel] = 0x3000 // the fake's recording kernel
			b.share.PerGPU, b.sms = tc.perGPU, tc.sms
			if tc.green > 0 {
				b.green, b.greenSMs = 0x9000, tc.green
			}
			require.Equal(t, tc.wantKind, b.loadKind())
			require.NoError(t, b.PrepareStraggle())
			defer func() {
				b.green = 0
				require.NoError(t, errors.Join(b.closeLoad()...))
			}()
			require.NoError(t, b.Straggle(200*time.Microsecond))
			// The fake writes the launch's shape over the first words of
			// the load's one argument, the scratch: [1] is the grid.
			rec := make([]byte, 9*8)
			require.NoError(t, d.MemcpyDtoH(rec, b.load.buf))
			require.Equal(t, tc.wantGrid, binary.LittleEndian.Uint64(rec[8:]))
			require.Equal(t, uint64(kernels.LoadThreads), binary.LittleEndian.Uint64(rec[32:]))
		})
	}
}
