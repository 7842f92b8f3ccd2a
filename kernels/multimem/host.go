package multimem

import (
	"fmt"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// Multicast is what a hostmodel.Memory implements to model multicast
// addresses, as the host backend does: offset o of its multicast window is offset o of
// every rank's segment.
type Multicast interface {
	// Replicas returns, for multicast address p, the n bytes at p's offset
	// in every rank's memory, in rank order. It panics on an address outside
	// the multicast window (a bug in the caller, like a multimem access to
	// a plain address on the GPU).
	Replicas(p uint64, n int64) [][]byte
}

// Host is the host model of multimem.cu: the same forms, the same
// barriers (start; two-shot in place: end; two-shot staged: mid, copy,
// end; one-shot: end, or in place mid and copy), the same split between
// the multicast path (whole 16-byte slots at 16-byte aligned addresses)
// and the unicast path (everything else), and the same fault switches.
//
// The multicast path reads a slot of every rank's copy and reduces it in
// f32 (the switch's .acc::f32 for 16-bit types), starting at rank (slot
// index mod N) and going round: the hardware's order is unspecified, and a
// model that matched the reference's rank order by accident would hide a
// variant that declares the wrong Order. The unicast path reduces in rank
// order, as Reduce::elems does on the GPU.
//
// Blocks own contiguous slot ranges (hostmodel.Span) instead of the kernel's grid
// stride; as in the other models, block b of every rank owns the same
// slots, which is what the per-block barriers need.
func Host(k *hostmodel.Kernel, b int) error {
	a := k.Args()
	mc, ok := k.Mem().(Multicast)
	if !ok {
		return fmt.Errorf("host multimem: the backend models no multicast addresses")
	}
	m := &mcModel{k: k, mc: mc, b: b, delta: kernels.MulticastDelta(a)}
	m.count = int64(a.Count)
	m.w = kernels.VecBytes / k.Elem()
	if m.delta == 0 {
		return fmt.Errorf("host multimem: launched without a multicast mapping (the CUDA kernel traps here)")
	}
	shots := a.Param0
	if shots != OneShot && shots != TwoShot {
		return fmt.Errorf("host multimem: shots %d, want %d or %d (the CUDA kernel traps here)", shots, OneShot, TwoShot)
	}
	if k.Op() != reference.Sum {
		return fmt.Errorf("host multimem: no %s kernel (the switch has no f32 max or min)", k.Op())
	}
	inPlace := a.Flags&kernels.FlagInPlace != 0
	if !inPlace && a.Out == a.PeerIn[a.Rank] {
		return fmt.Errorf("host multimem: output aliases the input without the in-place flag (the CUDA kernel traps here)")
	}
	var err error
	if m.epoch, err = k.EpochBegin(b); err != nil {
		return err
	}
	if err := k.PhaseBarrier(sigblock.PhaseStart, b, m.epoch); err != nil {
		return err
	}
	k.Delay()
	if shots == TwoShot {
		err = m.twoShot(inPlace)
	} else {
		err = m.oneShot(inPlace)
	}
	if err != nil {
		return err
	}
	k.EpochEnd(b, m.epoch)
	return nil
}

type mcModel struct {
	k     *hostmodel.Kernel
	mc    Multicast
	b     int
	delta uint64
	epoch uint32
	count int64    // elements
	w     int64    // elements per 16-byte slot
	ins   [][]byte // every rank's input, for the unicast path
}

func aligned16(p uint64) bool { return p%kernels.VecBytes == 0 }

// plan is Plan<T> of kernels/device/plan.cuh: which slot bases take the 16-byte path.
// Below fastEnd a slot moves whole; the partial last slot, and the last
// slot when a planted bug must touch it, take the element path.
type plan struct{ fastEnd int64 }

func (m *mcModel) plan(vec bool) plan {
	var p plan
	if !vec {
		return p
	}
	p.fastEnd = m.count / m.w * m.w
	if p.fastEnd == m.count && m.count > 0 && m.k.Injected(kernels.InjectSkipLast|kernels.InjectOverrun) {
		p.fastEnd -= m.w
	}
	return p
}

func (p plan) fast(base int64) bool { return base < p.fastEnd }

// valid is how many elements of the slot at base exist.
func (m *mcModel) valid(base int64) int64 { return min(m.w, m.count-base) }

// barrier is the phase's barrier, unless its fault switch is on
// (hostmodel.Kernel.PhaseBarrier).
func (m *mcModel) barrier(ph int) error { return m.k.PhaseBarrier(ph, m.b, m.epoch) }

// replicas resolves the multicast address of a whole buffer (element 0 at
// p) once per launch: every rank's copy of the message.
func (m *mcModel) replicas(p uint64) [][]byte {
	return m.mc.Replicas(p, m.count*m.k.Elem())
}

// ldReduce is multimem.ld_reduce.add of the slot at element base of a
// multicast buffer (its replicas) into slot (16 bytes, element 0 first).
func (m *mcModel) ldReduce(reps [][]byte, base int64, slot []byte) {
	d := m.k.DType()
	n := len(reps)
	first := int(base / m.w % int64(n))
	for j := 0; j < int(m.w); j++ {
		i := int(base) + j
		acc := d.GetF32(reps[first], i)
		for k := 1; k < n; k++ {
			acc += d.GetF32(reps[(first+k)%n], i)
		}
		d.SetF32(slot, j, acc)
	}
}

// st is multimem.st of slot to element base of a multicast buffer.
func (m *mcModel) st(reps [][]byte, base int64, slot []byte) {
	e := m.k.Elem()
	for _, rep := range reps {
		copy(rep[base*e:(base+m.w)*e], slot)
	}
}

// elems is Reduce::elems: valid elements from base, over every rank's input
// in rank order, accumulated in f32 and rounded once.
func (m *mcModel) elems(base, valid int64, slot []byte) {
	a, d := m.k.Args(), m.k.DType()
	if m.ins == nil {
		m.ins = make([][]byte, a.NRanks)
		for r := range m.ins {
			m.ins[r] = m.k.Bytes(a.PeerIn[r], m.count*m.k.Elem())
		}
	}
	for j := int64(0); j < valid; j++ {
		i := int(base + j)
		acc := d.GetF32(m.ins[0], i)
		for r := 1; r < len(m.ins); r++ {
			acc += d.GetF32(m.ins[r], i)
		}
		d.SetF32(slot, int(j), acc)
	}
}

// store writes valid elements of slot at element base of buf.
func (m *mcModel) store(buf uint64, base, valid int64, slot []byte) {
	e := m.k.Elem()
	copy(m.k.Bytes(buf+uint64(base*e), valid*e), slot[:valid*e])
}

// storeOut is store into an output buffer, with the planted bugs: the slot
// holding the last element leaves it unwritten (skip-last) or writes one
// element past the end (overrun).
func (m *mcModel) storeOut(buf uint64, base, valid int64, slot []byte) {
	e := m.k.Elem()
	keep := valid
	last := base+valid == m.count
	if last && m.k.Injected(kernels.InjectSkipLast) {
		keep--
	}
	m.store(buf, base, keep, slot)
	if last && m.k.Injected(kernels.InjectOverrun) {
		copy(m.k.Bytes(buf+uint64(m.count*e), e), slot[(valid-1)*e:valid*e])
	}
}

func (m *mcModel) load(buf uint64, base, valid int64, slot []byte) {
	e := m.k.Elem()
	copy(slot, m.k.Bytes(buf+uint64(base*e), valid*e))
}

func (m *mcModel) twoShot(inPlace bool) error {
	k, a := m.k, m.k.Args()
	n := int(a.NRanks)
	chunk := kernels.ChunkElems(m.count, n, k.Elem())
	lo, hi := hostmodel.Span(chunk/m.w, m.b, k.Blocks())
	mine := int64(a.Rank) * chunk
	mcIn := a.PeerIn[a.Rank] + m.delta
	mcDst := mcIn
	if !inPlace {
		mcDst = a.PeerStage[a.Rank] + m.delta
	}
	pl := m.plan(aligned16(mcIn | mcDst))
	in, dst := m.replicas(mcIn), m.replicas(mcDst)
	slot := make([]byte, kernels.VecBytes)
	for s := lo; s < hi; s++ {
		base := mine + s*m.w
		if base >= m.count {
			break
		}
		if pl.fast(base) {
			m.ldReduce(in, base, slot)
			m.st(dst, base, slot)
			continue
		}
		valid := m.valid(base)
		m.elems(base, valid, slot)
		for p := 0; p < n; p++ {
			if inPlace {
				m.storeOut(a.PeerIn[p], base, valid, slot)
			} else {
				m.store(a.PeerStage[p], base, valid, slot)
			}
		}
	}
	if !inPlace {
		if err := m.barrier(sigblock.PhaseMid); err != nil {
			return err
		}
		// The copy from our own staging: whole slots or element by element
		// makes no difference on the host.
		stage := a.PeerStage[a.Rank]
		for s := lo; s < hi; s++ {
			for p := 0; p < n; p++ {
				base := int64(p)*chunk + s*m.w
				if base >= m.count {
					break
				}
				valid := m.valid(base)
				m.load(stage, base, valid, slot)
				m.storeOut(a.Out, base, valid, slot)
			}
		}
	}
	return m.barrier(sigblock.PhaseEnd)
}

func (m *mcModel) oneShot(inPlace bool) error {
	k, a := m.k, m.k.Args()
	slots := (m.count + m.w - 1) / m.w
	lo, hi := hostmodel.Span(slots, m.b, k.Blocks())
	mcIn := a.PeerIn[a.Rank] + m.delta
	dst := a.Out
	if inPlace {
		dst = a.PeerStage[a.Rank]
	}
	pl := m.plan(aligned16(mcIn | dst))
	in := m.replicas(mcIn)
	slot := make([]byte, kernels.VecBytes)
	for s := lo; s < hi; s++ {
		base := s * m.w
		valid := m.valid(base)
		if pl.fast(base) {
			m.ldReduce(in, base, slot)
		} else {
			m.elems(base, valid, slot)
		}
		if inPlace {
			m.store(dst, base, valid, slot)
		} else {
			m.storeOut(dst, base, valid, slot)
		}
	}
	if !inPlace {
		return m.barrier(sigblock.PhaseEnd)
	}
	if err := m.barrier(sigblock.PhaseMid); err != nil {
		return err
	}
	for s := lo; s < hi; s++ {
		base := s * m.w
		valid := m.valid(base)
		m.load(dst, base, valid, slot)
		m.storeOut(a.Out, base, valid, slot)
	}
	return nil
}
