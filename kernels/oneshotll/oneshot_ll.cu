// oneshot-ll: oneshot without barriers, for latency. Every rank pushes its
// input into every rank's staging as LL ("low latency") words, each 8 bytes
// of 4 data bytes and the launch's sequence number, written by one 64-bit
// store; the reader polls its own (local) staging until every word of a
// slot carries this launch's sequence, then reduces in rank order. A 64-bit
// aligned access is single-copy atomic, so a word that shows the sequence
// shows its data: no fence, no flag round trip, one NVLink crossing per
// launch. The cost is twice the bytes on the wire and n x the message in
// staging, so it is for small messages only (MaxBytes in staging.go).
// NCCL's LL protocol rests on the same idea (data and flag in one store).
//
// Staging (each rank's, staging.go is the Go twin): two halves, used by
// launches of even and odd sequence; in a half, rank s's region holds the
// message's slots as 32-byte LL slots (four LL words: 16 data bytes).
//
// Why no barrier is needed:
//  - Nobody reads our input but us (we push copies), so returning early is
//    safe, in place too.
//  - Reuse of a half: a peer writes half (seq & 1) of our staging in launch
//    seq only after its launch seq-1 ended, which needed our pushes of
//    launch seq-1, which we issue only after our launch seq-2 (the same
//    half) ended: stream order on our GPU.
//  - Stale words: a word in half q carries the sequence of the launch that
//    wrote it, an earlier one of parity q, never the current one (until the
//    32-bit sequence wraps, after 2^32 launches), whatever the message sizes
//    of earlier launches were.
//
// The sequence is one per rank (SIG_OFF_LL_SEQ holds the last one used; a
// launch uses it + 1, so never 0, which zeroed staging holds), not per block: a slot may
// belong to another block in an earlier launch with another grid, and
// per-block epochs of different blocks can be equal. Every thread reads it
// at the start; once all threads of a block have, the block counts itself
// in SIG_OFF_LL_DONE, and the block that counts last advances it at its
// end, so no block of this launch can see the next value. The count is
// made at the start and its result used only at the end, so the atomic's
// round trip overlaps the push and the poll instead of ending the launch
// (counted at the end, it cost every launch that round trip).
#include "device/common.cuh"
#include "oneshot_ll.cuh"

namespace artest {
namespace ll {

// Bytes of one LL slot: 16 data bytes as four 8-byte words.
constexpr uint32_t kSlotBytes = 32u;
// The registry caps oneshot-ll at 8 ranks (MaxRanks): one poll of each
// rank's copy of a slot is in flight at once.
constexpr uint32_t kMaxRanks = 8u;

__device__ __forceinline__ uint64_t pack(uint32_t data, uint32_t seq) {
  return static_cast<uint64_t>(seq) << 32 | data;
}

// Writes one slot (v) as four LL words at p.
__device__ __forceinline__ void store(uint64_t p, const uint4& v, uint32_t seq) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(pack(v.x, seq)), "l"(pack(v.y, seq))
               : "memory");
  asm volatile("st.volatile.global.v2.u64 [%0], {%1, %2};" ::"l"(p + 16), "l"(pack(v.z, seq)), "l"(pack(v.w, seq))
               : "memory");
}

// Reads one slot at p; true when all four words carry seq (v is then the
// slot's data). The lowest flag seen goes to seen, for a diagnosis.
__device__ __forceinline__ bool load(uint64_t p, uint32_t seq, uint4& v, uint32_t& seen) {
  uint64_t w0, w1, w2, w3;
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(w0), "=l"(w1) : "l"(p) : "memory");
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(w2), "=l"(w3) : "l"(p + 16) : "memory");
  v = make_uint4(static_cast<uint32_t>(w0), static_cast<uint32_t>(w1), static_cast<uint32_t>(w2),
                 static_cast<uint32_t>(w3));
  const uint32_t f0 = static_cast<uint32_t>(w0 >> 32), f1 = static_cast<uint32_t>(w1 >> 32);
  const uint32_t f2 = static_cast<uint32_t>(w2 >> 32), f3 = static_cast<uint32_t>(w3 >> 32);
  seen = f0 != seq ? f0 : f1 != seq ? f1 : f2 != seq ? f2 : f3;
  return f0 == seq && f1 == seq && f2 == seq && f3 == seq;
}

// Waits for the slot at p to carry seq, after a first poll that found it
// not there yet, with the launch's deadline (as barrier(): from the first
// failed poll, backoff 32 to 128 ns). Returns false after giving up, having
// recorded where.
__device__ __forceinline__ bool wait_slot(const ArtestArgs& a, uint64_t p, uint32_t seq, uint64_t slot, uint32_t src,
                                          uint4& v) {
  uint32_t seen = 0;
  if ((a.inject & INJECT_LL_NO_FLAG) != 0) return true;  // planted bug: use whatever is there
  if (!wait_until([&] { return load(p, seq, v, seen); }, a.wait_timeout_ns, kBackoffMinNs, kBackoffMaxNs)) return true;
  record_give_up(a.peer_signal[a.rank], a.variant_id, a.rank, SIG_DIAG_KIND_LL_DATA, static_cast<uint32_t>(slot),
                 src, seq, seen, blockIdx.x, a.wait_timeout_ns);
  return false;
}

// NR is the rank count when the kernel is built for one (2, 4 or 8: the
// counts inference runs on), or 0 for any count up to kMaxRanks. The poll
// and reduce loops below are unrolled to the array size; built for any
// count, every one of the kMaxRanks unrolled steps issues, predicated off or
// not, which at 2 ranks was most of the kernel's instructions.
template <typename T, uint32_t OP, uint32_t NR>
__device__ __forceinline__ void run(const ArtestArgs& a) {
  using S = Slot<T>;
  using R = Reduce<T, OP>;
  pdl_wait(a);  // --pdl: before any input read or flag store (sync.cuh)
  constexpr uint32_t kRanks = NR != 0 ? NR : kMaxRanks;
  const uint32_t n = NR != 0 ? NR : a.nranks;
  const uint64_t slots = artest_ceil_div(a.count, S::kElems);
  const uint64_t region = slots * kSlotBytes;  // one rank's region in a half
  const uint64_t half = artest_ll_half_bytes(a.stage_bytes);
  const uint64_t sig = a.peer_signal[a.rank % SIG_MAX_RANKS];
  // The word holds the last launch's sequence (0 before the first), so
  // this launch's is never 0: zeroed staging never looks current. Every
  // thread reads it (one broadcast load per warp, in flight with its input
  // loads) rather than thread 0 for the block behind a __syncthreads():
  // the last block advances it only after every block's threads are past
  // their reduce, so all of them read the same value. The read goes out
  // before the launch checks, which then run beside its round trip (as in
  // oneshot_sentinel.cu, which measured the order); it only reads, and the
  // rank is masked into the array, so a bad launch still traps before any
  // store.
  const uint32_t seq = *reinterpret_cast<volatile uint32_t*>(sig + SIG_OFF_LL_SEQ) + 1;
  check_launch(a, 0, sizeof(T));
  if (region * n > half || n > kMaxRanks) __trap();  // the host checks both first (StageNeed, MaxRanks)

  const uint64_t my_half = (seq & 1u) * half;
  // Count the block once every thread of it holds seq: the block-wide OR
  // takes a predicate computed from each thread's seq, so every load has
  // returned its value before thread 0 counts, and the last counter stores
  // the next sequence only after its count returned (it needs the result).
  // The count is relaxed: an acquire-release atomic put a MEMBAR.GPU and an
  // L1 invalidate in front of warp 0's pushes. (The predicate is true only
  // if the word wrapped to all ones; nothing acts on it.)
  (void)__syncthreads_or(seq == 0);
  // A grid of one block is its own last: it counts nothing (the count
  // stays 0, as the last block leaves it), which takes the atomic off the
  // small messages, where one block is the whole launch.
  uint32_t counted = 1;
  if (threadIdx.x == 0 && gridDim.x > 1) {
    counted = atomicAdd(reinterpret_cast<unsigned int*>(sig + SIG_OFF_LL_DONE), 1u) + 1;
  }

  const bool vec = all_aligned16(&a.peer_in[a.rank], 1, a.out);
  const Plan<T> plan(a, vec);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t in = a.peer_in[a.rank];

  // Under INJECT_DELAY one rank pushes late: what a reader that skips the
  // sequence check (INJECT_LL_NO_FLAG) then reads is an older launch's.
  inject_delay(a);
  // Push: our slots into every rank's staging (ours too: the reduce below
  // then reads every rank the same way).
  for (uint64_t k = first; k < slots; k += stride) {
    const uint64_t base = k * S::kElems;
    const uint4 v = plan.fast(base) ? S::load_vec(in, base) : S::load_elems(in, base, plan.valid(base));
    const uint64_t at = my_half + a.rank * region + k * kSlotBytes;
    for (uint32_t p = 0; p < n; ++p) store(artest_ll_align(a.peer_stage[p]) + at, v, seq);
  }

  // Reduce: every rank's copy of each of our slots, in rank order, from
  // our own staging as the words arrive.
  const uint64_t stage = artest_ll_align(a.peer_stage[a.rank]) + my_half;
  bool gave_up = false;
  for (uint64_t k = first; k < slots && !gave_up; k += stride) {
    const uint64_t base = k * S::kElems;
    // One poll of every rank's copy in flight at once (the loads are
    // independent: n local round trips would otherwise be paid one after
    // another), then the wait for those not there yet, then the reduce in
    // rank order.
    uint4 x[kRanks];
    bool ready[kRanks];
#pragma unroll
    for (uint32_t s = 0; s < kRanks; ++s) {
      uint32_t seen;
      if (s < n) ready[s] = load(stage + s * region + k * kSlotBytes, seq, x[s], seen);
    }
    float acc[S::kElems];
#pragma unroll
    for (uint32_t s = 0; s < kRanks; ++s) {
      if (s >= n) break;
      if (!ready[s] && !wait_slot(a, stage + s * region + k * kSlotBytes, seq, k, s, x[s])) {
        gave_up = true;
        break;
      }
      R::accumulate(acc, x[s], s == 0);
    }
    if (gave_up) break;
    const uint4 out = R::round(acc);
    if (plan.fast(base)) {
      S::store_vec(a.out, base, out);
    } else {
      S::store_out_elems(a, base, plan.valid(base), out);
    }
  }
  // A thread that gave up ends here: the runner ends the job (exit 3) from
  // the diag words, and no launch after a give-up is trusted, so the others
  // need not wait for it (a block-wide barrier here held the end's stores
  // behind the block's slowest thread; oneshot_sentinel.cu says what that
  // cost).
  if (gave_up) return;

  if (threadIdx.x == 0) {
    if (counted == gridDim.x) {
      // The block that counted last: every thread of the launch has read
      // seq (each block counted only once its threads' loads of seq had
      // returned: their values fed the block-wide OR before the count).
      if (gridDim.x > 1) *reinterpret_cast<volatile uint32_t*>(sig + SIG_OFF_LL_DONE) = 0;
      *reinterpret_cast<volatile uint32_t*>(sig + SIG_OFF_LL_SEQ) = seq;
      *reinterpret_cast<uint32_t*>(sig + SIG_OFF_TRACE_VARIANT) = a.variant_id;
      atomicAdd(reinterpret_cast<unsigned int*>(sig + SIG_OFF_TRACE_COUNT), 1u);
    }
  }
}

}  // namespace ll
}  // namespace artest

// One kernel per dtype and op; the rank count picks its specialization
// (by_rank_count, sync.cuh).
#define ARTEST_ONESHOT_LL_KERNEL(dname, T, oname, OPV)                                           \
  extern "C" __global__ void __launch_bounds__(ARTEST_MAX_THREADS)                               \
      artest_oneshot_ll_##dname##_##oname(const __grid_constant__ ArtestArgs args) {             \
    artest::by_rank_count(args.nranks,                                                           \
                          [&](auto nr) { artest::ll::run<T, OPV, decltype(nr)::value>(args); }); \
  }

ARTEST_FOR_EACH_DTYPE_OP(ARTEST_ONESHOT_LL_KERNEL)
