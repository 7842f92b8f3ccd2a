package backend

import (
	"fmt"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/sigblock"
)

// ExternalCall builds the call of an External variant from l: real is how
// the backend turns one of its addresses into one the External can use.
func ExternalCall(l *Launch, w *World, real func(Ptr) (uintptr, error)) (*kernels.ExternalCall, error) {
	a := &l.Args
	rank := int(a.Rank)
	if w == nil || rank >= len(w.Input) {
		return nil, fmt.Errorf("%s: no world set up for rank %d", l.Variant.Name, rank)
	}
	in := Ptr(a.PeerIn[rank])
	if in < w.Input[rank] {
		return nil, fmt.Errorf("%s: input %#x is not in the registered buffer", l.Variant.Name, in)
	}
	c := &kernels.ExternalCall{
		Variant: l.Variant, Coll: a.Coll(), DType: l.DType, Op: l.Op, Count: a.Count,
		Offset: uint64(in - w.Input[rank]), Registered: l.Src == 0, Faults: l.Faults,
	}
	if a.Flags&kernels.FlagInPlace != 0 {
		// In place a chunked input is this rank's chunk of the buffer;
		// the offset is the message's, where every rank's chunk 0 starts.
		c.Offset -= uint64(c.Coll.InPlaceInAt(int64(a.Count), int(a.NRanks), rank)) * uint64(l.DType.Size())
	}
	if l.Src != 0 {
		in = l.Src
	}
	var err error
	if c.In, err = real(in); err != nil {
		return nil, err
	}
	if c.Out, err = real(Ptr(a.Out)); err != nil {
		return nil, err
	}
	// In place, input and output start at their NCCL offsets in one
	// buffer (reference.Coll.InPlaceInAt): the buffer's start is the same.
	elem := uint64(l.DType.Size())
	inAt := uint64(c.Coll.InPlaceInAt(int64(a.Count), int(a.NRanks), rank)) * elem
	outAt := uint64(c.Coll.InPlaceOutAt(int64(a.Count), int(a.NRanks), rank)) * elem
	c.InPlace = c.In-uintptr(inAt) == c.Out-uintptr(outAt)
	for _, p := range l.Variant.Params {
		if p.Slot >= 0 && p.Slot < len(c.Params) {
			c.Params[p.Slot] = *a.ParamSlot(p.Slot)
		}
	}
	if l.Variant.ID != 0 {
		if c.Device, err = externalDevice(l, w, real); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// externalDevice is what the kernels of a variant that uses the device
// helpers get: this rank's trace and diagnosis words, in its SignalBlock
// (where the runner reads them for every variant), and the deadline.
func externalDevice(l *Launch, w *World, real func(Ptr) (uintptr, error)) (*kernels.ExternalDevice, error) {
	a := &l.Args
	rank := int(a.Rank)
	if rank >= len(w.Signal) {
		return nil, fmt.Errorf("%s: no SignalBlock for rank %d", l.Variant.Name, rank)
	}
	sig := w.Signal[rank]
	trace, err := real(sig + sigblock.OffTraceVariant)
	if err != nil {
		return nil, fmt.Errorf("%s: trace words: %w", l.Variant.Name, err)
	}
	diag, err := real(sig + sigblock.OffDiag)
	if err != nil {
		return nil, fmt.Errorf("%s: diagnosis words: %w", l.Variant.Name, err)
	}
	return &kernels.ExternalDevice{Trace: trace, Diag: diag, TimeoutNs: a.WaitTimeoutNs, TraceID: l.Variant.ID, Rank: a.Rank}, nil
}
