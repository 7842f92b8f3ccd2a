package topo

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/stretchr/testify/require"
)

// handBuilt is two NVLinked GPUs and one behind the other NUMA node.
func handBuilt() *Topology {
	nv := Link{Type: "NV4", NVLinks: 4, P2PRead: true, P2PWrite: true, P2PAtomics: true, P2PNVLink: true}
	sys := Link{Type: "SYS", P2PRead: true}
	return &Topology{
		DriverVersion:     "580.95.05",
		CUDADriverVersion: "13.0",
		GPUs: []GPU{
			{Index: 0, Name: "NVIDIA H200", UUID: "GPU-0", PCIBusID: "0000:19:00.0", NVLinks: 4},
			{Index: 1, Name: "NVIDIA H200", UUID: "GPU-1", PCIBusID: "0000:3b:00.0", NVLinks: 4},
			{Index: 2, Name: "NVIDIA L40S", UUID: "GPU-2", PCIBusID: "0000:b1:00.0"},
		},
		Links: [][]Link{
			{{Type: "X"}, nv, sys},
			{nv, {Type: "X"}, sys},
			{sys, sys, {Type: "X"}},
		},
	}
}

func TestMatrix(t *testing.T) {
	want := "" +
		"      GPU0  GPU1  GPU2\n" +
		"GPU0  X     NV4   SYS\n" +
		"GPU1  NV4   X     SYS\n" +
		"GPU2  SYS   SYS   X\n" +
		"\n" +
		"Legend:\n" +
		"  X    = the GPU itself\n" +
		"  NV#  = # NVLinks, bonded (directly or through NVSwitches)\n" +
		"  SYS  = PCIe and the link between NUMA nodes (e.g. UPI, xGMI)\n"
	require.Equal(t, want, handBuilt().Matrix())
}

func TestP2PMatrix(t *testing.T) {
	want := "" +
		"      GPU0  GPU1  GPU2\n" +
		"GPU0  X     rwan  r\n" +
		"GPU1  rwan  X     r\n" +
		"GPU2  r     r     X\n"
	require.Equal(t, want, handBuilt().P2PMatrix())
	require.False(t, handBuilt().P2P(), "GPU2 cannot write to its peers")

	full := handBuilt()
	full.GPUs, full.Links = full.GPUs[:2], [][]Link{full.Links[0][:2], full.Links[1][:2]}
	require.True(t, full.P2P())
}

func TestJSONRoundTrip(t *testing.T) {
	in := handBuilt()
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.Contains(t, string(b), `"pci_bus_id":"0000:19:00.0"`)
	require.Contains(t, string(b), `"type":"NV4"`)
	var out Topology
	require.NoError(t, json.Unmarshal(b, &out))
	require.Equal(t, in, &out)
}

func TestNormalizeBusID(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"00000000:19:00.0", "0000:19:00.0"}, // NVML
		{"0000:19:00.0", "0000:19:00.0"},     // CUDA
		{"00000000:B1:00.0\x00\x00", "0000:b1:00.0"},
		{"00010000:3B:00.0", "10000:3b:00.0"}, // a domain that needs five digits
		{"not-a-bus-id", "not-a-bus-id"},
	} {
		require.Equal(t, tc.want, NormalizeBusID(tc.in), "%q", tc.in)
	}
}

// fakeGPU describes one mocked device: its bus id and, per active link,
// what sits at the other end ("switch" or a peer's bus id).
type fakeGPU struct {
	bus   string
	links []string
	// numa is the NUMA node, which decides the PCIe path between GPUs
	// without a direct NVLink.
	numa int
}

func busInfo(bus string) nvml.PciInfo {
	var p nvml.PciInfo
	copy(p.BusId[:], bus)
	return p
}

// fakeNVML builds a mocked NVML over gpus. p2pNVLink says whether NVML
// reports NVLink P2P between two GPUs.
func fakeNVML(gpus []fakeGPU, p2pNVLink func(i, j int) bool) *mock.Interface {
	devs := make([]*mock.Device, len(gpus))
	index := map[nvml.Device]int{}
	for i := range gpus {
		devs[i] = &mock.Device{}
		index[devs[i]] = i
	}
	for i, g := range gpus {
		d := devs[i]
		d.GetNameFunc = func() (string, nvml.Return) { return "NVIDIA H200", nvml.SUCCESS }
		d.GetUUIDFunc = func() (string, nvml.Return) { return fmt.Sprintf("GPU-%d", i), nvml.SUCCESS }
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) { return busInfo(g.bus), nvml.SUCCESS }
		d.GetNvLinkStateFunc = func(l int) (nvml.EnableState, nvml.Return) {
			if l < len(g.links) {
				return nvml.FEATURE_ENABLED, nvml.SUCCESS
			}
			return nvml.FEATURE_DISABLED, nvml.ERROR_INVALID_ARGUMENT
		}
		d.GetNvLinkRemoteDeviceTypeFunc = func(l int) (nvml.IntNvLinkDeviceType, nvml.Return) {
			if g.links[l] == "switch" {
				return nvml.NVLINK_DEVICE_TYPE_SWITCH, nvml.SUCCESS
			}
			return nvml.NVLINK_DEVICE_TYPE_GPU, nvml.SUCCESS
		}
		d.GetNvLinkRemotePciInfoFunc = func(l int) (nvml.PciInfo, nvml.Return) {
			return busInfo(g.links[l]), nvml.SUCCESS
		}
		d.GetP2PStatusFunc = func(peer nvml.Device, c nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			j := index[peer]
			if c == nvml.P2P_CAPS_INDEX_NVLINK && !p2pNVLink(i, j) {
				return nvml.P2P_STATUS_NOT_SUPPORTED, nvml.SUCCESS
			}
			return nvml.P2P_STATUS_OK, nvml.SUCCESS
		}
		d.GetTopologyCommonAncestorFunc = func(peer nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			if gpus[index[peer]].numa != g.numa {
				return nvml.TOPOLOGY_SYSTEM, nvml.SUCCESS
			}
			return nvml.TOPOLOGY_NODE, nvml.SUCCESS
		}
	}
	return &mock.Interface{
		InitFunc:                       func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return "580.95.05", nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return 13000, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return len(gpus), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			return devs[i], nvml.SUCCESS
		},
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// The lent H200 machines: every GPU has 18 links into NVSwitches.
func TestDiscoverNVSwitchNode(t *testing.T) {
	var gpus []fakeGPU
	for i, bus := range []string{"00000000:19:00.0", "00000000:3B:00.0", "00000000:4C:00.0", "00000000:5D:00.0"} {
		gpus = append(gpus, fakeGPU{bus: bus, links: repeat("switch", 18), numa: i / 2})
	}
	lib := fakeNVML(gpus, func(i, j int) bool { return true })
	topo, err := discover(lib)
	require.NoError(t, err)
	require.Len(t, lib.ShutdownCalls(), 1)

	require.Equal(t, "580.95.05", topo.DriverVersion)
	require.Equal(t, "13.0", topo.CUDADriverVersion)
	require.Equal(t, GPU{Index: 1, Name: "NVIDIA H200", UUID: "GPU-1", PCIBusID: "0000:3b:00.0", NVLinks: 18}, topo.GPUs[1])
	for i := range gpus {
		for j := range gpus {
			want := "NV18"
			if i == j {
				want = "X"
			}
			require.Equal(t, want, topo.Links[i][j].Type, "GPU%d->GPU%d", i, j)
		}
	}
	require.True(t, topo.P2P())
	require.Contains(t, topo.Matrix(), "GPU3  NV18  NV18  NV18  X\n")
}

// Direct NVLink bridges: GPU0-GPU1 by 4 links, GPU2 alone across NUMA
// nodes; GPU3 shares GPU2's NUMA node.
func TestDiscoverDirectLinksAndPCIe(t *testing.T) {
	const b0, b1, b2, b3 = "00000000:19:00.0", "00000000:3B:00.0", "00000000:B1:00.0", "00000000:CA:00.0"
	gpus := []fakeGPU{
		{bus: b0, links: repeat(b1, 4)},
		{bus: b1, links: repeat(b0, 4)},
		{bus: b2, numa: 1},
		{bus: b3, numa: 1},
	}
	lib := fakeNVML(gpus, func(i, j int) bool { return i+j == 1 })
	topo, err := discover(lib)
	require.NoError(t, err)

	want := [][]string{
		{"X", "NV4", "SYS", "SYS"},
		{"NV4", "X", "SYS", "SYS"},
		{"SYS", "SYS", "X", "NODE"},
		{"SYS", "SYS", "NODE", "X"},
	}
	for i := range want {
		for j := range want[i] {
			require.Equal(t, want[i][j], topo.Links[i][j].Type, "GPU%d->GPU%d", i, j)
		}
	}
	require.Equal(t, 4, topo.Links[0][1].NVLinks)
	require.True(t, topo.Links[0][1].P2PNVLink)
	require.False(t, topo.Links[0][2].P2PNVLink)
	require.Equal(t, []int{4, 4, 0, 0}, []int{topo.GPUs[0].NVLinks, topo.GPUs[1].NVLinks, topo.GPUs[2].NVLinks, topo.GPUs[3].NVLinks})
}

// Switch links alone do not make an NVLink path: NVML must also report
// NVLink P2P for the pair (a GPU can be fenced off from the fabric).
func TestDiscoverSwitchWithoutNVLinkP2P(t *testing.T) {
	gpus := []fakeGPU{
		{bus: "00000000:19:00.0", links: repeat("switch", 18)},
		{bus: "00000000:3B:00.0", links: repeat("switch", 18)},
	}
	topo, err := discover(fakeNVML(gpus, func(i, j int) bool { return false }))
	require.NoError(t, err)
	require.Equal(t, "NODE", topo.Links[0][1].Type)
}

func TestDiscoverErrors(t *testing.T) {
	t.Run("no NVML", func(t *testing.T) {
		lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
		topo, err := discover(lib)
		require.Nil(t, topo)
		require.ErrorIs(t, err, ErrNoNVML)
		require.ErrorContains(t, err, "nvmlInit")
		require.Empty(t, lib.ShutdownCalls(), "no shutdown without a successful init")
	})
	t.Run("GPU lost", func(t *testing.T) {
		lib := fakeNVML([]fakeGPU{{bus: "00000000:19:00.0"}}, func(i, j int) bool { return false })
		lib.DeviceGetHandleByIndexFunc = func(int) (nvml.Device, nvml.Return) { return nil, nvml.ERROR_GPU_IS_LOST }
		_, err := discover(lib)
		require.ErrorContains(t, err, "GPU0: handle")
		require.False(t, errors.Is(err, ErrNoNVML))
		require.Len(t, lib.ShutdownCalls(), 1)
	})
}

// This machine has no NVIDIA driver: Discover must say so, not panic. On a
// GPU machine it must find at least one GPU.
func TestDiscoverOnThisMachine(t *testing.T) {
	var topo *Topology
	var err error
	require.NotPanics(t, func() { topo, err = Discover() })
	if err != nil {
		require.Nil(t, topo)
		require.ErrorIs(t, err, ErrNoNVML)
		t.Logf("topology unavailable: %v", err)
		return
	}
	require.NotEmpty(t, topo.GPUs)
	t.Logf("\n%s", topo.Matrix())
}
