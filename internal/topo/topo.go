package topo

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Topology is one node's GPUs and the links between them.
type Topology struct {
	DriverVersion     string `json:"driver_version"`      // e.g. "580.95.05"
	CUDADriverVersion string `json:"cuda_driver_version"` // highest CUDA the driver supports, e.g. "13.0"
	GPUs              []GPU  `json:"gpus"`
	// Links[i][j] is how GPU i reaches GPU j; Links[i][i] is "X".
	Links [][]Link `json:"links"`
}

// GPU is one device in NVML's order (PCI bus order, which need not be
// CUDA's device order; match them by PCIBusID).
type GPU struct {
	Index    int    `json:"index"`
	Name     string `json:"name"`
	UUID     string `json:"uuid"`
	PCIBusID string `json:"pci_bus_id"` // normalised, see NormalizeBusID
	// NVLinks is the number of active NVLinks on this GPU.
	NVLinks int `json:"nvlinks"`
}

// Link is the connection from one GPU to another.
type Link struct {
	// Type is the nvidia-smi topo code: X (self), NV# (# bonded NVLinks),
	// PIX, PXB, PHB, NODE or SYS (PCIe paths, nearest first), or N/A.
	Type string `json:"type"`
	// NVLinks is the number of NVLinks the pair communicates over (through
	// NVSwitches: the links each GPU has into the switch fabric).
	NVLinks int `json:"nvlinks"`
	// Peer-to-peer capabilities as NVML reports them.
	P2PRead    bool `json:"p2p_read"`
	P2PWrite   bool `json:"p2p_write"`
	P2PAtomics bool `json:"p2p_atomics"`
	P2PNVLink  bool `json:"p2p_nvlink"`
}

// P2P reports whether every pair of distinct GPUs can read and write each
// other's memory.
func (t *Topology) P2P() bool {
	for i, row := range t.Links {
		for j, l := range row {
			if i != j && !(l.P2PRead && l.P2PWrite) {
				return false
			}
		}
	}
	return true
}

// Matrix prints the link matrix in the layout of `nvidia-smi topo -m`,
// followed by a legend of the codes it uses.
func (t *Topology) Matrix() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, g := range t.GPUs {
		fmt.Fprintf(w, "\tGPU%d", g.Index)
	}
	fmt.Fprintln(w)
	used := map[string]bool{}
	for i, g := range t.GPUs {
		fmt.Fprintf(w, "GPU%d", g.Index)
		for j := range t.GPUs {
			typ := t.Links[i][j].Type
			fmt.Fprintf(w, "\t%s", typ)
			if strings.HasPrefix(typ, "NV") {
				typ = "NV#"
			}
			used[typ] = true
		}
		fmt.Fprintln(w)
	}
	w.Flush()

	b.WriteString("\nLegend:\n")
	for _, l := range legend {
		if used[l.code] {
			fmt.Fprintf(&b, "  %-4s = %s\n", l.code, l.meaning)
		}
	}
	return b.String()
}

var legend = []struct{ code, meaning string }{
	{"X", "the GPU itself"},
	{"NV#", "# NVLinks, bonded (directly or through NVSwitches)"},
	{"PIX", "PCIe through at most one PCIe switch"},
	{"PXB", "PCIe through several PCIe switches, not the host bridge"},
	{"PHB", "PCIe through the host bridge (the CPU)"},
	{"NODE", "PCIe and the link between host bridges of one NUMA node"},
	{"SYS", "PCIe and the link between NUMA nodes (e.g. UPI, xGMI)"},
	{"N/A", "NVML could not tell"},
}

// P2PMatrix prints each pair's peer-to-peer capabilities: r read, w write,
// a atomics, n over NVLink; "-" where there are none.
func (t *Topology) P2PMatrix() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, g := range t.GPUs {
		fmt.Fprintf(w, "\tGPU%d", g.Index)
	}
	fmt.Fprintln(w)
	for i, g := range t.GPUs {
		fmt.Fprintf(w, "GPU%d", g.Index)
		for j := range t.GPUs {
			cell := "X"
			if i != j {
				cell = t.Links[i][j].caps()
			}
			fmt.Fprintf(w, "\t%s", cell)
		}
		fmt.Fprintln(w)
	}
	w.Flush()
	return b.String()
}

func (l Link) caps() string {
	s := ""
	for _, c := range []struct {
		on   bool
		flag string
	}{{l.P2PRead, "r"}, {l.P2PWrite, "w"}, {l.P2PAtomics, "a"}, {l.P2PNVLink, "n"}} {
		if c.on {
			s += c.flag
		}
	}
	if s == "" {
		return "-"
	}
	return s
}

// NormalizeBusID turns NVML's and CUDA's spellings of a PCI address
// ("00000000:19:00.0", "0000:19:00.0") into one: a 4-digit domain, lower
// case.
func NormalizeBusID(id string) string {
	id = strings.ToLower(strings.TrimRight(id, "\x00 "))
	domain, rest, ok := strings.Cut(id, ":")
	if !ok {
		return id
	}
	if len(domain) > 4 {
		trimmed := strings.TrimLeft(domain[:len(domain)-4], "0")
		domain = trimmed + domain[len(domain)-4:]
	}
	return domain + ":" + rest
}
