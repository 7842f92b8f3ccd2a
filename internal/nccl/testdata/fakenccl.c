// A stand-in for libnccl.so.2 used by the package tests. It exports the
// entry points the wrapper resolves, with nccl.h's signatures, and describes
// each call in the string ncclGetLastError returns, so the tests can see
// exactly which arguments arrived.
#define _POSIX_C_SOURCE 200112L // posix_memalign under -std=c11
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;

enum { ncclSuccess = 0, ncclSystemError = 2, ncclInvalidArgument = 4, ncclRemoteError = 6 };

static char last[256];

#ifdef FAKENCCL_OLD
#define FAKENCCL_DEFAULT_VERSION 21805 // before registration and windows
#else
#define FAKENCCL_DEFAULT_VERSION 22809
#endif

ncclResult_t ncclGetVersion(int *v) {
	const char *s = getenv("FAKENCCL_VERSION");
	*v = s ? atoi(s) : FAKENCCL_DEFAULT_VERSION;
	return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	for (int i = 0; i < 128; i++) id->internal[i] = (char)(i ^ 0x5a);
	return ncclSuccess;
}

// Communicators are 0x7000 + rank*16 + nranks.
ncclResult_t ncclCommInitRank(void **comm, int nranks, ncclUniqueId id, int rank) {
	for (int i = 0; i < 128; i++) {
		if (id.internal[i] != (char)(i ^ 0x5a)) {
			snprintf(last, sizeof last, "bad unique id at byte %d", i);
			return ncclInvalidArgument;
		}
	}
	*comm = (void *)(uintptr_t)(0x7000 + rank * 16 + nranks);
	return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, int datatype, int op, void *comm, void *stream) {
	if (datatype < 0 || datatype > 11) {
		snprintf(last, sizeof last, "invalid data type %d", datatype);
		return ncclInvalidArgument;
	}
	snprintf(last, sizeof last, "allreduce send=%#lx recv=%#lx count=%zu type=%d op=%d comm=%#lx stream=%#lx",
	         (unsigned long)(uintptr_t)send, (unsigned long)(uintptr_t)recv, count, datatype, op,
	         (unsigned long)(uintptr_t)comm, (unsigned long)(uintptr_t)stream);
	return ncclSuccess;
}

ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, int datatype, int op, void *comm,
                               void *stream) {
	snprintf(last, sizeof last, "reducescatter send=%#lx recv=%#lx recvcount=%zu type=%d op=%d comm=%#lx stream=%#lx",
	         (unsigned long)(uintptr_t)send, (unsigned long)(uintptr_t)recv, recvcount, datatype, op,
	         (unsigned long)(uintptr_t)comm, (unsigned long)(uintptr_t)stream);
	return ncclSuccess;
}

ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, int datatype, void *comm, void *stream) {
	snprintf(last, sizeof last, "allgather send=%#lx recv=%#lx sendcount=%zu type=%d comm=%#lx stream=%#lx",
	         (unsigned long)(uintptr_t)send, (unsigned long)(uintptr_t)recv, sendcount, datatype,
	         (unsigned long)(uintptr_t)comm, (unsigned long)(uintptr_t)stream);
	return ncclSuccess;
}

static ncclResult_t commOp(const char *what, void *comm) {
	if (comm == NULL) {
		snprintf(last, sizeof last, "%s: NULL communicator", what);
		return ncclInvalidArgument;
	}
	snprintf(last, sizeof last, "%s comm=%#lx", what, (unsigned long)(uintptr_t)comm);
	return ncclSuccess;
}
ncclResult_t ncclCommFinalize(void *comm) { return commOp("finalize", comm); }
ncclResult_t ncclCommDestroy(void *comm) { return commOp("destroy", comm); }
ncclResult_t ncclCommAbort(void *comm) { return commOp("abort", comm); }

// Rank 1's communicator has lost a peer.
ncclResult_t ncclCommGetAsyncError(void *comm, ncclResult_t *async) {
	if (comm == NULL) return ncclInvalidArgument;
	*async = (((uintptr_t)comm >> 4) & 0xf) == 1 ? ncclRemoteError : ncclSuccess;
	if (*async != ncclSuccess) snprintf(last, sizeof last, "peer 0 exited");
	return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
	switch (r) {
	case ncclSuccess: return "no error";
	case ncclSystemError: return "unhandled system error";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	}
	return "unknown result code";
}

const char *ncclGetLastError(void *comm) {
	(void)comm;
	return last;
}

#ifndef FAKENCCL_OLD
// Registration, windows and ncclMemAlloc (NCCL 2.19 and 2.27). Built with
// -DFAKENCCL_OLD, the library lacks them, as NCCL 2.18 does. Handles are
// 0x9000 + n and windows 0xa000 + n for the n-th registration; "live"
// counts registrations and windows not yet undone, so a test sees leaks.
static int regs, wins, live;

ncclResult_t ncclCommRegister(void *comm, void *buf, size_t size, void **handle) {
	if (comm == NULL || buf == NULL || size == 0) {
		snprintf(last, sizeof last, "register: comm=%p buf=%p size=%zu", comm, buf, size);
		return ncclInvalidArgument;
	}
	*handle = (void *)(uintptr_t)(0x9000 + ++regs);
	live++;
	snprintf(last, sizeof last, "register comm=%#lx buf=%#lx size=%zu handle=%#lx live=%d",
	         (unsigned long)(uintptr_t)comm, (unsigned long)(uintptr_t)buf, size,
	         (unsigned long)(uintptr_t)*handle, live);
	return ncclSuccess;
}

ncclResult_t ncclCommDeregister(void *comm, void *handle) {
	uintptr_t h = (uintptr_t)handle;
	if (comm == NULL || h <= 0x9000 || h > (uintptr_t)(0x9000 + regs)) {
		snprintf(last, sizeof last, "deregister: unknown handle %#lx", (unsigned long)h);
		return ncclInvalidArgument;
	}
	live--;
	snprintf(last, sizeof last, "deregister handle=%#lx live=%d", (unsigned long)h, live);
	return ncclSuccess;
}

ncclResult_t ncclCommWindowRegister(void *comm, void *buf, size_t size, void **win, int flags) {
	if (comm == NULL || (flags & ~1) != 0 || ((uintptr_t)buf % 4096) != 0 || size == 0) {
		snprintf(last, sizeof last, "window register: comm=%p buf=%p size=%zu flags=%d", comm, buf, size, flags);
		return ncclInvalidArgument;
	}
	*win = (void *)(uintptr_t)(0xa000 + ++wins);
	live++;
	snprintf(last, sizeof last, "window register comm=%#lx buf=%#lx size=%zu flags=%d win=%#lx live=%d",
	         (unsigned long)(uintptr_t)comm, (unsigned long)(uintptr_t)buf, size, flags,
	         (unsigned long)(uintptr_t)*win, live);
	return ncclSuccess;
}

ncclResult_t ncclCommWindowDeregister(void *comm, void *win) {
	uintptr_t w = (uintptr_t)win;
	if (comm == NULL || w <= 0xa000 || w > (uintptr_t)(0xa000 + wins)) {
		snprintf(last, sizeof last, "window deregister: unknown window %#lx", (unsigned long)w);
		return ncclInvalidArgument;
	}
	live--;
	snprintf(last, sizeof last, "window deregister win=%#lx live=%d", (unsigned long)w, live);
	return ncclSuccess;
}

// Device memory is host memory here, as in the fake driver; aligned like
// a cuMem granule so that windows over it are aligned.
ncclResult_t ncclMemAlloc(void **ptr, size_t size) {
	if (size == 0 || posix_memalign(ptr, 4096, (size + 4095) / 4096 * 4096) != 0) {
		snprintf(last, sizeof last, "memalloc: %zu bytes", size);
		return ncclSystemError;
	}
	snprintf(last, sizeof last, "memalloc size=%zu", size);
	return ncclSuccess;
}

ncclResult_t ncclMemFree(void *ptr) {
	free(ptr);
	snprintf(last, sizeof last, "memfree");
	return ncclSuccess;
}
#endif
