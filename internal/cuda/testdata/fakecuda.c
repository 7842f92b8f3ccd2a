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

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
	if (n == 0) return INVALID_VALUE;
	if (n > ((size_t)1 << 40)) return OUT_OF_MEMORY;
	void *m = calloc(1, n);
	if (m == NULL) return OUT_OF_MEMORY;
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

static unsigned long long nextEvent = 0x5000;
CUresult cuEventCreate(H *e, unsigned int flags) { (void)flags; *e = (H)(uintptr_t)nextEvent++; return OK; }
CUresult cuEventRecord(H e, H s) { (void)s; return e ? OK : INVALID_VALUE; }
CUresult cuEventQuery(H e) { return e ? OK : INVALID_VALUE; }
CUresult cuEventSynchronize(H e) { return e ? OK : INVALID_VALUE; }
CUresult cuEventElapsedTime_v2(float *ms, H a, H b) {
	*ms = 1.5f * (float)((uintptr_t)b - (uintptr_t)a);
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
