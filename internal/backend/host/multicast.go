package host

import "fmt"

// The host model of NVLS multicast. After Setup one more region, the
// multicast window, exists in this rank's address space; it has no bytes of
// its own: offset o of the window stands for offset o of every rank's
// segment, the way a multicast object's address stands for the same offset
// of every GPU's bound memory. Plain loads and stores of a window address
// fail like any unmapped address (on a GPU they would be undefined); the
// multimem model (kernels/multimem/host.go) reaches the ranks' copies
// through Replicas.
//
// No safety gate is needed here: nothing of this touches a GPU, so the
// multimem variant runs on the host backend by default and `make test`
// covers its protocol.

const multicastInfo = "host model (every rank's segment behind one window; no GPU, no gate)"

// Replicas returns the n bytes at multicast address p's offset in every
// rank's segment, in rank order. It panics on an address outside the
// window, which the kernel models report as an illegal address.
func (b *Backend) Replicas(p uint64, n int64) [][]byte {
	b.mu.Lock()
	idx := int(p>>regionShift) - 1
	ok := b.mcBase != 0 && idx >= 0 && idx < len(b.regions) && b.regions[idx] != nil && b.regions[idx].multicast
	b.mu.Unlock()
	if !ok || b.world == nil {
		panic(fmt.Sprintf("illegal multicast address %#x (+%d bytes)", p, n))
	}
	off := p & offsetMask
	out := make([][]byte, len(b.world.Signal))
	for r, seg := range b.world.Signal {
		out[r] = b.Bytes(seg+off, n)
	}
	return out
}

// multicastDelta is what turns an address in this rank's segment into the
// window address of the same offset; 0 before Setup (the kernels refuse it).
func (b *Backend) multicastDelta() uint64 {
	if b.world == nil || b.mcBase == 0 {
		return 0
	}
	return b.mcBase - b.world.Signal[b.world.Rank]
}
