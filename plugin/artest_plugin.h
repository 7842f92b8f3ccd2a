/*
 * artest_plugin.h: the ABI between artest and an allreduce it did not write.
 *
 * A plugin is a shared library that exports one C function,
 *
 *     const artest_plugin *artest_plugin_v1(void);
 *
 * returning a description that stays valid until the library is unloaded:
 * its variants (what they support), the memory they need, and four entry
 * points. artest owns the world: it allocates every rank's registered input
 * buffer, staging buffer and control region, opens its peers' (CUDA IPC on
 * the cuda backend, shared-memory mappings on the host backend), poisons and
 * fences outputs, checks, times and reports. The plugin owns only its calls.
 *
 * C11 and C++; no CUDA types: a stream travels as a uint64_t (a cudaStream_t
 * on the cuda backend, 0 on the host backend), addresses as void pointers
 * valid in the calling process (device addresses on cuda, host addresses on
 * the host backend).
 *
 * Version 1. A later version gets a new entry symbol (artest_plugin_v2), so
 * an old artest never misreads a new plugin; abi_version must equal
 * ARTEST_PLUGIN_ABI_VERSION.
 */
#ifndef ARTEST_PLUGIN_H
#define ARTEST_PLUGIN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARTEST_PLUGIN_ABI_VERSION 1u
#define ARTEST_PLUGIN_ENTRY "artest_plugin_v1"

#define ARTEST_MAX_RANKS 16  /* world sizes artest runs */
#define ARTEST_MAX_PARAMS 4  /* launch parameters per variant */
#define ARTEST_MAX_CONTROL_BYTES (1u << 20) /* largest control region */

/* Element types and reductions; a variant declares a mask of each. */
enum { ARTEST_F32 = 0, ARTEST_F16 = 1, ARTEST_BF16 = 2 };
enum { ARTEST_SUM = 0, ARTEST_MAX = 1, ARTEST_MIN = 2 };
#define ARTEST_BIT(x) (1u << (x))

/* Reduction order a variant guarantees. RANKS_ASCENDING_F32: every output
 * element is ((in_0 + in_1) + in_2) + ... accumulated in fp32 (16-bit types
 * converted exactly, the sum rounded once to nearest even), so artest
 * compares it bit for bit. UNKNOWN: random-input sums are checked within an
 * error bound instead (max, min and exact inputs stay bit for bit). */
enum { ARTEST_ORDER_UNKNOWN = 0, ARTEST_ORDER_RANKS_ASCENDING_F32 = 1 };

/* Status: ARTEST_OK, anything else is an error and artest asks last_error. */
enum { ARTEST_OK = 0, ARTEST_ERROR = 1 };

/* Backends. */
enum { ARTEST_BACKEND_CUDA = 0, ARTEST_BACKEND_HOST = 1 };

/* One launch parameter, set with `--param NAME=VALUE` (and swept by artest
 * tune); its value reaches allreduce in artest_call.params[i], i being its
 * index in artest_variant.params. */
typedef struct artest_param {
	const char *name; /* [a-z0-9_]+ */
	uint32_t def;     /* used when --param does not name it */
	uint32_t min, max;
	const char *help; /* one line */
} artest_param;

typedef struct artest_variant {
	const char *name;    /* [a-z0-9_-]+; artest calls it "<plugin>:<name>" */
	const char *summary; /* one line */
	uint32_t dtypes;     /* ARTEST_BIT(ARTEST_F32) | ... */
	uint32_t ops;        /* ARTEST_BIT(ARTEST_SUM) | ... */
	uint32_t min_ranks, max_ranks;
	uint64_t max_bytes;   /* largest message; 0: no limit (cases above it are skipped) */
	uint32_t align_bytes; /* input/output addresses and the message size must be
	                         multiples of it (cases that are not are skipped); 0: any */
	uint32_t needs_registered_input;
	/* 1: the input must already be in the registered buffer: for staged cases
	 *    artest copies it there before each call (the copy is timed), and
	 *    artest_call.input always points into the registered buffer.
	 * 0: for staged cases artest_call.input is private memory, and the call
	 *    must copy it into world.input[rank] + offset before peers read it. */
	uint32_t order; /* ARTEST_ORDER_* */
	uint32_t nparams;
	artest_param params[ARTEST_MAX_PARAMS];
} artest_variant;

/* What setup gets: this rank and every rank's shared memory, as this process
 * addresses it. input[r], staging[r] and control[r] are rank r's; the
 * control regions are zeroed before setup and artest never touches them
 * again (barrier flags and counters live there). Staging is scratch: artest's
 * own variants use it between calls. */
typedef struct artest_world {
	uint32_t rank, world_size, local_rank;
	int32_t device;   /* CUDA device ordinal; -1 on the host backend */
	uint32_t backend; /* ARTEST_BACKEND_* */
	uint32_t reserved;
	uint64_t input_bytes, staging_bytes, control_bytes;
	void *input[ARTEST_MAX_RANKS];
	void *staging[ARTEST_MAX_RANKS];
	void *control[ARTEST_MAX_RANKS];
} artest_world;

#define ARTEST_CALL_IN_PLACE (1u << 0)   /* output == input */
#define ARTEST_CALL_REGISTERED (1u << 1) /* input == world.input[rank] + offset */

/* One allreduce call. Every rank makes the same call (same variant, dtype,
 * op, count, offset, flags and params); only the addresses differ. */
typedef struct artest_call {
	uint32_t variant; /* index into artest_plugin.variants */
	uint32_t dtype, op;
	uint32_t flags;   /* ARTEST_CALL_* */
	uint64_t count;   /* elements */
	uint64_t offset;  /* bytes from the start of every rank's registered input
	                     buffer to this call's message: peer r's data is at
	                     (char *)world.input[r] + offset */
	const void *input;
	void *output;
	uint64_t stream;  /* cudaStream_t on cuda: launch on it and only on it,
	                     do not sync (artest may be capturing it into a CUDA
	                     graph); 0 on the host backend (return when done) */
	uint32_t params[ARTEST_MAX_PARAMS];
} artest_call;

typedef struct artest_plugin {
	uint32_t abi_version; /* ARTEST_PLUGIN_ABI_VERSION */
	uint32_t nvariants;
	const char *name; /* [a-z0-9_-]+ */
	const artest_variant *variants;
	uint64_t staging_bytes; /* per rank; 0: none beyond the message */
	uint64_t control_bytes; /* per rank, at most ARTEST_MAX_CONTROL_BYTES */
	/* Collective: every rank calls it once, before its first allreduce. On
	 * cuda it runs in artest's set-up, with the GPU's primary context current
	 * (the CUDA runtime's), never inside a stream capture. */
	int (*setup)(const artest_world *world);
	int (*allreduce)(const artest_call *call);
	/* After the last call; may be NULL. */
	void (*teardown)(void);
	/* The message of the last error status on the calling thread; may be NULL. */
	const char *(*last_error)(void);
} artest_plugin;

/* The one symbol a plugin exports. */
const artest_plugin *artest_plugin_v1(void);

#ifdef __cplusplus
}
#endif
#endif /* ARTEST_PLUGIN_H */
