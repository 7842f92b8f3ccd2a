/*
 * artest_device.h: optional helpers for a plugin's kernels, so that artest
 * can check which kernel ran and how often (the trace word) and end a hang
 * with a diagnosis instead of a watchdog (device-side deadlines).
 *
 * Include it instead of artest_plugin.h (it includes it), in CUDA C++ (the
 * functions are __host__ __device__) or in plain C11 or C++ on the host
 * backend (GCC or Clang: it uses their __atomic builtins). Declare the
 * variants that use it in artest_device_info_v1 (artest_plugin.h); then,
 * per call:
 *
 *     artest_device d = artest_device_of(call);   // host side, pass d to the kernel
 *     ...
 *     artest_put(&peer_flags[me], epoch);          // tell a peer
 *     if (!artest_wait(&d, &my_flags[peer], epoch, peer, POINT_START))
 *         return;                                  // gave up: leave the call
 *     ...
 *     artest_trace(&d);                            // once per call, at its end
 *
 * Without ARTEST_CALL_DEVICE in the call (a variant not declared, or an
 * artest older than this header) d is zero: artest_trace writes nothing and
 * artest_wait waits without a deadline, so the same code runs either way.
 *
 * What artest reads. artest_trace stores the variant's trace id in
 * trace[0] and adds 1 to trace[1]; after a call's stream is done artest
 * compares them with the variant and the calls it made (a kernel that did
 * not run, ran twice, or another kernel's code path is a "trace" failure,
 * exit 1). artest_wait polls a 64-bit word until it reaches want; past
 * timeout_ns from its first failed poll it records the give-up in the
 * diag words (the first give-up of the rank wins) and returns 0, and so
 * does every later wait of the rank, at once: nothing after a give-up is
 * trusted; the call should then end (on cuda the whole block leaves) and
 * may return ARTEST_OK. artest ends the job with exit code 3 and a line
 * such as
 *
 *     rank 0 block 0 gave up after 1.0s in example:oneshot at "start barrier"
 *         waiting for rank 3 (word 6, want 7)
 *
 * Version ARTEST_DEVICE_VERSION (1): the diag word layout below is shared
 * with artest (sigblock/layout.go), which tests that they agree. Names that
 * end in an underscore are the header's own, not for plugins.
 */
#ifndef ARTEST_DEVICE_H
#define ARTEST_DEVICE_H

#include <stdint.h>

#include "artest_plugin.h"

#include <sched.h>
#include <time.h>

#if defined(__CUDACC__)
#define ARTEST_HD static __host__ __device__ __forceinline__
#else
#define ARTEST_HD static inline
#endif

/* The diag words: word i is diag[i]. */
enum {
	ARTEST_DIAG_STATE = 0,      /* 0, ARTEST_DIAG_CLAIMED, then ARTEST_DIAG_GAVE_UP */
	ARTEST_DIAG_VARIANT = 1,    /* trace id of the variant whose wait gave up */
	ARTEST_DIAG_BLOCK = 2,      /* blockIdx.x; 0 on the host */
	ARTEST_DIAG_KIND = 3,       /* ARTEST_DIAG_KIND_PLUGIN_WAIT */
	ARTEST_DIAG_WHERE = 4,      /* the wait point (artest_device_variant.points) */
	ARTEST_DIAG_PEER = 5,       /* the rank whose write never came */
	ARTEST_DIAG_WANT = 6,       /* the value waited for (low 32 bits) */
	ARTEST_DIAG_SEEN = 7,       /* what the word held at the give-up (low 32 bits) */
	ARTEST_DIAG_WAITED_MS = 8,  /* from the first failed poll */
	ARTEST_DIAG_LANE = 9,       /* the block again */
	ARTEST_DIAG_RANK = 10,      /* artest_device.rank */
	ARTEST_DIAG_TIMEOUT_MS = 11,
	ARTEST_DIAG_WORDS = 16
};
#define ARTEST_DIAG_CLAIMED 1u
#define ARTEST_DIAG_GAVE_UP 0x47495645u /* "GIVE" */
#define ARTEST_DIAG_KIND_PLUGIN_WAIT 7u

/* The call's device fields, or zeros when artest did not fill them: read
 * call->device only behind the flag, as an older artest's call ends
 * before it. Host code. */
static inline artest_device artest_device_of(const artest_call *call) {
	artest_device d;
	if (call->flags & ARTEST_CALL_DEVICE) {
		d = call->device;
	} else {
		d.trace = 0;
		d.diag = 0;
		d.timeout_ns = 0;
		d.trace_id = 0;
		d.rank = 0;
	}
	return d;
}

/* Memory access with system scope (peers are other processes, over NVLink
 * or PCIe on cuda, shared memory on the host). */
ARTEST_HD void artest_put(uint64_t *word, uint64_t v) {
#if defined(__CUDA_ARCH__)
	asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(word), "l"(v) : "memory");
#else
	__atomic_store_n(word, v, __ATOMIC_RELEASE);
#endif
}

ARTEST_HD uint64_t artest_get(const uint64_t *word) {
#if defined(__CUDA_ARCH__)
	uint64_t v;
	asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(word) : "memory");
	return v;
#else
	return __atomic_load_n(word, __ATOMIC_ACQUIRE);
#endif
}

ARTEST_HD uint32_t artest_get32_(const uint32_t *word) {
#if defined(__CUDA_ARCH__)
	uint32_t v;
	asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(word) : "memory");
	return v;
#else
	return __atomic_load_n(word, __ATOMIC_ACQUIRE);
#endif
}

ARTEST_HD uint64_t artest_now_ns_(void) {
#if defined(__CUDA_ARCH__)
	uint64_t t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
#else
	struct timespec ts;
	timespec_get(&ts, TIME_UTC);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* One pause between polls: a short sleep on the GPU, a yield on the CPU
 * (ranks may outnumber cores). */
ARTEST_HD void artest_pause_(uint32_t *ns) {
#if defined(__CUDA_ARCH__)
	__nanosleep(*ns);
	if (*ns < 256) *ns *= 2;
#else
	(void)ns;
	sched_yield();
#endif
}

ARTEST_HD uint32_t artest_block_(void) {
#if defined(__CUDA_ARCH__)
	return blockIdx.x;
#else
	return 0;
#endif
}

/* artest_gave_up: whether a wait of this rank has given up (in this call
 * or an earlier one). */
ARTEST_HD int artest_gave_up(const artest_device *d) {
	return d->diag != 0 && artest_get32_(&d->diag[ARTEST_DIAG_STATE]) == ARTEST_DIAG_GAVE_UP;
}

/* The first give-up of the rank claims the words with a compare-and-swap,
 * writes them, and publishes them with a release store of the state, so a
 * reader that sees ARTEST_DIAG_GAVE_UP sees every field. */
ARTEST_HD void artest_record_(const artest_device *d, uint32_t point, uint32_t peer, uint64_t want, uint64_t seen,
                              uint64_t waited_ns) {
	uint32_t *w = d->diag;
#if defined(__CUDA_ARCH__)
	if (atomicCAS(&w[ARTEST_DIAG_STATE], 0u, ARTEST_DIAG_CLAIMED) != 0u) return;
#else
	uint32_t zero = 0;
	if (!__atomic_compare_exchange_n(&w[ARTEST_DIAG_STATE], &zero, ARTEST_DIAG_CLAIMED, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		return;
#endif
	uint32_t block = artest_block_();
	w[ARTEST_DIAG_VARIANT] = d->trace_id;
	w[ARTEST_DIAG_BLOCK] = block;
	w[ARTEST_DIAG_KIND] = ARTEST_DIAG_KIND_PLUGIN_WAIT;
	w[ARTEST_DIAG_WHERE] = point;
	w[ARTEST_DIAG_PEER] = peer;
	w[ARTEST_DIAG_WANT] = (uint32_t)want;
	w[ARTEST_DIAG_SEEN] = (uint32_t)seen;
	w[ARTEST_DIAG_WAITED_MS] = (uint32_t)(waited_ns / 1000000u);
	w[ARTEST_DIAG_LANE] = block;
	w[ARTEST_DIAG_RANK] = d->rank;
	w[ARTEST_DIAG_TIMEOUT_MS] = (uint32_t)(d->timeout_ns / 1000000u);
#if defined(__CUDA_ARCH__)
	asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(&w[ARTEST_DIAG_STATE]), "r"(ARTEST_DIAG_GAVE_UP) : "memory");
#else
	__atomic_store_n(&w[ARTEST_DIAG_STATE], ARTEST_DIAG_GAVE_UP, __ATOMIC_RELEASE);
#endif
}

/* artest_wait waits until *word (written by rank peer with artest_put)
 * reaches want, with acquire semantics, and returns 1. Past d's deadline
 * it records where it gave up (point: an index into the variant's
 * declared points) and returns 0; once any wait of the rank gave up, it
 * returns 0 at its first failed poll. The caller leaves the call then (on
 * cuda the whole block: see the example's __syncthreads_or). The first
 * poll reads no clock. */
ARTEST_HD int artest_wait(const artest_device *d, const uint64_t *word, uint64_t want, uint32_t peer, uint32_t point) {
	uint64_t seen = artest_get(word);
	if (seen >= want) return 1;
	const uint64_t start = artest_now_ns_();
	uint32_t pause = 32;
	for (;;) {
		artest_pause_(&pause);
		seen = artest_get(word);
		if (seen >= want) return 1;
		if (d->diag == 0) continue; /* no helpers: no deadline, nothing to record */
		if (artest_gave_up(d)) return 0;
		if (d->timeout_ns == 0) continue;
		const uint64_t waited = artest_now_ns_() - start;
		if (waited > d->timeout_ns) {
			artest_record_(d, point, peer, want, seen, waited);
			return 0;
		}
	}
}

/* artest_trace records one completed call: once per call, by one thread,
 * after the call's last wait (on cuda: thread 0 of block 0, after its end
 * barrier). */
ARTEST_HD void artest_trace(const artest_device *d) {
	if (d->trace == 0) return;
#if defined(__CUDA_ARCH__)
	d->trace[0] = d->trace_id;
	atomicAdd(&d->trace[1], 1u);
#else
	__atomic_store_n(&d->trace[0], d->trace_id, __ATOMIC_RELAXED);
	__atomic_fetch_add(&d->trace[1], 1u, __ATOMIC_RELEASE);
#endif
}

#undef ARTEST_HD
#endif /* ARTEST_DEVICE_H */
