// artest_stamp: the stress witness's clock reading on the cuda backend
// (backend.Stamper). One thread writes the GPU's global timer (ns) into one
// 8-byte slot when the stream reaches it: enqueued right after a rank's
// call, it records when that call returned, and the runner compares those
// times across ranks. It waits on nothing, so it always ends.
#include "device/common.cuh"

// The kernel's one parameter, by value; its Go twin is kernels.StampArgs.
struct ArtestStampArgs {
  uint64_t slot;  // device address of the 8-byte slot written
};

static_assert(sizeof(ArtestStampArgs) == 8, "ArtestStampArgs changed: change kernels.StampArgs with it");

extern "C" __global__ void __launch_bounds__(1) artest_stamp(const __grid_constant__ ArtestStampArgs args) {
  *reinterpret_cast<volatile uint64_t*>(args.slot) = artest::global_timer_ns();
}
