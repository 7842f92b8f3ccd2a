package runner

import (
	"errors"
	"fmt"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// --pdl (programmatic dependent launch). Every call of a case is,
// on this rank's stream:
//
//  1. the registered input overwritten with poison (a copy), so that a
//     kernel reading it too early reads values no input has;
//  2. the producer kernel (backend.Produce, kernels/harness/pdl.cu) copying the
//     call's input into the registered buffer, slowly on purpose;
//  3. the allreduce launched with PDL, which may start while the producer
//     still runs and must wait for it (griddepcontrol.wait) before it reads
//     any input or tells a peer its input is ready.
//
// Checking is as usual: a kernel that skips the wait (--inject
// pdl-no-wait) reduces poison and the case fails with a mismatch. In bench
// runs the same calls are timed a second time with the allreduce launched
// normally, so the report shows what the overlap gains.

// pdlBufs are a case's extra buffers under --pdl.
type pdlBufs struct {
	// src is the producer's source in registered modes: a private copy of
	// the input (staged modes copy from the staged input, stress runs from
	// each iteration's slot).
	src backend.Ptr
	// poison is a message-sized image of the poison pattern.
	poison backend.Ptr
}

// pdlMode is --pdl: every call is made as above, the checked and stress
// calls included (a callShaper); bench runs time the same calls again
// with the allreduce launched normally.
type pdlMode struct{ noSteps }

func newPDLMode(cfg *Config) timingMode {
	if !cfg.PDL {
		return nil
	}
	return pdlMode{}
}

// pdlFlags are --pdl, into Config.PDL; a test run takes it as well as
// bench and tune (the cli's --inject pdl-no-wait needs it).
var pdlFlags = []ModeFlag{{
	Name: "pdl", Bool: true,
	Help: "programmatic dependent launch (sm_90): each call poisons the input, a producer kernel writes it, and the allreduce is launched to overlap the producer and must wait for it; bench also times the same calls without PDL",
	Set:  setBool(func(cfg *Config) *bool { return &cfg.PDL }),
}}

// pdlName is the mode's word, and its series of times without PDL.
const (
	pdlName     = "pdl"
	pdlSeriesNo = "nopdl"
)

func (pdlMode) name() string { return pdlName }

// prepareRun says in the header that every call is made the --pdl way.
func (pdlMode) prepareRun(_ *run, h *report.Header) error {
	h.PDL = true
	return nil
}

func (pdlMode) skipReason(r *run, v *kernels.Variant, _ cases.Case) string { return r.pdlSkipReason(v) }

// time, in bench runs, times cfg.Reps repetitions of cfg.Iters calls like
// the timed ones (plain or one graph replay per repetition), but with the
// allreduce launched normally.
func (pdlMode) time(r *run, s *caseState, t *timedCalls, res *rankResult) bool {
	if !r.cfg.Bench {
		return true
	}
	l := s.launch
	per, ok := r.timeAgain(s, t.way, func() error { return r.enqueuePDLCall(s, &l, t.src, false) }, "calls without PDL", res)
	res.addSeries(pdlName, pdlSeriesNo, per...)
	return ok
}

// merge puts the time without PDL (each repetition combined across ranks
// as the case's time is, then the median) and the gain into a timed
// --pdl bench case.
func (pdlMode) merge(out *report.Case, rs []rankResult, cfg *Config) {
	if out.TimeUS <= 0 || len(rs) == 0 {
		return
	}
	if t := aggMedian(rs, cfg, series(pdlName, pdlSeriesNo)); t > 0 {
		out.NoPDLTimeUS = t
		out.PDLGainUS = t - out.TimeUS
	}
}

// prepareCalls allocates and fills the poison image and, in registered
// modes outside stress runs, the producer's source.
func (pdlMode) prepareCalls(r *run, s *caseState) error { return r.preparePDL(s) }

// src is the staged input, or in registered modes the producer's source.
func (pdlMode) src(s *caseState) backend.Ptr {
	if s.c.Mode.Registered {
		return s.pdl.src
	}
	return s.inOf(s.src)
}

// enqueue enqueues one --pdl call, the allreduce launched with PDL.
func (pdlMode) enqueue(r *run, s *caseState, l *backend.Launch, src backend.Ptr) error {
	return r.enqueuePDLCall(s, l, src, true)
}

// pdlSkipReason says why v cannot run under --pdl: nccl has no
// griddepcontrol.wait, and the backend may lack PDL.
func (r *run) pdlSkipReason(v *kernels.Variant) string {
	if !v.Custom() {
		return kernels.PdlNCCLSkip
	}
	return r.b.PDLSkipReason(v)
}

// preparePDL allocates and fills the poison image and, in registered
// modes outside stress runs, the producer's source.
func (r *run) preparePDL(s *caseState) error {
	alloc := func(n int64, img []byte, what string) (backend.Ptr, error) {
		p, err := r.b.Alloc(n)
		if err != nil {
			return 0, fmt.Errorf("alloc %s: %w", what, err)
		}
		s.owned = append(s.owned, p)
		if err := r.b.Upload(p, img); err != nil {
			return 0, fmt.Errorf("upload %s: %w", what, err)
		}
		return p, nil
	}
	img := make([]byte, s.inBytes)
	reference.FillPoison(img, s.c.DType)
	var err error
	if s.pdl.poison, err = alloc(s.inBytes, img, "pdl poison image"); err != nil {
		return err
	}
	if s.c.Mode.Registered && r.cfg.Stress == 0 {
		region, err := alloc(s.region, s.regionBytes(r.input(s, 0)), "pdl producer source")
		if err != nil {
			return err
		}
		s.pdl.src = s.msg(region)
	}
	return nil
}

// enqueuePDLCall enqueues one --pdl call: poison the input, the producer
// writing it from src, then the allreduce, launched with PDL when pdl is
// true (false: the same calls with a normal launch, for the bench's
// comparison).
func (r *run) enqueuePDLCall(s *caseState, l *backend.Launch, src backend.Ptr, pdl bool) error {
	if src == 0 || s.pdl.poison == 0 {
		return errors.New("pdl call without a producer source or poison image (runner bug)")
	}
	if err := r.b.Copy(s.in, s.pdl.poison, s.inBytes); err != nil {
		return fmt.Errorf("poison input: %w", err)
	}
	if err := r.b.Produce(s.in, src, s.inBytes); err != nil {
		return fmt.Errorf("pdl producer: %w", err)
	}
	l.PDL = pdl
	leave := r.dog.enter(phaseCall, callName(l.Variant))
	err := r.b.Allreduce(l)
	leave()
	if err != nil {
		return fmt.Errorf("launch %s (pdl %v): %w", l.Variant.Name, pdl, err)
	}
	r.dog.launched(1)
	s.calls++
	return nil
}
