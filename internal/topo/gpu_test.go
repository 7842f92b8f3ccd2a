//go:build gpu

package topo

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGPUMatchesNvidiaSmi compares Discover's link matrix with what
// `nvidia-smi topo -m` prints on the same machine.
func TestGPUMatchesNvidiaSmi(t *testing.T) {
	topo, err := Discover()
	require.NoError(t, err)
	require.NotEmpty(t, topo.GPUs)
	t.Logf("driver %s, CUDA %s\n%s\n%s", topo.DriverVersion, topo.CUDADriverVersion, topo.Matrix(), topo.P2PMatrix())
	for _, g := range topo.GPUs {
		t.Logf("GPU%d %s %s %s nvlinks=%d", g.Index, g.Name, g.UUID, g.PCIBusID, g.NVLinks)
	}

	out, err := exec.Command("nvidia-smi", "topo", "-m").Output()
	if err != nil {
		t.Skipf("nvidia-smi topo -m: %v", err)
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > len(topo.GPUs) && strings.HasPrefix(f[0], "GPU") {
			rows[f[0]] = f[1 : 1+len(topo.GPUs)]
		}
	}
	for i, g := range topo.GPUs {
		want, ok := rows["GPU"+strconv.Itoa(g.Index)]
		require.True(t, ok, "nvidia-smi has no row for GPU%d:\n%s", g.Index, out)
		for j := range topo.GPUs {
			require.Equal(t, want[j], topo.Links[i][j].Type, "GPU%d->GPU%d\n%s", i, j, out)
		}
	}
}
