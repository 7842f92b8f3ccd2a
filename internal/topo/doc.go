// Package topo describes how a node's GPUs are connected: names, UUIDs, PCI
// addresses, driver versions and, for every pair, NVLink or PCIe distance
// and peer-to-peer capabilities. It reads NVML through go-nvml, which opens
// libnvidia-ml.so.1 at run time, so on a machine without the NVIDIA driver
// Discover returns an error (reported as "topology unavailable: ...")
// instead of failing to start. This package has no cgo of its own.
//
// The result is JSON-serialisable for the report, and Matrix prints it the
// way `nvidia-smi topo -m` does, so a reader can compare the two.
package topo
