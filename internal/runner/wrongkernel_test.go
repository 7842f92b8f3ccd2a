package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
)

// The wrong-kernel injection plays a dispatcher that silently runs another
// custom kernel. For oneshot-cpasync that must be plain oneshot: the bug the
// trace word exists for is a cp.async kernel that was never selected while
// the plain one-shot, computing the same bits, made every test pass.
func TestWrongKernelForCpasyncIsPlainOneshot(t *testing.T) {
	cp, err := kernels.Lookup("oneshot-cpasync")
	require.NoError(t, err)
	w := wrongKernel(cp)
	require.NotNil(t, w)
	require.Equal(t, kernels.IDOneshot, w.ID)
	require.Equal(t, cp.Order, w.Order, "same reduction order: only the trace word can tell them apart")

	for i := range kernels.Registry {
		v := &kernels.Registry[i]
		if !v.Custom {
			continue
		}
		w := wrongKernel(v)
		require.NotNil(t, w, v.Name)
		require.NotEqual(t, v.ID, w.ID, v.Name)
		require.True(t, w.Custom, v.Name)
	}
}
