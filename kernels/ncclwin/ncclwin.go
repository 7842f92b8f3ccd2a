// Package ncclwin is the nccl-win variant: ncclAllReduce on a symmetric
// window (ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC, NCCL 2.27
// and later), which lets NCCL pick its symmetric low-latency kernels;
// nccl-tests' -R 2. Like nccl it has no kernel of artest's, no host model
// and no trace word.
package ncclwin

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// Variant is nccl-win's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "nccl-win",
		Summary: "ncclAllReduce on a symmetric window, NCCL_WIN_COLL_SYMMETRIC (nccl-tests -R 2)",
		DTypes:  kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 1 << 20,
		Needs: kernels.NeedNCCL | kernels.NeedCUDA,
		Order: reference.OrderUnknown,
		NCCL:  kernels.NCCLWindow,
	}
}
