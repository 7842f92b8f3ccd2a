// C side of the green-context wrappers (cuDeviceGetDevResource,
// cuDevSmResourceSplitByCount, cuDevResourceGenerateDesc, cuGreenCtxCreate,
// cuGreenCtxStreamCreate, cuGreenCtxDestroy): CUdevResource declared as in
// CUDA 13's cuda.h (RESOURCE_ABI_VERSION 1), and one trampoline per entry
// point. Included only by green.go.
#ifndef ARTEST_CUDA_GREEN_H
#define ARTEST_CUDA_GREEN_H

#include "trampolines.h"

// CUdevSmResource.
typedef struct {
	unsigned int smCount;
	unsigned int minSmPartitionSize;
	unsigned int smCoscheduledAlignment;
} art_devSmResource;

// CUdevResource (CUdevResource_v1): a type, 92 bytes the driver keeps, and a
// union of RESOURCE_ABI_EXTERNAL_BYTES (48).
typedef struct {
	int type; // CUdevResourceType: 1 = SM
	unsigned char internalPadding[92];
	union {
		art_devSmResource sm;
		unsigned char oversize[48];
	} u;
} art_devResource;

_Static_assert(sizeof(art_devResource) == 144, "CUdevResource is 144 bytes");
_Static_assert(offsetof(art_devResource, u) == 96, "CUdevResource.sm at 96");

typedef CUresult (*cuDeviceGetDevResource_t)(CUdevice, art_devResource *, int);
static inline CUresult art_cuDeviceGetDevResourceSM(void *f, int dev, art_devResource *r) {
	memset(r, 0, sizeof *r);
	return ((cuDeviceGetDevResource_t)f)(dev, r, 1);
}

typedef CUresult (*cuDevSmResourceSplitByCount_t)(art_devResource *, unsigned int *, const art_devResource *, art_devResource *, unsigned int, unsigned int);

// art_splitSM splits in into *groups groups of at least minCount SMs each
// (written to out, room for *groups) and reports how many it made.
static inline CUresult art_splitSM(void *f, art_devResource *out, unsigned int *groups, const art_devResource *in, unsigned int minCount) {
	memset(out, 0, sizeof *out * (*groups));
	return ((cuDevSmResourceSplitByCount_t)f)(out, groups, in, NULL, 0, minCount);
}

// art_countSM asks how many groups of at least minCount SMs in splits into.
static inline CUresult art_countSM(void *f, unsigned int *groups, const art_devResource *in, unsigned int minCount) {
	return ((cuDevSmResourceSplitByCount_t)f)(NULL, groups, in, NULL, 0, minCount);
}

typedef CUresult (*cuDevResourceGenerateDesc_t)(CUhandle *, art_devResource *, unsigned int);
typedef CUresult (*cuGreenCtxCreate_t)(CUhandle *, CUhandle, CUdevice, unsigned int);

// art_greenCtxCreate makes the descriptor of one SM resource and a green
// context on it, with a default stream (CU_GREEN_CTX_DEFAULT_STREAM, which
// cuGreenCtxCreate requires).
static inline CUresult art_greenCtxCreate(void *genDesc, void *create, uintptr_t *ctx, art_devResource *r, int dev) {
	CUhandle desc = NULL;
	CUresult res = ((cuDevResourceGenerateDesc_t)genDesc)(&desc, r, 1);
	if (res != 0) return res;
	CUhandle h = NULL;
	res = ((cuGreenCtxCreate_t)create)(&h, desc, dev, 1);
	*ctx = (uintptr_t)h;
	return res;
}

typedef CUresult (*cuGreenCtxStreamCreate_t)(CUhandle *, CUhandle, unsigned int, int);
static inline CUresult art_cuGreenCtxStreamCreate(void *f, uintptr_t *s, uintptr_t ctx, unsigned int flags) {
	CUhandle h = NULL;
	CUresult r = ((cuGreenCtxStreamCreate_t)f)(&h, (CUhandle)ctx, flags, 0);
	*s = (uintptr_t)h;
	return r;
}

typedef CUresult (*cuGreenCtxDestroy_t)(CUhandle);
static inline CUresult art_cuGreenCtxDestroy(void *f, uintptr_t ctx) {
	return ((cuGreenCtxDestroy_t)f)((CUhandle)ctx);
}

#endif
