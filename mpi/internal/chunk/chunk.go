// Package chunk splits a collective's buffers into pieces that one MPI call
// can move: MPI counts are C ints, and some transports misbehave on single
// messages near 2 GiB, so no call moves more than Limit bytes in total.
package chunk

// Limit is the most bytes one MPI call moves, summed over all ranks; it must
// fit a C int. mpicheck lowers it to push small buffers through the
// multi-piece paths.
var Limit = 1 << 30

// PerRank is the most bytes each of ranks contributions may have in one
// call, at least 1.
func PerRank(ranks int) int {
	return max(1, Limit/max(1, ranks))
}

// Rounds is how many calls move length bytes per rank, piece bytes at a time.
func Rounds(length, piece int) int {
	return (length + piece - 1) / piece
}

// Span is the part [off, off+n) of a length-byte buffer that round moves
// when every call moves piece bytes of it; n is 0 once the buffer is done.
func Span(length, piece, round int) (off, n int) {
	off = min(length, round*piece)
	return off, min(piece, length-off)
}
