// C side of the virtual memory management (cuMemCreate, cuMemMap, ...) and
// multicast (cuMulticast*) wrappers: the structs those calls take, declared
// as in CUDA 13's cuda.h, and one trampoline per entry point. Included only
// by vmm.go. The multicast trampolines are reachable only through symbols
// that Driver.EnableMulticast resolves after the safety gate opened.
#ifndef ARTEST_CUDA_VMM_H
#define ARTEST_CUDA_VMM_H

#include "trampolines.h"

typedef unsigned long long art_memHandle; // CUmemGenericAllocationHandle

// CUmemLocation.
typedef struct {
	int type; // CUmemLocationType: 1 = device
	int id;   // device ordinal
} art_memLocation;

// CUmemAllocationProp.
typedef struct {
	int type;                 // CUmemAllocationType: 1 = pinned
	int requestedHandleTypes; // CUmemAllocationHandleType bits
	art_memLocation location;
	void *win32HandleMetaData;
	struct {
		unsigned char compressionType;
		unsigned char gpuDirectRDMACapable;
		unsigned short usage;
		unsigned char reserved[4];
	} allocFlags;
} art_memAllocProp;

// CUmemAccessDesc.
typedef struct {
	art_memLocation location;
	int flags; // CUmemAccess_flags: 3 = read and write
} art_memAccessDesc;

// CUmulticastObjectProp.
typedef struct {
	unsigned int numDevices;
	size_t size;
	unsigned long long handleTypes;
	unsigned long long flags;
} art_multicastProp;

_Static_assert(sizeof(art_memAllocProp) == 32, "CUmemAllocationProp is 32 bytes");
_Static_assert(sizeof(art_memAccessDesc) == 12, "CUmemAccessDesc is 12 bytes");
_Static_assert(sizeof(art_multicastProp) == 32, "CUmulticastObjectProp is 32 bytes");

#define ART_MEM_ALLOCATION_TYPE_PINNED 1
#define ART_MEM_LOCATION_TYPE_DEVICE 1
#define ART_MEM_ACCESS_FLAGS_PROT_READWRITE 3

static inline art_memAllocProp art_deviceAllocProp(int ordinal, int handleTypes) {
	art_memAllocProp p;
	memset(&p, 0, sizeof p);
	p.type = ART_MEM_ALLOCATION_TYPE_PINNED;
	p.requestedHandleTypes = handleTypes;
	p.location.type = ART_MEM_LOCATION_TYPE_DEVICE;
	p.location.id = ordinal;
	return p;
}

static inline art_multicastProp art_multicastPropOf(unsigned int devices, size_t size, int handleTypes) {
	art_multicastProp p;
	memset(&p, 0, sizeof p);
	p.numDevices = devices;
	p.size = size;
	p.handleTypes = (unsigned long long)handleTypes;
	return p;
}

// --- virtual memory management ---------------------------------------------

typedef CUresult (*cuMemGetAllocationGranularity_t)(size_t *, const art_memAllocProp *, int);
static inline CUresult art_cuMemGetAllocationGranularity(void *f, size_t *g, int ordinal, int handleTypes, int option) {
	art_memAllocProp p = art_deviceAllocProp(ordinal, handleTypes);
	return ((cuMemGetAllocationGranularity_t)f)(g, &p, option);
}

typedef CUresult (*cuMemCreate_t)(art_memHandle *, size_t, const art_memAllocProp *, unsigned long long);
static inline CUresult art_cuMemCreate(void *f, art_memHandle *h, size_t size, int ordinal, int handleTypes) {
	art_memAllocProp p = art_deviceAllocProp(ordinal, handleTypes);
	return ((cuMemCreate_t)f)(h, size, &p, 0);
}

typedef CUresult (*cuMemRelease_t)(art_memHandle);
static inline CUresult art_cuMemRelease(void *f, art_memHandle h) {
	return ((cuMemRelease_t)f)(h);
}

// For CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR the shareable handle is an
// int written through the void pointer.
typedef CUresult (*cuMemExportToShareableHandle_t)(void *, art_memHandle, int, unsigned long long);
static inline CUresult art_cuMemExportToFD(void *f, int *fd, art_memHandle h, int handleType) {
	return ((cuMemExportToShareableHandle_t)f)(fd, h, handleType, 0);
}

// ...and on import the fd itself travels in the pointer-sized argument.
typedef CUresult (*cuMemImportFromShareableHandle_t)(art_memHandle *, void *, int);
static inline CUresult art_cuMemImportFromFD(void *f, art_memHandle *h, int fd, int handleType) {
	return ((cuMemImportFromShareableHandle_t)f)(h, (void *)(uintptr_t)fd, handleType);
}

typedef CUresult (*cuMemAddressReserve_t)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
static inline CUresult art_cuMemAddressReserve(void *f, CUdeviceptr *p, size_t size, size_t align) {
	return ((cuMemAddressReserve_t)f)(p, size, align, 0, 0);
}

typedef CUresult (*cuMemAddressFree_t)(CUdeviceptr, size_t);
static inline CUresult art_cuMemAddressFree(void *f, CUdeviceptr p, size_t size) {
	return ((cuMemAddressFree_t)f)(p, size);
}

typedef CUresult (*cuMemMap_t)(CUdeviceptr, size_t, size_t, art_memHandle, unsigned long long);
static inline CUresult art_cuMemMap(void *f, CUdeviceptr p, size_t size, art_memHandle h) {
	return ((cuMemMap_t)f)(p, size, 0, h, 0);
}

typedef CUresult (*cuMemUnmap_t)(CUdeviceptr, size_t);
static inline CUresult art_cuMemUnmap(void *f, CUdeviceptr p, size_t size) {
	return ((cuMemUnmap_t)f)(p, size);
}

typedef CUresult (*cuMemSetAccess_t)(CUdeviceptr, size_t, const art_memAccessDesc *, size_t);
static inline CUresult art_cuMemSetAccess(void *f, CUdeviceptr p, size_t size, int ordinal) {
	art_memAccessDesc d;
	memset(&d, 0, sizeof d);
	d.location.type = ART_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = ordinal;
	d.flags = ART_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return ((cuMemSetAccess_t)f)(p, size, &d, 1);
}

// --- multicast (behind the safety gate) -------------------------------------

typedef CUresult (*cuMulticastGetGranularity_t)(size_t *, const art_multicastProp *, int);
static inline CUresult art_cuMulticastGetGranularity(void *f, size_t *g, unsigned int devices, size_t size, int handleTypes, int option) {
	art_multicastProp p = art_multicastPropOf(devices, size, handleTypes);
	return ((cuMulticastGetGranularity_t)f)(g, &p, option);
}

typedef CUresult (*cuMulticastCreate_t)(art_memHandle *, const art_multicastProp *);
static inline CUresult art_cuMulticastCreate(void *f, art_memHandle *h, unsigned int devices, size_t size, int handleTypes) {
	art_multicastProp p = art_multicastPropOf(devices, size, handleTypes);
	return ((cuMulticastCreate_t)f)(h, &p);
}

typedef CUresult (*cuMulticastAddDevice_t)(art_memHandle, CUdevice);
static inline CUresult art_cuMulticastAddDevice(void *f, art_memHandle mc, CUdevice d) {
	return ((cuMulticastAddDevice_t)f)(mc, d);
}

typedef CUresult (*cuMulticastBindMem_t)(art_memHandle, size_t, art_memHandle, size_t, size_t, unsigned long long);
static inline CUresult art_cuMulticastBindMem(void *f, art_memHandle mc, size_t mcOffset, art_memHandle mem, size_t memOffset, size_t size) {
	return ((cuMulticastBindMem_t)f)(mc, mcOffset, mem, memOffset, size, 0);
}

typedef CUresult (*cuMulticastUnbind_t)(art_memHandle, CUdevice, size_t, size_t);
static inline CUresult art_cuMulticastUnbind(void *f, art_memHandle mc, CUdevice d, size_t mcOffset, size_t size) {
	return ((cuMulticastUnbind_t)f)(mc, d, mcOffset, size);
}

#endif
