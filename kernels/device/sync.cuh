// The signal protocol's device side, for every custom kernel: the launch
// checks, giving up at the device deadline, epochs and their claim, the
// barrier with its launch tags and backoff, the wait loops (which the ring's
// sequences and oneshot-ll's slots use too), the planted delay and the PDL
// wait. The SignalBlock's layout is signal.cuh; the host side of the same
// protocol is sigblock/ and kernels/hostmodel.
#pragma once

#include <stdint.h>

#include "abi.cuh"
#include "elem.cuh"
#include "signal.cuh"

#if defined(__CUDACC__)
#include <type_traits>

namespace artest {

// ---------------------------------------------------------------------------
// Rank-count specializations: run(std::integral_constant<uint32_t, NR>{})
// with NR the rank count where it is 2, 4 or 8, and 0 for any other (the
// kernel's loops over ranks then run to a bound the launch gives). The
// count is uniform across the grid, so the choice does not diverge; a
// kernel built per count unrolls its loops to the ranks there are.
template <typename Run>
__device__ __forceinline__ void by_rank_count(uint32_t nranks, Run run) {
  switch (nranks) {
    case 2:
      run(std::integral_constant<uint32_t, 2>{});
      break;
    case 4:
      run(std::integral_constant<uint32_t, 4>{});
      break;
    case 8:
      run(std::integral_constant<uint32_t, 8>{});
      break;
    default:
      run(std::integral_constant<uint32_t, 0>{});
  }
}

// ---------------------------------------------------------------------------
// Launch checks: a host that breaks the launch contract gets a trapped
// kernel (a loud launch error) instead of silent corruption or a hang that
// looks like a protocol bug. Every condition is uniform across the grid.
__device__ __forceinline__ void check_launch(const ArtestArgs& a, uint64_t stage_elems_needed, uint32_t elem_bytes) {
  const bool bad = a.nranks == 0 || a.nranks > SIG_MAX_RANKS || a.rank >= a.nranks ||
                   gridDim.x > SIG_MAX_BLOCKS || blockDim.x < a.nranks || gridDim.y != 1 || gridDim.z != 1 ||
                   blockDim.y != 1 || blockDim.z != 1 || stage_elems_needed * elem_bytes > a.stage_bytes;
  if (bad) __trap();
}

// ---------------------------------------------------------------------------
// Giving up (the device-side deadline, --device-timeout).
//
// Records a give-up in the diag words of the rank's own SignalBlock (sig):
// the first give-up of the rank claims them (atomicCAS on SIG_DIAG_STATE),
// writes the fields, and publishes them with a release store of
// SIG_DIAG_GAVE_UP, so a host that sees that value sees every field. Later
// give-ups (other blocks timing out after it) leave the record alone.
__device__ __forceinline__ void record_give_up(uint64_t sig, uint32_t variant, uint32_t rank, uint32_t kind,
                                               uint32_t where, uint32_t peer, uint32_t want, uint32_t seen,
                                               uint32_t lane, uint64_t timeout_ns) {
  uint32_t* const d = reinterpret_cast<uint32_t*>(sig + SIG_OFF_DIAG);
  if (atomicCAS(reinterpret_cast<unsigned int*>(d + SIG_DIAG_STATE), 0u, SIG_DIAG_CLAIMED) != 0u) return;
  // Milliseconds through float (saturating conversion), not a 64-bit
  // division: that inlines a long sequence whose registers made ptxas spill
  // in multimem's f32 kernel. float's 24 bits are ample at ms resolution.
  const uint32_t timeout_ms = __float2uint_rz(__ull2float_rz(timeout_ns) * 1e-6f);
  d[SIG_DIAG_VARIANT] = variant;
  d[SIG_DIAG_BLOCK] = blockIdx.x;
  d[SIG_DIAG_KIND] = kind;
  d[SIG_DIAG_WHERE] = where;
  d[SIG_DIAG_PEER] = peer;
  d[SIG_DIAG_WANT] = want;
  d[SIG_DIAG_SEEN] = seen;
  d[SIG_DIAG_WAITED_MS] = timeout_ms;  // a wait gives up at its first poll past the deadline
  d[SIG_DIAG_LANE] = lane;
  d[SIG_DIAG_RANK] = rank;
  d[SIG_DIAG_TIMEOUT_MS] = timeout_ms;
  st_release_sys(d + SIG_DIAG_STATE, SIG_DIAG_GAVE_UP);
}

// ---------------------------------------------------------------------------
// Epochs. Block b of every launch uses e = Epoch[b] + 1 for all its barriers
// and stores e back at the end: flags are never reset, so a flag left from an
// earlier launch (or graph replay) is always behind the current e. Epoch[b]
// is only touched by this rank's block b, and launches on one stream run one
// after another, so the kernel boundary orders them. Every rank launches the
// same grids in the same order, so block b's counter is equal on every rank
// at every launch.
//
// Claim (against two launches in flight on one SignalBlock, e.g. on two
// streams): the epoch word is 64 bits, the epoch low and a claim high.
// epoch_begin reads the epoch with one atomicOr that also sets the claim (no
// extra access: the atomic is the read), and epoch_end's plain 64-bit store
// of e clears it in the same store that publishes the epoch, so both travel
// in one word and need no fence. A launch that finds the claim
// already set shares block b's state (epoch, flags) with another launch of
// this rank still in flight, typically an allreduce on a second stream: its
// block records SIG_DIAG_KIND_CLAIMED and exits before touching any flag,
// and the launch holding the claim runs on. (A block that gave up and
// exited leaves its claim set, like its epoch: nothing after a give-up is
// trusted; the runner ends the job.) The atomic is device scope: only
// launches on this GPU share this rank's epoch words. Against a plain load
// in its place (ci/experiment.sh no-claim; gpu.sh's claim-cost step) it
// costs 0.1 to 0.24 us a call on 2 H100
// (docs/results/2026-11-26-h100-h200-x2-nccl-win-vllm-study.md).
__device__ __forceinline__ uint64_t* epoch_word(const ArtestArgs& a) {
  return reinterpret_cast<uint64_t*>(a.peer_signal[a.rank] + sig_epoch_offset(blockIdx.x));
}

__device__ __forceinline__ uint32_t epoch_begin(const ArtestArgs& a) {
  __shared__ uint32_t s_epoch;
  bool held = false;
  if (threadIdx.x == 0) {
    const uint64_t old = atomicOr(reinterpret_cast<unsigned long long*>(epoch_word(a)),
                                  static_cast<unsigned long long>(SIG_EPOCH_CLAIM) << 32);
    s_epoch = static_cast<uint32_t>(old) + 1;
    held = (old >> 32) != 0;
    if (held) {
      record_give_up(a.peer_signal[a.rank], a.variant_id, a.rank, SIG_DIAG_KIND_CLAIMED, 0, a.rank, s_epoch,
                     static_cast<uint32_t>(old >> 32), blockIdx.x, a.wait_timeout_ns);
    }
  }
  // Replaces the plain __syncthreads() one for one (see barrier()).
  if (__syncthreads_or(held)) asm volatile("exit;");
  return s_epoch;
}

// Called once per block after its last barrier and last access to peers.
// Block 0 also writes the trace word, read by the host once the stream is
// done, so it proves which kernel ran and how often.
__device__ __forceinline__ void epoch_end(const ArtestArgs& a, uint32_t e) {
  if (threadIdx.x != 0) return;
  *epoch_word(a) = e;  // the epoch, and a zero claim
  if (blockIdx.x == 0) {
    const uint64_t sig = a.peer_signal[a.rank];
    *reinterpret_cast<uint32_t*>(sig + SIG_OFF_TRACE_VARIANT) = a.variant_id;
    atomicAdd(reinterpret_cast<unsigned int*>(sig + SIG_OFF_TRACE_COUNT), 1u);
  }
}

// ---------------------------------------------------------------------------
// The barrier of phase ph for this block, at epoch e.
//
// Thread t < nranks tells peer t that this block has reached ph (a release
// store of e into peer t's flag [ph][block][my rank]) and then waits until
// peer t has told us the same (our own flag [ph][block][t] reaches e, acquire).
//
// Launch tags: the flag is 64 bits, e in the low half and this
// launch's self_tag in the high half, stored as one access, so the tag
// needs no ordering of its own: a peer that sees e sees the tag that came
// with it. Once peer t's flag holds exactly e, its tag must be peer_tag[t],
// what this rank computed for the same call on the buffers it holds of
// peer t (kernels.Args): otherwise peer t launched another call (size,
// variant, grid, parameters) or its buffers are not the ones this launch
// points at (a graph replayed after it re-registered them), and the block
// records SIG_DIAG_KIND_TAG_MISMATCH and exits like a timed-out one. The
// fast path is unchanged but for the width: one 64-bit compare of the
// first poll against (peer_tag[t], e); anything else (not arrived, ahead,
// another tag) goes to barrier_slow.
//
// Why the other threads' data is covered: the leading __syncthreads()
// (bar.sync) orders every write and read of the block before the release
// store of each thread t, and PTX releases are cumulative: the release covers
// all memory operations that precede it in causality order, which includes
// other threads' operations ordered by bar.sync. The peer's acquire then
// synchronizes with that release, and its own bar.sync passes the ordering
// to every thread of its block. So no __threadfence_system() is needed: it
// would add a second system-scope fence to every barrier for nothing the
// release does not already give.
//
// Backoff: the first kSpinPolls polls follow each other at once (small
// messages are latency-bound, and a barrier's wait is usually a link's
// one-way latency); then __nanosleep from 32 ns doubling to a 128 ns cap
// (the sleep is a hint: the hardware may sleep from 0 to about twice the
// value), so a long wait (a late peer, ranks sharing a GPU) issues few
// loads. On two H200s a 1024 ns cap cost 0.5 to 1.5 us per launch from 64
// KiB to 1 MiB; sleeping from the second poll on cost oneshot 0.2 to 0.3 us
// per call from 256 KiB to 1 MiB against never sleeping (three runs each,
// vLLM's kernel in the same runs unchanged); the poll is a local load by
// one warp per block.
//
// Deadline: when a.wait_timeout_ns != 0, a thread whose wait has
// lasted longer than that since its first failed poll gives up: it records
// where in the rank's SIG_DIAG_* words (record_give_up) and the whole block
// exits, so a lost peer cannot hang the GPU for ever. The trailing block
// barrier is __syncthreads_or(gave_up) (bar.red.or): every thread of the
// block reaches it (the non-waiting threads go there directly), and it
// tells each of them whether any waiter gave up, so all exit together and
// no thread is left at a bar.sync that the exited ones never reach. It
// replaces the plain __syncthreads() one for one and needs no shared flag
// (which would need initialising). The fast path (first poll succeeds)
// never reads the clock. wait_slow and record_give_up are inlined: as
// out-of-line calls they cost up to 50 more registers a thread and a stack
// frame (the call ABI keeps everything live across the call in saved
// registers, and the out-parameters went to local memory).
//
// Exiting mid-kernel is safe in every family: no block reaches a barrier
// with cp.async copies in flight (oneshot_cpasync waits for all of them
// before its mid and end barriers, and issues none before its start
// barrier; twoshot_bulk issues its bulk copies after its mid barrier and
// waits for all of them before its end barrier). A block that exits leaves its epoch and the ring's Head behind,
// so the launches queued after it are not trusted: the runner ends the job
// (exit 3) at its next stream sync, or its watchdog does.
//
// Sync: what a barrier's flag carries. kPublish (release store, acquire
// poll) makes data this launch wrote before the barrier visible to the
// peers after it: twoshot's staging at its mid barrier, multimem's stores.
// kArrive (relaxed store and poll) only says "this block got here": the
// start barrier (the inputs were written before the launch, so the stream
// order, not the flag, orders them; peers read them with .cg loads, which
// cannot hit a stale L1 line) and the barriers that say "done reading your
// memory" (end, and oneshot's in-place mid): a block's peer loads have
// returned their values before bar.sync lets its flag store issue, so no
// later write to that memory can reach them. A release store is a
// MEMBAR.SYS, which waits until every earlier write of the thread is
// acknowledged system-wide; kArrive saves that on two of the three
// barriers. (vLLM's custom allreduce makes the same split.)
enum class Sync : uint32_t { kArrive = 0, kPublish = 1 };

constexpr uint32_t kBackoffMinNs = 32;
constexpr uint32_t kBackoffMaxNs = 128;
// Polls without a sleep before the backoff starts: each is a load that
// misses L1 (an L2 round trip, some hundreds of cycles), so 64 of them
// cover a link round trip many times over and end within tens of us.
// Every poll reads the deadline's timer too: without that read between
// polls (2 H200, 2026-11-26) launches of 1 to 4 KiB took 0.14 to 0.35 us
// longer in oneshot, twoshot, oneshot-ll and oneshot-sentinel (faster
// polling of a word the peer is writing over the link), though 16 KiB
// and up took up to 0.36 us less. These polls come first because, with
// none, polls that never sleep (ci/experiment.sh spin, as vLLM's barrier
// polls) were 0.2 to 0.3 us a call faster from 256 KiB on 2 H100
// (docs/results/2026-11-26-h100-h200-x2-nccl-win-vllm-study.md); with
// them, never sleeping gains 0 to 0.08 us on 2 H200
// (docs/results/2026-11-26-h100-h200-x2-oneshot-sentinel.md).
constexpr uint32_t kSpinPolls = 64;

// The slow path of a wait on *word reaching want, after a failed first
// poll: kSpinPolls polls at once, then backoff from min_ns doubling to max_ns, and a deadline timeout_ns
// from here on %globaltimer (read once per poll, only in this path; 0: no
// deadline, kept as a deadline that never comes, so the loop has one test
// and one 64-bit value live). Returns false once the word has reached want,
// true after giving up. The caller records the give-up: the word's value is
// read again then, and the time waited is the deadline (the poll interval,
// under a microsecond, is below the diag word's millisecond resolution).
// Returning nothing else keeps registers free: carrying seen and waited out
// of the loop made ptxas spill in multimem's f32 kernel.
// The word is 32 bits (ring sequences and credits) or 64 (barrier flags,
// whose low half is the epoch). The loop itself is wait_until's, which
// oneshot-ll's LL slots use with their own test.
template <typename Ready>
__device__ __forceinline__ bool wait_until(Ready ready, uint64_t timeout_ns, uint32_t min_ns, uint32_t max_ns) {
  const uint64_t deadline = timeout_ns != 0 ? global_timer_ns() + timeout_ns : ~uint64_t{0};
  uint32_t sleep_ns = min_ns;
  uint32_t spins = kSpinPolls;
  for (;;) {
    if (spins != 0) {
      --spins;
    } else {
      __nanosleep(sleep_ns);
      if (sleep_ns < max_ns) sleep_ns *= 2;
    }
    if (ready()) return false;
    if (global_timer_ns() > deadline) return true;
  }
}

template <bool kAcquire = true, typename W = uint32_t>
__device__ __forceinline__ bool wait_slow(const W* word, uint32_t want, uint64_t timeout_ns, uint32_t min_ns,
                                          uint32_t max_ns) {
  return wait_until([&] { return sig_reached(static_cast<uint32_t>(ld_flag_sys<kAcquire>(word)), want); }, timeout_ns,
                    min_ns, max_ns);
}

// The barrier's slow path for thread t, whose first poll of peer t's flag
// (mine) read seen, not exactly (peer_tag[t], e): wait until the epoch
// half reaches e (or give up at the deadline), then check the tag of a
// flag of exactly this epoch. A flag ahead of e belongs to the peer's next
// launch (or a skipped barrier under fault injection): its tag is not
// this launch's and is not checked. Returns true after recording a
// give-up.
template <bool kOrdered>
__device__ __forceinline__ bool barrier_slow(const ArtestArgs& a, const uint64_t* mine, uint32_t ph, uint32_t t,
                                             uint32_t e, uint64_t seen) {
  if (!sig_reached(static_cast<uint32_t>(seen), e)) {
    if (wait_slow<kOrdered>(mine, e, a.wait_timeout_ns, kBackoffMinNs, kBackoffMaxNs)) {
      record_give_up(a.peer_signal[a.rank], a.variant_id, a.rank, SIG_DIAG_KIND_BARRIER, ph, t, e,
                     static_cast<uint32_t>(ld_relaxed_sys(mine)), blockIdx.x, a.wait_timeout_ns);
      return true;
    }
    seen = ld_flag_sys<kOrdered>(mine);
  }
  const uint32_t tag = static_cast<uint32_t>(seen >> 32);
  if (static_cast<uint32_t>(seen) == e && tag != a.peer_tag[t]) {
    record_give_up(a.peer_signal[a.rank], a.variant_id, a.rank, SIG_DIAG_KIND_TAG_MISMATCH, ph, t, a.peer_tag[t], tag,
                   blockIdx.x, a.wait_timeout_ns);
    return true;
  }
  return false;
}

template <Sync kSync = Sync::kPublish>
__device__ __forceinline__ void barrier(const ArtestArgs& a, uint32_t ph, uint32_t e) {
  constexpr bool kOrdered = kSync == Sync::kPublish;
  __syncthreads();
  const uint32_t t = threadIdx.x;
  bool gave_up = false;
  if (t < a.nranks) {
    uint64_t* const theirs = reinterpret_cast<uint64_t*>(a.peer_signal[t] + sig_flag_offset(ph, blockIdx.x, a.rank));
    const uint64_t arrived = sig_flag_value(a.self_tag, e);
    if (kOrdered) {
      st_release_sys(theirs, arrived);
    } else {
      st_relaxed_sys(theirs, arrived);
    }
    const uint64_t* mine =
        reinterpret_cast<const uint64_t*>(a.peer_signal[a.rank] + sig_flag_offset(ph, blockIdx.x, t));
    const uint64_t seen = ld_flag_sys<kOrdered>(mine);
    if (seen != sig_flag_value(a.peer_tag[t], e)) gave_up = barrier_slow<kOrdered>(a, mine, ph, t, e, seen);
  }
  // Every thread of the block is here; if any waiter gave up, all leave.
  if (__syncthreads_or(gave_up)) asm volatile("exit;");
}

// INJECT_DELAY: rank delay_rank holds every block for delay_ns right after
// the start barrier, so peers that do not wait for it read stale data.
__device__ __forceinline__ void inject_delay(const ArtestArgs& a) {
  if ((a.inject & INJECT_DELAY) == 0 || a.rank != a.delay_rank) return;
  if (threadIdx.x == 0) {
    const uint64_t start = global_timer_ns();
    for (;;) {
      const uint64_t waited = global_timer_ns() - start;
      if (waited >= a.delay_ns) break;
      const uint64_t left = a.delay_ns - waited;
      __nanosleep(left < 1000 ? static_cast<uint32_t>(left) : 1000u);
    }
  }
  __syncthreads();
}

// Programmatic dependent launch (--pdl, sm_90; kernels/harness/pdl.cu is the
// producer): the allreduce may start while the kernel before it in the
// stream still writes this rank's input. griddepcontrol.wait blocks until
// that kernel has completed and its writes are visible, so it must come
// before the first read of any input and before the start barrier's flag
// store, which tells peers our input is ready: every family's run() calls
// this first. Without PDL it returns at once. INJECT_PDL_NO_WAIT skips it,
// and the poison the runner wrote into the input before the producer ran
// shows in the output. Below sm_90 (the fatbin's sm_80 code) there is no
// PDL and no instruction. Both instructions together cost 0 to 0.04 us a
// launch made without PDL (ci/experiment.sh no-pdl; 2 H200,
// docs/results/2026-11-26-h100-h200-x2-oneshot-sentinel.md).
__device__ __forceinline__ void pdl_wait(const ArtestArgs& a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if ((a.inject & INJECT_PDL_NO_WAIT) == 0) asm volatile("griddepcontrol.wait;" ::: "memory");
  // Let a PDL-launched successor (bench --pdl-chain: the next allreduce)
  // be scheduled now: its blocks take only room this grid left, since
  // every block of this grid has run this line before any of them
  // starts, and they stop at their own griddepcontrol.wait until this
  // grid has finished and its writes are visible. Without a successor
  // launched with PDL it does nothing. Without it (ci/experiment.sh
  // late-trigger) bench --pdl-chain still gains 0.26 to 0.36 us at 2 ranks:
  // the gain is the PDL launch path's, not the early start's
  // (docs/results/2026-11-26-h100-h200-x2-nccl-win-vllm-study.md).
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#else
  (void)a;
#endif
}

}  // namespace artest
#endif  // __CUDACC__
