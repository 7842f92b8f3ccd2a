// C side of the CUDA driver wrapper: the few driver types artest needs,
// declared here instead of including cuda.h (the build needs no CUDA
// toolkit), and one typedef plus one static trampoline per entry point. The
// Go side finds each entry point with dlsym and passes its address as the
// first argument; cgo cannot call a C function pointer itself.
//
// Handles (CUcontext, CUstream, CUevent, CUmodule, CUfunction, CUgraph,
// CUgraphExec) travel as uintptr_t so the Go side keeps them as integers and
// never converts an integer into an unsafe.Pointer.
//
// Signatures and values are those of CUDA 13's cuda.h.
#ifndef ARTEST_CUDA_TRAMPOLINES_H
#define ARTEST_CUDA_TRAMPOLINES_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUhandle; // every opaque CU* handle is a pointer to a private struct

typedef struct { char reserved[64]; } art_ipcHandle;    // CUipcMemHandle
typedef struct { unsigned char bytes[16]; } art_uuid;   // CUuuid

// CUlaunchAttribute: a 4-byte id, padding to 8, a 64-byte union whose
// members include pointers (so 8-byte aligned).
typedef struct {
	int id;
	char pad[4];
	union {
		char bytes[64];
		unsigned long long align;
	} value;
} art_launchAttr;

// CUlaunchConfig.
typedef struct {
	unsigned int gridDimX, gridDimY, gridDimZ;
	unsigned int blockDimX, blockDimY, blockDimZ;
	unsigned int sharedMemBytes;
	CUhandle hStream;
	art_launchAttr *attrs;
	unsigned int numAttrs;
} art_launchConfig;

_Static_assert(sizeof(art_ipcHandle) == 64, "CUipcMemHandle is 64 bytes");
_Static_assert(sizeof(art_launchAttr) == 72, "CUlaunchAttribute is 72 bytes");
_Static_assert(sizeof(art_launchConfig) == 56, "CUlaunchConfig is 56 bytes");
// Offsets as cuda.h (CUDA 13.0) lays out CUlaunchConfig and
// CUlaunchAttribute on x86_64 and aarch64 (checked with offsetof against
// the header of the pinned nvcc wheel).
_Static_assert(offsetof(art_launchConfig, blockDimX) == 12, "CUlaunchConfig.blockDimX at 12");
_Static_assert(offsetof(art_launchConfig, sharedMemBytes) == 24, "CUlaunchConfig.sharedMemBytes at 24");
_Static_assert(offsetof(art_launchConfig, hStream) == 32, "CUlaunchConfig.hStream at 32");
_Static_assert(offsetof(art_launchConfig, attrs) == 40, "CUlaunchConfig.attrs at 40");
_Static_assert(offsetof(art_launchConfig, numAttrs) == 48, "CUlaunchConfig.numAttrs at 48");
_Static_assert(offsetof(art_launchAttr, value) == 8, "CUlaunchAttribute.value at 8");

// Returned when a trampoline cannot allocate its own scratch memory.
#define ART_CUDA_ERROR_OUT_OF_MEMORY 2

// --- initialisation, version, errors ---------------------------------------

typedef CUresult (*cuInit_t)(unsigned int);
static inline CUresult art_cuInit(void *f, unsigned int flags) {
	return ((cuInit_t)f)(flags);
}

typedef CUresult (*cuDriverGetVersion_t)(int *);
static inline CUresult art_cuDriverGetVersion(void *f, int *v) {
	return ((cuDriverGetVersion_t)f)(v);
}

typedef CUresult (*cuGetErrorName_t)(CUresult, const char **);
static inline CUresult art_cuGetErrorName(void *f, CUresult r, const char **s) {
	return ((cuGetErrorName_t)f)(r, s);
}

typedef CUresult (*cuGetErrorString_t)(CUresult, const char **);
static inline CUresult art_cuGetErrorString(void *f, CUresult r, const char **s) {
	return ((cuGetErrorString_t)f)(r, s);
}

// --- devices ---------------------------------------------------------------

typedef CUresult (*cuDeviceGetCount_t)(int *);
static inline CUresult art_cuDeviceGetCount(void *f, int *n) {
	return ((cuDeviceGetCount_t)f)(n);
}

typedef CUresult (*cuDeviceGet_t)(CUdevice *, int);
static inline CUresult art_cuDeviceGet(void *f, CUdevice *d, int ordinal) {
	return ((cuDeviceGet_t)f)(d, ordinal);
}

typedef CUresult (*cuDeviceGetName_t)(char *, int, CUdevice);
static inline CUresult art_cuDeviceGetName(void *f, char *name, int len, CUdevice d) {
	return ((cuDeviceGetName_t)f)(name, len, d);
}

/* CUexecAffinityType is an enum: an int in the C ABI. */
typedef CUresult (*cuDeviceGetExecAffinitySupport_t)(int *, int, CUdevice);
static inline CUresult art_cuDeviceGetExecAffinitySupport(void *f, int *v, int type, CUdevice d) {
	return ((cuDeviceGetExecAffinitySupport_t)f)(v, type, d);
}

/* CUexecAffinityParam for the SM-count type: the enum, then a union whose
   only member is one unsigned int. */
typedef struct { int type; unsigned int smCount; } art_execAffinity;
typedef CUresult (*cuCtxGetExecAffinity_t)(art_execAffinity *, int);
static inline CUresult art_cuCtxGetExecAffinity(void *f, unsigned int *sms) {
	art_execAffinity p = {0, 0};
	CUresult r = ((cuCtxGetExecAffinity_t)f)(&p, 0);
	*sms = p.smCount;
	return r;
}

typedef CUresult (*cuDeviceGetAttribute_t)(int *, int, CUdevice);
static inline CUresult art_cuDeviceGetAttribute(void *f, int *v, int attr, CUdevice d) {
	return ((cuDeviceGetAttribute_t)f)(v, attr, d);
}

typedef CUresult (*cuDeviceGetUuid_t)(art_uuid *, CUdevice);
static inline CUresult art_cuDeviceGetUuid(void *f, art_uuid *u, CUdevice d) {
	return ((cuDeviceGetUuid_t)f)(u, d);
}

typedef CUresult (*cuDeviceGetPCIBusId_t)(char *, int, CUdevice);
static inline CUresult art_cuDeviceGetPCIBusId(void *f, char *buf, int len, CUdevice d) {
	return ((cuDeviceGetPCIBusId_t)f)(buf, len, d);
}

typedef CUresult (*cuDeviceTotalMem_t)(size_t *, CUdevice);
static inline CUresult art_cuDeviceTotalMem(void *f, size_t *bytes, CUdevice d) {
	return ((cuDeviceTotalMem_t)f)(bytes, d);
}

typedef CUresult (*cuDeviceCanAccessPeer_t)(int *, CUdevice, CUdevice);
static inline CUresult art_cuDeviceCanAccessPeer(void *f, int *can, CUdevice d, CUdevice peer) {
	return ((cuDeviceCanAccessPeer_t)f)(can, d, peer);
}

// --- contexts --------------------------------------------------------------

typedef CUresult (*cuDevicePrimaryCtxRetain_t)(CUhandle *, CUdevice);
static inline CUresult art_cuDevicePrimaryCtxRetain(void *f, uintptr_t *ctx, CUdevice d) {
	CUhandle h = NULL;
	CUresult r = ((cuDevicePrimaryCtxRetain_t)f)(&h, d);
	*ctx = (uintptr_t)h;
	return r;
}

typedef CUresult (*cuDevicePrimaryCtxRelease_t)(CUdevice);
static inline CUresult art_cuDevicePrimaryCtxRelease(void *f, CUdevice d) {
	return ((cuDevicePrimaryCtxRelease_t)f)(d);
}

typedef CUresult (*cuCtxSetCurrent_t)(CUhandle);
static inline CUresult art_cuCtxSetCurrent(void *f, uintptr_t ctx) {
	return ((cuCtxSetCurrent_t)f)((CUhandle)ctx);
}

typedef CUresult (*cuCtxGetCurrent_t)(CUhandle *);
static inline CUresult art_cuCtxGetCurrent(void *f, uintptr_t *ctx) {
	CUhandle h = NULL;
	CUresult r = ((cuCtxGetCurrent_t)f)(&h);
	*ctx = (uintptr_t)h;
	return r;
}

typedef CUresult (*cuCtxSynchronize_t)(void);
static inline CUresult art_cuCtxSynchronize(void *f) {
	return ((cuCtxSynchronize_t)f)();
}

typedef CUresult (*cuCtxEnablePeerAccess_t)(CUhandle, unsigned int);
static inline CUresult art_cuCtxEnablePeerAccess(void *f, uintptr_t peer, unsigned int flags) {
	return ((cuCtxEnablePeerAccess_t)f)((CUhandle)peer, flags);
}

// --- memory ----------------------------------------------------------------

typedef CUresult (*cuMemAlloc_t)(CUdeviceptr *, size_t);
static inline CUresult art_cuMemAlloc(void *f, CUdeviceptr *p, size_t n) {
	return ((cuMemAlloc_t)f)(p, n);
}

typedef CUresult (*cuMemFree_t)(CUdeviceptr);
static inline CUresult art_cuMemFree(void *f, CUdeviceptr p) {
	return ((cuMemFree_t)f)(p);
}

typedef CUresult (*cuMemAllocHost_t)(void **, size_t);
static inline CUresult art_cuMemAllocHost(void *f, void **p, size_t n) {
	return ((cuMemAllocHost_t)f)(p, n);
}

typedef CUresult (*cuMemFreeHost_t)(void *);
static inline CUresult art_cuMemFreeHost(void *f, void *p) {
	return ((cuMemFreeHost_t)f)(p);
}

typedef CUresult (*cuMemGetInfo_t)(size_t *, size_t *);
static inline CUresult art_cuMemGetInfo(void *f, size_t *free, size_t *total) {
	return ((cuMemGetInfo_t)f)(free, total);
}

typedef CUresult (*cuMemcpyHtoD_t)(CUdeviceptr, const void *, size_t);
static inline CUresult art_cuMemcpyHtoD(void *f, CUdeviceptr dst, const void *src, size_t n) {
	return ((cuMemcpyHtoD_t)f)(dst, src, n);
}

typedef CUresult (*cuMemcpyDtoH_t)(void *, CUdeviceptr, size_t);
static inline CUresult art_cuMemcpyDtoH(void *f, void *dst, CUdeviceptr src, size_t n) {
	return ((cuMemcpyDtoH_t)f)(dst, src, n);
}

typedef CUresult (*cuMemcpyHtoDAsync_t)(CUdeviceptr, const void *, size_t, CUhandle);
static inline CUresult art_cuMemcpyHtoDAsync(void *f, CUdeviceptr dst, const void *src, size_t n, uintptr_t s) {
	return ((cuMemcpyHtoDAsync_t)f)(dst, src, n, (CUhandle)s);
}

typedef CUresult (*cuMemcpyDtoHAsync_t)(void *, CUdeviceptr, size_t, CUhandle);
static inline CUresult art_cuMemcpyDtoHAsync(void *f, void *dst, CUdeviceptr src, size_t n, uintptr_t s) {
	return ((cuMemcpyDtoHAsync_t)f)(dst, src, n, (CUhandle)s);
}

typedef CUresult (*cuMemcpyDtoDAsync_t)(CUdeviceptr, CUdeviceptr, size_t, CUhandle);
static inline CUresult art_cuMemcpyDtoDAsync(void *f, CUdeviceptr dst, CUdeviceptr src, size_t n, uintptr_t s) {
	return ((cuMemcpyDtoDAsync_t)f)(dst, src, n, (CUhandle)s);
}

typedef CUresult (*cuMemsetD8Async_t)(CUdeviceptr, unsigned char, size_t, CUhandle);
static inline CUresult art_cuMemsetD8Async(void *f, CUdeviceptr dst, unsigned char v, size_t n, uintptr_t s) {
	return ((cuMemsetD8Async_t)f)(dst, v, n, (CUhandle)s);
}

typedef CUresult (*cuMemsetD32Async_t)(CUdeviceptr, unsigned int, size_t, CUhandle);
static inline CUresult art_cuMemsetD32Async(void *f, CUdeviceptr dst, unsigned int v, size_t n, uintptr_t s) {
	return ((cuMemsetD32Async_t)f)(dst, v, n, (CUhandle)s);
}

// --- IPC -------------------------------------------------------------------

typedef CUresult (*cuIpcGetMemHandle_t)(art_ipcHandle *, CUdeviceptr);
static inline CUresult art_cuIpcGetMemHandle(void *f, art_ipcHandle *h, CUdeviceptr p) {
	return ((cuIpcGetMemHandle_t)f)(h, p);
}

// The handle is passed by value; the Go side hands over its address.
typedef CUresult (*cuIpcOpenMemHandle_t)(CUdeviceptr *, art_ipcHandle, unsigned int);
static inline CUresult art_cuIpcOpenMemHandle(void *f, CUdeviceptr *p, const art_ipcHandle *h, unsigned int flags) {
	return ((cuIpcOpenMemHandle_t)f)(p, *h, flags);
}

typedef CUresult (*cuIpcCloseMemHandle_t)(CUdeviceptr);
static inline CUresult art_cuIpcCloseMemHandle(void *f, CUdeviceptr p) {
	return ((cuIpcCloseMemHandle_t)f)(p);
}

// --- modules and functions -------------------------------------------------

typedef CUresult (*cuModuleLoadData_t)(CUhandle *, const void *);
static inline CUresult art_cuModuleLoadData(void *f, uintptr_t *m, const void *image) {
	CUhandle h = NULL;
	CUresult r = ((cuModuleLoadData_t)f)(&h, image);
	*m = (uintptr_t)h;
	return r;
}

typedef CUresult (*cuModuleUnload_t)(CUhandle);
static inline CUresult art_cuModuleUnload(void *f, uintptr_t m) {
	return ((cuModuleUnload_t)f)((CUhandle)m);
}

typedef CUresult (*cuModuleGetFunction_t)(CUhandle *, CUhandle, const char *);
static inline CUresult art_cuModuleGetFunction(void *f, uintptr_t *fn, uintptr_t m, const char *name) {
	CUhandle h = NULL;
	CUresult r = ((cuModuleGetFunction_t)f)(&h, (CUhandle)m, name);
	*fn = (uintptr_t)h;
	return r;
}

typedef CUresult (*cuFuncSetAttribute_t)(CUhandle, int, int);
static inline CUresult art_cuFuncSetAttribute(void *f, uintptr_t fn, int attr, int v) {
	return ((cuFuncSetAttribute_t)f)((CUhandle)fn, attr, v);
}

typedef CUresult (*cuFuncGetAttribute_t)(int *, int, CUhandle);
static inline CUresult art_cuFuncGetAttribute(void *f, int *v, int attr, uintptr_t fn) {
	return ((cuFuncGetAttribute_t)f)(v, attr, (CUhandle)fn);
}

typedef CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor_t)(int *, CUhandle, int, size_t);
static inline CUresult art_cuOccupancyMaxActiveBlocksPerMultiprocessor(void *f, int *n, uintptr_t fn, int block, size_t shared) {
	return ((cuOccupancyMaxActiveBlocksPerMultiprocessor_t)f)(n, (CUhandle)fn, block, shared);
}

typedef CUresult (*cuFuncGetParamInfo_t)(CUhandle, size_t, size_t *, size_t *);
static inline CUresult art_cuFuncGetParamInfo(void *f, uintptr_t fn, size_t index, size_t *offset, size_t *size) {
	return ((cuFuncGetParamInfo_t)f)((CUhandle)fn, index, offset, size);
}

// --- launches --------------------------------------------------------------

// Every artest kernel takes at most one parameter, a struct passed by value.
// The trampolines copy its bytes into C memory so the driver never sees a Go
// pointer, then free the copy: the driver has captured the parameter by the
// time the launch call returns.

typedef CUresult (*cuLaunchKernel_t)(CUhandle, unsigned int, unsigned int, unsigned int,
                                     unsigned int, unsigned int, unsigned int,
                                     unsigned int, CUhandle, void **, void **);
static inline CUresult art_cuLaunchKernel(void *f, uintptr_t fn,
                                          unsigned int gx, unsigned int gy, unsigned int gz,
                                          unsigned int bx, unsigned int by, unsigned int bz,
                                          unsigned int shared, uintptr_t s,
                                          const void *arg, size_t argSize) {
	void *params[1] = {NULL};
	void *copy = NULL;
	if (argSize > 0) {
		copy = malloc(argSize);
		if (copy == NULL) {
			return ART_CUDA_ERROR_OUT_OF_MEMORY;
		}
		memcpy(copy, arg, argSize);
		params[0] = copy;
	}
	CUresult r = ((cuLaunchKernel_t)f)((CUhandle)fn, gx, gy, gz, bx, by, bz, shared, (CUhandle)s,
	                                   argSize > 0 ? params : NULL, NULL);
	free(copy);
	return r;
}

typedef CUresult (*cuLaunchKernelEx_t)(const art_launchConfig *, CUhandle, void **, void **);
static inline CUresult art_cuLaunchKernelEx(void *f, uintptr_t fn,
                                            unsigned int gx, unsigned int gy, unsigned int gz,
                                            unsigned int bx, unsigned int by, unsigned int bz,
                                            unsigned int shared, uintptr_t s,
                                            const art_launchAttr *attrs, unsigned int numAttrs,
                                            const void *arg, size_t argSize) {
	size_t attrBytes = (size_t)numAttrs * sizeof(art_launchAttr);
	// One allocation: the attributes first (8-byte aligned from malloc),
	// then the argument bytes.
	char *scratch = NULL;
	if (attrBytes + argSize > 0) {
		scratch = malloc(attrBytes + argSize);
		if (scratch == NULL) {
			return ART_CUDA_ERROR_OUT_OF_MEMORY;
		}
		if (attrBytes > 0) {
			memcpy(scratch, attrs, attrBytes);
		}
		if (argSize > 0) {
			memcpy(scratch + attrBytes, arg, argSize);
		}
	}
	void *params[1] = {scratch != NULL ? scratch + attrBytes : NULL};
	art_launchConfig cfg = {
		gx, gy, gz, bx, by, bz, shared, (CUhandle)s,
		numAttrs > 0 ? (art_launchAttr *)scratch : NULL, numAttrs,
	};
	CUresult r = ((cuLaunchKernelEx_t)f)(&cfg, (CUhandle)fn, argSize > 0 ? params : NULL, NULL);
	free(scratch);
	return r;
}

// --- streams ---------------------------------------------------------------

typedef CUresult (*cuStreamCreate_t)(CUhandle *, unsigned int);
static inline CUresult art_cuStreamCreate(void *f, uintptr_t *s, unsigned int flags) {
	CUhandle h = NULL;
	CUresult r = ((cuStreamCreate_t)f)(&h, flags);
	*s = (uintptr_t)h;
	return r;
}

typedef CUresult (*cuStreamDestroy_t)(CUhandle);
static inline CUresult art_cuStreamDestroy(void *f, uintptr_t s) {
	return ((cuStreamDestroy_t)f)((CUhandle)s);
}

typedef CUresult (*cuStreamSynchronize_t)(CUhandle);
static inline CUresult art_cuStreamSynchronize(void *f, uintptr_t s) {
	return ((cuStreamSynchronize_t)f)((CUhandle)s);
}

typedef CUresult (*cuStreamQuery_t)(CUhandle);
static inline CUresult art_cuStreamQuery(void *f, uintptr_t s) {
	return ((cuStreamQuery_t)f)((CUhandle)s);
}

typedef CUresult (*cuStreamWaitEvent_t)(CUhandle, CUhandle, unsigned int);
static inline CUresult art_cuStreamWaitEvent(void *f, uintptr_t s, uintptr_t e) {
	return ((cuStreamWaitEvent_t)f)((CUhandle)s, (CUhandle)e, 0);
}

// --- events ----------------------------------------------------------------

typedef CUresult (*cuEventCreate_t)(CUhandle *, unsigned int);
static inline CUresult art_cuEventCreate(void *f, uintptr_t *e, unsigned int flags) {
	CUhandle h = NULL;
	CUresult r = ((cuEventCreate_t)f)(&h, flags);
	*e = (uintptr_t)h;
	return r;
}

typedef CUresult (*cuEventRecord_t)(CUhandle, CUhandle);
static inline CUresult art_cuEventRecord(void *f, uintptr_t e, uintptr_t s) {
	return ((cuEventRecord_t)f)((CUhandle)e, (CUhandle)s);
}

typedef CUresult (*cuEventRecordWithFlags_t)(CUhandle, CUhandle, unsigned int);
static inline CUresult art_cuEventRecordWithFlags(void *f, uintptr_t e, uintptr_t s, unsigned int flags) {
	return ((cuEventRecordWithFlags_t)f)((CUhandle)e, (CUhandle)s, flags);
}

typedef CUresult (*cuEventQuery_t)(CUhandle);
static inline CUresult art_cuEventQuery(void *f, uintptr_t e) {
	return ((cuEventQuery_t)f)((CUhandle)e);
}

typedef CUresult (*cuEventSynchronize_t)(CUhandle);
static inline CUresult art_cuEventSynchronize(void *f, uintptr_t e) {
	return ((cuEventSynchronize_t)f)((CUhandle)e);
}

typedef CUresult (*cuEventElapsedTime_t)(float *, CUhandle, CUhandle);
static inline CUresult art_cuEventElapsedTime(void *f, float *ms, uintptr_t start, uintptr_t end) {
	return ((cuEventElapsedTime_t)f)(ms, (CUhandle)start, (CUhandle)end);
}

typedef CUresult (*cuEventDestroy_t)(CUhandle);
static inline CUresult art_cuEventDestroy(void *f, uintptr_t e) {
	return ((cuEventDestroy_t)f)((CUhandle)e);
}

// --- graphs ----------------------------------------------------------------

typedef CUresult (*cuStreamBeginCapture_t)(CUhandle, int);
static inline CUresult art_cuStreamBeginCapture(void *f, uintptr_t s, int mode) {
	return ((cuStreamBeginCapture_t)f)((CUhandle)s, mode);
}

typedef CUresult (*cuStreamEndCapture_t)(CUhandle, CUhandle *);
static inline CUresult art_cuStreamEndCapture(void *f, uintptr_t s, uintptr_t *g) {
	CUhandle h = NULL;
	CUresult r = ((cuStreamEndCapture_t)f)((CUhandle)s, &h);
	*g = (uintptr_t)h;
	return r;
}

typedef CUresult (*cuGraphInstantiateWithFlags_t)(CUhandle *, CUhandle, unsigned long long);
static inline CUresult art_cuGraphInstantiateWithFlags(void *f, uintptr_t *exec, uintptr_t g, unsigned long long flags) {
	CUhandle h = NULL;
	CUresult r = ((cuGraphInstantiateWithFlags_t)f)(&h, (CUhandle)g, flags);
	*exec = (uintptr_t)h;
	return r;
}

typedef CUresult (*cuGraphLaunch_t)(CUhandle, CUhandle);
static inline CUresult art_cuGraphLaunch(void *f, uintptr_t exec, uintptr_t s) {
	return ((cuGraphLaunch_t)f)((CUhandle)exec, (CUhandle)s);
}

typedef CUresult (*cuGraphExecDestroy_t)(CUhandle);
static inline CUresult art_cuGraphExecDestroy(void *f, uintptr_t exec) {
	return ((cuGraphExecDestroy_t)f)((CUhandle)exec);
}

typedef CUresult (*cuGraphDestroy_t)(CUhandle);
static inline CUresult art_cuGraphDestroy(void *f, uintptr_t g) {
	return ((cuGraphDestroy_t)f)((CUhandle)g);
}

#endif
