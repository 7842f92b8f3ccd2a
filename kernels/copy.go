package kernels

// A copy on the multiprocessors on the cuda backend, artest_copy
// (kernels/harness/copy.cu): a grid-stride device-to-device copy, 16-byte
// vectors where both ends share their alignment.
const CopyKernel = "artest_copy"

// CopyArgs is artest_copy's one parameter, by value: the C struct
// ArtestCopyArgs in kernels/harness/copy.cu (copy_test.go checks the layout).
type CopyArgs struct {
	Dst   uint64 // device address written
	Src   uint64 // device address read; the ranges do not overlap
	Bytes uint64
}

// CopyThreads is artest_copy's block size (ARTEST_COPY_THREADS).
const CopyThreads = 256

// CopyBlocks is artest_copy's grid for n bytes on a GPU of sms
// multiprocessors: one 16-byte vector per thread, at most two blocks per
// multiprocessor (a grid-stride loop covers the rest), at least one.
func CopyBlocks(n int64, sms int) int {
	per := int64(CopyThreads) * 16
	b := (n + per - 1) / per
	return int(max(1, min(b, int64(2*max(sms, 1)))))
}
