// Package ncclbaseline is the nccl variant: ncclAllReduce on the same
// buffers (internal/nccl), the baseline every custom variant is timed
// against and a cross-check of its results. It has no kernel of artest's,
// no host model and no trace word.
package ncclbaseline

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// Variant is nccl's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "nccl",
		Summary: "ncclAllReduce on the same buffers: baseline and cross-check",
		DTypes:  kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 1 << 20,
		Needs: kernels.NeedNCCL | kernels.NeedCUDA,
		Order: reference.OrderUnknown,
	}
}
