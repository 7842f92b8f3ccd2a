// Package dl opens shared libraries at run time: dlopen, dlsym and dlclose
// and nothing else. The CUDA driver and NCCL wrappers sit on top of it, so
// the artest binary links against neither library and reports a missing one
// as an ordinary error instead of failing to start.
//
// dlerror keeps its message per thread, so every call locks the calling
// goroutine to its OS thread from the dl call until its dlerror has been
// read.
package dl
