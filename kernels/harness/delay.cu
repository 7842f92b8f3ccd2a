// artest_delay: the skew schedule's stream-ordered delay on the cuda
// backend (backend.Delayer). One thread holds the stream for ns nanoseconds
// of the GPU's global timer, so that what the runner enqueues after it (the
// late rank's input copy and launch) starts that much later, while its
// peers' launches do not wait. Bounded by ARTEST_DELAY_MAX_NS whatever the
// host asks, so a bad argument cannot hold a GPU for long.
#include "device/common.cuh"

// The kernel's one parameter, by value; its Go twin is kernels.DelayArgs.
struct ArtestDelayArgs {
  uint64_t ns;  // how long to hold the stream
};

static_assert(sizeof(ArtestDelayArgs) == 8, "ArtestDelayArgs changed: change kernels.DelayArgs with it");

// The longest hold (kernels.DelayMax): one second, far above skew's 500 us.
constexpr uint64_t ARTEST_DELAY_MAX_NS = 1000000000ull;

namespace artest {
namespace delay {

__device__ __forceinline__ void hold(uint64_t ns) {
  if (ns > ARTEST_DELAY_MAX_NS) ns = ARTEST_DELAY_MAX_NS;
  const uint64_t start = global_timer_ns();
  for (;;) {
    const uint64_t waited = global_timer_ns() - start;
    if (waited >= ns) return;
    const uint64_t left = ns - waited;
    // __nanosleep takes at most about 1 ms; shorter naps keep the hold
    // close to ns (the timer ticks in microseconds on some GPUs anyway).
    __nanosleep(left < 1000 ? static_cast<uint32_t>(left) : 1000u);
  }
}

}  // namespace delay
}  // namespace artest

extern "C" __global__ void __launch_bounds__(1) artest_delay(const __grid_constant__ ArtestDelayArgs args) {
  artest::delay::hold(args.ns);
}
