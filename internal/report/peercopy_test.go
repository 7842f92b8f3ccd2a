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
		{"both", Header{Backend: "cuda", PeerCopy: &PeerCopy{Bytes: 256 << 20, Reps: 5, MinGBps: 286.4, MaxGBps: 291.6, SMMinGBps: 360, SMMaxGBps: 371.5}},
			"# links: every rank copying 256 MiB into its right neighbour's memory at once, 5 times after one of warm-up: copy engine 286 to 292 GB/s per rank, a kernel (artest_copy) 360 to 372 GB/s\n"},
		{"stores and loads", Header{Backend: "cuda", PeerCopy: &PeerCopy{Bytes: 256 << 20, Reps: 5, MinGBps: 301, MaxGBps: 319, SMMinGBps: 362.6, SMMaxGBps: 364, SMReadMinGBps: 329.5, SMReadMaxGBps: 331}},
			"# links: every rank copying 256 MiB into its right neighbour's memory at once, 5 times after one of warm-up: copy engine 301 to 319 GB/s per rank, a kernel (artest_copy) 363 to 364 GB/s; the kernel reading the neighbour's memory into its own 330 to 331 GB/s\n"},
		{"copy engine only", Header{Backend: "cuda", PeerCopy: &PeerCopy{Bytes: 64 << 20, Reps: 5, MinGBps: 286.4, MaxGBps: 291.6},
			PeerCopyNote: "copy on the multiprocessors not measured: no copy on the multiprocessors here"},
			"# links: every rank copying 64 MiB into its right neighbour's memory at once, 5 times after one of warm-up: copy engine 286 to 292 GB/s per rank\n#   copy on the multiprocessors not measured: no copy on the multiprocessors here\n"},
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
