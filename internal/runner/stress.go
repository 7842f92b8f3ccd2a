package runner

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
)

// stress runs cfg.Stress calls back to back with no host synchronisation
// between them, each with its own inputs (iteration i uses generator
// iteration i) written into the same registered buffer, as a serving loop
// does, and checks every iteration's output. Outputs go to per-iteration
// slots; when the slots of all iterations would not fit, the iterations run
// in batches that are each back to back. The adversarial schedules
// (schedule.go) add a stream delay before a late rank's iteration and a
// poison copy over the input after each call. With a device checker
// (check.go) each batch is checked where it lies and only a few of its
// iterations go to the host.
//
// Its three parts share one stressCase: planning (stressplan.go: the
// batches, their buffers and launches), launching (stresslaunch.go: a
// batch's inputs, its calls under the schedules, the wait for them) and
// checking (stresscheck.go: every iteration's output, the witness, the
// failure records).
func (r *run) stress(s *caseState, res *rankResult) {
	st := r.planStress(s, res)
	defer st.free()
	setupErr := st.setup()
	if setupErr != nil {
		st.fail("error", "%v", setupErr)
	}
	if !st.agreeBatch("stress set-up", errText(setupErr)) {
		return
	}
	st.layout()
	res.Check = &st.stats
	for s0 := 0; s0 < st.n; s0 += st.k {
		kk := min(st.k, st.n-s0)
		why := ""
		if !st.launchBatch(s0, kk) || !st.checkBatch(s0, kk) {
			why = fmt.Sprintf("rank %d's stress iterations %d..%d failed", r.w.Rank, s0, s0+kk-1)
		}
		if !st.agreeBatch(fmt.Sprintf("stress iterations %d..%d", s0, s0+kk-1), why) {
			return
		}
	}
	st.finish()
}

// stressCase is one stress case on this rank, from its plan to its
// checks.
type stressCase struct {
	r   *run
	s   *caseState
	res *rankResult
	// The plan: n iterations in batches of at most k, each iteration's
	// input and output in a slot of slot bytes; sched as this backend
	// runs it.
	n, k  int
	slot  int64
	sched Schedules
	// shared: ranks share a GPU, and start each batch together
	// (agreeBatch).
	shared bool
	// stampsNeedSMs: ranks share a GPU and the witness's stamps are
	// kernels, which wait for room on the SMs: each iteration's stamp
	// follows its copies (stampAfterCopies).
	stampsNeedSMs bool
	// The batches' buffers: k input slots, k output slots (none where
	// the result overwrites the staged input), the poison-after-return
	// source, and the witness's stamps (nil: none).
	srcAll, outAll, poisonBuf backend.Ptr
	wit                       *stampRecorder
	// launches[j] is the launch of a batch's j-th iteration, check[j]
	// where its result is checked.
	launches []backend.Launch
	check    []backend.Ptr
	// Launching: how the calls reach the stream, a unit per batch size
	// (a graph mode's replays repeat the batch it captured first; plain
	// launches make each batch's own, from batchStart), and the
	// backend's progress marks (nil: none).
	way        callWay
	units      map[int]callUnit
	batchStart int
	// loads[kk][j]: the straggler load planned beside the batch of kk's
	// iteration j (its Ns 0: none), as every rank planned it; the witness
	// leaves out the iterations a link load may have overlapped.
	loads  map[int][]witnessLoad
	marker backend.ProgressMarker
	trace  func(format string, args ...any)
	// Checking: how the iterations were checked, and how many failed
	// and had wrong values so far.
	stats                   checkStats
	failedIters, wrongIters int
}

func (st *stressCase) fail(kind, format string, args ...any) {
	st.res.Failures = append(st.res.Failures, report.RankFailure{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// agree: every rank takes part, failures included, so the collectives
// stay matched; false stops the case. when is "before" or "after".
func (st *stressCase) agree(when, what, why string) bool {
	reason, err := comm.AgreeReason(st.r.c, why)
	if err != nil {
		st.res.Fatal = fmt.Sprintf("agree %s %s: %v", when, what, err)
		return false
	}
	if reason != "" && why == "" {
		st.fail("error", "stopped with the other ranks %s %s: %s", when, what, reason)
	}
	return reason == ""
}

// agreeBatch is the agreement after the set-up and after every batch:
// only ranks that share a GPU take it (a rank still checking its last
// batch on the device needs multiprocessors that its peers' next
// launches, spinning at their start barriers with grids capped to fill
// the GPU, would hold until the device deadline); the others stop on
// their own failure.
func (st *stressCase) agreeBatch(what, why string) bool {
	if !st.shared {
		return why == ""
	}
	return st.agree("after", what, why)
}

// agreeStart: every rank agrees before every batch, shared or not.
func (st *stressCase) agreeStart(what, why string) bool { return st.agree("before", what, why) }

// free releases the batches' units and buffers.
func (st *stressCase) free() {
	for _, u := range st.units {
		u.release()
	}
	for _, p := range []backend.Ptr{st.srcAll, st.outAll, st.poisonBuf} {
		if p != 0 {
			st.r.b.Free(p)
		}
	}
	st.wit.free(st.r.b)
}

// at is slot j of the slots at base.
func (st *stressCase) at(base backend.Ptr, j int) backend.Ptr {
	return base + backend.Ptr(int64(j)*st.slot)
}

// parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines.
func parallel(n int, fn func(i int)) {
	workers := min(n, runtime.GOMAXPROCS(0))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// stressTracer returns a printf that, when $ARTEST_STRESS_TRACE is set,
// writes this rank's stress milestones with the wall-clock time to stderr:
// where a rank's peers waited for it, read off one host's clock.
func stressTracer(r *run) func(format string, args ...any) {
	if !r.cfg.Knobs.StressTrace {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) {
		fmt.Fprintf(r.cfg.Stderr, "stress-trace %s rank %d: %s\n", time.Now().Format("15:04:05.000000"), r.w.Rank, fmt.Sprintf(format, args...))
	}
}
