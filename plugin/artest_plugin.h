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
 *
 * Optional device helpers (artest_device.h): a plugin whose kernels write
 * artest's trace word and wait with artest's deadline says so by exporting
 * a second function, artest_device_info_v1 (below). Version 1 grew for it
 * without breaking a plugin built before: artest_plugin and artest_variant
 * are unchanged (variants is an array the plugin lays out), artest_call
 * only grew at its end (artest allocates it, so an older plugin reads the
 * prefix it knows), and the new fields are valid only when the call's
 * flags hold ARTEST_CALL_DEVICE, which an older artest never sets.
 *
 * Optional collectives: a variant implements the allreduce unless the
 * plugin exports artest_collectives_v1 (below), which may declare it a
 * reduce-scatter or an all-gather as well or instead. Version 1 grew for it
 * the same way: its calls reach the same allreduce entry point with
 * ARTEST_CALL_COLL in flags and the collective in artest_call.coll, a field
 * at the end that is valid only under that flag.
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
 * again (barrier flags and counters live there). A plugin that declares
 * staging_bytes gets staging of that size to itself, in the same block:
 * zeroed before setup, never touched by artest or any other plugin, so it
 * may keep state between calls. With staging_bytes 0, staging is the shared
 * scratch that artest's own variants use between calls.
 *
 * Lifetime: the pointer setup gets, the struct's fields and the memory its
 * addresses name stay valid and unchanged from setup until teardown
 * returns (setup runs once per process; artest never frees or rewrites
 * the struct): keep the pointer and use it in every call. After teardown
 * artest releases that memory. A job ended by a hang, a crash or a signal
 * may exit without calling teardown. */
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

#define ARTEST_CALL_IN_PLACE (1u << 0)   /* output == input (other collectives: NCCL's offsets, below) */
#define ARTEST_CALL_REGISTERED (1u << 1) /* input == world.input[rank] + offset */
#define ARTEST_CALL_DEVICE (1u << 2)     /* artest_call.device is filled */
#define ARTEST_CALL_COLL (1u << 3)       /* artest_call.coll is filled (artest_collectives_v1) */
#define ARTEST_CALL_FAULTS (1u << 4)     /* artest_call.faults is filled (artest_faults_v1) */

/* Collectives (artest_collectives_v1, artest_call.coll), numbered as
 * artest's own. count is always the full buffer: the allreduce's message,
 * the reduce-scatter's input, the all-gather's output; the other buffer of
 * the latter two is one rank's chunk, count / world_size elements (count
 * is a multiple of world_size), laid out as NCCL's ncclReduceScatter and
 * ncclAllGather lay them out. In place (ARTEST_CALL_IN_PLACE): a
 * reduce-scatter's output is chunk rank of its input, an all-gather's
 * input chunk rank of its output. Peer r's all-gather input is at
 * (char *)world.input[r] + offset, plus r * chunk bytes when the call is in
 * place and registered (the output is then the registered buffer itself);
 * a staged call copies its input to world.input[rank] + offset. */
enum { ARTEST_ALLREDUCE = 0, ARTEST_REDUCE_SCATTER = 1, ARTEST_ALL_GATHER = 2 };

/* What a call of a variant that uses the device helpers gives its kernels
 * (artest_device.h; pass it to the kernel by value). The addresses are this
 * rank's words in memory artest reads after the call (device addresses on
 * cuda): trace[0] is the id of the variant that ran, trace[1] the calls it
 * completed; diag holds ARTEST_DIAG_WORDS words that record the first wait
 * of this rank that gave up. Zero throughout when the flag is clear: the
 * helpers then write nothing and wait without a deadline. */
typedef struct artest_device {
	uint32_t *trace;
	uint32_t *diag;
	uint64_t timeout_ns; /* longest wait at one point (--device-timeout); 0: no deadline */
	uint32_t trace_id;   /* what this variant writes into trace[0]; never 0 */
	uint32_t rank;       /* this rank, recorded with a give-up */
} artest_device;

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
	/* Valid only when flags has ARTEST_CALL_DEVICE (artest_device_of in
	 * artest_device.h reads it so). New fields are only ever added here,
	 * at the end. */
	artest_device device;
	/* ARTEST_ALLREDUCE, ARTEST_REDUCE_SCATTER or ARTEST_ALL_GATHER; valid
	 * only when flags has ARTEST_CALL_COLL (read it with artest_coll_of),
	 * which artest sets only for a variant artest_collectives_v1 declares.
	 * An all-gather's op means nothing. */
	uint32_t coll;
	uint32_t reserved_coll;
	/* The plugin's fault switches on for this call: bit i is fault i of
	 * artest_faults_v1, which --inject PLUGIN:NAME turns on. Valid only when
	 * flags has ARTEST_CALL_FAULTS (read it with artest_faults_of), which
	 * artest sets only for a plugin that declares faults. */
	uint32_t faults;
	uint32_t reserved_faults;
} artest_call;

/* The collective of a call: ARTEST_ALLREDUCE unless ARTEST_CALL_COLL says
 * otherwise (an artest without collectives leaves coll out). */
static inline uint32_t artest_coll_of(const artest_call *c) {
	return (c->flags & ARTEST_CALL_COLL) ? c->coll : (uint32_t)ARTEST_ALLREDUCE;
}

/* The fault switches on for a call: 0 unless ARTEST_CALL_FAULTS says
 * otherwise (an artest without faults leaves the field out). */
static inline uint32_t artest_faults_of(const artest_call *c) {
	return (c->flags & ARTEST_CALL_FAULTS) ? c->faults : 0u;
}

typedef struct artest_plugin {
	uint32_t abi_version; /* ARTEST_PLUGIN_ABI_VERSION */
	uint32_t nvariants;
	const char *name; /* [a-z0-9_-]+ */
	const artest_variant *variants;
	uint64_t staging_bytes; /* per rank, the plugin's own, at most 1 TiB (more is refused at load); 0: the shared scratch (the largest message) */
	uint64_t control_bytes; /* per rank, at most ARTEST_MAX_CONTROL_BYTES; 0: none (world.control[r] are NULL) */
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

/* The one symbol a plugin must export. */
const artest_plugin *artest_plugin_v1(void);

/* Optional: the device helpers. A plugin whose kernels use artest_device.h
 * also exports
 *
 *     const artest_device_info *artest_device_info_v1(void);
 *
 * saying, per variant, whether its calls write the trace word and wait
 * through artest_wait; artest then fills artest_call.device for that
 * variant's calls, checks the trace word after every check of its output,
 * and reads a give-up's record when a wait passed the deadline (exit 3,
 * one line naming the block, the rank it waited for and the point). A
 * plugin without the symbol gets neither: no trace check, and only the host
 * watchdog for hangs. */
#define ARTEST_DEVICE_VERSION 1u
#define ARTEST_DEVICE_ENTRY "artest_device_info_v1"
#define ARTEST_MAX_POINTS 8 /* named wait points per variant */

typedef struct artest_device_variant {
	/* 1: every call writes the trace word exactly once (artest_trace) and
	 * every wait on a peer goes through artest_wait; 0: neither. */
	uint32_t uses_helpers;
	uint32_t npoints;
	/* Names of the wait points, indexed by artest_wait's point argument,
	 * for the diagnosis ("start barrier"): printable ASCII, 1 to 32
	 * characters. */
	const char *points[ARTEST_MAX_POINTS];
} artest_device_variant;

typedef struct artest_device_info {
	uint32_t version;   /* ARTEST_DEVICE_VERSION */
	uint32_t nvariants; /* artest_plugin.nvariants */
	const artest_device_variant *variants; /* in artest_plugin.variants' order */
} artest_device_info;

/* The optional symbol. */
const artest_device_info *artest_device_info_v1(void);

/* Optional: the collectives of each variant. A plugin whose variants are
 * reduce-scatters or all-gathers (or allreduces as well) exports
 *
 *     const artest_collectives *artest_collectives_v1(void);
 *
 * and artest builds each variant's cases for the collectives its mask
 * names; a plugin without the symbol implements the allreduce alone, as
 * before. Every call of every collective reaches artest_plugin.allreduce,
 * with ARTEST_CALL_COLL and artest_call.coll set for the ones that are not
 * an allreduce. */
#define ARTEST_COLLECTIVES_VERSION 1u
#define ARTEST_COLLECTIVES_ENTRY "artest_collectives_v1"

typedef struct artest_collectives {
	uint32_t version;      /* ARTEST_COLLECTIVES_VERSION */
	uint32_t nvariants;    /* artest_plugin.nvariants */
	const uint32_t *colls; /* per variant, in artest_plugin.variants' order:
	                          ARTEST_BIT(ARTEST_REDUCE_SCATTER) | ...; not 0 */
} artest_collectives;

/* The optional symbol. */
const artest_collectives *artest_collectives_v1(void);

/* Optional: variants that return before their peers have finished by
 * design. Stress's end-barrier witness warns when a rank's call returns
 * long before a peer's finished, which is what a missing end barrier looks
 * like; a variant whose peers never read the caller's buffers after it
 * returns (it copies its input into memory of its own, or pushes its data
 * into its peers') says so here, and the witness reports its leads without
 * a warning. A plugin exports
 *
 *     const artest_early_return *artest_early_return_v1(void);
 *
 * with one entry per variant: NULL, or one line saying why the early
 * return is safe (it is shown with the leads). */
#define ARTEST_EARLY_RETURN_VERSION 1u
#define ARTEST_EARLY_RETURN_ENTRY "artest_early_return_v1"

typedef struct artest_early_return {
	uint32_t version;   /* ARTEST_EARLY_RETURN_VERSION */
	uint32_t nvariants; /* artest_plugin.nvariants */
	const char *const *reasons; /* per variant, in artest_plugin.variants' order */
} artest_early_return;

/* The optional symbol. */
const artest_early_return *artest_early_return_v1(void);

/* Optional: the plugin's fault switches, planted bugs its authors keep so
 * that artest can be seen catching them (a missing barrier, a skipped
 * element). A plugin exports
 *
 *     const artest_faults *artest_faults_v1(void);
 *
 * naming up to ARTEST_MAX_FAULTS faults for all its variants; --inject
 * PLUGIN:NAME (e.g. example:no-end-barrier) then sets bit i of
 * artest_call.faults, with ARTEST_CALL_FAULTS, in every call of the
 * plugin's variants, and the cases of other variants are skipped (they
 * have no such switch). Names are [a-z0-9_-], 1 to 32 characters, unique;
 * help is one line. */
#define ARTEST_FAULTS_VERSION 1u
#define ARTEST_FAULTS_ENTRY "artest_faults_v1"
#define ARTEST_MAX_FAULTS 16

typedef struct artest_fault {
	const char *name;
	const char *help;
} artest_fault;

typedef struct artest_faults {
	uint32_t version; /* ARTEST_FAULTS_VERSION */
	uint32_t nfaults; /* 1 to ARTEST_MAX_FAULTS */
	const artest_fault *faults;
} artest_faults;

/* The optional symbol. */
const artest_faults *artest_faults_v1(void);

#ifdef __cplusplus
}
#endif
#endif /* ARTEST_PLUGIN_H */
