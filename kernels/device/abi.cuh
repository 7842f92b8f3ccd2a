// The kernel launch ABI: ArtestArgs, the one parameter of every custom
// kernel (the Go twin is kernels.Args in kernels/abi.go), its flag and
// fault-switch bits, and the dtype and op numbers (as in
// reference/types.go). kernels/abi_test.go checks every constant and field
// against the Go side, so change both together.
//
// The fault switches here are the ones every custom kernel shares; a
// variant's own (ring's INJECT_NO_CREDIT_WAIT, oneshot-ll's
// INJECT_LL_NO_FLAG) sit in the header beside its kernel, with their Go
// twins in its Variant().Faults, and kernels/registry's tests keep every
// bit of the word distinct.
//
// Plain C++ so that a host compiler can include it (abi_test.go does).
#pragma once

#include <stdint.h>

#include "signal.cuh"

// ---------------------------------------------------------------------------
// Launch arguments. One struct, passed by value as the kernel's only
// parameter; the host hands cuLaunchKernel a pointer to these bytes. Natural
// alignment only (no padding is needed anywhere: the ABI test checks every
// offset against unsafe.Offsetof on kernels.Args).
struct ArtestArgs {
  uint64_t peer_in[SIG_MAX_RANKS];      // rank r's input (at the case's offset)
  uint64_t peer_stage[SIG_MAX_RANKS];   // rank r's staging buffer
  uint64_t peer_signal[SIG_MAX_RANKS];  // rank r's SignalBlock
  uint64_t out;                         // this rank's output (== peer_in[rank] in place)
  uint64_t count;                       // elements of the full buffer (see FLAG_REDUCE_SCATTER)
  uint32_t rank;
  uint32_t nranks;
  uint32_t inject;      // INJECT_* bits
  uint32_t delay_rank;  // rank that sleeps under INJECT_DELAY
  uint64_t delay_ns;
  uint32_t variant_id;  // written to the trace word at the end of the launch
  uint32_t flags;       // FLAG_* bits
  uint64_t stage_bytes; // capacity of each staging buffer
  uint32_t param0;      // variant-specific: see the variant's registry entry
  uint32_t param1;
  uint32_t param2;
  uint32_t param3;
  // Device-side deadline of every wait in the launch, from the wait's first
  // failed poll (0: wait for ever). A block that waits longer records where
  // in the SIG_DIAG_* words and exits; see barrier().
  uint64_t wait_timeout_ns;
  // Launch tags (kernels.Args says how the host computes them): what this
  // launch expects in the high word of peer p's barrier flags, and what it
  // stores in the high word of its own. See barrier().
  uint32_t peer_tag[SIG_MAX_RANKS];
  uint32_t self_tag;
  uint32_t spare;  // keeps the size a multiple of 8 without implicit padding
};

static_assert(sizeof(ArtestArgs) == 536, "ArtestArgs changed: change kernels.Args with it");

// Flags bits.
constexpr uint32_t FLAG_IN_PLACE = 1u << 0;  // out lies in this rank's registered input buffer
// The collective when not an allreduce (kernels.Args.Coll); count is its
// full buffer, each rank's part count / nranks elements.
constexpr uint32_t FLAG_REDUCE_SCATTER = 1u << 1;
constexpr uint32_t FLAG_ALL_GATHER = 1u << 2;

// Fault switches, compiled into every kernel and flipped at run time, so the
// suite can show that each protection is needed.
constexpr uint32_t INJECT_NO_END_BARRIER = 1u << 0;
constexpr uint32_t INJECT_NO_START_BARRIER = 1u << 1;
constexpr uint32_t INJECT_DELAY = 1u << 2;      // delay_rank sleeps delay_ns after the start barrier
constexpr uint32_t INJECT_SKIP_LAST = 1u << 3;  // element count-1 of out is not written
constexpr uint32_t INJECT_OVERRUN = 1u << 4;    // element count of out (one past the end) is written
constexpr uint32_t INJECT_NO_MID_BARRIER = 1u << 5;
constexpr uint32_t INJECT_PDL_NO_WAIT = 1u << 7;     // pdl_wait is skipped: the input is read before the producer wrote it

// Element types and operators, numbered as reference.DType and reference.Op.
constexpr uint32_t DTYPE_F32 = 0u;
constexpr uint32_t DTYPE_F16 = 1u;
constexpr uint32_t DTYPE_BF16 = 2u;
constexpr uint32_t OP_SUM = 0u;
constexpr uint32_t OP_MAX = 1u;
constexpr uint32_t OP_MIN = 2u;
