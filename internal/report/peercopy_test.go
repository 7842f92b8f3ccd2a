package report

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWritePeerCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    Header
		want string
	}{
		{"measured", Header{Backend: "cuda", PeerCopy: &PeerCopy{Bytes: 256 << 20, Reps: 5, MinGBps: 361.4, MaxGBps: 366.6}},
			"# links: every rank copying 256 MiB into its right neighbour's memory at once (5 copies after one of warm-up): 361 to 367 GB/s per rank; no busbw below can pass it\n"},
		{"why not, cuda", Header{Backend: "cuda", PeerCopyNote: "ranks share a GPU: their copies do not cross a link"},
			"# links: not measured: ranks share a GPU: their copies do not cross a link\n"},
		{"host says nothing", Header{Backend: "host", PeerCopyNote: "the host backend has no links between GPUs"}, ""},
		{"old report", Header{Backend: "cuda"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sb strings.Builder
			w := bufio.NewWriter(&sb)
			writePeerCopy(w, &tc.h)
			require.NoError(t, w.Flush())
			require.Equal(t, tc.want, sb.String())
		})
	}
}
