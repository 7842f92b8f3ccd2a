// C side of the NCCL wrapper: the NCCL types artest needs, declared here
// instead of including nccl.h, and one typedef plus one static trampoline
// per entry point found with dlsym. Communicators and streams travel as
// uintptr_t, device buffers as uintptr_t addresses. Enums are ints.
#ifndef ARTEST_NCCL_TRAMPOLINES_H
#define ARTEST_NCCL_TRAMPOLINES_H

#include <stddef.h>
#include <stdint.h>

typedef int ncclResult_t;
typedef struct { char internal[128]; } art_ncclUniqueId; // NCCL_UNIQUE_ID_BYTES

_Static_assert(sizeof(art_ncclUniqueId) == 128, "ncclUniqueId is 128 bytes");

typedef ncclResult_t (*ncclGetVersion_t)(int *);
static inline ncclResult_t art_ncclGetVersion(void *f, int *v) {
	return ((ncclGetVersion_t)f)(v);
}

typedef ncclResult_t (*ncclGetUniqueId_t)(art_ncclUniqueId *);
static inline ncclResult_t art_ncclGetUniqueId(void *f, art_ncclUniqueId *id) {
	return ((ncclGetUniqueId_t)f)(id);
}

// The id is passed by value; the Go side hands over its address.
typedef ncclResult_t (*ncclCommInitRank_t)(void **, int, art_ncclUniqueId, int);
static inline ncclResult_t art_ncclCommInitRank(void *f, uintptr_t *comm, int nranks, const art_ncclUniqueId *id, int rank) {
	void *c = NULL;
	ncclResult_t r = ((ncclCommInitRank_t)f)(&c, nranks, *id, rank);
	*comm = (uintptr_t)c;
	return r;
}

typedef ncclResult_t (*ncclAllReduce_t)(const void *, void *, size_t, int, int, void *, void *);
static inline ncclResult_t art_ncclAllReduce(void *f, uintptr_t send, uintptr_t recv, size_t count,
                                             int datatype, int op, uintptr_t comm, uintptr_t stream) {
	return ((ncclAllReduce_t)f)((const void *)send, (void *)recv, count, datatype, op, (void *)comm, (void *)stream);
}

// ncclReduceScatter(sendbuff, recvbuff, recvcount, datatype, op, comm, stream)
// and ncclAllGather(sendbuff, recvbuff, sendcount, datatype, comm, stream),
// as declared in nccl.h of 2.28.9.
typedef ncclResult_t (*ncclReduceScatter_t)(const void *, void *, size_t, int, int, void *, void *);
static inline ncclResult_t art_ncclReduceScatter(void *f, uintptr_t send, uintptr_t recv, size_t recvcount,
                                                 int datatype, int op, uintptr_t comm, uintptr_t stream) {
	return ((ncclReduceScatter_t)f)((const void *)send, (void *)recv, recvcount, datatype, op, (void *)comm, (void *)stream);
}

typedef ncclResult_t (*ncclAllGather_t)(const void *, void *, size_t, int, void *, void *);
static inline ncclResult_t art_ncclAllGather(void *f, uintptr_t send, uintptr_t recv, size_t sendcount,
                                             int datatype, uintptr_t comm, uintptr_t stream) {
	return ((ncclAllGather_t)f)((const void *)send, (void *)recv, sendcount, datatype, (void *)comm, (void *)stream);
}

typedef ncclResult_t (*ncclCommOp_t)(void *);
static inline ncclResult_t art_ncclCommFinalize(void *f, uintptr_t comm) {
	return ((ncclCommOp_t)f)((void *)comm);
}
static inline ncclResult_t art_ncclCommDestroy(void *f, uintptr_t comm) {
	return ((ncclCommOp_t)f)((void *)comm);
}
static inline ncclResult_t art_ncclCommAbort(void *f, uintptr_t comm) {
	return ((ncclCommOp_t)f)((void *)comm);
}

typedef ncclResult_t (*ncclCommGetAsyncError_t)(void *, ncclResult_t *);
static inline ncclResult_t art_ncclCommGetAsyncError(void *f, uintptr_t comm, ncclResult_t *async) {
	return ((ncclCommGetAsyncError_t)f)((void *)comm, async);
}

typedef const char *(*ncclGetErrorString_t)(ncclResult_t);
static inline const char *art_ncclGetErrorString(void *f, ncclResult_t r) {
	return ((ncclGetErrorString_t)f)(r);
}

typedef const char *(*ncclGetLastError_t)(void *);
static inline const char *art_ncclGetLastError(void *f, uintptr_t comm) {
	return ((ncclGetLastError_t)f)((void *)comm);
}

// Buffer registration (NCCL 2.19) and symmetric windows (NCCL 2.27), as
// declared in nccl.h of 2.28.9:
//   ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle);
//   ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle);
//   ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags);
//   ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win);
//   ncclResult_t ncclMemAlloc(void** ptr, size_t size);
//   ncclResult_t ncclMemFree(void *ptr);
// Handles and windows travel as uintptr_t like communicators.
typedef ncclResult_t (*ncclCommRegister_t)(void *, void *, size_t, void **);
static inline ncclResult_t art_ncclCommRegister(void *f, uintptr_t comm, uintptr_t buf, size_t size, uintptr_t *handle) {
	void *h = NULL;
	ncclResult_t r = ((ncclCommRegister_t)f)((void *)comm, (void *)buf, size, &h);
	*handle = (uintptr_t)h;
	return r;
}

typedef ncclResult_t (*ncclCommDeregister_t)(void *, void *);
static inline ncclResult_t art_ncclCommDeregister(void *f, uintptr_t comm, uintptr_t handle) {
	return ((ncclCommDeregister_t)f)((void *)comm, (void *)handle);
}

typedef ncclResult_t (*ncclCommWindowRegister_t)(void *, void *, size_t, void **, int);
static inline ncclResult_t art_ncclCommWindowRegister(void *f, uintptr_t comm, uintptr_t buf, size_t size, uintptr_t *win, int flags) {
	void *w = NULL;
	ncclResult_t r = ((ncclCommWindowRegister_t)f)((void *)comm, (void *)buf, size, &w, flags);
	*win = (uintptr_t)w;
	return r;
}

typedef ncclResult_t (*ncclCommWindowDeregister_t)(void *, void *);
static inline ncclResult_t art_ncclCommWindowDeregister(void *f, uintptr_t comm, uintptr_t win) {
	return ((ncclCommWindowDeregister_t)f)((void *)comm, (void *)win);
}

typedef ncclResult_t (*ncclMemAlloc_t)(void **, size_t);
static inline ncclResult_t art_ncclMemAlloc(void *f, uintptr_t *ptr, size_t size) {
	void *p = NULL;
	ncclResult_t r = ((ncclMemAlloc_t)f)(&p, size);
	*ptr = (uintptr_t)p;
	return r;
}

typedef ncclResult_t (*ncclMemFree_t)(void *);
static inline ncclResult_t art_ncclMemFree(void *f, uintptr_t ptr) {
	return ((ncclMemFree_t)f)((void *)ptr);
}

#endif
