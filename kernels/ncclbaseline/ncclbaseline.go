// Package ncclbaseline is NCCL's own allreduce as three variants, the
// baselines every custom variant is timed against and cross-checks of its
// results: ncclAllReduce (internal/nccl) on the same buffers (nccl), on
// registered buffers (nccl-reg) and on a symmetric window (nccl-win). The
// first two are also the reduce-scatter's and the all-gather's baselines
// (ncclReduceScatter, ncclAllGather). None has a kernel of artest's, a host
// model or a trace word; they differ only in how the cuda backend hands
// NCCL the buffers (kernels.NCCLMode).
package ncclbaseline

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// Plain is nccl's complete description: ncclAllReduce on unregistered
// buffers, nccl-tests' default. The cuda backend keeps its input and
// output in ncclMemAlloc regions of their own (backend.OwnRegioner), as
// nccl-tests allocates, so that NCCL registers them in a CUDA graph as it
// does nccl-tests'; under stress it runs on the world's buffers.
func Plain() kernels.Variant {
	v := baseline("nccl", "ncclAllReduce (ncclReduceScatter, ncclAllGather) on ncclMemAlloc buffers, nccl-tests' default (-R 0): baseline and cross-check", kernels.NCCLPlain)
	v.Colls = ncclColls()
	return v
}

// Registered is nccl-reg's complete description: ncclAllReduce on buffers
// registered with ncclCommRegister (NCCL 2.19 and later), nccl-tests' -R 1.
// The cuda backend registers each buffer's whole allocation once and
// reuses the handle; its buffers are ncclMemAlloc regions, as nccl's.
func Registered() kernels.Variant {
	v := baseline("nccl-reg", "ncclAllReduce (ncclReduceScatter, ncclAllGather) on buffers registered with ncclCommRegister (nccl-tests -R 1)", kernels.NCCLRegistered)
	v.Colls = ncclColls()
	return v
}

// Window is nccl-win's complete description: ncclAllReduce on a symmetric
// window (ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC, NCCL 2.27
// and later), which lets NCCL pick its symmetric low-latency kernels;
// nccl-tests' -R 2. Its input and output are the cuda backend's own: two
// ncclMemAlloc regions registered as windows (backend.OwnRegioner), since
// the world's IPC-shared input cannot be one. The allreduce alone.
func Window() kernels.Variant {
	return baseline("nccl-win", "ncclAllReduce on a symmetric window, NCCL_WIN_COLL_SYMMETRIC (nccl-tests -R 2)", kernels.NCCLWindow)
}

// baseline is what the three share: every dtype and op, any rank count,
// NCCL and CUDA needed, NCCL's reduction order unknown.
func baseline(name, summary string, mode kernels.NCCLMode) kernels.Variant {
	return kernels.Variant{
		Name:    name,
		Summary: summary,
		DTypes:  kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 1 << 20,
		Needs: kernels.NeedNCCL | kernels.NeedCUDA,
		Order: reference.OrderUnknown,
		NCCL:  mode,
	}
}

// ncclColls are the collectives NCCL has a function for
// (reference.Collective.NCCL): the ones its baselines run.
func ncclColls() []reference.Coll {
	var out []reference.Coll
	for _, c := range reference.Collectives {
		if c.NCCL != "" {
			out = append(out, c.ID)
		}
	}
	return out
}
