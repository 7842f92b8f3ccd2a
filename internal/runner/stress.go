package runner

import (
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/reference"
)

// maxStressFailures bounds how many failing iterations are described one by
// one; the rest are counted.
const maxStressFailures = 4

// progressEvery is how many iterations of a batch go between two progress
// marks on a backend that needs them (backend.ProgressMarker): the
// watchdog's --timeout then bounds the wait for that many iterations, not
// for a whole batch of up to stressMaxBatch. A mark per iteration would
// add an event record to every call's launch.
const progressEvery = 16

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
func (r *run) stress(s *caseState, res *rankResult) {
	fail := func(kind, format string, args ...any) {
		res.Failures = append(res.Failures, report.RankFailure{Kind: kind, Detail: fmt.Sprintf(format, args...)})
	}
	// Ranks that share a GPU start each batch together (agreeBatch): a
	// rank still checking its last batch on the device needs multiprocessors
	// that its peers' next launches, spinning at their start barriers with
	// grids capped to fill the GPU, would hold until the device deadline.
	// Every rank then takes part in every agreement, failures included, so
	// the collectives stay matched.
	sh, isSharer := r.b.(backend.Sharer)
	shared := isSharer && sh.RanksPerGPU() > 1
	// agree: every rank takes part, failures included, so the collectives
	// stay matched; false stops the case. when is "before" or "after".
	agree := func(when, what, why string) bool {
		reason, err := comm.AgreeReason(r.c, why)
		if err != nil {
			res.Fatal = fmt.Sprintf("agree %s %s: %v", when, what, err)
			return false
		}
		if reason != "" && why == "" {
			fail("error", "stopped with the other ranks %s %s: %s", when, what, reason)
		}
		return reason == ""
	}
	agreeBatch := func(what, why string) bool {
		if !shared {
			return why == ""
		}
		return agree("after", what, why)
	}
	// agreeStart: every rank agrees before every batch, shared or not.
	agreeStart := func(what, why string) bool { return agree("before", what, why) }
	trace := stressTracer(r)
	n := r.cfg.Stress
	slot := s.region
	k := int(min(int64(n), stressMaxBatch, max(1, stressBudget/(2*slot))))
	m := s.c.Mode
	var srcAll, outAll, poisonBuf backend.Ptr
	var wit *witness
	defer func() {
		for _, p := range []backend.Ptr{srcAll, outAll, poisonBuf} {
			if p != 0 {
				r.b.Free(p)
			}
		}
		wit.free(r.b)
	}()
	sched := r.sched
	setup := func() error {
		var err error
		if srcAll, err = r.b.Alloc(int64(k) * slot); err != nil {
			return fmt.Errorf("alloc %d stress input slots: %w", k, err)
		}
		if !(m.InPlace && !m.Registered) {
			if outAll, err = r.b.Alloc(int64(k) * slot); err != nil {
				return fmt.Errorf("alloc %d stress output slots: %w", k, err)
			}
		}
		if sched.Poison {
			if poisonBuf, err = r.b.Alloc(s.bytes); err != nil {
				return fmt.Errorf("alloc the poison-after-return source: %w", err)
			}
			p := make([]byte, s.bytes)
			reference.FillPoison(p, s.c.DType)
			if err := r.b.Upload(poisonBuf, p); err != nil {
				return fmt.Errorf("upload the poison-after-return source: %w", err)
			}
		}
		if sched.Straggler {
			if err := r.b.(backend.Straggler).PrepareStraggle(); err != nil {
				return fmt.Errorf("prepare the straggler's load: %w", err)
			}
		}
		wit, err = r.newWitness(k)
		return err
	}
	setupErr := setup()
	if setupErr != nil {
		fail("error", "%v", setupErr)
	}
	if !agreeBatch("stress set-up", errText(setupErr)) {
		return
	}
	at := func(base backend.Ptr, j int) backend.Ptr { return base + backend.Ptr(int64(j)*slot) }
	// Where iteration j's kernel writes, and where its result is checked.
	launches := make([]backend.Launch, k)
	check := make([]backend.Ptr, k)
	for j := 0; j < k; j++ {
		switch {
		case m.InPlace && m.Registered: // result lands in the registered buffer, then is copied out
			launches[j] = r.newLaunch(s, s.in)
			check[j] = at(outAll, j)
		case m.InPlace: // staged in place: the result overwrites the staged input
			launches[j] = r.newLaunch(s, s.msg(at(srcAll, j)))
			check[j] = at(srcAll, j)
		default:
			launches[j] = r.newLaunch(s, s.msg(at(outAll, j)))
			check[j] = at(outAll, j)
		}
	}
	id := s.c.ID()
	marker, _ := r.b.(backend.ProgressMarker)
	// batch enqueues iterations s0..s0+kk-1, with a progress mark after
	// every progressEvery of them when mark is set (not in a capture).
	// Graph modes capture it once per batch size, so their replays repeat
	// the first batch's plan.
	batch := func(s0, kk int, mark bool) error {
		loaded := false
		for j := 0; j < kk; j++ {
			st := sched.plan(r.cfg.Seed, id, s0+j, r.w.Size)
			if st.skewRank == r.w.Rank {
				// Before the input copy: a peer that does not wait for
				// this rank reads its previous input.
				if err := r.b.(backend.Delayer).Delay(st.skewDelay); err != nil {
					return fmt.Errorf("skew: %w", err)
				}
			}
			if st.stragRank == r.w.Rank {
				// The load starts with the input copy and runs beside
				// the call: this rank's blocks read slowly.
				if err := r.b.(backend.Straggler).Straggle(st.stragLoad); err != nil {
					return err
				}
				loaded = true
			}
			// Each iteration's input goes into the registered buffer the
			// moment the previous call returns: exactly what the end
			// barrier must make safe.
			if err := r.enqueueCall(s, &launches[j], s.msg(at(srcAll, j))); err != nil {
				return err
			}
			if m.InPlace && m.Registered {
				if err := r.b.Copy(s.msg(at(outAll, j)), s.in, s.bytes); err != nil {
					return fmt.Errorf("copy result out: %w", err)
				}
			}
			if sched.Poison {
				// The call returned (in stream order): the input is the
				// caller's again, and a peer still reading it reads
				// poison. A variant that stages its own input wrote it
				// itself; this is the only other write of it.
				if err := r.b.Copy(s.in, poisonBuf, s.bytes); err != nil {
					return fmt.Errorf("poison after return: %w", err)
				}
			}
			if wit != nil {
				// After the poison: the stamp would delay it, and every
				// rank's stamp follows the same work.
				if err := wit.stamp(j); err != nil {
					return err
				}
			}
			if mark && marker != nil && (j+1)%progressEvery == 0 {
				if err := marker.MarkProgress(); err != nil {
					return err
				}
			}
		}
		if loaded {
			// The batch's end waits for its loads; no call waits for one.
			return r.b.(backend.Straggler).JoinStraggle()
		}
		return nil
	}

	// A unit per batch size: a graph mode's replays repeat the plan of
	// the batch it captured first; plain launches make each batch's own
	// (from batchStart).
	way := wayOf(s.c)
	units := map[int]callUnit{}
	batchStart := 0
	defer func() {
		for _, u := range units {
			u.release()
		}
	}()
	failedIters, wrongIters := 0, 0
	stats := checkStats{Checker: CheckHost, Bytes: s.bytes}
	if r.devCheck != nil {
		stats.Checker = CheckDevice
	}
	res.Check = &stats
	// runBatch runs and checks one batch; false stops the case (its
	// failure recorded).
	runBatch := func(s0, kk int) bool {
		srcImg := make([]byte, int64(kk)*slot)
		outImg := make([]byte, int64(kk)*slot)
		poison := s.poison()
		parallel(kk, func(j int) {
			in := make([]byte, s.bytes)
			r.genFor(s).Fill(in, r.w.Rank, s0+j, 0)
			copy(srcImg[int64(j)*slot:], s.regionBytes(in))
			copy(outImg[int64(j)*slot:], poison)
		})
		trace("batch %d: inputs made", s0)
		upErr := r.b.Upload(srcAll, srcImg)
		if upErr != nil {
			upErr = fmt.Errorf("upload stress inputs: %w", upErr)
		} else if outAll != 0 {
			if upErr = r.b.Upload(outAll, outImg); upErr != nil {
				upErr = fmt.Errorf("poison stress outputs: %w", upErr)
			}
		}
		if upErr != nil {
			fail("error", "%v", upErr)
		}
		trace("batch %d: uploaded", s0)
		// Every rank launches the batch together. A rank still making
		// its inputs (or checking its last batch) would otherwise hold
		// its peers' first calls at the start barrier for as long, and
		// the watchdog, which measures the stream's progress, would take
		// that host work for a hang.
		if !agreeStart(fmt.Sprintf("stress iterations %d..%d", s0, s0+kk-1), errText(upErr)) {
			return false
		}
		batchStart = s0
		u := units[kk]
		if u == nil {
			var err error
			if u, err = way.unit(r, s, kk, func(capturing bool) error { return batch(batchStart, kk, !capturing) }); err != nil {
				fail("error", "capture %d stress calls: %v", kk, err)
				return false
			}
			units[kk] = u
		}
		err := u.enqueue()
		if err == nil && marker != nil && u.oneStep() {
			// A replay is one step of the stream.
			err = marker.MarkProgress()
		}
		if err != nil {
			fail("error", "stress iteration %d: %v", s0, err)
			_ = r.sync(s.c, "stress calls", s.launch.Blocks)
			return false
		}
		trace("batch %d: enqueued", s0)
		if err := r.sync(s.c, fmt.Sprintf("stress iterations %d..%d", s0, s0+kk-1), launches[0].Blocks); err != nil {
			fail("error", "stress iterations %d..%d: %v", s0, s0+kk-1, err)
			res.Fatal = fatalText(err)
			return false
		}
		trace("batch %d: finished", s0)
		if wit != nil {
			if err := wit.collect(r.b, kk); err != nil {
				fail("error", "%v", err)
				res.Fatal = fatalText(err)
				return false
			}
		}
		results := make([]rankResult, kk)
		oks := make([]bool, kk)
		if r.devCheck != nil {
			if err := r.checkBatchOnDevice(s, r.devCheck, check[0], slot, s0, kk, failedIters, results, oks, &stats); err != nil {
				fail("error", "%v", err)
				res.Fatal = fatalText(err)
				return false
			}
		} else {
			// The check slots are contiguous: one download, then every
			// slot checked in parallel (a slot is small; one check rarely
			// fills the cores by itself).
			start := time.Now()
			all := make([]byte, int64(kk)*slot)
			if err := r.b.Download(all, check[0]); err != nil {
				fail("error", "download stress outputs: %v", err)
				res.Fatal = fatalText(err)
				return false
			}
			parallel(kk, func(j int) {
				img := all[int64(j)*slot : int64(j+1)*slot]
				oks[j] = r.checkImage(s, img, s0+j, &results[j], fmt.Sprintf("iteration %d: ", s0+j))
			})
			stats.HostIters += kk
			stats.HostSec += time.Since(start).Seconds()
		}
		for j := 0; j < kk; j++ {
			if oks[j] {
				continue
			}
			one := results[j]
			failedIters++
			res.Wrong += one.Wrong
			if one.Wrong > 0 {
				wrongIters++
			}
			if failedIters <= maxStressFailures {
				res.Failures = append(res.Failures, one.Failures...)
			}
		}
		return true
	}
	for s0 := 0; s0 < n; s0 += k {
		kk := min(k, n-s0)
		why := ""
		if !runBatch(s0, kk) {
			why = fmt.Sprintf("rank %d's stress iterations %d..%d failed", r.w.Rank, s0, s0+kk-1)
		}
		if !agreeBatch(fmt.Sprintf("stress iterations %d..%d", s0, s0+kk-1), why) {
			return
		}
	}
	if wit != nil {
		res.Witness = &wit.out
	}
	if failedIters > 0 {
		res.Failures = append([]report.RankFailure{{Kind: "mismatch", Wrong: res.Wrong,
			Detail: fmt.Sprintf("%d of %d stress iterations wrong (%d with wrong values, %d wrong elements in all)", failedIters, n, wrongIters, res.Wrong)}},
			res.Failures...)
	}
	r.verifyTrace(s, res)
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
	if os.Getenv("ARTEST_STRESS_TRACE") == "" {
		return func(string, ...any) {}
	}
	return func(format string, args ...any) {
		fmt.Fprintf(r.cfg.Stderr, "stress-trace %s rank %d: %s\n", time.Now().Format("15:04:05.000000"), r.w.Rank, fmt.Sprintf(format, args...))
	}
}
