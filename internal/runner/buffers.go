package runner

import (
	"bytes"
	"fmt"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

func (s *caseState) msg(region backend.Ptr) backend.Ptr { return region + backend.Ptr(s.lead) }

// inOf and outOf are where this rank's input and output lie in a region
// of its own (caseState.inAt, outAt).
func (s *caseState) inOf(region backend.Ptr) backend.Ptr { return s.msg(region) + backend.Ptr(s.inAt) }
func (s *caseState) outOf(region backend.Ptr) backend.Ptr {
	return s.msg(region) + backend.Ptr(s.outAt)
}

// peerInAt is where peer p's input lies in p's registered input region's
// message: registered and in place, an all-gather's input is p's chunk of
// that region (its output); everywhere else the input starts the message
// (a staged in-place all-gather's chunk is copied there, its output being
// private).
func (s *caseState) peerInAt(p int) int64 {
	if s.c.Mode.InPlace && s.c.Mode.Registered {
		return s.c.Coll.InPlaceInAt(s.c.Count(), s.ranks, p) * s.elem
	}
	return 0
}

// regIn is where this rank's input lies in its registered input region
// (what the kernels read: caseState.in).
func (s *caseState) regIn(region backend.Ptr, rank int) backend.Ptr {
	return s.msg(region) + backend.Ptr(s.peerInAt(rank))
}

// layout sets the collective's buffer sizes and offsets (caseState.inAt).
func (s *caseState) layout(rank, ranks int) {
	coll, count := s.c.Coll, s.c.Count()
	s.ranks = ranks
	s.inBytes = coll.InCount(count, ranks) * s.elem
	s.outBytes = coll.OutCount(count, ranks) * s.elem
	if s.c.Mode.InPlace {
		s.inAt = coll.InPlaceInAt(count, ranks, rank) * s.elem
		s.outAt = coll.InPlaceOutAt(count, ranks, rank) * s.elem
	}
}

// fence is the part [lo, hi) of an output region's image that the call
// may write: the output out of place; in place the whole message, whose
// bytes outside the output are the input's. Every byte outside it must
// still be the guard byte.
func (s *caseState) fence() (lo, hi int64) {
	if s.c.Mode.InPlace {
		return s.lead, s.lead + s.bytes
	}
	return s.lead + s.outAt, s.lead + s.outAt + s.outBytes
}

// prepare allocates the case's buffers and writes inputs, guards and
// poison; the launch is resolved after every rank is ready
// (resolveLaunch).
func (r *run) prepare(c cases.Case, v *kernels.Variant) (*caseState, error) {
	s := &caseState{c: c, v: v, launchV: v, elem: int64(c.DType.Size()), bytes: c.Bytes}
	if r.cfg.Inject.WrongKernel && v.Custom() {
		s.launchV = wrongKernel(r.cfg.Variants, v, c.Coll)
	}
	s.lead = guardBytes + int64(c.Mode.Offset)*s.elem
	s.region = s.lead + s.bytes + guardBytes
	if s.region > r.w.Capacity {
		return s, fmt.Errorf("case needs %d bytes of shared buffer, world has %d", s.region, r.w.Capacity)
	}
	rank := r.w.Rank
	s.layout(rank, r.w.Size)
	s.inRegion = r.w.Input[rank]
	ownOut, err := r.ownRegions(s)
	if err != nil {
		return s, err
	}
	s.in = s.regIn(s.inRegion, rank)
	alloc := func() (backend.Ptr, error) {
		p, err := r.b.Alloc(s.region)
		if err == nil {
			s.owned = append(s.owned, p)
		}
		return p, err
	}
	// With regions of the backend's own, whatever the output is written
	// to lies in the output region: in place and staged that is the
	// staged input's region (the call copies it into the input region and
	// reduces back into it).
	switch {
	case c.Mode.Registered:
	case ownOut != 0 && c.Mode.InPlace:
		s.src = ownOut
	default:
		if s.src, err = alloc(); err != nil {
			return s, fmt.Errorf("alloc staged input: %w", err)
		}
	}
	switch {
	case c.Mode.InPlace && c.Mode.Registered:
		s.out = s.inRegion
	case c.Mode.InPlace:
		s.out = s.src
	case ownOut != 0:
		s.out = ownOut
	default:
		if s.out, err = alloc(); err != nil {
			return s, fmt.Errorf("alloc output: %w", err)
		}
	}
	if r.cfg.Stress == 0 {
		if err := r.writeInputs(s, 0); err != nil {
			return s, err
		}
	}
	if err := r.zeroStaging(s); err != nil {
		return s, err
	}
	if err := r.call.prepareCalls(r, s); err != nil {
		return s, err
	}
	if err := r.readTrace(s); err != nil {
		return s, err
	}
	return s, nil
}

// zeroStaging zeroes this rank's staging up to the end of what case s uses,
// for a variant whose protocol reads zeros as empty (ZeroStaging); the
// readiness agreement after prepare keeps every peer from pushing into it
// before it is done.
func (r *run) zeroStaging(s *caseState) error {
	var n int64
	for _, v := range []*kernels.Variant{s.v, s.launchV} { // the launched one differs under --inject wrong-kernel
		if v.ZeroStaging && v.StageNeed != nil {
			n = max(n, min(s.lead+v.StageNeed(s.bytes, r.w.Size), r.w.Capacity))
		}
	}
	if n == 0 || r.cfg.keepStaging {
		return nil
	}
	if err := r.b.Upload(r.w.Staging[r.w.Rank], make([]byte, n)); err != nil {
		return fmt.Errorf("zero staging: %w", err)
	}
	return nil
}

// ownRegions puts case s's input region where the backend keeps the
// variant's own (backend.OwnRegioner: the NCCL baselines' ncclMemAlloc
// memory) and returns its output region, or 0 where the variant uses the
// world's buffers (under stress, those whose regions are optional).
func (r *run) ownRegions(s *caseState) (backend.Ptr, error) {
	own, ok := r.b.(backend.OwnRegioner)
	if !ok || (r.cfg.Stress > 0 && regionsOptional(r.b, s.launchV)) {
		return 0, nil
	}
	in, out, has, err := own.OwnRegions(r.c, s.launchV)
	if err != nil {
		return 0, fmt.Errorf("%s's buffers: %w", s.launchV.Name, err)
	}
	if !has {
		return 0, nil
	}
	s.inRegion = in
	return out, nil
}

// stressSkipReason says why --stress cannot run v: a stress batch gives
// every iteration an output of its own, and a variant whose buffers are
// the backend's own has one input and one output region.
func (r *run) stressSkipReason(v *kernels.Variant) string {
	if r.cfg.Stress == 0 {
		return ""
	}
	if own, ok := r.b.(backend.OwnRegioner); ok && own.KeepsOwnRegions(v) && !regionsOptional(r.b, v) {
		return fmt.Sprintf("--stress: %s reads and writes one input and one output region of the %s backend's own, and a stress batch needs an output per iteration", v.Name, r.b.Name())
	}
	return ""
}

// regionsOptional: b keeps v's regions but v runs on the world's buffers
// too (backend.OptionalRegioner).
func regionsOptional(b backend.Backend, v *kernels.Variant) bool {
	o, ok := b.(backend.OptionalRegioner)
	return ok && o.OwnRegionsOptional(v)
}

// regionBytes builds a region's host image: guards around msg.
func (s *caseState) regionBytes(msg []byte) []byte {
	img := bytes.Repeat([]byte{guardByte}, int(s.region))
	copy(img[s.lead:], msg)
	return img
}

// poison is an out-of-place output region's image: poison where the
// output goes, guards around it.
func (s *caseState) poison() []byte {
	img := s.regionBytes(nil)
	at := s.lead + s.outAt
	reference.FillPoison(img[at:at+s.outBytes], s.c.DType)
	return img
}

// input is this rank's input of iteration iter (inBytes).
func (r *run) input(s *caseState, iter int) []byte {
	in := make([]byte, s.inBytes)
	first := s.c.Coll.InputFirst(s.c.Count(), r.w.Size, r.w.Rank)
	r.genFor(s).Fill(in, r.w.Rank, iter, first)
	return in
}

// inputMessage is an input region's message for iteration iter: the input
// at inAt; in place, an all-gather's other chunks are its output's, and
// poisoned.
func (r *run) inputMessage(s *caseState, iter int) []byte {
	if !s.c.Mode.InPlace || s.inBytes == s.bytes {
		return r.input(s, iter)
	}
	msg := make([]byte, s.bytes)
	reference.FillPoison(msg, s.c.DType)
	copy(msg[s.inAt:], r.input(s, iter))
	return msg
}

// writeInputs writes the inputs of iteration iter where the mode wants them
// and poisons an out-of-place output.
func (r *run) writeInputs(s *caseState, iter int) error {
	dst := s.inRegion
	if !s.c.Mode.Registered {
		dst = s.src
	}
	if err := r.b.Upload(dst, s.regionBytes(r.inputMessage(s, iter))); err != nil {
		return fmt.Errorf("upload input: %w", err)
	}
	if !s.c.Mode.InPlace {
		if err := r.b.Upload(s.out, s.poison()); err != nil {
			return fmt.Errorf("poison output: %w", err)
		}
	}
	return nil
}

func (r *run) genFor(s *caseState) reference.Gen {
	return reference.Gen{Seed: r.cfg.Seed, Kind: s.c.Input, DType: s.c.DType}
}

func (r *run) free(s *caseState) {
	for _, p := range s.owned {
		_ = r.b.Free(p)
	}
}
