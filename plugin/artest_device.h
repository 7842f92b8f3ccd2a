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
 * Numbers. artest checks outputs bit for bit, so the header also has the
 * conversions and the max and min that give exactly the bits artest's
 * reference (reference/) expects, the same on the GPU and the CPU:
 * artest_f16_to_f32, artest_bf16_to_f32 (exact), artest_f32_to_f16,
 * artest_f32_to_bf16 (round to nearest, ties to even; a NaN stays a NaN,
 * made quiet), artest_max_f32 and artest_min_f32 (a NaN operand is missing
 * data, signalling or quiet; +0 is above -0), and the bit casts
 * artest_f32_bits and artest_f32_from_bits. They use no libm.
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
#include <string.h>
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

/*
 * Numbers: the element conversions and operators of artest's reference
 * (reference/convert.go, reference/reduce.go), bit for bit, for every
 * input, on the GPU and on the CPU: bit operations and one exact multiply
 * (no libm, no cuda_fp16.h, nothing that depends on the rounding or
 * flush-to-zero mode). A kernel that reduces in fp32 in rank order with
 * them, and rounds once with artest_f32_to_f16 or artest_f32_to_bf16,
 * writes what artest expects for every input, special inputs (signed
 * zeros, subnormals, Inf, NaN) included. On the GPU, cuda_fp16.h's
 * __float2half_rn and cuda_bf16.h's __float2bfloat16_rn, which artest's
 * own kernels use, round to nearest even too and are faster; for a NaN
 * they return a NaN of their own, which artest takes as well (any NaN
 * where one is expected).
 */

/* The bits of a float and back, without changing them (a signalling NaN
 * stays signalling). */
ARTEST_HD uint32_t artest_f32_bits(float f) {
#if defined(__CUDA_ARCH__)
	return __float_as_uint(f);
#else
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	return u;
#endif
}

ARTEST_HD float artest_f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
	return __uint_as_float(u);
#else
	float f;
	memcpy(&f, &u, sizeof f);
	return f;
#endif
}

/* artest_f16_to_f32 widens IEEE binary16 bits to float, exactly. A NaN
 * keeps its sign and payload and comes back quiet, as the reference's
 * does. */
ARTEST_HD float artest_f16_to_f32(uint16_t h) {
	const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	const uint32_t ex = (h >> 10) & 0x1fu, man = h & 0x3ffu;
	if (ex == 0x1fu) /* Inf, or NaN made quiet */
		return artest_f32_from_bits(sign | 0x7f800000u | (man != 0 ? 0x400000u : 0u) | (man << 13));
	if (ex == 0) /* zero or subnormal: man x 2^-24, exact, a normal float */
		return artest_f32_from_bits(sign | artest_f32_bits((float)man * (1.0f / 16777216.0f)));
	return artest_f32_from_bits(sign | ((ex + 112u) << 23) | (man << 13));
}

/* artest_f32_to_f16 rounds a float to the nearest binary16, ties to even:
 * 65520 and above (the tie above the largest finite, 65504) give Inf, the
 * subnormals round at 2^-24 (2^-25 itself, a tie, gives 0), and a NaN
 * keeps its sign and top 10 payload bits with the quiet bit set, so it
 * never becomes an Inf. */
ARTEST_HD uint16_t artest_f32_to_f16(float f) {
	const uint32_t x = artest_f32_bits(f);
	const uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
	if (ax > 0x7f800000u) /* NaN */
		return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
	if (ax >= 0x477ff000u) /* 65520 and above, Inf included */
		return (uint16_t)(sign | 0x7c00u);
	if (ax >= 0x38800000u) { /* a normal half: 2^-14 and above */
		uint32_t r = ax - 0x38000000u; /* exponent rebiased, 127 to 15 */
		/* Round the 13 dropped bits to nearest, ties to even; a carry into
		 * the exponent is the right result. */
		r += 0xfffu + ((r >> 13) & 1u);
		return (uint16_t)(sign | (r >> 13));
	}
	if (ax <= 0x33000000u) /* 2^-25 and below: 0 */
		return (uint16_t)sign;
	/* A subnormal half, in units of 2^-24: m x 2^(e - 150) with e from 102
	 * to 112, so drop 126 - e bits (14 to 24). A carry to 0x400 is the
	 * smallest normal, rightly. */
	const uint32_t m = (ax & 0x7fffffu) | 0x800000u, shift = 126u - (ax >> 23);
	uint32_t h = m >> shift;
	const uint32_t rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
	if (rem > half || (rem == half && (h & 1u)))
		h++;
	return (uint16_t)(sign | h);
}

/* artest_bf16_to_f32 widens bfloat16 bits to float: a shift, exact (a
 * NaN's bits unchanged). */
ARTEST_HD float artest_bf16_to_f32(uint16_t b) { return artest_f32_from_bits((uint32_t)b << 16); }

/* artest_f32_to_bf16 rounds a float to the nearest bfloat16, ties to even;
 * past the largest finite it gives Inf, subnormals round like normals, and
 * a NaN keeps its sign and top 7 payload bits with the quiet bit set (a
 * signalling NaN whose payload is all in the dropped bits stays a NaN). */
ARTEST_HD uint16_t artest_f32_to_bf16(float f) {
	const uint32_t x = artest_f32_bits(f);
	if ((x & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((x >> 16) | 0x40u);
	return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

ARTEST_HD int artest_isnan_bits_(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/* artest_max_f32 and artest_min_f32: the larger (smaller) of a and b, as
 * artest's reference expects of max and min (IEEE 754-2008 maxNum and
 * minNum with signalling NaNs treated as quiet ones, and signed zeros
 * ordered):
 *   - a NaN operand, quiet or signalling, is missing data: the other
 *     operand comes back, bits unchanged; two NaNs give the quiet NaN
 *     0x7fc00000 (artest then expects any NaN: rounded to f16 or bf16 it
 *     is the reference's 0x7e00 or 0x7fc0);
 *   - +0 is above -0: max(+0, -0) is +0 and min(+0, -0) is -0 in either
 *     order (artest takes either zero there; these give the one it prints).
 * So any order of the ranks gives the same bits. C's fmaxf is not this:
 * glibc's (and IEEE 754-2008's maxNum) returns a quiet NaN when an operand
 * is a signalling NaN, so an accumulator loses every number before it:
 * fmaxf(fmaxf(3, sNaN), 2) is 2. CUDA's fmaxf (artest's own kernels')
 * returns the number, and artest takes either zero from it. */
ARTEST_HD float artest_max_f32(float a, float b) {
	const uint32_t ua = artest_f32_bits(a), ub = artest_f32_bits(b);
	const int na = artest_isnan_bits_(ua), nb = artest_isnan_bits_(ub);
	if (na && nb)
		return artest_f32_from_bits(0x7fc00000u);
	if (na)
		return b;
	if (nb)
		return a;
	if (a == b) /* equal: the same bits, or two zeros (+0 unless both are -0) */
		return artest_f32_from_bits(ua & ub);
	return a > b ? a : b;
}

ARTEST_HD float artest_min_f32(float a, float b) {
	const uint32_t ua = artest_f32_bits(a), ub = artest_f32_bits(b);
	const int na = artest_isnan_bits_(ua), nb = artest_isnan_bits_(ub);
	if (na && nb)
		return artest_f32_from_bits(0x7fc00000u);
	if (na)
		return b;
	if (nb)
		return a;
	if (a == b) /* equal: the same bits, or two zeros (-0 unless both are +0) */
		return artest_f32_from_bits(ua | ub);
	return a < b ? a : b;
}

#undef ARTEST_HD
#endif /* ARTEST_DEVICE_H */
