package oneshotcpasync

import (
	"fmt"

	"github.com/artest/artest/kernels/hostmodel"
)

// Host is the host model of oneshot-cpasync. It checks the protocol, not
// the pipeline: the kernel's cp.async stages are a detail of the GPU's
// memory hierarchy (where peer data waits between its load and its
// reduction), while what each rank reads and writes, and when, is exactly
// oneshot's: start barrier, reduce every peer's input in rank order, then
// an end barrier out of place, or staging and a mid barrier in place, with
// the same fault switches. So it runs the one-shot protocol's model
// (hostmodel.OneShot), as oneshot's does. It
// is a function of its own, reached through this variant's ID, and
// hostmodel.Run writes the launch's VariantID into the trace word: a
// dispatcher that runs plain oneshot for a oneshot-cpasync case leaves
// oneshot's ID there and fails the case, on this backend as on the GPU.
//
// Like the kernel, it refuses a stage count outside the range (the kernel
// traps), so a host that forgets to set param0 fails here too.
func Host(k *hostmodel.Kernel, b int) error {
	if s := k.Args().Param0; s < MinStages || s > MaxStages {
		return fmt.Errorf("host %s: stages (param0) %d, want %d..%d",
			k.Variant().Name, s, MinStages, MaxStages)
	}
	return hostmodel.OneShot(k, b)
}
