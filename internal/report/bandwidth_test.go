package report

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAlgbwGBps(t *testing.T) {
	tests := []struct {
		name  string
		bytes int64
		us    float64
		want  float64
	}{
		{"1 GB in 1 s", 1e9, 1e6, 1},
		{"1 GiB in 1 ms", 1 << 30, 1000, 1.073741824e3},
		{"1 KiB in 6.125 us", 1024, 6.125, 0.16718367346938776},
		{"zero time is not infinite", 1024, 0, 0},
		{"negative time", 1024, -1, 0},
		{"zero bytes", 0, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.InDelta(t, tt.want, AlgbwGBps(tt.bytes, tt.us), 1e-12)
		})
	}
}

func TestBusbw(t *testing.T) {
	tests := []struct {
		ranks int
		want  float64 // for algbw 100
	}{
		{0, 0},
		{1, 0}, // nccl-tests: factor 2(n-1)/n = 0
		{2, 100},
		{4, 150},
		{8, 175},
		{16, 187.5},
	}
	for _, tt := range tests {
		require.InDelta(t, tt.want, Busbw(100, tt.ranks), 1e-12, "ranks %d", tt.ranks)
	}
}

// nccl-tests' factors by collective: 2(n-1)/n for the allreduce, (n-1)/n
// for the reduce-scatter and the all-gather.
func TestBusbwColl(t *testing.T) {
	for _, tt := range []struct {
		coll  string
		ranks int
		want  float64 // for algbw 100
	}{
		{"", 4, 150},
		{"allreduce", 4, 150},
		{"reduce-scatter", 4, 75},
		{"all-gather", 8, 87.5},
		{"all-gather", 1, 0},
	} {
		require.InDelta(t, tt.want, BusbwColl(tt.coll, 100, tt.ranks), 1e-12, "%s ranks %d", tt.coll, tt.ranks)
	}
}
