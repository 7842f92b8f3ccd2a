// The ring variant's constants and plan, used by the kernel (ring.cu) and,
// through protocol_test.go, checked against the Go side (protocol.go, which
// the host model uses): the RING_* constants by name and value, and the
// plan functions by compiling this header with a host C++ compiler and
// comparing their results with Go's over a table of launches.
//
// The protocol and the reasons for it are written down once, in
// protocol.go; the SignalBlock words it uses are in kernels/device/signal.cuh
// (SIG_RING_*) and sigblock/ring.go. In short:
//
//   lane l of the message -> one block per rank; ring of S slots of
//   slot_bytes in the receiver's staging (16-byte aligned start, lanes one
//   after another); piece t of a launch has sequence head+t+1 and slot
//   (head+t) % S; at unit u a block consumes piece u-Q from its own ring and
//   produces piece u into its right neighbour's; reduce-scatter steps
//   0..N-2 carry float32 partial sums, all-gather steps N-1..2N-3 the
//   final values in the dtype.
//
// Plain C++ above the __CUDACC__ part, so a host compiler can include it.
#pragma once

#include <stdint.h>

#include "device/grid.cuh"

// Mirrors of protocol.go (Unit -> RING_UNIT, ...).
constexpr uint32_t RING_UNIT = 4u;            // elements: lanes, chunks and pieces are multiples
constexpr uint32_t RING_PARTIAL_BYTES = 4u;   // a partial sum in a slot is a float
constexpr uint32_t RING_MIN_SLOT_BYTES = 16u;
constexpr uint32_t RING_MAX_SLOT_BYTES = 1u << 20;
constexpr uint32_t RING_MIN_SLOTS = 2u;
constexpr uint32_t RING_MAX_SLOTS = SIG_RING_MAX_SLOTS;
constexpr uint32_t RING_MAX_LANES = SIG_RING_MAX_LANES;
constexpr uint32_t RING_MAX_PIECES = 1u << 30;  // per lane and launch: sequences stay far from wrapping

// The ring's own fault switch (an Args.inject bit; InjectNoCreditWait in
// protocol.go): the producer does not wait for credit.
constexpr uint32_t INJECT_NO_CREDIT_WAIT = 1u << 6;

// Q, the pieces per step: below S (no deadlock) and above S/2 (flow control
// matters from 2 ranks on). protocol.go has both arguments.
ARTEST_HD constexpr uint64_t ring_step_pieces(uint64_t slots) {
  return slots - (slots / 4 > 1 ? slots / 4 : 1);
}

// L, every lane's share of the message but the last's.
ARTEST_HD constexpr uint64_t ring_lane_elems(uint64_t count, uint64_t lanes) {
  return artest_ceil_div(artest_ceil_div(count, lanes), RING_UNIT) * RING_UNIT;
}

ARTEST_HD constexpr uint64_t ring_min(uint64_t a, uint64_t b) { return a < b ? a : b; }

// One lane's share of a launch (Plan in protocol.go).
struct RingPlan {
  uint64_t lo, hi;  // elements [lo, hi) of the message
  uint64_t n;       // ranks
  uint64_t q;       // pieces per step
  uint64_t rounds;
  uint64_t e;       // elements per piece in every round but the last
  uint64_t e_last;  // elements per piece in the last round
  uint64_t pieces;  // rounds * 2(n-1) * q: pieces produced (and consumed)
};

ARTEST_HD inline RingPlan ring_plan(uint64_t count, uint64_t n, uint64_t lanes, uint64_t slot_bytes,
                                    uint64_t slots, uint64_t lane) {
  const uint64_t l = ring_lane_elems(count, lanes);
  RingPlan p{};
  p.lo = ring_min(lane * l, count);
  p.hi = ring_min(p.lo + l, count);
  p.n = n;
  const uint64_t elems = p.hi - p.lo;
  if (n <= 1 || elems == 0) return p;
  const uint64_t emax = slot_bytes / RING_PARTIAL_BYTES;
  p.q = ring_min(ring_step_pieces(slots), artest_ceil_div(elems, n * emax));
  p.rounds = artest_ceil_div(elems, n * p.q * emax);
  const uint64_t rest = elems - (p.rounds - 1) * n * p.q * emax;
  p.e_last = artest_ceil_div(artest_ceil_div(rest, n * p.q), RING_UNIT) * RING_UNIT;
  p.e = p.rounds == 1 ? p.e_last : emax;
  p.pieces = p.rounds * 2 * (n - 1) * p.q;
  return p;
}

// Elements [*lo, *hi) of piece j of chunk c in round; empty past the lane.
ARTEST_HD inline void ring_span(const RingPlan& p, uint64_t round, uint64_t c, uint64_t j, uint64_t* lo,
                                uint64_t* hi) {
  const uint64_t e = round == p.rounds - 1 ? p.e_last : p.e;
  const uint64_t base = p.lo + round * p.n * p.q * p.e + (c * p.q + j) * e;
  *lo = ring_min(base, p.hi);
  *hi = ring_min(base + e, p.hi);
}

// The chunk rank sends at step s (0 <= s <= 2n-3), and the one it receives.
ARTEST_HD constexpr uint64_t ring_send_chunk(uint64_t rank, uint64_t s, uint64_t n) { return (rank + 2 * n - s) % n; }
ARTEST_HD constexpr uint64_t ring_recv_chunk(uint64_t rank, uint64_t s, uint64_t n) {
  return (rank + 2 * n - 1 - s) % n;
}

// Where the rings start in a staging buffer: the next 16-byte boundary
// (StageBase in protocol.go).
ARTEST_HD constexpr uint64_t ring_stage_base(uint64_t stage) { return (stage + 15) & ~uint64_t{15}; }

ARTEST_HD constexpr bool ring_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

// Check (protocol.go) without the per-lane piece bound: the launch contract
// every block checks (the same on every block).
ARTEST_HD constexpr bool ring_args_ok(uint64_t lanes, uint64_t slot_bytes, uint64_t slots, uint64_t nranks,
                                      uint64_t stage_bytes) {
  return lanes >= 1 && lanes <= RING_MAX_LANES && ring_pow2(slot_bytes) && slot_bytes >= RING_MIN_SLOT_BYTES &&
         slot_bytes <= RING_MAX_SLOT_BYTES && ring_pow2(slots) && slots >= RING_MIN_SLOTS &&
         slots <= RING_MAX_SLOTS && (nranks <= 1 || lanes * slots * slot_bytes + 15 <= stage_bytes);
}
