/*
 * record.c: a plugin for the cuda backend's tests on the fake driver
 * (internal/cudadrv/testdata/fakecuda.c), whose "device memory" is host memory.
 * It reduces nothing: each call writes into its output what artest handed
 * it (the call, the stream, the world it was set up with), one uint64 per
 * field, so the test reads it back with Download. Two variants: "own"
 * stages its own input (needs_registered_input 0), "reg" does not.
 */
#include <stdint.h>
#include <string.h>

#include "artest_plugin.h"

enum { CONTROL_BYTES = 4096, MARK = 0x5245434f5244ull /* "RECORD" */ };

static artest_world world;
static uint64_t setups, control_was_zero;
static const char *msg = "";

static const char *last_error(void) { return msg; }

static int setup(const artest_world *w) {
	world = *w;
	setups++;
	/* artest zeroed this rank's region once before setup. */
	const unsigned char *c = w->control[w->rank];
	control_was_zero = c != NULL;
	for (uint64_t i = 0; c != NULL && i < w->control_bytes; i++)
		if (c[i] != 0) control_was_zero = 0;
	return ARTEST_OK;
}

/* The record; the test reads it in this order. */
static int allreduce(const artest_call *c) {
	uint64_t need = 22 + 3 * (uint64_t)world.world_size;
	if (c->count * 4 < need * 8) {
		msg = "record: the output is too small for the record";
		return 5;
	}
	uint64_t *o = c->output, i = 0;
	o[i++] = MARK;
	o[i++] = c->stream;
	o[i++] = (uint64_t)(uintptr_t)c->input;
	o[i++] = (uint64_t)(uintptr_t)c->output;
	o[i++] = c->offset;
	o[i++] = c->count;
	o[i++] = c->flags;
	o[i++] = c->params[0];
	o[i++] = c->variant;
	o[i++] = c->dtype;
	o[i++] = c->op;
	o[i++] = world.rank;
	o[i++] = world.world_size;
	o[i++] = world.local_rank;
	o[i++] = (uint64_t)(int64_t)world.device;
	o[i++] = world.backend;
	o[i++] = world.input_bytes;
	o[i++] = world.staging_bytes;
	o[i++] = world.control_bytes;
	o[i++] = control_was_zero;
	o[i++] = setups;
	o[i++] = 0; /* reserved */
	for (uint32_t r = 0; r < world.world_size; r++) {
		o[i++] = (uint64_t)(uintptr_t)world.input[r];
		o[i++] = (uint64_t)(uintptr_t)world.staging[r];
		o[i++] = (uint64_t)(uintptr_t)world.control[r];
	}
	return ARTEST_OK;
}

#define VARIANT(NAME, REGISTERED)                                                        \
	{                                                                                    \
		.name = NAME, .summary = "records its call", .dtypes = ARTEST_BIT(ARTEST_F32),   \
		.ops = ARTEST_BIT(ARTEST_SUM), .min_ranks = 1, .max_ranks = 16,                  \
		.needs_registered_input = REGISTERED, .order = ARTEST_ORDER_UNKNOWN, .nparams = 1, \
		.params = {{"blocks", 7, 1, 64, "thread blocks"}},                               \
	}

static const artest_variant variants[] = {VARIANT("own", 0), VARIANT("reg", 1)};

static const artest_plugin plugin = {
	.abi_version = ARTEST_PLUGIN_ABI_VERSION,
	.nvariants = 2,
	.name = "record",
	.variants = variants,
	.control_bytes = CONTROL_BYTES,
	.setup = setup,
	.allreduce = allreduce,
	.last_error = last_error,
};

const artest_plugin *artest_plugin_v1(void) { return &plugin; }
