package kernels

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTunedLookup(t *testing.T) {
	e := func(ranks int, launch string, maxBytes int64, blocks int) TunedEntry {
		return TunedEntry{Ranks: ranks, DType: "bf16", Launch: launch, MaxBytes: maxBytes, Variant: "oneshot", Blocks: blocks, Threads: 512}
	}
	tab := &TunedTable{Entries: []TunedEntry{
		e(4, "graph", 64<<10, 2), e(4, "graph", 1<<10, 1), e(4, "graph", 1<<20, 3),
		e(4, "plain", 1<<20, 30), e(2, "plain", 1<<10, 20),
	}}
	for _, tc := range []struct {
		name    string
		ranks   int
		dtype   string
		graph   bool
		bytes   int64
		blocks  int // 0: no entry
		variant string
	}{
		{"below the smallest bucket", 4, "bf16", true, 4, 1, ""},
		{"the bound is inclusive", 4, "bf16", true, 1 << 10, 1, ""},
		{"next bucket", 4, "bf16", true, 1<<10 + 2, 2, ""},
		{"above the largest: the largest", 4, "bf16", true, 1 << 30, 3, ""},
		{"the launch kind asked for", 4, "bf16", false, 4, 30, ""},
		{"the other launch kind when that is all", 2, "bf16", true, 4, 20, ""},
		{"other world size", 8, "bf16", true, 4, 0, ""},
		{"other dtype", 4, "f16", true, 4, 0, ""},
		{"other variant", 4, "bf16", true, 4, 0, "twoshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := "oneshot"
			if tc.variant != "" {
				v = tc.variant
			}
			got, ok := tab.Lookup(v, tc.ranks, tc.dtype, tc.graph, tc.bytes)
			require.Equal(t, tc.blocks != 0, ok)
			require.Equal(t, tc.blocks, got.Blocks)
		})
	}
	var none *TunedTable
	_, ok := none.Lookup("oneshot", 4, "bf16", true, 4)
	require.False(t, ok)
}
