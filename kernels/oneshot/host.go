package oneshot

import "github.com/artest/artest/kernels/hostmodel"

// Host is oneshot's host model (oneshot.cu): the one-shot protocol
// (hostmodel.OneShot), block b of one launch.
func Host(k *hostmodel.Kernel, b int) error { return hostmodel.OneShot(k, b) }
