package twoshotbulk

import "github.com/artest/artest/kernels/hostmodel"

// Host is twoshot-bulk's host model, block b of one launch: twoshot's pull
// protocol (hostmodel.ReduceScatterGather). How the kernel moves the
// gathered bytes (bulk copies through shared memory, or slot by slot) is a
// detail of the GPU; which bytes each block reads and writes, and when, is
// this. hostmodel.Run writes the launch's VariantID into the trace word, so
// a dispatcher that runs twoshot for a twoshot-bulk case fails here too.
func Host(k *hostmodel.Kernel, b int) error { return hostmodel.ReduceScatterGather(k, b, nil) }
