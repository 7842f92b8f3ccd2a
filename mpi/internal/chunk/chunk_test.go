package chunk

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPerRank(t *testing.T) {
	defer func(l int) { Limit = l }(Limit)
	tests := []struct {
		limit, ranks, want int
	}{
		{1 << 30, 1, 1 << 30},
		{1 << 30, 8, 1 << 27},
		{7, 3, 2},
		{7, 8, 1},  // never 0: every call moves something
		{7, 0, 7},  // no division by zero
		{1, 64, 1}, // a one-byte limit still makes progress
	}
	for _, tt := range tests {
		Limit = tt.limit
		require.Equal(t, tt.want, PerRank(tt.ranks), "limit %d ranks %d", tt.limit, tt.ranks)
	}
}

func TestSpansCoverBufferOnce(t *testing.T) {
	for _, length := range []int{0, 1, 2, 6, 7, 8, 100, 1<<31 + 5} {
		for _, piece := range []int{1, 2, 7, 1 << 30} {
			rounds := Rounds(length, piece)
			if length/piece > 1000 {
				continue // the arithmetic is the same; keep the loop short
			}
			next := 0
			for r := range rounds {
				off, n := Span(length, piece, r)
				require.Equal(t, next, off, "length %d piece %d round %d", length, piece, r)
				require.Positive(t, n, "length %d piece %d round %d moves nothing", length, piece, r)
				require.LessOrEqual(t, n, piece)
				next = off + n
			}
			require.Equal(t, length, next, "length %d piece %d: rounds do not cover the buffer", length, piece)
			off, n := Span(length, piece, rounds)
			require.Equal(t, length, off)
			require.Zero(t, n, "round past the end moves bytes")
		}
	}
}

func TestSpanShortBuffer(t *testing.T) {
	// Gather: a rank whose buffer is shorter than a peer's sends nothing in
	// the later rounds.
	tests := []struct {
		length, piece, round, off, n int
	}{
		{5, 2, 0, 0, 2},
		{5, 2, 2, 4, 1},
		{5, 2, 3, 5, 0},
		{5, 2, 9, 5, 0},
		{0, 2, 0, 0, 0},
	}
	for _, tt := range tests {
		off, n := Span(tt.length, tt.piece, tt.round)
		require.Equal(t, [2]int{tt.off, tt.n}, [2]int{off, n}, "%+v", tt)
	}
}
