// A stand-in for libnccl.so.2 used by the package tests. It exports the
// entry points the wrapper resolves, with nccl.h's signatures, and describes
// each call in the string ncclGetLastError returns, so the tests can see
// exactly which arguments arrived.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;

enum { ncclSuccess = 0, ncclSystemError = 2, ncclInvalidArgument = 4, ncclRemoteError = 6 };

static char last[256];

ncclResult_t ncclGetVersion(int *v) {
	const char *s = getenv("FAKENCCL_VERSION");
	*v = s ? atoi(s) : 22809;
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
