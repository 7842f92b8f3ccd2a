package runner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// caseState is one rank's buffers and launch for one case.
//
// Every buffer that holds an output is a region laid out as
// [guard][offset gap][message][guard]; the guards and the gap are filled
// with guardByte and must still hold it after the kernel ran.
type caseState struct {
	c       cases.Case
	v       *kernels.Variant // what the case names
	launchV *kernels.Variant // what the dispatcher launches (differs under wrong-kernel)
	elem    int64
	bytes   int64
	lead    int64 // guard + offset gap before the message in every region
	region  int64 // bytes of one region
	// The collective's buffers (Case.Coll). Every region's message has
	// room for the full buffer (bytes); this rank's input is inBytes at
	// inAt bytes into an input region's message, its output outBytes at
	// outAt into an output region's. Out of place both are at 0. In place
	// input and output share one region, at NCCL's offsets: an
	// all-gather's input is this rank's chunk of its output, a
	// reduce-scatter's output this rank's chunk of its input.
	inBytes, outBytes int64
	inAt, outAt       int64
	ranks             int         // the world's size, for the collective's offsets (layout)
	in                backend.Ptr // this rank's input as the kernels read it: in inRegion (regIn)
	inRegion          backend.Ptr // this rank's IPC input region (its start)
	src               backend.Ptr // staged input region (private), 0 when registered
	out               backend.Ptr // output region (private, or inRegion/src in place)
	owned             []backend.Ptr
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
	if reason == "" {
		reason = r.stressSkipReason(v)
	}
	if kd, ok := r.b.(backend.DefectKnower); ok && reason == "" && !r.cfg.RunKnownDefects {
		reason = kd.KnownDefect(v, c.DType, int64(c.Mode.Offset)*int64(c.DType.Size()))
	}
	if reason == "" && len(r.cfg.Inject.Plugin) > 0 && r.cfg.Inject.pluginFaults(v) == 0 {
		// A plugin's switch: any other variant would run clean and pass.
		reason = fmt.Sprintf("--inject %s: a switch of another plugin's, which %s does not have", strings.Join(r.cfg.Inject.specs, ","), v.Name)
	}
	if reason == "" && r.cfg.Inject.Bits != 0 && v.External != nil {
		// The switches live in artest's kernels; a plugin's kernel would run
		// clean and pass, which would read as the fault going unnoticed.
		reason = fmt.Sprintf("--inject %s: a switch in artest's own kernels, which a plugin's kernel does not have", strings.Join(r.cfg.Inject.specs, ","))
	}
	if reason == "" && r.cfg.Inject.WrongKernel && v.Custom() && wrongKernel(r.cfg.Variants, v, c.Coll) == nil {
		reason = "wrong-kernel injection needs a second custom variant"
		if c.Coll != reference.AllReduce {
			reason += " of " + c.Coll.String()
		}
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

// fatalText marks errors after which the backend cannot go on.
func fatalText(err error) string {
	var f interface{ Fatal() bool }
	if errors.As(err, &f) && f.Fatal() {
		return err.Error()
	}
	return ""
}
