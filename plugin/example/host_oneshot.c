/*
 * host_oneshot.c: the example plugin's host twin. The same one-shot
 * allreduce as cuda_oneshot.cu, on the CPU: artest's host backend gives it
 * every rank's shared-memory input, staging and control region, and it runs
 * each call to completion before returning.
 *
 * Protocol: a start barrier (no rank reads a peer's input before the peer
 * has reached this call), every rank reduces all ranks' inputs in rank order
 * in fp32 and rounds once, then an end barrier (no rank returns, letting its
 * caller overwrite its input, while a peer may still read it). Barrier flags
 * are per peer in each rank's control region and hold the call number
 * (epoch), never reset, so back-to-back calls cannot mistake one call's flag
 * for the next one's.
 *
 * It uses artest's device helpers (artest_device.h) as its CUDA twin does:
 * flags are set with artest_put and awaited with artest_wait, under
 * artest's deadline, and each call ends with artest_trace; it declares so
 * in artest_device_info_v1. Built with -DEXAMPLE_NO_DEVICE_INFO it does
 * not export that symbol: artest then passes no device fields, the waits
 * have no deadline, nothing is traced, and the report says "no trace
 * check, host watchdog only". Elements are converted, compared and rounded
 * with the header's number helpers (artest_f16_to_f32, artest_max_f32,
 * ...), which give the very bits artest's reference expects.
 *
 * Planted bugs for artest's own tests, declared as fault switches
 * (artest_faults_v1: --inject example:NAME turns one on for a run) and also
 * chosen with the environment variable ARTEST_EXAMPLE_BUG=NAME: "skip-last" leaves the last element unwritten (the
 * poison must catch it), "no-end-barrier" returns without the end barrier
 * (stress must catch a peer's next input read by this call), "no-trace"
 * skips artest_trace (the trace check must catch it), "hang": the last rank
 * never tells its peers it reached the start barrier (they must give up at
 * the deadline, naming it), "spin": the last rank's call spins forever,
 * outside artest's deadline (a call that never returns: artest's watchdog
 * must end the job), "spin-sync": the last rank's call blocks forever in a
 * sleep, as a call that waits for a hung kernel does.
 *
 * Build (make plugins-host):
 *   cc -std=c11 -O2 -fPIC -shared -ffp-contract=off -Wl,--no-undefined -I<artest>/plugin -o host_oneshot.so host_oneshot.c -lm
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "artest_device.h"

/* One rank's control region: flag[p] is written by peer p. */
typedef struct {
	uint64_t start[ARTEST_MAX_RANKS];
	uint64_t end[ARTEST_MAX_RANKS];
} control;

/* Wait points, named in artest_device_info_v1 for the diagnosis. */
enum { POINT_START, POINT_END };

static artest_world world;
static uint64_t epoch;    /* calls made; the flag value of the current one */
/* The planted bugs, in artest_faults_v1's order: bit i of a call's faults. */
enum { BUG_SKIP_LAST, BUG_NO_END, BUG_NO_TRACE, BUG_HANG, BUG_SPIN, BUG_SPIN_SYNC, NBUGS };
static const artest_fault bug_names[NBUGS] = {
	[BUG_SKIP_LAST] = {"skip-last", "the last element is not written"},
	[BUG_NO_END] = {"no-end-barrier", "the call returns without its end barrier"},
	[BUG_NO_TRACE] = {"no-trace", "the call does not write the trace word"},
	[BUG_HANG] = {"hang", "the last rank never tells its peers it reached the start barrier"},
	[BUG_SPIN] = {"spin", "the last rank's call spins for ever"},
	[BUG_SPIN_SYNC] = {"spin-sync", "the last rank's call sleeps for ever"},
};
static uint32_t env_bugs; /* ARTEST_EXAMPLE_BUG's, read at setup */
static uint32_t bugs;     /* the current call's: env_bugs and its faults */
#define BUG(b) ((bugs >> (b)) & 1u)
static _Thread_local char err[256];

static const char *last_error(void) { return err; }

static int fail(const char *msg) {
	snprintf(err, sizeof err, "%s", msg);
	return ARTEST_ERROR;
}

static control *ctl(uint32_t r) { return (control *)world.control[r]; }

/* Every rank stores epoch into its slot of every rank's flags, then waits
 * until every peer's slot of its own flags holds it. Returns 0 when a wait
 * gave up (artest's deadline passed): the call must end at once. */
static int barrier(const artest_device *d, int end) {
	uint32_t me = world.rank, last = world.world_size - 1;
	for (uint32_t p = 0; p < world.world_size; p++) {
		if (BUG(BUG_HANG) && !end && me == last && p != me)
			continue; /* the planted hang: peers never hear of this rank */
		artest_put(end ? &ctl(p)->end[me] : &ctl(p)->start[me], epoch);
	}
	for (uint32_t p = 0; p < world.world_size; p++)
		if (!artest_wait(d, end ? &ctl(me)->end[p] : &ctl(me)->start[p], epoch, p, end ? POINT_END : POINT_START))
			return 0;
	return 1;
}

/* Elements to and from fp32 with the header's conversions, which round to
 * nearest even and give exactly the bits artest's reference does. */
static float load(const void *p, uint64_t i, uint32_t dtype) {
	switch (dtype) {
	case ARTEST_F16: return artest_f16_to_f32(((const uint16_t *)p)[i]);
	case ARTEST_BF16: return artest_bf16_to_f32(((const uint16_t *)p)[i]);
	default: return ((const float *)p)[i];
	}
}

static void store(void *p, uint64_t i, uint32_t dtype, float v) {
	switch (dtype) {
	case ARTEST_F16: ((uint16_t *)p)[i] = artest_f32_to_f16(v); break;
	case ARTEST_BF16: ((uint16_t *)p)[i] = artest_f32_to_bf16(v); break;
	default: ((float *)p)[i] = v;
	}
}

#ifdef EXAMPLE_STAGING_STATE
/* Built with -DEXAMPLE_STAGING_STATE the plugin declares staging and keeps
 * state there between calls, as sentinel protocols do (a pattern set at
 * setup, after the largest message it takes), and every call checks every
 * rank's after the start barrier (a peer sets its own up at its first
 * call): when any other code wrote this plugin's staging, the call writes
 * NaN into its first output element, so the case fails as a mismatch
 * (returning an error on one rank would leave its peers at a barrier). */
#define STATE_AT ((uint64_t)1 << 20)
#define STATE_BYTES 4096u
static unsigned char state_byte(uint32_t r, uint32_t i) { return (unsigned char)(0xa5u ^ (r * 31u) ^ i); }
static int state_intact(void) {
	for (uint32_t r = 0; r < world.world_size; r++) {
		const unsigned char *p = (const unsigned char *)world.staging[r] + STATE_AT;
		for (uint32_t i = 0; i < STATE_BYTES; i++)
			if (p[i] != state_byte(r, i))
				return 0;
	}
	return 1;
}
#endif

static int setup(const artest_world *w) {
	if (w->world_size > ARTEST_MAX_RANKS)
		return fail("more ranks than ARTEST_MAX_RANKS");
	if (w->control_bytes < sizeof(control))
		return fail("control region smaller than declared");
	world = *w;
#ifdef EXAMPLE_STAGING_STATE
	if (w->staging_bytes < STATE_AT + STATE_BYTES)
		return fail("staging smaller than declared");
	for (uint32_t i = 0; i < STATE_BYTES; i++)
		((unsigned char *)w->staging[w->rank])[STATE_AT + i] = state_byte(w->rank, i);
#endif
	epoch = 0;
	const char *bug = getenv("ARTEST_EXAMPLE_BUG");
	env_bugs = 0;
	for (int b = 0; bug && b < NBUGS; b++)
		if (strcmp(bug, bug_names[b].name) == 0)
			env_bugs |= 1u << b;
	return ARTEST_OK;
}

static int allreduce(const artest_call *c) {
	size_t esize = c->dtype == ARTEST_F32 ? 4 : 2;
	uint64_t bytes = c->count * esize;
	char *mine = (char *)world.input[world.rank] + c->offset;
	if (c->offset + bytes > world.input_bytes)
		return fail("message beyond the registered input buffer");
	artest_device d = artest_device_of(c);
	epoch++;
	bugs = env_bugs | artest_faults_of(c);
	if ((BUG(BUG_SPIN) || BUG(BUG_SPIN_SYNC)) && world.rank == world.world_size - 1) { /* the planted call that never returns */
		static volatile uint64_t spins;
		for (;;) {
			if (BUG(BUG_SPIN_SYNC))
				nanosleep(&(struct timespec){.tv_sec = 1}, NULL);
			else
				spins++;
		}
	}
#ifdef EXAMPLE_STAGING_STATE
	if (bytes > STATE_AT)
		return fail("message larger than the staging state's offset");
#endif
	/* An unregistered input is copied in first: peers read registered memory. */
	if (!(c->flags & ARTEST_CALL_REGISTERED))
		memcpy(mine, c->input, bytes);
	/* After a give-up the call returns normally: artest reads the record
	 * once the call is done and ends the job (exit 3). */
	if (!barrier(&d, 0))
		return ARTEST_OK;
#ifdef EXAMPLE_STAGING_STATE
	int state_lost = !state_intact();
#endif
	/* In place and registered, the output is this rank's input, which peers
	 * read until the end barrier: reduce into staging, copy out after it. */
	int late = (c->flags & ARTEST_CALL_IN_PLACE) && (c->flags & ARTEST_CALL_REGISTERED);
	void *dst = late ? world.staging[world.rank] : c->output;
	uint64_t n = BUG(BUG_SKIP_LAST) && c->count > 0 ? c->count - 1 : c->count;
	for (uint64_t i = 0; i < n; i++) {
		float acc = load((char *)world.input[0] + c->offset, i, c->dtype);
		for (uint32_t r = 1; r < world.world_size; r++) {
			float x = load((char *)world.input[r] + c->offset, i, c->dtype);
			/* The header's max and min, not libm's fmaxf: glibc's turns a
			 * signalling NaN into a quiet one, which then loses the numbers
			 * before it (plugin/README.md). */
			switch (c->op) {
			case ARTEST_MAX: acc = artest_max_f32(acc, x); break;
			case ARTEST_MIN: acc = artest_min_f32(acc, x); break;
			default: acc += x;
			}
		}
		store(dst, i, c->dtype, acc);
	}
#ifdef EXAMPLE_STAGING_STATE
	if (state_lost && n > 0)
		store(dst, 0, c->dtype, 0.0f / 0.0f);
#endif
	if ((!BUG(BUG_NO_END) || late) && !barrier(&d, 1))
		return ARTEST_OK;
	if (late)
		memcpy(c->output, dst, n * esize);
	if (!BUG(BUG_NO_TRACE))
		artest_trace(&d);
	return ARTEST_OK;
}

#define ALL_DTYPES (ARTEST_BIT(ARTEST_F32) | ARTEST_BIT(ARTEST_F16) | ARTEST_BIT(ARTEST_BF16))
#define ALL_OPS (ARTEST_BIT(ARTEST_SUM) | ARTEST_BIT(ARTEST_MAX) | ARTEST_BIT(ARTEST_MIN))

static const artest_variant variants[] = {{
	.name = "oneshot",
	.summary = "every rank reduces all ranks' inputs in rank order in fp32; start and end barriers on the control region",
	.dtypes = ALL_DTYPES,
	.ops = ALL_OPS,
	.min_ranks = 1,
	.max_ranks = ARTEST_MAX_RANKS,
	.needs_registered_input = 0,
	.order = ARTEST_ORDER_RANKS_ASCENDING_F32,
#ifdef EXAMPLE_STAGING_STATE
	.max_bytes = STATE_AT,
#endif
}};

static const artest_plugin plugin = {
	.abi_version = ARTEST_PLUGIN_ABI_VERSION,
	.nvariants = sizeof variants / sizeof variants[0],
	.name = "example",
	.variants = variants,
	.control_bytes = sizeof(control),
#ifdef EXAMPLE_STAGING_STATE
	.staging_bytes = STATE_AT + STATE_BYTES,
#endif
	.setup = setup,
	.allreduce = allreduce,
	.last_error = last_error,
};

const artest_plugin *artest_plugin_v1(void) { return &plugin; }

static const artest_faults faults = {
	.version = ARTEST_FAULTS_VERSION,
	.nfaults = NBUGS,
	.faults = bug_names,
};

const artest_faults *artest_faults_v1(void) { return &faults; }

#ifndef EXAMPLE_NO_DEVICE_INFO
static const artest_device_variant device_variants[] = {{
	.uses_helpers = 1,
	.npoints = 2,
	.points = {[POINT_START] = "start barrier", [POINT_END] = "end barrier"},
}};

static const artest_device_info device_info = {
	.version = ARTEST_DEVICE_VERSION,
	.nvariants = sizeof device_variants / sizeof device_variants[0],
	.variants = device_variants,
};

const artest_device_info *artest_device_info_v1(void) { return &device_info; }
#endif
