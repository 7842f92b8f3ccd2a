// Package nccl is artest's binding to NCCL, the baseline every custom
// allreduce is compared with and checked against.
//
// libnccl.so.2 is found at run time (Find: a flag, ARTEST_NCCL, the loader's
// search path, then the usual install and Python wheel locations) and opened
// with dlopen (package dl); every entry point is called through a C
// trampoline, so the binary builds and runs without NCCL.
//
// NCCL calls use the CUDA context current on the calling OS thread: call
// them from the goroutine that made the primary context current (see
// package cuda). ncclCommInitRank blocks until every rank has joined; the
// unique id comes from rank 0's GetUniqueID and reaches the others over MPI.
//
// Safety: NCCL uses NVLink SHARP (NVLS), which creates multicast objects, by
// default on NVSwitch machines. Load sets NCCL_NVLS_ENABLE=0 unless the
// environment already sets it, so NVLS stays off unless a user asks for it.
package nccl
