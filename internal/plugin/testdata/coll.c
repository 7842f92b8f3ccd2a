/*
 * coll.c: a host plugin whose variants declare their collectives
 * (artest_collectives_v1), for the loader's tests and for runs of the
 * collective axis with a plugin on the host backend. Variant "pull" is a
 * reduce-scatter and an all-gather, "all" the allreduce as well: each rank
 * reads what it needs of its peers' registered inputs between a start and
 * an end barrier on the control region, reduces in rank order in fp32
 * (f32 only) and writes its output.
 *
 * ARTEST_COLL_BUG=no-end-barrier returns without the end barrier (stress
 * must catch a peer's input overwritten while this rank still reads it).
 *
 * Declarations that artest must refuse, chosen by -D:
 *   -DNULL_COLLS        artest_collectives_v1 returns NULL
 *   -DCOLLS_VERSION=N   declare collectives version N
 *   -DCOLLS_VARIANTS=N  describe N variants (the plugin has 2)
 *   -DPULL_MASK=M       the collectives mask M for "pull"
 *   -DNO_COLLS          no artest_collectives_v1 at all (a valid plugin:
 *                       every variant is an allreduce)
 *
 * -DFAULTS exports artest_faults_v1: "no-end-barrier" (bit 0, the same bug
 * as ARTEST_COLL_BUG's) and "slow" (bit 1, does nothing); with it,
 * -DNULL_FAULTS, -DFAULTS_VERSION=N, -DNFAULTS=N, -DFAULT_DUP and
 * -DFAULT_TWO_LINES make declarations artest must refuse.
 *
 * -DEARLY exports artest_early_return_v1, declaring "all" an early return;
 * with it, -DNULL_EARLY, -DEARLY_VERSION=N, -DEARLY_VARIANTS=N and
 * -DEARLY_TWO_LINES make declarations artest must refuse.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "artest_plugin.h"

#ifndef COLLS_VERSION
#define COLLS_VERSION ARTEST_COLLECTIVES_VERSION
#endif
#ifndef COLLS_VARIANTS
#define COLLS_VARIANTS 2
#endif
#ifndef PULL_MASK
#define PULL_MASK (ARTEST_BIT(ARTEST_REDUCE_SCATTER) | ARTEST_BIT(ARTEST_ALL_GATHER))
#endif

/* One rank's control region: flag[p] is written by peer p, with the call
 * number, never reset. */
typedef struct {
	_Atomic uint64_t start[ARTEST_MAX_RANKS];
	_Atomic uint64_t end[ARTEST_MAX_RANKS];
} control;

static artest_world world;
static uint64_t epoch;
static int bug_no_end;
static const char *last_error(void) { return ""; }

static control *ctl(uint32_t r) { return (control *)world.control[r]; }

static void barrier(int end) {
	uint32_t me = world.rank;
	for (uint32_t p = 0; p < world.world_size; p++)
		atomic_store(end ? &ctl(p)->end[me] : &ctl(p)->start[me], epoch);
	for (uint32_t p = 0; p < world.world_size; p++)
		while (atomic_load(end ? &ctl(me)->end[p] : &ctl(me)->start[p]) < epoch) {
		}
}

static int setup(const artest_world *w) {
	world = *w;
	epoch = 0;
	const char *bug = getenv("ARTEST_COLL_BUG");
	bug_no_end = bug && strcmp(bug, "no-end-barrier") == 0;
	return ARTEST_OK;
}

static const float *in_of(uint32_t r, uint64_t offset) { return (const float *)((char *)world.input[r] + offset); }

static int call(const artest_call *c) {
	uint32_t n = world.world_size, me = world.rank, coll = artest_coll_of(c);
	uint64_t chunk = c->count / n;
	float *out = c->output;
	epoch++;
	barrier(0);
	switch (coll) {
	case ARTEST_REDUCE_SCATTER:
		for (uint64_t i = 0; i < chunk; i++) {
			float acc = in_of(0, c->offset)[me * chunk + i];
			for (uint32_t r = 1; r < n; r++) {
				float x = in_of(r, c->offset)[me * chunk + i];
				acc = c->op == ARTEST_MAX ? (x > acc ? x : acc) : c->op == ARTEST_MIN ? (x < acc ? x : acc) : acc + x;
			}
			out[i] = acc;
		}
		break;
	case ARTEST_ALL_GATHER: {
		/* In place, peer r's input is its chunk r of its buffer. */
		int in_place = (c->flags & ARTEST_CALL_IN_PLACE) != 0;
		for (uint32_t r = 0; r < n; r++) {
			const float *src = in_of(r, c->offset + (in_place ? r * chunk * sizeof(float) : 0));
			if (src != out + r * chunk)
				memcpy(out + r * chunk, src, chunk * sizeof(float));
		}
		break;
	}
	default: {
		/* In place the output is our input, which peers read until the
		 * end barrier: reduce into staging first. */
		int late = (c->flags & ARTEST_CALL_IN_PLACE) != 0;
		float *dst = late ? world.staging[me] : out;
		for (uint64_t i = 0; i < c->count; i++) {
			float acc = in_of(0, c->offset)[i];
			for (uint32_t r = 1; r < n; r++) {
				float x = in_of(r, c->offset)[i];
				acc = c->op == ARTEST_MAX ? (x > acc ? x : acc) : c->op == ARTEST_MIN ? (x < acc ? x : acc) : acc + x;
			}
			dst[i] = acc;
		}
		barrier(1);
		if (late)
			memcpy(out, dst, c->count * sizeof(float));
		return ARTEST_OK;
	}
	}
	if (!bug_no_end && !(artest_faults_of(c) & 1u))
		barrier(1);
	return ARTEST_OK;
}

#define VARIANT(NAME)                                                                                 \
	{                                                                                                 \
		.name = NAME, .summary = "reads its peers' inputs between two barriers",                    \
		.dtypes = ARTEST_BIT(ARTEST_F32), .ops = ARTEST_BIT(ARTEST_SUM) | ARTEST_BIT(ARTEST_MAX),    \
		.min_ranks = 1, .max_ranks = ARTEST_MAX_RANKS, .needs_registered_input = 1,                 \
		.order = ARTEST_ORDER_RANKS_ASCENDING_F32,                                                  \
	}

static const artest_variant variants[] = {VARIANT("pull"), VARIANT("all")};

static const artest_plugin plugin = {
	.abi_version = ARTEST_PLUGIN_ABI_VERSION,
	.nvariants = 2,
	.name = "coll",
	.variants = variants,
	.control_bytes = sizeof(control),
	.setup = setup,
	.allreduce = call,
	.last_error = last_error,
};

const artest_plugin *artest_plugin_v1(void) { return &plugin; }

#ifndef NO_COLLS
static const uint32_t colls[] = {
	PULL_MASK,
	ARTEST_BIT(ARTEST_ALLREDUCE) | ARTEST_BIT(ARTEST_REDUCE_SCATTER) | ARTEST_BIT(ARTEST_ALL_GATHER),
};

static const artest_collectives collectives = {
	.version = COLLS_VERSION,
	.nvariants = COLLS_VARIANTS,
	.colls = colls,
};

const artest_collectives *artest_collectives_v1(void) {
#ifdef NULL_COLLS
	return 0;
#else
	return &collectives;
#endif
}
#endif

#ifdef EARLY
#ifndef EARLY_VERSION
#define EARLY_VERSION ARTEST_EARLY_RETURN_VERSION
#endif
#ifndef EARLY_VARIANTS
#define EARLY_VARIANTS 2
#endif
static const char *const reasons[] = {
	0,
#ifdef EARLY_TWO_LINES
	"it copies its input first\nand then returns",
#else
	"it copies its input into memory of its own: peers never read the caller's buffers",
#endif
};

static const artest_early_return early = {
	.version = EARLY_VERSION,
	.nvariants = EARLY_VARIANTS,
	.reasons = reasons,
};

const artest_early_return *artest_early_return_v1(void) {
#ifdef NULL_EARLY
	return 0;
#else
	return &early;
#endif
}
#endif

#ifdef FAULTS
#ifndef FAULTS_VERSION
#define FAULTS_VERSION ARTEST_FAULTS_VERSION
#endif
#ifndef NFAULTS
#define NFAULTS 2
#endif
static const artest_fault fault_list[] = {
	{"no-end-barrier", "a reduce-scatter or all-gather returns without its end barrier"},
#if defined(FAULT_DUP)
	{"no-end-barrier", "the same name again"},
#elif defined(FAULT_TWO_LINES)
	{"slow", "two\nlines"},
#else
	{"slow", "does nothing"},
#endif
};

static const artest_faults faults = {
	.version = FAULTS_VERSION,
	.nfaults = NFAULTS,
	.faults = fault_list,
};

const artest_faults *artest_faults_v1(void) {
#ifdef NULL_FAULTS
	return 0;
#else
	return &faults;
#endif
}
#endif
