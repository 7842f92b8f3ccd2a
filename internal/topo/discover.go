package topo

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoNVML is wrapped when NVML itself is missing or cannot start (no
// driver, no GPU): the caller reports the topology as unavailable and goes
// on.
var ErrNoNVML = errors.New("NVML not available")

// Discover reads the node's topology from NVML.
func Discover() (*Topology, error) {
	return discover(nvml.New())
}

func discover(lib nvml.Interface) (*Topology, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("%w: nvmlInit: %v", ErrNoNVML, ret)
	}
	defer lib.Shutdown()

	t := &Topology{}
	var ret nvml.Return
	if t.DriverVersion, ret = lib.SystemGetDriverVersion(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("driver version: %v", ret)
	}
	cudaVersion, ret := lib.SystemGetCudaDriverVersion()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("CUDA driver version: %v", ret)
	}
	t.CUDADriverVersion = fmt.Sprintf("%d.%d", cudaVersion/1000, cudaVersion%1000/10)

	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("GPU count: %v", ret)
	}
	devs := make([]nvml.Device, n)
	links := make([]nvlinks, n)
	for i := range devs {
		if devs[i], ret = lib.DeviceGetHandleByIndex(i); ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU%d: handle: %v", i, ret)
		}
		g, err := describe(i, devs[i])
		if err != nil {
			return nil, err
		}
		links[i] = countLinks(devs[i])
		g.NVLinks = links[i].active
		t.GPUs = append(t.GPUs, g)
	}

	t.Links = make([][]Link, n)
	for i := range devs {
		t.Links[i] = make([]Link, n)
		for j := range devs {
			if i == j {
				t.Links[i][j] = Link{Type: "X"}
				continue
			}
			t.Links[i][j] = link(devs[i], devs[j], links[i], links[j], t.GPUs[j].PCIBusID)
		}
	}
	return t, nil
}

func describe(i int, d nvml.Device) (GPU, error) {
	g := GPU{Index: i}
	var ret nvml.Return
	if g.Name, ret = d.GetName(); ret != nvml.SUCCESS {
		return g, fmt.Errorf("GPU%d: name: %v", i, ret)
	}
	if g.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
		return g, fmt.Errorf("GPU%d: UUID: %v", i, ret)
	}
	pci, ret := d.GetPciInfo()
	if ret != nvml.SUCCESS {
		return g, fmt.Errorf("GPU%d: PCI info: %v", i, ret)
	}
	g.PCIBusID = NormalizeBusID(cString(pci.BusId[:]))
	return g, nil
}

// nvlinks is what one GPU's active NVLinks lead to.
type nvlinks struct {
	active   int
	toSwitch int            // links into NVSwitches
	toGPU    map[string]int // direct links, by the peer's normalised bus id
}

// countLinks walks every possible link; links a GPU does not have answer
// with an error and are skipped.
func countLinks(d nvml.Device) nvlinks {
	l := nvlinks{toGPU: map[string]int{}}
	for i := 0; i < nvml.NVLINK_MAX_LINKS; i++ {
		state, ret := d.GetNvLinkState(i)
		if ret != nvml.SUCCESS || state != nvml.FEATURE_ENABLED {
			continue
		}
		l.active++
		if kind, ret := d.GetNvLinkRemoteDeviceType(i); ret == nvml.SUCCESS && kind == nvml.NVLINK_DEVICE_TYPE_SWITCH {
			l.toSwitch++
			continue
		}
		if remote, ret := d.GetNvLinkRemotePciInfo(i); ret == nvml.SUCCESS {
			l.toGPU[NormalizeBusID(cString(remote.BusId[:]))]++
		}
	}
	return l
}

func link(a, b nvml.Device, la, lb nvlinks, busB string) Link {
	l := Link{
		P2PRead:    p2p(a, b, nvml.P2P_CAPS_INDEX_READ),
		P2PWrite:   p2p(a, b, nvml.P2P_CAPS_INDEX_WRITE),
		P2PAtomics: p2p(a, b, nvml.P2P_CAPS_INDEX_ATOMICS),
		P2PNVLink:  p2p(a, b, nvml.P2P_CAPS_INDEX_NVLINK),
	}
	switch {
	case la.toGPU[busB] > 0:
		l.NVLinks = la.toGPU[busB]
	case la.toSwitch > 0 && lb.toSwitch > 0 && l.P2PNVLink:
		// Through the switch fabric the pair can use every link the
		// narrower side has.
		l.NVLinks = min(la.toSwitch, lb.toSwitch)
	}
	if l.NVLinks > 0 {
		l.Type = fmt.Sprintf("NV%d", l.NVLinks)
		return l
	}
	l.Type = "N/A"
	if level, ret := a.GetTopologyCommonAncestor(b); ret == nvml.SUCCESS {
		l.Type = pcieCode(level)
	}
	return l
}

func p2p(a, b nvml.Device, c nvml.GpuP2PCapsIndex) bool {
	s, ret := a.GetP2PStatus(b, c)
	return ret == nvml.SUCCESS && s == nvml.P2P_STATUS_OK
}

func pcieCode(level nvml.GpuTopologyLevel) string {
	switch level {
	case nvml.TOPOLOGY_INTERNAL, nvml.TOPOLOGY_SINGLE:
		return "PIX"
	case nvml.TOPOLOGY_MULTIPLE:
		return "PXB"
	case nvml.TOPOLOGY_HOSTBRIDGE:
		return "PHB"
	case nvml.TOPOLOGY_NODE:
		return "NODE"
	case nvml.TOPOLOGY_SYSTEM:
		return "SYS"
	}
	return "N/A"
}

func cString(b []uint8) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
