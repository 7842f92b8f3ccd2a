// artest_check: the device checker of stress runs. One launch checks the
// output regions of a batch of stress iterations where they lie, on the GPU
// that wrote them: every element against the expected output computed here
// in the variant's declared order (check.cuh, the Go reference's arithmetic
// ported bit for bit), and every guard byte around each message. The host
// then downloads one small record per iteration instead of the outputs.
//
// Grid: blockIdx.y is the iteration (slot) of the batch; the blocks along x
// grid-stride over that slot's elements, and block x = 0 also checks the
// slot's guard bytes. Nothing is written unless something is wrong, so a
// clean batch costs one read of each output and no atomics.
#include "check.cuh"

namespace artest {
namespace checker {

__device__ __forceinline__ unsigned long long* ull(uint64_t* p) { return reinterpret_cast<unsigned long long*>(p); }

__device__ __forceinline__ void note_wrong(ArtestCheckSlot* out, uint64_t index, uint32_t got, uint32_t want,
                                           double ref) {
  // Read first: past the records, a wrong element costs no atomic on claimed.
  if (*reinterpret_cast<volatile uint32_t*>(&out->claimed) >= ARTEST_CHECK_RECORDS) return;
  const uint32_t k = atomicAdd(&out->claimed, 1u);
  if (k >= ARTEST_CHECK_RECORDS) return;
  ArtestCheckRecord& r = out->rec[k];
  r.index = index;
  r.got = got;
  r.want = want;
  r.ref_bits = check::f64_bits(ref);
}

__device__ __forceinline__ void run(const ArtestCheckArgs& a) {
  const uint32_t slot = blockIdx.y;
  ArtestCheckSlot* out = reinterpret_cast<ArtestCheckSlot*>(a.result) + slot;
  const uint8_t* region = reinterpret_cast<const uint8_t*>(a.region + static_cast<uint64_t>(slot) * a.slot_bytes);
  const uint8_t* msg = region + a.lead;
  const check::Spec sp = check::make_spec(a.seed, static_cast<uint64_t>(a.iter0) + slot, a.kind, a.dtype, a.op,
                                          a.order, a.nranks);
  const bool wide = a.dtype == DTYPE_F32;
  uint64_t wrong = 0;
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  for (uint64_t i = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < a.count; i += stride) {
    const uint32_t got = wide ? reinterpret_cast<const uint32_t*>(msg)[i] : reinterpret_cast<const uint16_t*>(msg)[i];
    uint32_t want;
    double ref;
    if (!check::check_elem(sp, a.first + i, got, &want, &ref)) {
      wrong++;
      note_wrong(out, a.first + i, got, want, ref);
    }
  }
  if (wrong != 0) atomicAdd(ull(&out->wrong), static_cast<unsigned long long>(wrong));
  if (blockIdx.x != 0) return;
  const uint8_t guard = static_cast<uint8_t>(a.guard);
  const uint64_t end = a.count * (wide ? 4u : 2u);
  uint64_t bad = 0;
  for (uint64_t j = threadIdx.x; j < a.lead; j += blockDim.x) bad += region[j] != guard;
  for (uint64_t j = threadIdx.x; j < a.guard_after; j += blockDim.x) bad += msg[end + j] != guard;
  if (bad != 0) atomicAdd(ull(&out->guard_bad), static_cast<unsigned long long>(bad));
}

}  // namespace checker
}  // namespace artest

extern "C" __global__ void __launch_bounds__(ARTEST_CHECK_THREADS)
    artest_check(const __grid_constant__ ArtestCheckArgs args) {
  artest::checker::run(args);
}
