// What every custom allreduce kernel includes: the shared headers, one
// job each.
//
//   signal.cuh  the SignalBlock layout (the twin of sigblock/layout.go)
//   abi.cuh     ArtestArgs, flag and fault-switch bits, dtype and op numbers (kernels.Args)
//   grid.cuh    the 16-byte slot, the thread limit, the grid rule (kernels/grid.go)
//   elem.cuh    element traits, operators, PTX loads and stores, the global timer,
//               sm_90 bulk copies and mbarriers
//   plan.cuh    Slot, Plan, Reduce: moving and reducing slots
//   sync.cuh    launch checks, give-ups, epochs, barriers, waits, delay, PDL wait
//
// A variant's own constants and formulas sit beside its kernel
// (kernels/<variant>/*.cuh). signal.cuh, abi.cuh and grid.cuh are plain C++
// (host compilers include them: the ABI and twin tests, the selftest); the
// rest is device code behind __CUDACC__.
#pragma once

#include "abi.cuh"
#include "grid.cuh"
#include "elem.cuh"
#include "plan.cuh"
#include "sync.cuh"
