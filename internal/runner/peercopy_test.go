package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
)

// namedBackend is a backend of another name, sharing its GPU with
// perGPU ranks: enough for peerCopyReason.
type namedBackend struct {
	backend.Backend
	name   string
	perGPU int
}

func (b namedBackend) Name() string     { return b.name }
func (b namedBackend) RanksPerGPU() int { return b.perGPU }

func TestPeerCopyReason(t *testing.T) {
	for _, tc := range []struct {
		name     string
		backend  string
		perGPU   int
		size     int
		capacity int64
		want     string
	}{
		{"measured", "cuda", 1, 2, 256 << 20, ""},
		{"larger buffers", "cuda", 1, 4, 1 << 30, ""},
		{"host", "host", 1, 2, 256 << 20, "the host backend has no links between GPUs"},
		{"one rank", "cuda", 1, 1, 256 << 20, "one rank: no neighbour to copy to"},
		{"small", "cuda", 1, 2, 1 << 20, "the largest message is below 16 MiB: the buffers are too small to time the links"},
		{"shared", "cuda", 2, 2, 256 << 20, "ranks share a GPU: their copies do not cross a link"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{b: namedBackend{name: tc.backend, perGPU: tc.perGPU}, w: &backend.World{Size: tc.size, Capacity: tc.capacity}}
			require.Equal(t, tc.want, r.peerCopyReason())
		})
	}
}
