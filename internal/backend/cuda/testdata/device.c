/*
 * device.c: a plugin that uses artest_device.h, for the cuda backend's
 * tests on the fake driver, whose "device memory" is host memory: compiled
 * with cc, the header's host path does what its device path does on a GPU
 * (the same words, the same order). Variant "traced" declares the helpers.
 * Each call writes into its output the flags and the device fields it got
 * (one uint64 each); then, when params[0] is 1, it waits at its point 1
 * ("end barrier") for a word of its control region nobody writes (peer 0,
 * want 1), and unless that gave up it ends with artest_trace.
 */
#include <stdint.h>

#include "artest_device.h"

static artest_world world;
static const char *msg = "";

static const char *last_error(void) { return msg; }

static int setup(const artest_world *w) {
	world = *w;
	return ARTEST_OK;
}

static int allreduce(const artest_call *c) {
	if (c->count < 12) {
		msg = "device: the output is too small for the record";
		return 5;
	}
	artest_device d = artest_device_of(c);
	uint64_t *o = c->output;
	o[0] = c->flags;
	o[1] = (uint64_t)(uintptr_t)d.trace;
	o[2] = (uint64_t)(uintptr_t)d.diag;
	o[3] = d.timeout_ns;
	o[4] = d.trace_id;
	o[5] = d.rank;
	if (c->params[0] == 1 && !artest_wait(&d, (const uint64_t *)world.control[world.rank], 1, 0, 1))
		return ARTEST_OK;
	artest_trace(&d);
	return ARTEST_OK;
}

static const artest_variant variants[] = {{
	.name = "traced",
	.summary = "records its device fields",
	.dtypes = ARTEST_BIT(ARTEST_F32),
	.ops = ARTEST_BIT(ARTEST_SUM),
	.min_ranks = 1,
	.max_ranks = 16,
	.needs_registered_input = 1,
	.order = ARTEST_ORDER_UNKNOWN,
	.nparams = 1,
	.params = {{"wait", 0, 0, 1, "1: wait for a word nobody writes"}},
}};

static const artest_plugin plugin = {
	.abi_version = ARTEST_PLUGIN_ABI_VERSION,
	.nvariants = 1,
	.name = "device",
	.variants = variants,
	.control_bytes = 4096,
	.setup = setup,
	.allreduce = allreduce,
	.last_error = last_error,
};

const artest_plugin *artest_plugin_v1(void) { return &plugin; }

static const artest_device_variant device_variants[] = {
	{.uses_helpers = 1, .npoints = 2, .points = {"start barrier", "end barrier"}},
};

static const artest_device_info device_info = {
	.version = ARTEST_DEVICE_VERSION,
	.nvariants = 1,
	.variants = device_variants,
};

const artest_device_info *artest_device_info_v1(void) { return &device_info; }
