// oneshot-sentinel: oneshot without barriers or flags, for latency and the
// mid sizes. Every rank pushes its input into every peer's staging, each
// element as the complement of its bits, so all-zero staging reads as
// "empty" (oneshot_sentinel.cuh: the one input pattern whose complement is
// zero, a NaN, travels as another NaN). The reader polls its own (local)
// staging until no element of a 16-byte slot is zero, reduces in rank order
// (its own input read where it lies) and stores zeros back, so the slot is
// empty for its next use. The data is its own flag: 16 data bytes per
// 16-byte store, half of what oneshot-ll's LL words put on the wire, and
// bit for bit exact (signed zeros and every non-NaN pattern go through
// unchanged). Kernels that use -0.0 as their "empty" (TensorRT-LLM's
// Lamport kernels, flashinfer's PCIe IPC ones) turn an input -0.0 into
// +0.0, which changes the sign of a sum of zeros
// (docs/findings/2026-11-sentinel-signed-zero.md); a NaN pattern costs
// nothing a sum, max or min can show.
//
// Why a slot is read once, whole and from the right launch:
//  - Each element is one half of a 32-bit word, or the whole word (f32);
//    a 32-bit aligned access is single-copy atomic, so an element is either
//    still zero or the pushed value, never a mix. The slot is used only
//    when every element is nonzero (its 16-byte store may land in parts).
//  - Staging (each rank's, from its first 16-byte boundary; staging.go is
//    the Go twin): two halves, used by launches of even and odd sequence
//    (the rank's launch count, as oneshot-ll keeps it); in a half, rank s's
//    region holds the message's slots of 16 bytes. A peer writes half q of our staging in launch seq
//    only after its launch seq-1 ended, which needed our pushes of launch
//    seq-1, which we issue only after our launch seq-2 (the same half)
//    ended, having read and cleared every slot written to half q in it:
//    stream order on our GPU. Kernel boundaries order the clears before
//    the pushes that let the peer go on.
//  - A slot is full only with data of this launch: every slot written to
//    a half is cleared by its reader in the same launch, and the runner
//    zeroes the staging before a case's first launch (Variant.ZeroStaging),
//    since other variants leave their data there.
//  - Nobody reads our input but us (we push copies), so returning early is
//    safe, in place too: a thread reads input slot k (to push it and to
//    reduce it) before it stores output slot k, and no other thread
//    touches slot k.
//
// The sequence words (SIG_OFF_LL_SEQ, SIG_OFF_LL_DONE) are oneshot-ll's:
// both variants need only that every rank has made the same number of
// launches of either, which holds because every launch is collective.
#include "device/common.cuh"
#include "oneshot_sentinel.cuh"

namespace artest {
namespace sentinel {

// The registry caps oneshot-sentinel at 8 ranks (MaxRanks): one poll of
// each peer's copy of a slot is in flight at once.
constexpr uint32_t kMaxRanks = 8u;

// The slot as staging holds it (every element encoded).
template <uint32_t EB>
__device__ __forceinline__ uint4 encode(const uint4& v) {
  if (EB == 4) {
    return make_uint4(artest_sentinel_encode32(v.x), artest_sentinel_encode32(v.y), artest_sentinel_encode32(v.z),
                      artest_sentinel_encode32(v.w));
  }
  // Two 16-bit elements a word: complement both, then give each half that
  // came out zero the sign bit alone (__vcmpeq2 sets all of a half that
  // equals zero).
  auto word = [](uint32_t w) {
    const uint32_t c = ~w;
    return c | (__vcmpeq2(c, 0u) & 0x80008000u);
  };
  return make_uint4(word(v.x), word(v.y), word(v.z), word(v.w));
}

// Whether every element of a staged slot is written (nonzero).
template <uint32_t EB>
__device__ __forceinline__ bool full(const uint4& s) {
  if (EB == 4) return s.x != 0u && s.y != 0u && s.z != 0u && s.w != 0u;
  return (__vcmpeq2(s.x, 0u) | __vcmpeq2(s.y, 0u) | __vcmpeq2(s.z, 0u) | __vcmpeq2(s.w, 0u)) == 0u;
}

// The data of a full slot.
__device__ __forceinline__ uint4 decode(const uint4& s) { return make_uint4(~s.x, ~s.y, ~s.z, ~s.w); }

// One 16-byte store to a peer's staging, and one load from ours: volatile,
// so every poll reads memory (not L1) and every push is issued as it
// stands.
__device__ __forceinline__ void push(uint64_t p, const uint4& v) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ uint4 poll(uint64_t p) {
  uint4 v;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

// Waits for the slot at p to be full, after a first poll that found it
// not: kSpinPolls polls with no timer read between them, then the
// deadline's loop (as oneshot-ll's wait_slot). Returns false after giving
// up, having recorded where.
//
// Measured on 4 H200, 2026-11-26 (bf16 sum, graph replays, max over
// ranks; two visits, results page of that date): the timer-free polls
// took 0.03 to 0.13 us off a launch at 2 ranks from 1 KiB to 1 MiB (4 MiB
// the same), and 0.07 to 0.6 us at 4 ranks up to 1 MiB. Not kept: polling
// every missing peer copy of the slot together in each round, instead of
// one peer after another, was 0.05 to 0.18 us slower at 2 ranks up to 1
// MiB and at 4 ranks up to 64 KiB, 0.12 to 0.14 faster at 256 KiB and 1
// MiB at 4 ranks. A bare spin with no deadline (ci/experiment.sh
// sentinel-no-deadline) was at most 0.04 us faster up to 64 KiB at 2 and 4
// ranks, and 0.44 us slower at 64 KiB at 4 ranks (4 H200,
// docs/results/2026-11-26-h200-x4-field-4-ranks.md).
template <uint32_t EB>
__device__ __forceinline__ bool wait_slot(const ArtestArgs& a, uint64_t p, uint64_t slot, uint32_t src, uint32_t seq,
                                          uint4& s) {
  if ((a.inject & INJECT_SENTINEL_NO_WAIT) != 0) return true;  // planted bug: use whatever is there
  for (uint32_t i = 0; i < kSpinPolls; ++i) {
    if (full<EB>(s = poll(p))) return true;
  }
  if (!wait_until([&] { return full<EB>(s = poll(p)); }, a.wait_timeout_ns, kBackoffMinNs, kBackoffMaxNs)) return true;
  // Seen: the slot's first word, whose zero halves say which elements
  // never came.
  record_give_up(a.peer_signal[a.rank], a.variant_id, a.rank, SIG_DIAG_KIND_SENTINEL_DATA, static_cast<uint32_t>(slot),
                 src, seq, s.x, blockIdx.x, a.wait_timeout_ns);
  return false;
}

// NR is the rank count when the kernel is built for one (2, 4 or 8), or 0
// for any count up to kMaxRanks (the unrolled loops below then issue
// every step, predicated off or not; oneshot-ll measured that cost).
template <typename T, uint32_t OP, uint32_t NR>
__device__ __forceinline__ void run(const ArtestArgs& a) {
  using S = Slot<T>;
  using R = Reduce<T, OP>;
  pdl_wait(a);  // --pdl: before any input read or staging store (sync.cuh)
  constexpr uint32_t kEB = sizeof(T);
  constexpr uint32_t kRanks = NR != 0 ? NR : kMaxRanks;
  const uint32_t n = NR != 0 ? NR : a.nranks;
  const uint64_t slots = artest_ceil_div(a.count, S::kElems);
  const uint64_t region = slots * ARTEST_SLOT_BYTES;  // one rank's region in a half
  // The halves are sized by the message (every rank computes the same),
  // not by the buffer: what a case uses is then the part of the staging
  // the runner zeroed.
  const uint64_t half = region * n;
  // The launch's sequence and its count, as oneshot-ll takes them (read it
  // for the reasoning): every thread reads the last launch's sequence, the
  // block counts itself once all have, and the block that counts last
  // stores this one (kAdvanceEarly says when). The read is issued before
  // the launch checks, so that its round trip runs beside them instead of
  // after (the checks' constant loads and branches came first and cost
  // 0.13 to 0.15 us a launch from 1 to 64 KiB, measured on 2 H200,
  // 2026-11-26); it only reads, and the rank it indexes by is masked into
  // the array, so a bad launch still traps below before any store.
  const uint64_t sig = a.peer_signal[a.rank % SIG_MAX_RANKS];
  const uint32_t seq = *reinterpret_cast<volatile uint32_t*>(sig + SIG_OFF_LL_SEQ) + 1;
  // This thread's first input slot goes out with it, for the same reason
  // (most launches of small messages have one slot a thread).
  const uint64_t in = a.peer_in[a.rank % SIG_MAX_RANKS];
  const bool vec = all_aligned16(&in, 1, a.out);
  const Plan<T> plan(a, vec);
  const uint64_t stride = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  const uint64_t first = static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  auto input = [&](uint64_t base) {
    return plan.fast(base) ? S::load_vec(in, base) : S::load_elems(in, base, plan.valid(base));
  };
  const uint4 first_in = first < slots ? input(first * S::kElems) : make_uint4(0, 0, 0, 0);
  // The launch checks cost 0.01 to 0.11 us a launch up to 64 KiB at 4
  // ranks, against a build without them (ci/experiment.sh no-checks; 4
  // H200, docs/results/2026-11-26-h200-x4-field-4-ranks.md).
  check_launch(a, 0, sizeof(T));
  if (artest_sentinel_stage_bytes(slots, n) > a.stage_bytes || n > kMaxRanks) __trap();  // the host checks both first (StageNeed, MaxRanks)

  const uint64_t my_half = (seq & 1u) * half;
  // The block counts itself once every thread of it holds seq (the
  // block-wide OR takes a predicate of each thread's seq); the block that
  // counts last advances the sequence (kAdvanceEarly, below). Where a
  // thread has one slot, the count comes after its push, which needs no
  // other thread: the barrier and the atomic's round trip then wait beside
  // the peers' data instead of before our push (0.1 to 0.25 us a launch
  // from 1 KiB to 1 MiB on 2 H200, 2026-11-26). Where threads loop over several slots the
  // count comes first, so that its round trip overlaps the pushes (after
  // them it cost 0.5 us at 4 MiB). The choice is uniform across the grid.
  // A grid of one block is its own last: it counts nothing (the count
  // stays 0, as the last block leaves it), which takes the atomic off the
  // small messages, where one block is the whole launch.
  const bool count_first = slots > stride;
  uint32_t counted = 1;
  // Where the block that counted last advances the sequence (and writes
  // the trace word): at once, or at its end. Once it has counted, every
  // thread of the launch has read seq, and the next launch reads it only
  // after this one ends (stream order), so either is correct. At once
  // takes those stores off the launch's tail, but its thread 0 waits for
  // its atomic's result before its own slot. Measured on 4 H200,
  // 2026-11-26 (bf16 sum, graph replays, two visits): at 2 ranks at once
  // was 0.20 to 0.25 us faster at 1 and 4 KiB, 0.04 to 0.07 from 16 to 256
  // KiB, the same from 1 MiB; at 4 ranks it was 0.07 faster at 1 KiB (one
  // block) but 0.09 to 0.26 us slower from 4 to 256 KiB, also where a
  // run-time test chose the end (the test's wait on the atomic was
  // compiled in). So at once only in the 2-rank kernel, fixed at compile
  // time: the other kernels are the code that was measured before.
  constexpr bool kAdvanceEarly = NR == 2;
  auto advance = [&] {
    // The block that counted last: every thread of the launch has read seq.
    if (gridDim.x > 1) *reinterpret_cast<volatile uint32_t*>(sig + SIG_OFF_LL_DONE) = 0;
    *reinterpret_cast<volatile uint32_t*>(sig + SIG_OFF_LL_SEQ) = seq;
    *reinterpret_cast<uint32_t*>(sig + SIG_OFF_TRACE_VARIANT) = a.variant_id;
    atomicAdd(reinterpret_cast<unsigned int*>(sig + SIG_OFF_TRACE_COUNT), 1u);
  };
  auto count = [&] {
    (void)__syncthreads_or(seq == 0);
    if (threadIdx.x == 0 && gridDim.x > 1) {
      counted = atomicAdd(reinterpret_cast<unsigned int*>(sig + SIG_OFF_LL_DONE), 1u) + 1;
    }
    if (kAdvanceEarly && threadIdx.x == 0 && counted == gridDim.x) advance();
  };
  if (count_first) count();

  // Under INJECT_DELAY one rank pushes late: what a reader that does not
  // wait (INJECT_SENTINEL_NO_WAIT) then reads is empty or stale.
  inject_delay(a);
  // Push: our slots into every peer's staging, in our region of the half.
  // Not kept (2 H200 and 4 H200, 2026-11-27, bf16 sum, graph replays,
  // builds against each other in one visit): a thread of several slots
  // reducing each a few slots behind its push instead of after its last
  // took 16 MiB at 2 ranks from 60.9 to 54.7 us, but every build of it
  // made the small messages slower, where the field is closest: 0.07 to
  // 0.19 us from 1 KiB to 1 MiB at 2 ranks, 0.12 to 0.33 us up to 256 KiB
  // at 4 and 0.3 to 2.5 us at 1 and 4 MiB there
  // (docs/results/2026-11-27-h200-x2-x4-field-links-read.md).
  for (uint64_t k = first; k < slots; k += stride) {
    const uint4 e = encode<kEB>(k == first ? first_in : input(k * S::kElems));
    const uint64_t at = my_half + a.rank * region + k * ARTEST_SLOT_BYTES;
#pragma unroll
    for (uint32_t p = 0; p < kRanks; ++p) {
      if (p < n && p != a.rank) push(artest_sentinel_align(a.peer_stage[p]) + at, e);
    }
  }
  if (!count_first) count();

  // Reduce: every peer's copy of each of our slots from our own staging as
  // it arrives, our own from our input, in rank order; then the peers'
  // slots are cleared for the next launch of this half.
  // The sum is the reference's: f32, in rank order, rounded once. Packed
  // bf16 adds (the field's kernels' arithmetic, a rounding after each)
  // were no faster at 2 ranks and 0.18 to 0.23 us slower at 4 to 256 KiB
  // (4 H200, 2026-11-26, --input exact), so the exact sum costs nothing.
  const uint64_t stage = artest_sentinel_align(a.peer_stage[a.rank]) + my_half;
  const bool clear = (a.inject & INJECT_SENTINEL_NO_CLEAR) == 0;
  bool gave_up = false;
  for (uint64_t k = first; k < slots && !gave_up; k += stride) {
    const uint64_t base = k * S::kElems;
    // Our own slot: the register the push read it into where it is this
    // thread's first, else a load issued beside the polls. Read again after
    // the wait (an L2 round trip, .cg) it sat on the path from the peer's
    // data to our output store.
    const uint4 own = k == first ? first_in : input(base);
    // One poll of every peer's copy in flight at once, then the wait for
    // those not there yet.
    uint4 x[kRanks];
    bool ready[kRanks];
#pragma unroll
    for (uint32_t s = 0; s < kRanks; ++s) {
      if (s < n && s != a.rank) {
        x[s] = poll(stage + s * region + k * ARTEST_SLOT_BYTES);
        ready[s] = full<kEB>(x[s]);
      }
    }
    float acc[S::kElems];
#pragma unroll
    for (uint32_t s = 0; s < kRanks; ++s) {
      if (s >= n) break;
      if (s == a.rank) {
        R::accumulate(acc, own, s == 0);
        continue;
      }
      if (!ready[s] && !wait_slot<kEB>(a, stage + s * region + k * ARTEST_SLOT_BYTES, k, s, seq, x[s])) {
        gave_up = true;
        break;
      }
      R::accumulate(acc, decode(x[s]), s == 0);
      if (clear) st_slot_v4(reinterpret_cast<void*>(stage + s * region + k * ARTEST_SLOT_BYTES), make_uint4(0, 0, 0, 0));
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
  // the diag words, and no launch after a give-up is trusted (its staging
  // may hold data nobody cleared), so the others need not wait for it. No
  // block-wide barrier: the end's stores below go out as soon as thread 0
  // is done, not after the block's slowest thread (measured on 2 H200,
  // 2026-11-26: 0.15 to 0.25 us a launch from 1 to 64 KiB with the launch
  // checks, docs/perf.md).
  if (gave_up) return;

  if (!kAdvanceEarly && threadIdx.x == 0 && counted == gridDim.x) advance();
}

}  // namespace sentinel
}  // namespace artest

// One kernel per dtype and op; the rank count picks its specialization
// (by_rank_count, sync.cuh).
#define ARTEST_ONESHOT_SENTINEL_KERNEL(dname, T, oname, OPV)                                           \
  extern "C" __global__ void __launch_bounds__(ARTEST_MAX_THREADS)                                     \
      artest_oneshot_sentinel_##dname##_##oname(const __grid_constant__ ArtestArgs args) {             \
    artest::by_rank_count(args.nranks,                                                                 \
                          [&](auto nr) { artest::sentinel::run<T, OPV, decltype(nr)::value>(args); }); \
  }

ARTEST_FOR_EACH_DTYPE_OP(ARTEST_ONESHOT_SENTINEL_KERNEL)
