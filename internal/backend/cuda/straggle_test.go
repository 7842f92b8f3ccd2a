package cuda

import (
	"testing"

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
