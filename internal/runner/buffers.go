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

// prepare allocates the case's buffers and writes inputs, guards and
// poison; the launch is resolved after every rank is ready
// (resolveLaunch).
func (r *run) prepare(c cases.Case, v *kernels.Variant) (*caseState, error) {
	s := &caseState{c: c, v: v, launchV: v, elem: int64(c.DType.Size()), bytes: c.Bytes}
	if r.cfg.Inject.WrongKernel && v.Custom {
		s.launchV = wrongKernel(r.cfg.Variants, v)
	}
	s.lead = guardBytes + int64(c.Mode.Offset)*s.elem
	s.region = s.lead + s.bytes + guardBytes
	if s.region > r.w.Capacity {
		return s, fmt.Errorf("case needs %d bytes of shared buffer, world has %d", s.region, r.w.Capacity)
	}
	rank := r.w.Rank
	s.inRegion = r.w.Input[rank]
	s.in = s.msg(s.inRegion)
	alloc := func() (backend.Ptr, error) {
		p, err := r.b.Alloc(s.region)
		if err == nil {
			s.owned = append(s.owned, p)
		}
		return p, err
	}
	var err error
	if !c.Mode.Registered {
		if s.src, err = alloc(); err != nil {
			return s, fmt.Errorf("alloc staged input: %w", err)
		}
	}
	switch {
	case c.Mode.InPlace && c.Mode.Registered:
		s.out = s.inRegion
	case c.Mode.InPlace:
		s.out = s.src
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
	if err := r.call.prepareCalls(r, s); err != nil {
		return s, err
	}
	if err := r.readTrace(s); err != nil {
		return s, err
	}
	return s, nil
}

// regionBytes builds a region's host image: guards around msg.
func (s *caseState) regionBytes(msg []byte) []byte {
	img := bytes.Repeat([]byte{guardByte}, int(s.region))
	copy(img[s.lead:], msg)
	return img
}

func (s *caseState) poison() []byte {
	p := make([]byte, s.bytes)
	reference.FillPoison(p, s.c.DType)
	return s.regionBytes(p)
}

// writeInputs writes the inputs of iteration iter where the mode wants them
// and poisons an out-of-place output.
func (r *run) writeInputs(s *caseState, iter int) error {
	in := make([]byte, s.bytes)
	r.genFor(s).Fill(in, r.w.Rank, iter, 0)
	dst := s.inRegion
	if !s.c.Mode.Registered {
		dst = s.src
	}
	if err := r.b.Upload(dst, s.regionBytes(in)); err != nil {
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
