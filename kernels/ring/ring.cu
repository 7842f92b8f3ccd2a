// ring: Disruptor-style ring staging. Each lane (one block per rank) owns a
// contiguous share of the message and a ring of S slots in every rank's
// staging buffer; its block is a persistent producer and consumer that runs
// a ring reduce-scatter and then a ring all-gather through the slots,
// consuming piece u-Q from its own ring while it produces piece u into its
// right neighbour's. The protocol, the piece numbering, the reduction order
// and the arguments for no deadlock, flow control and the barriers are in
// protocol.go; the plan is ring.cuh; the SignalBlock words are
// SIG_RING_* in signal.cuh. The host backend runs the same protocol in
// kernels/ring/host.go.
//
// Memory ordering, per unit of a lane's loop:
//   thread 0: acquire-poll our slot's sequence (the left neighbour
//             released it after the payload) and our credit word (the
//             right neighbour released it after reading the slot we are
//             about to overwrite);
//   bar.sync: every thread's slot reads and writes come after both
//             acquires (the same argument as barrier() in sync.cuh);
//   all:      read our slot (.cg: L2, never a stale L1 line from the last
//             time round the ring), write the right neighbour's slot
//             (remote stores, posted);
//   bar.sync, then thread 0: one fence.acq_rel.sys and two relaxed system
//             stores: the credit into the left neighbour's SignalBlock and
//             the sequence into the right neighbour's. The fence is a
//             release for both (PTX: a release pattern is a release fence
//             followed by a strong store), and cumulative over the block's
//             reads and writes that bar.sync ordered before it; one fence
//             instead of two st.release costs one system-scope fence per
//             unit, not two.
#include "device/common.cuh"
#include "ring.cuh"

namespace artest {
namespace ring {

// Waiting: the first poll is immediate (the data is often there already);
// then __nanosleep from 32 ns, doubling to a 256 ns cap. Provisional until
// measured on H200: the barrier's measurement (sync.cuh: a cap
// of 1024 ns cost 0.5-1.5 us a launch, 128 ns was as fast as spinning)
// says a short cap; a ring waits once per piece, so a long sleep would
// cost per piece. The poll is one thread's load of a word in its own GPU's
// memory. The launch's deadline (a.wait_timeout_ns) bounds each wait as in
// barrier() (sync.cuh): thread 0 gives up, records it in the SIG_DIAG_*
// words, and the block exits together at the __syncthreads_or that follows
// the waits. The lane's Wait* words stay set, so the host's watchdog still
// says who waited for whom.
constexpr uint32_t kRingBackoffMinNs = 32;
constexpr uint32_t kRingBackoffMaxNs = 256;

__device__ __forceinline__ uint2 ld_v2(const void* p) {
  uint2 v;
  asm volatile("ld.global.cg.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void st_v2(void* p, uint2 v) {
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(v.x), "r"(v.y) : "memory");
}

__device__ __forceinline__ void fence_acq_rel_sys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

__device__ __forceinline__ void st_relaxed_sys(uint32_t* p, uint32_t v) {
  asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// The lane's own diagnosis words: read by the host while the kernel runs
// (a hang), so they must reach memory, not stay in a register.
__device__ __forceinline__ void st_volatile(uint32_t* p, uint32_t v) {
  asm volatile("st.volatile.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Four elements of T as raw bits: a 16-byte vector for float, 8 bytes for
// the 16-bit types. Lane, chunk and piece boundaries are multiples of
// RING_UNIT elements, so a unit never straddles two pieces.
template <typename T, bool kWide = sizeof(T) == 4>
struct Quad;

template <typename T>
struct Quad<T, true> {
  using Bits = typename Elem<T>::Bits;
  using Packed = uint4;
  static constexpr uint32_t kBytes = 16;
  static __device__ __forceinline__ Bits get(const Packed& v, uint32_t j) {
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
  }
  static __device__ __forceinline__ void set(Packed& v, uint32_t j, Bits b) {
    if (j == 0) v.x = b;
    if (j == 1) v.y = b;
    if (j == 2) v.z = b;
    if (j == 3) v.w = b;
  }
  static __device__ __forceinline__ Packed ld(const void* p) { return ld_slot_v4(p); }
  static __device__ __forceinline__ void st(void* p, const Packed& v) { st_slot_v4(p, v); }
};

template <typename T>
struct Quad<T, false> {
  using Bits = typename Elem<T>::Bits;
  using Packed = uint2;
  static constexpr uint32_t kBytes = 8;
  static __device__ __forceinline__ Bits get(const Packed& v, uint32_t j) {
    return static_cast<Bits>((j < 2 ? v.x : v.y) >> (16 * (j % 2)));
  }
  static __device__ __forceinline__ void set(Packed& v, uint32_t j, Bits b) {
    const uint32_t shift = 16 * (j % 2);
    const uint32_t mask = 0xffffu << shift;
    if (j < 2) v.x = (v.x & ~mask) | (static_cast<uint32_t>(b) << shift);
    if (j >= 2) v.y = (v.y & ~mask) | (static_cast<uint32_t>(b) << shift);
  }
  static __device__ __forceinline__ Packed ld(const void* p) { return ld_v2(p); }
  static __device__ __forceinline__ void st(void* p, const Packed& v) { st_v2(p, v); }
};

template <typename T>
struct Io {
  using Q = Quad<T>;
  using E = Elem<T>;
  using Bits = typename E::Bits;
  using Packed = typename Q::Packed;

  // Elements base..base+valid-1 (valid 1..4) of a T buffer: one vector
  // when the launch is aligned (vec) and the unit full, else element by
  // element (the misaligned path and a partial last unit); missing
  // elements read as zero bits.
  static __device__ __forceinline__ Packed load(uint64_t buf, uint64_t base, uint32_t valid, bool vec) {
    const Bits* p = reinterpret_cast<const Bits*>(buf) + base;
    if (vec && valid == RING_UNIT) return Q::ld(p);
    Packed v{};
#pragma unroll
    for (uint32_t j = 0; j < RING_UNIT; ++j) {
      if (j < valid) Q::set(v, j, ld_elem(p + j));
    }
    return v;
  }

  static __device__ __forceinline__ void to_float(const Packed& v, float (&f)[RING_UNIT]) {
#pragma unroll
    for (uint32_t j = 0; j < RING_UNIT; ++j) f[j] = E::to_float(Q::get(v, j));
  }

  // One rounding to T, to nearest even.
  static __device__ __forceinline__ Packed round(const float (&f)[RING_UNIT]) {
    Packed v{};
#pragma unroll
    for (uint32_t j = 0; j < RING_UNIT; ++j) Q::set(v, j, E::from_float(f[j]));
    return v;
  }

  // Writes a unit of this rank's output, with the planted-bug switches,
  // which only the unit holding element count-1 can trigger (it then takes
  // the element path).
  static __device__ __forceinline__ void store_out(const ArtestArgs& a, uint64_t base, uint32_t valid, bool vec,
                                                   const Packed& v) {
    Bits* p = reinterpret_cast<Bits*>(a.out) + base;
    const bool holds_last = base + valid == a.count;
    const bool planted = holds_last && (a.inject & (INJECT_SKIP_LAST | INJECT_OVERRUN)) != 0;
    if (vec && valid == RING_UNIT && !planted) {
      Q::st(p, v);
      return;
    }
    const uint32_t keep = holds_last && (a.inject & INJECT_SKIP_LAST) != 0 ? valid - 1 : valid;
#pragma unroll
    for (uint32_t j = 0; j < RING_UNIT; ++j) {
      if (j < keep) st_elem(p + j, Q::get(v, j));
    }
    if (holds_last && (a.inject & INJECT_OVERRUN) != 0) {
      st_elem(reinterpret_cast<Bits*>(a.out) + a.count, Q::get(v, valid - 1));
    }
  }
};

// Partial sums travel as four floats in 16 bytes.
__device__ __forceinline__ void unpack_partial(const uint4& v, float (&f)[RING_UNIT]) {
  f[0] = __uint_as_float(v.x);
  f[1] = __uint_as_float(v.y);
  f[2] = __uint_as_float(v.z);
  f[3] = __uint_as_float(v.w);
}

__device__ __forceinline__ uint4 pack_partial(const float (&f)[RING_UNIT]) {
  return make_uint4(__float_as_uint(f[0]), __float_as_uint(f[1]), __float_as_uint(f[2]), __float_as_uint(f[3]));
}

// Thread 0 waits until *word reaches want, written by rank peer. When the
// first poll fails it records what it waits for in the lane's Wait* words,
// for the watchdog. Returns true when it gave up at the launch's deadline
// (recorded in the diag words); the caller makes the block exit.
__device__ __noinline__ bool wait_for(const ArtestArgs& a, const uint32_t* word, uint32_t want, uint32_t* rec,
                                      uint32_t kind, uint32_t slot, uint32_t peer, uint32_t lane) {
  if (sig_reached(ld_acquire_sys(word), want)) return false;
  st_volatile(rec + SIG_RING_OFF_WAIT_WANT / 4, want);
  st_volatile(rec + SIG_RING_OFF_WAIT_SLOT / 4, slot);
  st_volatile(rec + SIG_RING_OFF_WAIT_KIND / 4, kind);
  if (wait_slow(word, want, a.wait_timeout_ns, kRingBackoffMinNs, kRingBackoffMaxNs)) {
    const bool data = kind == SIG_RING_WAIT_DATA;
    record_give_up(a.peer_signal[a.rank], a.variant_id, a.rank,
                   data ? SIG_DIAG_KIND_RING_DATA : SIG_DIAG_KIND_RING_CREDIT, data ? slot : 0u, peer, want,
                   ld_acquire_sys(word), lane, a.wait_timeout_ns);
    return true;
  }
  st_volatile(rec + SIG_RING_OFF_WAIT_KIND / 4, SIG_RING_WAIT_NONE);
  return false;
}

// Where a piece is in its launch: round, step and index in the step,
// advanced one piece at a time (no division in the loop).
struct Cursor {
  uint64_t round = 0, step = 0, j = 0;
  __device__ __forceinline__ void next(uint64_t q, uint64_t steps) {
    if (++j < q) return;
    j = 0;
    if (++step < steps) return;
    step = 0;
    ++round;
  }
};

__device__ __forceinline__ uint32_t unit_valid(uint64_t base, uint64_t hi) {
  return static_cast<uint32_t>(ring_min(RING_UNIT, hi - base));
}

// One rank: the allreduce is a copy of the lane's elements.
template <typename T>
__device__ __forceinline__ void copy_lane(const ArtestArgs& a, const RingPlan& plan, bool vec) {
  using IO = Io<T>;
  for (uint64_t base = plan.lo + threadIdx.x * RING_UNIT; base < plan.hi;
       base += static_cast<uint64_t>(blockDim.x) * RING_UNIT) {
    const uint32_t valid = unit_valid(base, plan.hi);
    IO::store_out(a, base, valid, vec, IO::load(a.peer_in[a.rank], base, valid, vec));
  }
}

// The lane's unit loop (protocol.go): at unit u, consume piece u-Q and
// produce piece u. Thread k of the block handles units (4 elements) k,
// k + blockDim.x, ... of both pieces.
template <typename T, uint32_t OP>
__device__ __forceinline__ void run_units(const ArtestArgs& a, const RingPlan& plan, uint32_t lane, uint32_t head,
                                          bool vec) {
  using IO = Io<T>;
  using Q = typename IO::Q;
  using Packed = typename IO::Packed;
  const uint32_t n = a.nranks, rank = a.rank;
  const uint32_t right = rank + 1 == n ? 0 : rank + 1;
  const uint32_t left = rank == 0 ? n - 1 : rank - 1;
  const uint64_t slots = a.param2, slot_bytes = a.param1, mask = slots - 1;
  const uint64_t lane_off = lane * slots * slot_bytes;
  const char* const mine = reinterpret_cast<const char*>(ring_stage_base(a.peer_stage[rank]) + lane_off);
  char* const theirs = reinterpret_cast<char*>(ring_stage_base(a.peer_stage[right]) + lane_off);
  uint32_t* const own = reinterpret_cast<uint32_t*>(a.peer_signal[rank] + sig_ring_offset(lane, 0));
  uint32_t* const seq_right = reinterpret_cast<uint32_t*>(a.peer_signal[right] + sig_ring_seq_offset(lane, 0));
  uint32_t* const credit_left =
      reinterpret_cast<uint32_t*>(a.peer_signal[left] + sig_ring_offset(lane, SIG_RING_OFF_CREDIT));
  const bool credit_wait = (a.inject & INJECT_NO_CREDIT_WAIT) == 0;
  const uint64_t in = a.peer_in[rank];
  const uint64_t q = plan.q, total = plan.pieces, steps = 2 * static_cast<uint64_t>(n - 1);
  const uint64_t stride = static_cast<uint64_t>(blockDim.x) * RING_UNIT;

  Cursor pc, cc;  // the next piece to produce, and to consume
  for (uint64_t u = 0; u < total + q; ++u) {
    const bool consume = u >= q, produce = u < total;
    const uint64_t c = u - q;
    const uint32_t cslot = static_cast<uint32_t>((head + c) & mask);
    const uint32_t pslot = static_cast<uint32_t>((head + u) & mask);
    const uint32_t cseq = head + static_cast<uint32_t>(c) + 1;
    const uint32_t pseq = head + static_cast<uint32_t>(u) + 1;
    bool gave_up = false;
    if (threadIdx.x == 0) {
      if (consume) {
        gave_up = wait_for(a, own + SIG_RING_OFF_SEQ / 4 + cslot, cseq, own, SIG_RING_WAIT_DATA, cslot, left, lane);
      }
      // Slot pslot held piece u-S: its consumer must be done with it.
      if (!gave_up && produce && credit_wait) {
        gave_up = wait_for(a, own + SIG_RING_OFF_CREDIT / 4, pseq - static_cast<uint32_t>(slots), own,
                           SIG_RING_WAIT_CREDIT, 0, right, lane);
      }
    }
    // Every thread of the block is here; if thread 0 gave up, all leave.
    if (__syncthreads_or(gave_up)) asm volatile("exit;");

    char* const dst = theirs + pslot * slot_bytes;
    if (produce && pc.step == 0) {
      // Reduce-scatter step 0: this rank's own chunk, as float partials.
      uint64_t lo, hi;
      ring_span(plan, pc.round, ring_send_chunk(rank, 0, n), pc.j, &lo, &hi);
      for (uint64_t base = lo + threadIdx.x * RING_UNIT; base < hi; base += stride) {
        float x[RING_UNIT];
        IO::to_float(IO::load(in, base, unit_valid(base, hi), vec), x);
        st_slot_v4(dst + (base - lo) * RING_PARTIAL_BYTES, pack_partial(x));
      }
    }
    if (consume) {
      uint64_t lo, hi;
      ring_span(plan, cc.round, ring_recv_chunk(rank, cc.step, n), cc.j, &lo, &hi);
      const char* const src = mine + cslot * slot_bytes;
      if (cc.step + 2 < n) {
        // Reduce-scatter: add this rank's input, pass the partial on.
        for (uint64_t base = lo + threadIdx.x * RING_UNIT; base < hi; base += stride) {
          float x[RING_UNIT], acc[RING_UNIT];
          IO::to_float(IO::load(in, base, unit_valid(base, hi), vec), x);
          unpack_partial(ld_slot_v4(src + (base - lo) * RING_PARTIAL_BYTES), acc);
#pragma unroll
          for (uint32_t j = 0; j < RING_UNIT; ++j) acc[j] = Op<OP>::apply(acc[j], x[j]);
          st_slot_v4(dst + (base - lo) * RING_PARTIAL_BYTES, pack_partial(acc));
        }
      } else if (cc.step + 2 == n) {
        // Last reduce-scatter step: the sum of this chunk is complete.
        // Round once, write it out, send it on as the all-gather's start.
        // In place, out is our input: each element is read just before it
        // is overwritten, by the same thread, and never read again.
        for (uint64_t base = lo + threadIdx.x * RING_UNIT; base < hi; base += stride) {
          const uint32_t valid = unit_valid(base, hi);
          float x[RING_UNIT], acc[RING_UNIT];
          IO::to_float(IO::load(in, base, valid, vec), x);
          unpack_partial(ld_slot_v4(src + (base - lo) * RING_PARTIAL_BYTES), acc);
#pragma unroll
          for (uint32_t j = 0; j < RING_UNIT; ++j) acc[j] = Op<OP>::apply(acc[j], x[j]);
          const Packed v = IO::round(acc);
          IO::store_out(a, base, valid, vec, v);
          Q::st(dst + (base - lo) * sizeof(T), v);
        }
      } else {
        // All-gather: write the final values out; forward them unless this
        // is the last step.
        const bool forward = cc.step + 3 < 2 * static_cast<uint64_t>(n);
        for (uint64_t base = lo + threadIdx.x * RING_UNIT; base < hi; base += stride) {
          const Packed v = Q::ld(src + (base - lo) * sizeof(T));
          IO::store_out(a, base, unit_valid(base, hi), vec, v);
          if (forward) Q::st(dst + (base - lo) * sizeof(T), v);
        }
      }
    }
    __syncthreads();

    if (threadIdx.x == 0) {
      fence_acq_rel_sys();
      if (consume) st_relaxed_sys(credit_left, cseq);
      if (produce) st_relaxed_sys(seq_right + pslot, pseq);
    }
    if (produce) pc.next(q, steps);
    if (consume) cc.next(q, steps);
  }
}

template <typename T, uint32_t OP>
__device__ __forceinline__ void run(const ArtestArgs& a) {
  pdl_wait(a);  // --pdl: before any input read or flag store (sync.cuh)
  check_launch(a, 0, sizeof(T));
  // The rings fit the staging buffer and the parameters are in range: the
  // host's Resolve and Check (protocol.go) guarantee it; anything else is a host
  // bug, trapped rather than left to corrupt a peer's memory.
  if (!ring_args_ok(a.param0, a.param1, a.param2, a.nranks, a.stage_bytes)) __trap();
  const uint32_t e = epoch_begin(a);

  // Start: no rank writes into a peer's staging before the peer's launch
  // began (the peer's previous launch, of any variant, may still be using
  // its staging). No end barrier: protocol.go says why.
  if ((a.inject & INJECT_NO_START_BARRIER) == 0) barrier<Sync::kArrive>(a, SIG_PHASE_START, e);
  // For the watchdog: this block's lanes are in a launch until their Head
  // reaches Target (set before the injected delay, so a delayed rank shows
  // as in the launch and waiting for nobody).
  if (threadIdx.x == 0) {
    for (uint32_t lane = blockIdx.x; lane < a.param0; lane += gridDim.x) {
      uint32_t* const rec = reinterpret_cast<uint32_t*>(a.peer_signal[a.rank] + sig_ring_offset(lane, 0));
      const RingPlan plan = ring_plan(a.count, a.nranks, a.param0, a.param1, a.param2, lane);
      st_volatile(rec + SIG_RING_OFF_SLOTS / 4, a.param2);
      st_volatile(rec + SIG_RING_OFF_TARGET / 4, rec[SIG_RING_OFF_HEAD / 4] + static_cast<uint32_t>(plan.pieces));
    }
  }
  inject_delay(a);

  // Units are 4 elements: vector accesses need the input and the output
  // aligned to 4 elements (the staging rings always are).
  const bool vec = ((a.peer_in[a.rank] | a.out) & (RING_UNIT * sizeof(T) - 1)) == 0;
  // One lane per block (Grid in protocol.go); a grid of another size (--blocks) works
  // too: block b runs lanes b, b + gridDim.x, ... one after another, and
  // so does block b of every peer, so each lane still meets its partners.
  __shared__ uint32_t s_head;
  for (uint32_t lane = blockIdx.x; lane < a.param0; lane += gridDim.x) {
    const RingPlan plan = ring_plan(a.count, a.nranks, a.param0, a.param1, a.param2, lane);
    if (plan.pieces >= RING_MAX_PIECES) __trap();
    uint32_t* const rec = reinterpret_cast<uint32_t*>(a.peer_signal[a.rank] + sig_ring_offset(lane, 0));
    // Head: pieces through this lane in earlier launches. Only this
    // rank's block running the lane writes it, at the end of the lane
    // (the kernel boundary orders that store before the next launch's
    // load, like the epoch).
    __syncthreads();  // every thread has read the previous lane's s_head
    if (threadIdx.x == 0) s_head = rec[SIG_RING_OFF_HEAD / 4];
    __syncthreads();
    const uint32_t head = s_head;
    if (a.nranks == 1) {
      copy_lane<T>(a, plan, vec);
    } else {
      run_units<T, OP>(a, plan, lane, head, vec);
    }
    if (threadIdx.x == 0) st_volatile(rec + SIG_RING_OFF_HEAD / 4, head + static_cast<uint32_t>(plan.pieces));
  }
  epoch_end(a, e);
}

}  // namespace ring
}  // namespace artest

#define ARTEST_RING_KERNEL(dname, T, oname, OPV)                               \
  extern "C" __global__ void __launch_bounds__(ARTEST_MAX_THREADS)             \
      artest_ring_##dname##_##oname(const __grid_constant__ ArtestArgs args) { \
    artest::ring::run<T, OPV>(args);                                           \
  }

ARTEST_FOR_EACH_DTYPE_OP(ARTEST_RING_KERNEL)
