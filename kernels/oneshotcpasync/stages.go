package oneshotcpasync

import "github.com/artest/artest/kernels"

// Launch parameters of oneshot-cpasync (oneshot_cpasync.cu).
//
// Stages: the kernel traps outside [MinStages, MaxStages]
// (CPASYNC_MIN_STAGES and CPASYNC_MAX_STAGES in cpasync.cuh;
// oneshotcpasync_test.go checks the two sides agree). Three is the default
// pipeline depth; whether another depth is faster on H200 is for
// measurements there (artest tune) to say.
const (
	MinStages     = 2
	MaxStages     = 8
	DefaultStages = 3
)

// SharedBytes is the dynamic shared memory one oneshot-cpasync block
// needs: per stage, one 16-byte slot per thread per rank (as
// artest_cpasync_shared_bytes in cpasync.cuh). The kernel traps
// when its launch has less. At the defaults (3 stages, 256 threads) and 8
// ranks that is 96 KiB, inside both sm_80's 163 KiB and sm_90's 227 KiB
// opt-in limits; a --threads or --param stages that goes past the GPU's
// limit makes the launch fail with the driver's error naming the kernel
// and the size (cuda backend, FuncSetAttribute).
func SharedBytes(a *kernels.Args, threads int) int {
	return int(a.Param0) * int(a.NRanks) * threads * kernels.VecBytes
}
