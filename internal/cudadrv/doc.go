// Package cudadrv is artest's binding to the CUDA driver API.
//
// libcuda.so.1 is opened at run time (package dl) and every entry point is
// called through a C trampoline (trampolines.h), so the binary needs no CUDA
// toolkit to build, ldd shows no libcuda, and a machine without a driver
// gets an ordinary error from Load. Where the driver's ABI changed, the
// versioned exports that cuda.h maps to are used (cuMemAlloc_v2,
// cuStreamBeginCapture_v2, cuEventElapsedTime_v2, ...); errors name the
// export that really ran.
//
// Threading: the driver's current context is per OS thread. Lock the
// goroutine that talks to CUDA with runtime.LockOSThread, make the device's
// primary context current on it (MakeCurrent), and make every call from
// that goroutine. The primary context is the one NCCL uses as well, so
// NCCL and artest's kernels share memory and streams.
//
// Multicast (cuMulticastCreate and friends) is not in the table Load
// resolves: a multicast object can take a shared machine's GPUs out of
// service. Its entry points are looked up only by EnableMulticast, which
// needs a MulticastPermit, granted only by the safety gate
// (internal/multicast/gate); before that every multicast method fails
// without calling the driver (vmm.go).
package cudadrv
