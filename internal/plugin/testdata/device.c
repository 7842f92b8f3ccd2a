/*
 * device.c: a plugin that uses artest_device.h on the host, for the
 * loader's tests (one rank, in process). Variant "traced" declares the
 * helpers with two wait points, "plain" does not. Each call writes into
 * its output what it was given (the flags and the device fields, one
 * uint64 each); then, when params[0] is 1, it waits at point 1 for a word
 * of its control region that nobody writes (peer 0, want 1); unless that
 * wait gave up, it ends with artest_trace.
 *
 * Declarations that artest must refuse, chosen by -D:
 *   -DNULL_INFO        artest_device_info_v1 returns NULL
 *   -DINFO_VERSION=N   declare device helpers version N
 *   -DINFO_VARIANTS=N  describe N variants (the plugin has 2)
 *   -DUSES=N           uses_helpers N for "traced"
 *   -DPOINTS=N         npoints N for "traced"
 *   -DBAD_POINT        an empty wait point name
 *   -DNO_INFO          no artest_device_info_v1 at all (a valid plugin)
 */
#include <stdint.h>

#include "artest_device.h"

#ifndef INFO_VERSION
#define INFO_VERSION ARTEST_DEVICE_VERSION
#endif
#ifndef INFO_VARIANTS
#define INFO_VARIANTS 2
#endif
#ifndef USES
#define USES 1
#endif
#ifndef POINTS
#define POINTS 2
#endif

static artest_world world;
static const char *last_error(void) { return ""; }

static int setup(const artest_world *w) {
	world = *w;
	return ARTEST_OK;
}

static int allreduce(const artest_call *c) {
	artest_device d = artest_device_of(c);
	uint64_t *o = c->output;
	o[0] = c->flags;
	o[1] = (uint64_t)(uintptr_t)d.trace;
	o[2] = (uint64_t)(uintptr_t)d.diag;
	o[3] = d.timeout_ns;
	o[4] = d.trace_id;
	o[5] = d.rank;
	if (c->params[0] == 1 && !artest_wait(&d, (const uint64_t *)world.control[world.rank], 1, 0, 1))
		return ARTEST_OK; /* gave up: artest reads the record */
	artest_trace(&d);
	return ARTEST_OK;
}

#define VARIANT(NAME)                                                                                          \
	{                                                                                                          \
		.name = NAME, .summary = "records its device fields", .dtypes = ARTEST_BIT(ARTEST_F32),              \
		.ops = ARTEST_BIT(ARTEST_SUM), .min_ranks = 1, .max_ranks = 16, .needs_registered_input = 1,          \
		.order = ARTEST_ORDER_UNKNOWN, .nparams = 1, .params = {{"wait", 0, 0, 1, "1: wait for a word nobody writes"}}, \
	}

static const artest_variant variants[] = {VARIANT("traced"), VARIANT("plain")};

static const artest_plugin plugin = {
	.abi_version = ARTEST_PLUGIN_ABI_VERSION,
	.nvariants = 2,
	.name = "device",
	.variants = variants,
	.control_bytes = 4096,
	.setup = setup,
	.allreduce = allreduce,
	.last_error = last_error,
};

const artest_plugin *artest_plugin_v1(void) { return &plugin; }

#ifndef NO_INFO
static const artest_device_variant device_variants[] = {
#ifdef BAD_POINT
	{.uses_helpers = USES, .npoints = POINTS, .points = {"first", ""}},
#else
	{.uses_helpers = USES, .npoints = POINTS, .points = {"first", "second"}},
#endif
	{.uses_helpers = 0},
};

static const artest_device_info device_info = {
	.version = INFO_VERSION,
	.nvariants = INFO_VARIANTS,
	.variants = device_variants,
};

const artest_device_info *artest_device_info_v1(void) {
#ifdef NULL_INFO
	return 0;
#else
	return &device_info;
#endif
}
#endif
