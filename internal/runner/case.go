package runner

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// caseState is one rank's buffers and launch for one case.
//
// Every buffer that holds an output is a region laid out as
// [guard][offset gap][message][guard]; the guards and the gap are filled
// with guardByte and must still hold it after the kernel ran.
type caseState struct {
	c        cases.Case
	v        *kernels.Variant // what the case names
	launchV  *kernels.Variant // what the dispatcher launches (differs under wrong-kernel)
	elem     int64
	bytes    int64
	lead     int64 // guard + offset gap before the message in every region
	region   int64 // bytes of one region
	in       backend.Ptr
	inRegion backend.Ptr // this rank's IPC input region (its start)
	src      backend.Ptr // staged input region (private), 0 when registered
	out      backend.Ptr // output region (private, or inRegion/src in place)
	owned    []backend.Ptr
	// plan is how every launch of the case is made (resolveLaunch), and
	// launch the case's own call built from it.
	plan   caseLaunch
	launch backend.Launch
	trace0 uint32 // trace count before the case
	calls  uint32 // launches enqueued since
	// --pdl: the producer's source and the poison image (mode_pdl.go).
	pdl pdlBufs
	// modeNotes: why a timing mode does not time this case, by the
	// mode's name (agreed by every rank: timingMode.agreeCase).
	modeNotes map[string]string
}

func (s *caseState) msg(region backend.Ptr) backend.Ptr { return region + backend.Ptr(s.lead) }

func (r *run) runCase(c cases.Case) (res rankResult) {
	v := c.Variant
	reason := cases.SkipReason(v, c)
	if reason == "" {
		reason = r.b.SkipReason(v, c.Mode.Graph)
	}
	if reason == "" {
		reason = r.modeSkipReason(v, c)
	}
	if reason == "" {
		reason = r.scenarioSkipReason(v, c)
	}
	if reason == "" && r.cfg.Inject.Bits != 0 && v.External != nil {
		// The switches live in artest's kernels; a plugin's kernel would run
		// clean and pass, which would read as the fault going unnoticed.
		reason = fmt.Sprintf("--inject %s: a switch in artest's own kernels, which a plugin's kernel does not have", strings.Join(r.cfg.Inject.specs, ","))
	}
	if reason == "" && r.cfg.Inject.WrongKernel && v.Custom && wrongKernel(r.cfg.Variants, v) == nil {
		reason = "wrong-kernel injection needs a second custom variant"
	}
	agreed, err := comm.AgreeReason(r.c, reason)
	if err != nil {
		res.Fatal = fmt.Sprintf("agree on skip: %v", err)
		return res
	}
	if agreed != "" {
		res.Skip = agreed
		return res
	}

	s, prepErr := r.prepare(c, v)
	if s != nil {
		defer r.free(s)
	}
	// Nobody launches unless everybody is ready, or the ready ones would
	// wait at the start barrier for ever.
	notReady, err := comm.AgreeReason(r.c, errText(prepErr))
	if err != nil {
		res.Fatal = fmt.Sprintf("agree on readiness: %v", err)
		return res
	}
	if notReady != "" {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "error", Detail: "prepare: " + notReady})
		return res
	}
	skip, err := r.resolveLaunch(s)
	if err != nil {
		res.Fatal = fmt.Sprintf("agree on the grid cap: %v", err)
		return res
	}
	if skip != "" {
		res.Skip = skip
		return res
	}
	if err := r.agreeModes(s); err != nil {
		res.Fatal = err.Error()
		return res
	}
	if r.cfg.Stress > 0 {
		r.stress(s, &res)
	} else {
		r.checkAndTime(s, &res)
	}
	res.Launch = s.launchRecord()
	return res
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// wrongKernel is the variant of vs a broken dispatcher would pick instead
// of v.
func wrongKernel(vs *registry.Set, v *kernels.Variant) *kernels.Variant {
	for _, o := range vs.All() {
		if o.Custom && o.ID != 0 && o.ID != v.ID && o.External == nil && o.SupportsDType(reference.F32) {
			return o
		}
	}
	return nil
}

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

// newLaunch is one call of case s writing to out, as the case's launch
// (s.plan) has every call made.
func (r *run) newLaunch(s *caseState, out backend.Ptr) backend.Launch {
	l := backend.Launch{Variant: s.launchV, DType: s.c.DType, Op: s.c.Op, Args: r.launchArgs(s, out)}
	s.plan.apply(&l)
	return l
}

// launchArgs are the kernel arguments of one call of case s writing to
// out, before the variant's parameters.
func (r *run) launchArgs(s *caseState, out backend.Ptr) kernels.Args {
	w := r.w
	a := kernels.Args{
		Out:        uint64(out),
		Count:      uint64(s.c.Count()),
		Rank:       uint32(w.Rank),
		NRanks:     uint32(w.Size),
		Inject:     r.cfg.Inject.Bits,
		DelayRank:  uint32(r.cfg.Inject.DelayRank),
		DelayNs:    uint64(r.cfg.Inject.Delay.Nanoseconds()),
		VariantID:  s.launchV.ID,
		StageBytes: uint64(w.Capacity - s.lead),
	}
	a.WaitTimeoutNs = uint64(r.cfg.DeviceTimeout.Nanoseconds())
	r.cfg.Inject.hangScenario(&a, s.elem)
	for p := 0; p < w.Size; p++ {
		a.PeerIn[p] = uint64(s.msg(w.Input[p]))
		a.PeerStage[p] = uint64(s.msg(w.Staging[p]))
		a.PeerSignal[p] = uint64(w.Signal[p])
	}
	if out == s.in {
		a.Flags |= kernels.FlagInPlace
	}
	return a
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
	return reference.Gen{Seed: r.cfg.Seed, Kind: r.cfg.Input, DType: s.c.DType}
}

func (r *run) readTrace(s *caseState) error {
	if !s.v.Custom || s.v.ID == 0 {
		return nil
	}
	sig, err := r.b.ReadSignal(r.w.Rank)
	if err != nil {
		return fmt.Errorf("read trace word: %w", err)
	}
	s.trace0 = sigblock.Snapshot(sig).Word(sigblock.OffTraceCount)
	return nil
}

func (r *run) free(s *caseState) {
	for _, p := range s.owned {
		_ = r.b.Free(p)
	}
}

// enqueueCall enqueues one call of s as the run makes them
// (callShaper.enqueue), its input copied from src where that is not 0.
func (r *run) enqueueCall(s *caseState, l *backend.Launch, src backend.Ptr) error {
	return r.call.enqueue(r, s, l, src)
}

// checkAndTime is a normal case: one checked call, then the timed calls
// of every timing mode of the run (mode.go), then a second check of the
// output where the input is still intact.
func (r *run) checkAndTime(s *caseState, res *rankResult) {
	fail := func(kind, format string, args ...any) {
		res.Failures = append(res.Failures, report.RankFailure{Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	src := r.call.src(s)
	one := func() error { return r.enqueueCall(s, &s.launch, src) }
	way := wayOf(s.c)

	first, err := way.checked(r, s, one)
	if err != nil {
		fail("error", "%v", err)
		return
	}
	defer first.release()
	if err := first.enqueue(); err != nil {
		fail("error", "%v", err)
		return
	}
	if err := r.sync(s.c, "the checked call", s.launch.Blocks); err != nil {
		fail("error", "checked call: %v", err)
		res.Fatal = fatalText(err)
		return
	}
	// Every rank learns whether every rank's checked call was right: a
	// rank whose output was wrong stops here, and the others must not go
	// on to time calls (collectives) it never joins.
	wrong := ""
	if !r.verify(s, s.out, 0, res, "") {
		wrong = "the checked call's result is wrong"
	}
	someWrong, err := comm.AgreeReason(r.c, wrong)
	if err != nil {
		res.Fatal = fmt.Sprintf("agreeing on the checked call: %v", err)
		return
	}
	if someWrong != "" || r.cfg.Iters <= 0 || r.cfg.Reps <= 0 {
		return
	}

	// Timed calls. In place, every call reduces the previous result, so the
	// values drift; only out-of-place outputs are checked again afterwards.
	rep, err := way.unit(r, s, r.cfg.Iters, r.repeat(one))
	if err != nil {
		fail("error", "capture %d calls: %v", r.cfg.Iters, err)
		return
	}
	defer rep.release()
	if !r.timeModes(s, &timedCalls{way: way, src: src, one: one, first: first, rep: rep}, res) {
		return
	}
	if !s.c.Mode.InPlace {
		r.verify(s, s.out, 0, res, "after timing: ")
	} else {
		r.verifyTrace(s, res)
	}
}

// verify downloads an output region, checks guards, values and the trace
// word, and records failures. It reports whether all was right.
func (r *run) verify(s *caseState, region backend.Ptr, iter int, res *rankResult, prefix string) bool {
	img := make([]byte, s.region)
	if err := r.b.Download(img, region); err != nil {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "error", Detail: prefix + "download output: " + err.Error()})
		res.Fatal = fatalText(err)
		return false
	}
	ok := r.checkImage(s, img, iter, res, prefix)
	return r.verifyTrace(s, res) && ok
}

// checkImage checks one downloaded region: guards intact, values right.
func (r *run) checkImage(s *caseState, img []byte, iter int, res *rankResult, prefix string) bool {
	ok := true
	if bad := guardDamage(img, s.lead, s.lead+s.bytes); bad != "" {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "guard", Detail: prefix + bad})
		ok = false
	}
	got := img[s.lead : s.lead+s.bytes]
	spec := reference.CheckSpec{Gen: r.genFor(s), Op: s.c.Op, NRanks: r.w.Size, Iter: iter, Order: s.v.Order}
	cr := reference.Check(spec, got)
	if cr.Wrong > 0 {
		res.Wrong += cr.Wrong
		f := report.RankFailure{Kind: "mismatch", Detail: prefix + cr.String(), Wrong: cr.Wrong, WorstULP: cr.WorstULP}
		for _, m := range cr.First {
			f.Mismatches = append(f.Mismatches, report.Mismatch{
				Index: m.Index, Got: m.Got, Want: m.Want, GotBits: m.GotBits, WantBits: m.WantBits, ULP: m.ULP, Iter: iter,
			})
		}
		res.Failures = append(res.Failures, f)
		ok = false
	}
	return ok
}

// guardDamage describes bytes outside [lo, hi) that are not guardByte.
func guardDamage(img []byte, lo, hi int64) string {
	var bad []string
	count := 0
	for i, b := range img {
		if int64(i) >= lo && int64(i) < hi {
			continue
		}
		if b != guardByte {
			count++
			if len(bad) < 4 {
				rel := int64(i) - hi
				where := fmt.Sprintf("byte %d after the end", rel)
				if int64(i) < lo {
					where = fmt.Sprintf("byte %d before the start", lo-int64(i))
				}
				bad = append(bad, fmt.Sprintf("%s is %#02x", where, b))
			}
		}
	}
	if count == 0 {
		return ""
	}
	return fmt.Sprintf("%d guard bytes overwritten: %s", count, strings.Join(bad, ", "))
}

// verifyTrace checks that the kernel that ran is the one the case names and
// that it ran as often as it was launched.
// A variant with no trace id (a plugin's that does not use the device
// helpers) writes none: only its results and the host watchdog speak for
// it. A plugin's that does writes the same words (plugin/artest_device.h).
func (r *run) verifyTrace(s *caseState, res *rankResult) bool {
	if !s.v.Custom || s.v.ID == 0 {
		return true
	}
	sig, err := r.b.ReadSignal(r.w.Rank)
	if err != nil {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "error", Detail: "read trace word: " + err.Error()})
		return false
	}
	snap := sigblock.Snapshot(sig)
	id, count := snap.Word(sigblock.OffTraceVariant), snap.Word(sigblock.OffTraceCount)
	want := s.trace0 + s.calls
	switch {
	case id == 0 && count == s.trace0 && s.calls > 0:
		res.Failures = append(res.Failures, report.RankFailure{Kind: "trace",
			Detail: fmt.Sprintf("the case names %s (id %#x) but no kernel wrote the trace word (%d launches enqueued)", s.v.Name, s.v.ID, s.calls)})
		return false
	case id != s.v.ID:
		name := fmt.Sprintf("id %#x", id)
		if o := r.cfg.Variants.ByID(id); o != nil {
			name = fmt.Sprintf("%s (id %#x)", o.Name, id)
		}
		res.Failures = append(res.Failures, report.RankFailure{Kind: "trace",
			Detail: fmt.Sprintf("the case names %s (id %#x) but the kernel that ran wrote %s", s.v.Name, s.v.ID, name)})
		return false
	case count != want:
		res.Failures = append(res.Failures, report.RankFailure{Kind: "trace",
			Detail: fmt.Sprintf("%d launches enqueued but the trace counted %d", s.calls, count-s.trace0)})
		return false
	}
	return true
}

// fatalText marks errors after which the backend cannot go on.
func fatalText(err error) string {
	var f interface{ Fatal() bool }
	if errors.As(err, &f) && f.Fatal() {
		return err.Error()
	}
	return ""
}
