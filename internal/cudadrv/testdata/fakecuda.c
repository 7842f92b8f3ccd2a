// A stand-in for libcuda.so.1 used by the package tests on machines without
// a GPU. It exports every entry point the wrapper resolves, with the
// signatures of cuda.h, and behaves just enough like a driver to check the Go
// side's plumbing: argument order, out-parameters, error mapping and the
// launch argument copy. "Device memory" is host memory, so a CUdeviceptr is
// a host address.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *H;
typedef struct { char reserved[64]; } Ipc;
typedef struct {
	int id;
	char pad[4];
	union { char bytes[64]; unsigned long long align; } value;
} Attr;
typedef struct {
	unsigned int gx, gy, gz, bx, by, bz, shared;
	H stream;
	Attr *attrs;
	unsigned int nattrs;
} Config;

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NO_DEVICE = 100, INVALID_DEVICE = 101,
       INVALID_IMAGE = 200, NOT_FOUND = 500, NOT_READY = 600, ALREADY_ENABLED = 704 };

CUresult cuInit(unsigned int flags) {
	const char *r = getenv("FAKECUDA_INIT_RESULT");
	if (flags != 0) return INVALID_VALUE;
	return r ? atoi(r) : OK;
}
CUresult cuDriverGetVersion(int *v) { *v = 13000; return OK; }

CUresult cuGetErrorName(CUresult r, const char **s) {
	switch (r) {
	case INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; return OK;
	case OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; return OK;
	case NO_DEVICE: *s = "CUDA_ERROR_NO_DEVICE"; return OK;
	case NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; return OK;
	case INVALID_IMAGE: *s = "CUDA_ERROR_INVALID_IMAGE"; return OK;
	}
	*s = NULL;
	return INVALID_VALUE;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
	switch (r) {
	case INVALID_VALUE: *s = "invalid argument"; return OK;
	case OUT_OF_MEMORY: *s = "out of memory"; return OK;
	case NO_DEVICE: *s = "no CUDA-capable device is detected"; return OK;
	case NOT_FOUND: *s = "named symbol not found"; return OK;
	}
	*s = NULL;
	return INVALID_VALUE;
}

CUresult cuDeviceGetCount(int *n) { *n = 2; return OK; }
CUresult cuDeviceGet(CUdevice *d, int ordinal) {
	if (ordinal < 0 || ordinal > 1) return INVALID_DEVICE;
	*d = ordinal;
	return OK;
}
CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
	char buf[32] = "Fake GPU 0";
	buf[9] = (char)('0' + d);
	strncpy(name, buf, (size_t)len);
	return OK;
}
// attribute value = attr*10 + device, so a swapped argument shows.
CUresult cuDeviceGetAttribute(int *v, int attr, CUdevice d) { *v = attr * 10 + d; return OK; }
CUresult cuDeviceGetUuid_v2(unsigned char *u, CUdevice d) {
	for (int i = 0; i < 16; i++) u[i] = (unsigned char)(i * 16 + d);
	return OK;
}
CUresult cuDeviceGetPCIBusId(char *buf, int len, CUdevice d) {
	char s[] = "0000:18:00.0";
	s[6] = (char)('8' + d);
	strncpy(buf, s, (size_t)len);
	return OK;
}
CUresult cuDeviceTotalMem_v2(size_t *n, CUdevice d) { *n = ((size_t)d + 1) << 30; return OK; }
CUresult cuDeviceCanAccessPeer(int *can, CUdevice d, CUdevice peer) { *can = d != peer; return OK; }
/* The SM-count affinity: FAKECUDA_CTX_SMS, else 132. */
typedef struct { int type; unsigned int smCount; } ExecAffinity;
CUresult cuCtxGetExecAffinity(ExecAffinity *p, int type) {
	const char *n = getenv("FAKECUDA_CTX_SMS");
	if (type != 0) return INVALID_VALUE;
	p->type = 0;
	p->smCount = n ? (unsigned int)atoi(n) : 132;
	return OK;
}
/* FAKECUDA_MPS=1 plays a process that an MPS server serves. */
CUresult cuDeviceGetExecAffinitySupport(int *v, int type, CUdevice d) {
	const char *m = getenv("FAKECUDA_MPS");
	if (type != 0 || d < 0 || d > 1) return INVALID_VALUE;
	*v = m && m[0] == '1';
	return OK;
}

static H current;
CUresult cuDevicePrimaryCtxRetain(H *ctx, CUdevice d) { *ctx = (H)(uintptr_t)(0x1000 + d); return OK; }
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice d) { return d >= 0 && d <= 1 ? OK : INVALID_DEVICE; }
CUresult cuCtxSetCurrent(H ctx) { current = ctx; return OK; }
CUresult cuCtxGetCurrent(H *ctx) { *ctx = current; return OK; }
CUresult cuCtxSynchronize(void) { return OK; }
// Context 0x1001 already has access enabled; 0x1000 is "this" context.
CUresult cuCtxEnablePeerAccess(H peer, unsigned int flags) {
	if (flags != 0) return INVALID_VALUE;
	if (peer == (H)0x1001) return ALREADY_ENABLED;
	if (peer == (H)0x1000) return INVALID_VALUE;
	return OK;
}

/* FAKECUDA_DIRTY_ALLOC=1 fills new allocations with 0xa5, as real device
   memory holds whatever was there: a caller that must clear them shows. */
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	if (n == 0) return INVALID_VALUE;
	if (n > ((size_t)1 << 40)) return OUT_OF_MEMORY;
	void *m = calloc(1, n);
	if (m == NULL) return OUT_OF_MEMORY;
	const char *dirty = getenv("FAKECUDA_DIRTY_ALLOC");
	if (dirty && dirty[0] == '1') memset(m, 0xa5, n);
	*p = (CUdeviceptr)(uintptr_t)m;
	return OK;
}
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return OK; }
CUresult cuMemAllocHost_v2(void **p, size_t n) { *p = calloc(1, n); return *p ? OK : OUT_OF_MEMORY; }
CUresult cuMemFreeHost(void *p) { free(p); return OK; }
CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *f = (size_t)1 << 30; *t = (size_t)2 << 30; return OK; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return OK; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return OK; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, H st) { (void)st; return cuMemcpyHtoD_v2(d, s, n); }
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, H st) { (void)st; return cuMemcpyDtoH_v2(d, s, n); }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, H st) {
	(void)st;
	memmove((void *)(uintptr_t)d, (void *)(uintptr_t)s, n);
	return OK;
}
CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, H st) {
	(void)st;
	memset((void *)(uintptr_t)d, v, n);
	return OK;
}
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, H st) {
	(void)st;
	if (d % 4) return INVALID_VALUE;
	unsigned int *w = (unsigned int *)(uintptr_t)d;
	for (size_t i = 0; i < n; i++) w[i] = v;
	return OK;
}

// The handle carries the address after a marker.
CUresult cuIpcGetMemHandle(Ipc *h, CUdeviceptr p) {
	memset(h, 0, sizeof *h);
	memcpy(h->reserved, "FAKEIPC", 7);
	memcpy(h->reserved + 8, &p, sizeof p);
	return OK;
}
CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *p, Ipc h, unsigned int flags) {
	if (flags != 1 || memcmp(h.reserved, "FAKEIPC", 7) != 0) return INVALID_VALUE;
	memcpy(p, h.reserved + 8, sizeof *p);
	return OK;
}
CUresult cuIpcCloseMemHandle(CUdeviceptr p) { return p ? OK : INVALID_VALUE; }

// A valid image starts with "FAKE" and is NUL-terminated.
CUresult cuModuleLoadData(H *m, const void *image) {
	if (strncmp(image, "FAKE", 4) != 0) return INVALID_IMAGE;
	*m = (H)0x2000;
	return OK;
}
CUresult cuModuleUnload(H m) { return m == (H)0x2000 ? OK : INVALID_VALUE; }
CUresult cuModuleGetFunction(H *f, H m, const char *name) {
	if (m != (H)0x2000) return INVALID_VALUE;
	if (strcmp(name, "record") != 0) return NOT_FOUND;
	*f = (H)0x3000;
	return OK;
}
static int maxDynamicShared;
CUresult cuFuncSetAttribute(H f, int attr, int v) {
	if (f != (H)0x3000 || attr != 8) return INVALID_VALUE;
	maxDynamicShared = v;
	return OK;
}
CUresult cuFuncGetAttribute(int *v, int attr, H f) {
	if (f != (H)0x3000) return INVALID_VALUE;
	*v = attr == 8 ? maxDynamicShared : attr;
	return OK;
}
/* 2048 threads and 64 KiB of shared memory per multiprocessor, at most 32
   blocks: enough of a model to check that block and shared reach it. */
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, H f, int block, size_t shared) {
	if (f != (H)0x3000 || block <= 0) return INVALID_VALUE;
	int byThreads = 2048 / block, bySmem = shared ? (int)((64u << 10) / shared) : 32;
	*n = byThreads < bySmem ? byThreads : bySmem;
	if (*n > 32) *n = 32;
	return OK;
}
CUresult cuFuncGetParamInfo(H f, size_t i, size_t *off, size_t *size) {
	if (f != (H)0x3000 || i != 0) return INVALID_VALUE;
	*off = 0;
	*size = 24;
	return OK;
}

// The "record" kernel takes struct { uint64 out; uint64 a; uint64 b; } and
// writes a+b, the launch shape and the stream to out[0..8].
static CUresult record(unsigned long long *out, const unsigned long long *args,
                       unsigned int gx, unsigned int gy, unsigned int gz,
                       unsigned int bx, unsigned int by, unsigned int bz,
                       unsigned int shared, H stream) {
	out[0] = args[1] + args[2];
	out[1] = gx; out[2] = gy; out[3] = gz;
	out[4] = bx; out[5] = by; out[6] = bz;
	out[7] = shared;
	out[8] = (unsigned long long)(uintptr_t)stream;
	return OK;
}
CUresult cuLaunchKernel(H f, unsigned int gx, unsigned int gy, unsigned int gz,
                        unsigned int bx, unsigned int by, unsigned int bz,
                        unsigned int shared, H stream, void **params, void **extra) {
	if (f != (H)0x3000 || extra != NULL || params == NULL) return INVALID_VALUE;
	const unsigned long long *args = params[0];
	return record((unsigned long long *)(uintptr_t)args[0], args, gx, gy, gz, bx, by, bz, shared, stream);
}
// As cuLaunchKernel, plus out[9] = number of attributes and, per attribute
// i, out[10+2i] = id and out[11+2i] = the first 8 bytes of its value.
CUresult cuLaunchKernelEx(const Config *c, H f, void **params, void **extra) {
	if (f != (H)0x3000 || extra != NULL || params == NULL) return INVALID_VALUE;
	const unsigned long long *args = params[0];
	unsigned long long *out = (unsigned long long *)(uintptr_t)args[0];
	CUresult r = record(out, args, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->shared, c->stream);
	out[9] = c->nattrs;
	for (unsigned int i = 0; i < c->nattrs; i++) {
		out[10 + 2 * i] = (unsigned long long)c->attrs[i].id;
		memcpy(&out[11 + 2 * i], c->attrs[i].value.bytes, 8);
	}
	return r;
}

// Streams are 0x4000+flags; a non-blocking stream always has work pending.
CUresult cuStreamCreate(H *s, unsigned int flags) { *s = (H)(uintptr_t)(0x4000 + flags); return OK; }
CUresult cuStreamDestroy_v2(H s) { return s ? OK : INVALID_VALUE; }
CUresult cuStreamSynchronize(H s) { (void)s; return OK; }
CUresult cuStreamQuery(H s) { return s == (H)0x4001 ? NOT_READY : OK; }
CUresult cuStreamWaitEvent(H s, H e, unsigned int flags) { (void)s; (void)flags; return e ? OK : INVALID_VALUE; }

// Events are 0x5000+n; each record stamps the event with the next tick of
// a clock that advances 1.5 ms per record, and elapsed time is the ticks
// between two records.
static unsigned long long nextEvent = 0x5000;
static long long eventTick[4096];
static long long ticks;
static int eventIndex(H e) {
	uintptr_t i = (uintptr_t)e - 0x5000;
	return e && i < 4096 ? (int)i : -1;
}
CUresult cuEventCreate(H *e, unsigned int flags) { (void)flags; *e = (H)(uintptr_t)nextEvent++; return OK; }
CUresult cuEventRecord(H e, H s) {
	(void)s;
	int i = eventIndex(e);
	if (i < 0) return INVALID_VALUE;
	eventTick[i] = ++ticks;
	return OK;
}
CUresult cuEventRecordWithFlags(H e, H s, unsigned int flags) { return flags == 1 ? cuEventRecord(e, s) : INVALID_VALUE; }
CUresult cuEventQuery(H e) { return e ? OK : INVALID_VALUE; }
CUresult cuEventSynchronize(H e) { return e ? OK : INVALID_VALUE; }
CUresult cuEventElapsedTime_v2(float *ms, H a, H b) {
	int i = eventIndex(a), j = eventIndex(b);
	if (i < 0 || j < 0) return INVALID_VALUE;
	*ms = 1.5f * (float)(eventTick[j] - eventTick[i]);
	return OK;
}
CUresult cuEventDestroy_v2(H e) { return e ? OK : INVALID_VALUE; }

// Graphs are 0x6000+capture mode; graph execs are graph+0x100.
static int captureMode = -1;
CUresult cuStreamBeginCapture_v2(H s, int mode) {
	(void)s;
	if (mode < 0 || mode > 2) return INVALID_VALUE;
	captureMode = mode;
	return OK;
}
CUresult cuStreamEndCapture(H s, H *g) {
	(void)s;
	if (captureMode < 0) return INVALID_VALUE;
	*g = (H)(uintptr_t)(0x6000 + captureMode);
	captureMode = -1;
	return OK;
}
CUresult cuGraphInstantiateWithFlags(H *e, H g, unsigned long long flags) {
	(void)flags;
	*e = (H)((uintptr_t)g + 0x100);
	return OK;
}
CUresult cuGraphLaunch(H e, H s) { (void)s; return e ? OK : INVALID_VALUE; }
CUresult cuGraphExecDestroy(H e) { return e ? OK : INVALID_VALUE; }
CUresult cuGraphDestroy(H g) { return g ? OK : INVALID_VALUE; }

// --- virtual memory management and multicast --------------------------------
// Resolved lazily by the wrapper (vmm.go); the multicast ones only after
// EnableMulticast. Every call checks the fields of the structs it gets, so
// a wrong layout or argument order fails with INVALID_VALUE; the values
// returned encode what arrived, so the tests can check it.
typedef struct { int type; int id; } Loc;
typedef struct {
	int type, handleTypes;
	Loc loc;
	void *win32;
	unsigned char compression, rdma;
	unsigned short usage;
	unsigned char reserved[4];
} AllocProp;
typedef struct { Loc loc; int flags; } AccessDesc;
typedef struct {
	unsigned int numDevices;
	size_t size;
	unsigned long long handleTypes, flags;
} McProp;

enum { GRAN = 2 << 20 };

static int badProp(const AllocProp *p) {
	return p->type != 1 || p->loc.type != 1 || p->loc.id < 0 || p->loc.id > 1 || p->win32 != NULL ||
	       p->compression != 0 || p->rdma != 0 || p->usage != 0;
}
// granularity = 2 MiB << option, plus the device in bits 4..7 and the
// handle types in bits 0..3.
CUresult cuMemGetAllocationGranularity(size_t *g, const AllocProp *p, int option) {
	if (badProp(p) || option < 0 || option > 1) return INVALID_VALUE;
	*g = ((size_t)GRAN << option) | (size_t)(p->loc.id << 4) | (size_t)p->handleTypes;
	return OK;
}
// handle = 0x70000 | device << 12 | size in granules.
CUresult cuMemCreate(unsigned long long *h, size_t size, const AllocProp *p, unsigned long long flags) {
	if (badProp(p) || flags != 0 || size == 0 || size % GRAN != 0 || p->handleTypes != 1) return INVALID_VALUE;
	*h = 0x70000ull | (unsigned long long)p->loc.id << 12 | (size / GRAN);
	return OK;
}
CUresult cuMemRelease(unsigned long long h) { return h ? OK : INVALID_VALUE; }
// The "file descriptor" is 1000 + the handle's low 16 bits; import maps it
// back to a memory handle (a multicast handle's marker is not kept).
CUresult cuMemExportToShareableHandle(void *out, unsigned long long h, int type, unsigned long long flags) {
	if (type != 1 || flags != 0 || h == 0) return INVALID_VALUE;
	*(int *)out = 1000 + (int)(h & 0xffff);
	return OK;
}
CUresult cuMemImportFromShareableHandle(unsigned long long *h, void *os, int type) {
	int fd = (int)(uintptr_t)os;
	if (type != 1 || fd < 1000) return INVALID_VALUE;
	*h = 0x70000ull | (unsigned long long)(fd - 1000);
	return OK;
}
// Addresses: 16 x the alignment asked for, so the test sees it arrived.
CUresult cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags) {
	if (size == 0 || addr != 0 || flags != 0 || align == 0 || (align & (align - 1)) != 0) return INVALID_VALUE;
	*p = (CUdeviceptr)align * 16;
	return OK;
}
CUresult cuMemAddressFree(CUdeviceptr p, size_t size) { return p && size ? OK : INVALID_VALUE; }
CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset, unsigned long long h, unsigned long long flags) {
	return p && size && offset == 0 && h && flags == 0 ? OK : INVALID_VALUE;
}
CUresult cuMemUnmap(CUdeviceptr p, size_t size) { return p && size ? OK : INVALID_VALUE; }
CUresult cuMemSetAccess(CUdeviceptr p, size_t size, const AccessDesc *d, size_t count) {
	if (!p || !size || count != 1 || d->loc.type != 1 || d->flags != 3) return INVALID_VALUE;
	return d->loc.id >= 0 && d->loc.id <= 1 ? OK : INVALID_DEVICE;
}
static int badMcProp(const McProp *p) {
	return p->numDevices == 0 || p->size == 0 || p->handleTypes != 1 || p->flags != 0;
}
// granularity = 2 MiB << option, plus the device count.
CUresult cuMulticastGetGranularity(size_t *g, const McProp *p, int option) {
	if (badMcProp(p) || option < 0 || option > 1) return INVALID_VALUE;
	*g = ((size_t)GRAN << option) + p->numDevices;
	return OK;
}
// handle = 0x80000 | devices << 8 | size in granules.
CUresult cuMulticastCreate(unsigned long long *h, const McProp *p) {
	if (badMcProp(p) || p->size % GRAN != 0) return INVALID_VALUE;
	*h = 0x80000ull | (unsigned long long)p->numDevices << 8 | (p->size / GRAN);
	return OK;
}
CUresult cuMulticastAddDevice(unsigned long long mc, CUdevice d) {
	if ((mc & 0xf0000) != 0x80000) return INVALID_VALUE;
	return d >= 0 && d <= 1 ? OK : INVALID_DEVICE;
}
CUresult cuMulticastBindMem(unsigned long long mc, size_t mcOff, unsigned long long mem, size_t memOff, size_t size,
                            unsigned long long flags) {
	if ((mc & 0xf0000) != 0x80000 || (mem & 0xf0000) != 0x70000 || flags != 0) return INVALID_VALUE;
	return mcOff % GRAN == 0 && memOff % GRAN == 0 && size % GRAN == 0 && size ? OK : INVALID_VALUE;
}
CUresult cuMulticastUnbind(unsigned long long mc, CUdevice d, size_t mcOff, size_t size) {
	if ((mc & 0xf0000) != 0x80000 || d < 0 || d > 1) return INVALID_VALUE;
	return mcOff % GRAN == 0 && size % GRAN == 0 && size ? OK : INVALID_VALUE;
}

/* Green contexts: a device of FAKECUDA_SMS (default 132) SMs that splits
 * into partitions of at least 8, in steps of 8, as sm_90 does. */
typedef struct {
	int type;
	unsigned char pad[92];
	union {
		struct { unsigned int smCount, minPart, align; } sm;
		unsigned char over[48];
	} u;
} DevResource;

CUresult cuDeviceGetDevResource(int dev, DevResource *r, int type) {
	const char *n = getenv("FAKECUDA_SMS");
	if (type != 1 || dev < 0 || dev > 1) return INVALID_VALUE;
	memset(r, 0, sizeof *r);
	r->type = 1;
	r->u.sm.smCount = n ? (unsigned int)atoi(n) : 132;
	r->u.sm.minPart = 8;
	r->u.sm.align = 8;
	return OK;
}

CUresult cuDevSmResourceSplitByCount(DevResource *out, unsigned int *n, const DevResource *in, DevResource *rem, unsigned int flags, unsigned int minCount) {
	(void)rem;
	if (!n || !in || in->type != 1 || flags != 0 || minCount > in->u.sm.smCount) return INVALID_VALUE;
	unsigned int c = minCount < 8 ? 8 : (minCount + 7) / 8 * 8;
	unsigned int possible = in->u.sm.smCount / c;
	if (!out) {
		*n = possible;
		return OK;
	}
	if (*n > possible) *n = possible;
	for (unsigned int i = 0; i < *n; i++) {
		out[i] = *in;
		out[i].u.sm.smCount = c;
		out[i].pad[0] = (unsigned char)i;
	}
	return OK;
}

CUresult cuDevResourceGenerateDesc(H *d, DevResource *r, unsigned int n) {
	if (n != 1 || r->type != 1) return INVALID_VALUE;
	*d = (H)(uintptr_t)(0x7000 + r->pad[0]);
	return OK;
}

CUresult cuGreenCtxCreate(H *g, H desc, int dev, unsigned int flags) {
	if (flags != 1 || !desc || dev < 0 || dev > 1) return INVALID_VALUE;
	*g = (H)((uintptr_t)desc + 0x100);
	return OK;
}

/* The same handles as cuStreamCreate's. */
CUresult cuGreenCtxStreamCreate(H *s, H g, unsigned int flags, int prio) {
	(void)prio;
	if (!g) return INVALID_VALUE;
	*s = (H)(uintptr_t)(0x4000 + flags);
	return OK;
}

CUresult cuGreenCtxDestroy(H g) { return g ? OK : INVALID_VALUE; }
