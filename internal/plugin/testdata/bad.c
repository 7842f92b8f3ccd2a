/*
 * bad.c: plugins that break the ABI or fail in each way artest must report,
 * chosen by -D at compile time (the tests build each with cc):
 *   -DABI=N         declare ABI version N
 *   -DNO_ENTRY      export no artest_plugin_v1
 *   -DNO_DTYPES     declare a variant with no dtype
 *   -DSETUP_FAIL    setup returns status 7 with a message
 *   -DCALL_FAIL     allreduce returns status 9 with a message
 *   -DCRASH         allreduce dereferences NULL
 *   -DHANG          allreduce never returns
 *   -DNAME=S        the plugin's name is S (a string literal)
 *   -DCONTROL_BYTES=N  declare N control bytes (default 4096)
 * Without any of them it is a valid plugin whose allreduce copies its input
 * to its output (right on one rank only).
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "artest_plugin.h"

#ifndef ABI
#define ABI ARTEST_PLUGIN_ABI_VERSION
#endif

static const char *msg = "";
static const char *last_error(void) { return msg; }

static int setup(const artest_world *w) {
	(void)w;
#ifdef SETUP_FAIL
	msg = "no peers today";
	return 7;
#endif
#ifdef SETUP_FAIL_RANK
	if (w->rank == SETUP_FAIL_RANK) {
		msg = "no peers today on this rank";
		return 7;
	}
#endif
	return ARTEST_OK;
}

static int allreduce(const artest_call *c) {
#ifdef CALL_FAIL
	msg = "count out of range";
	return 9;
#endif
#ifdef CRASH
	*(volatile int *)(uintptr_t)c->count = 1; /* address 4 or so: SIGSEGV */
#endif
#ifdef HANG
	for (;;)
		sleep(1);
#endif
	memmove(c->output, c->input, c->count * (c->dtype == ARTEST_F32 ? 4 : 2));
	return ARTEST_OK;
}

static const artest_variant variants[] = {{
	.name = "copy",
	.summary = "copies its input",
#ifdef NO_DTYPES
	.dtypes = 0,
#else
	.dtypes = ARTEST_BIT(ARTEST_F32) | ARTEST_BIT(ARTEST_BF16),
#endif
	.ops = ARTEST_BIT(ARTEST_SUM),
	.min_ranks = 1,
	.max_ranks = 4,
	.max_bytes = 1 << 20,
	.align_bytes = 16,
	.needs_registered_input = 1,
	.order = ARTEST_ORDER_UNKNOWN,
	.nparams = 1,
	.params = {{.name = "width", .def = 2, .min = 1, .max = 8, .help = "a parameter"}},
#ifdef DUP_NAME
}, {
	.name = "copy",
	.summary = "a second variant under the first one's name",
	.dtypes = ARTEST_BIT(ARTEST_F32),
	.ops = ARTEST_BIT(ARTEST_SUM),
	.min_ranks = 1,
	.max_ranks = 4,
	.max_bytes = 1 << 20,
	.align_bytes = 16,
	.order = ARTEST_ORDER_UNKNOWN,
#endif
}};

static const artest_plugin plugin = {
	.abi_version = ABI,
	.nvariants = sizeof variants / sizeof variants[0],
#ifdef NAME
	.name = NAME,
#else
	.name = "bad",
#endif
	.variants = variants,
#ifdef STAGING
	.staging_bytes = STAGING,
#endif
#ifdef CONTROL_BYTES
	.control_bytes = CONTROL_BYTES,
#else
	.control_bytes = 4096,
#endif
	.setup = setup,
	.allreduce = allreduce,
	.last_error = last_error,
};

#ifndef NO_ENTRY
const artest_plugin *artest_plugin_v1(void) { return &plugin; }
#else
const artest_plugin *artest_plugin_v0(void) { return &plugin; }
#endif
