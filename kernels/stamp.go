package kernels

// The stress witness's clock reading on the cuda backend, artest_stamp
// (kernels/harness/stamp.cu): one thread writes the global timer into a slot.
const StampKernel = "artest_stamp"

// StampArgs is artest_stamp's one parameter, by value: the C struct
// ArtestStampArgs in kernels/harness/stamp.cu (stamp_test.go checks the layout).
type StampArgs struct {
	Slot uint64 // device address of the 8-byte slot written
}
