// Package ncclreg is the nccl-reg variant: ncclAllReduce on buffers
// registered with ncclCommRegister (NCCL 2.19 and later), nccl-tests' -R 1.
// The cuda backend registers each buffer's whole allocation once and
// reuses the handle. Like nccl it has no kernel of artest's, no host model
// and no trace word.
package ncclreg

import (
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// Variant is nccl-reg's complete description.
func Variant() kernels.Variant {
	return kernels.Variant{
		Name:    "nccl-reg",
		Summary: "ncclAllReduce on buffers registered with ncclCommRegister (nccl-tests -R 1)",
		DTypes:  kernels.AllDTypes, Ops: kernels.AllOps,
		MinRanks: 1, MaxRanks: 1 << 20,
		Needs: kernels.NeedNCCL | kernels.NeedCUDA,
		Order: reference.OrderUnknown,
		NCCL:  kernels.NCCLRegistered,
	}
}
