//go:build integration

package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Under stress, both forms stay right on every iteration; without the end
// barrier, one-shot lets a fast rank overwrite its registered input while a
// slow rank still reduces it, and the stress run fails.
func TestMultimemStressAndNoEndBarrier(t *testing.T) {
	t.Parallel()
	args := []string{"--variant", "multimem", "--dtype", "f32", "--op", "sum", "--size", "4K", "--mode", "oop,reg,plain,aligned", "--stress", "50"}
	for _, shots := range []string{"1", "2"} {
		o := mpirun(t, 3, 3*time.Minute, append(args, "--param", "shots="+shots)...)
		require.Equal(t, 0, o.code, "shots=%s\n%s\n%s", shots, o.stdout, o.stderr)
	}
	o := mpirun(t, 3, 3*time.Minute, append(args, "--param", "shots=1", "--inject", "no-end-barrier", "--inject", "delay:rank=2,us=500")...)
	require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "multimem/f32/sum/4KiB/oop-reg-plain/np3")
}
