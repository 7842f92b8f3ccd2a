package runner

import (
	"fmt"

	"github.com/artest/artest/internal/backend"
)

// progressEvery is how many iterations of a batch go between two progress
// marks on a backend that needs them (backend.ProgressMarker): the
// watchdog's --timeout then bounds the wait for that many iterations, not
// for a whole batch of up to stressMaxBatch. A mark per iteration would
// add an event record to every call's launch.
const progressEvery = 16

// launchBatch writes the inputs of iterations s0..s0+kk-1 and poisons
// their outputs, enqueues their calls once every rank is ready, and waits
// for them. false stops the case (its failure recorded).
func (st *stressCase) launchBatch(s0, kk int) bool {
	r, s, slot := st.r, st.s, st.slot
	srcImg := make([]byte, int64(kk)*slot)
	outImg := make([]byte, int64(kk)*slot)
	poison := s.poison()
	parallel(kk, func(j int) {
		copy(srcImg[int64(j)*slot:], s.regionBytes(r.inputMessage(s, s0+j)))
		copy(outImg[int64(j)*slot:], poison)
	})
	st.trace("batch %d: inputs made", s0)
	upErr := r.b.Upload(st.srcAll, srcImg)
	if upErr != nil {
		upErr = fmt.Errorf("upload stress inputs: %w", upErr)
	} else if st.outAll != 0 {
		if upErr = r.b.Upload(st.outAll, outImg); upErr != nil {
			upErr = fmt.Errorf("poison stress outputs: %w", upErr)
		}
	}
	if upErr != nil {
		st.fail("error", "%v", upErr)
	}
	st.trace("batch %d: uploaded", s0)
	// Every rank launches the batch together. A rank still making
	// its inputs (or checking its last batch) would otherwise hold
	// its peers' first calls at the start barrier for as long, and
	// the watchdog, which measures the stream's progress, would take
	// that host work for a hang.
	if !st.agreeStart(fmt.Sprintf("stress iterations %d..%d", s0, s0+kk-1), errText(upErr)) {
		return false
	}
	st.batchStart = s0
	u := st.units[kk]
	if u == nil {
		var err error
		if u, err = st.way.unit(r, s, kk, func(capturing bool) error { return st.enqueueBatch(st.batchStart, kk, !capturing) }); err != nil {
			st.fail("error", "capture %d stress calls: %v", kk, err)
			return false
		}
		st.units[kk] = u
	}
	err := u.enqueue()
	if err == nil && st.marker != nil && u.oneStep() {
		// A replay is one step of the stream.
		err = st.marker.MarkProgress()
	}
	if err != nil {
		st.fail("error", "stress iteration %d: %v", s0, err)
		_ = r.sync(s.c, "stress calls", s.launch.Blocks)
		return false
	}
	st.trace("batch %d: enqueued", s0)
	if err := r.sync(s.c, fmt.Sprintf("stress iterations %d..%d", s0, s0+kk-1), st.launches[0].Blocks); err != nil {
		st.fail("error", "stress iterations %d..%d: %v", s0, s0+kk-1, err)
		st.res.Fatal = fatalText(err)
		return false
	}
	st.trace("batch %d: finished", s0)
	return true
}

// stampAfterCopies: where ranks share a GPU, a stamp between a call and
// the poison that may delay the poison goes after the copies. A kernel
// stamp always may (it needs room on the SMs); an event in a capture is a
// graph node of its own, and with it right after the call vLLM's kernel
// without its end barrier passed its graph cases on one H100 under MPS
// (docs/results/2026-11-26-h100-h200-event-witness.md). A plain event
// record needs no SM: it stays right after the call.
func (st *stressCase) stampAfterCopies(direct bool) bool {
	return st.shared && (st.stampsNeedSMs || !direct)
}

// loadStamper is the backend's load stamps when the witness runs and they
// can be taken (backend.LoadStamper): the loaded rank then stamps its
// load's start and end in the iteration's slot.
func (st *stressCase) loadStamper() (backend.LoadStamper, bool) {
	ls, ok := st.r.b.(backend.LoadStamper)
	if !ok || st.wit == nil || ls.LoadStampReason() != "" {
		return nil, false
	}
	return ls, true
}

// enqueueBatch enqueues iterations s0..s0+kk-1 under the schedules, with
// a progress mark after every progressEvery of them when mark is set (not
// in a capture). Graph modes capture it once per batch size, so their
// replays repeat the first batch's plan.
func (st *stressCase) enqueueBatch(s0, kk int, mark bool) error {
	r, s, m := st.r, st.s, st.s.c.Mode
	id := s.c.ID()
	loaded := false
	// Which iterations ran a load where, as every rank planned them; a
	// graph's replays repeat its capture's.
	loads := make([]witnessLoad, kk)
	st.loads[kk] = loads
	defer r.dog.set(phaseWork, "")
	for j := 0; j < kk; j++ {
		r.dog.set(phaseCall, fmt.Sprintf("the enqueueing of stress iteration %d (its schedule's delay and load, input copy, call, stamp and result copy)", s0+j))
		it := st.sched.plan(r.cfg.Seed, id, s0+j, r.w.Size)
		if it.skewRank == r.w.Rank {
			// Before the input copy: a peer that does not wait for
			// this rank reads its previous input.
			if err := r.b.(backend.Delayer).Delay(it.skewDelay); err != nil {
				return fmt.Errorf("skew: %w", err)
			}
		}
		if it.stragRank == r.w.Rank {
			// The load starts with the input copy and runs beside
			// the call: this rank's blocks read slowly.
			var err error
			ls, stamped := st.loadStamper()
			switch {
			case stamped:
				err = ls.StraggleStamped(it.stragLoad, it.loadKind(), j, !mark)
			case it.stragLink:
				err = r.b.(backend.LinkStraggler).StraggleOverLink(it.stragLoad)
			case it.stragMemory:
				err = r.b.(backend.MemoryStraggler).StraggleMemory(it.stragLoad)
			default:
				err = r.b.(backend.Straggler).Straggle(it.stragLoad)
			}
			if err != nil {
				return err
			}
			loaded = true
			loads[j].Stamped = stamped
		}
		if it.stragRank >= 0 {
			loads[j].Rank, loads[j].Ns, loads[j].Link, loads[j].Memory = it.stragRank, it.stragLoad.Nanoseconds(), it.stragLink, it.stragMemory
		}
		// Each iteration's input goes into the registered buffer the
		// moment the previous call returns: exactly what the end
		// barrier must make safe.
		if err := r.enqueueCall(s, &st.launches[j], s.inOf(st.at(st.srcAll, j))); err != nil {
			return err
		}
		if st.wit != nil && !st.stampAfterCopies(mark) {
			// Right after the call, before the copies: the witness
			// compares calls, and a copy slower on one rank than on
			// its peer would count as a lead. The poison waits for
			// the stamp (an event record, or one tiny kernel) instead.
			if err := st.wit.stamp(j, mark); err != nil {
				return err
			}
		}
		if m.InPlace && m.Registered {
			// The whole message: in place the output is all of it (an
			// all-gather's) or a chunk of it (a reduce-scatter's).
			if err := r.b.Copy(s.msg(st.at(st.outAll, j)), s.msg(s.inRegion), s.bytes); err != nil {
				return fmt.Errorf("copy result out: %w", err)
			}
		}
		if st.sched.Poison {
			// The call returned (in stream order): the input is the
			// caller's again, and a peer still reading it reads
			// poison. A variant that stages its own input wrote it
			// itself; this is the only other write of it.
			if err := r.b.Copy(s.in, st.poisonBuf, s.inBytes); err != nil {
				return fmt.Errorf("poison after return: %w", err)
			}
		}
		if st.wit != nil && st.stampAfterCopies(mark) {
			// Where ranks share a GPU, a kernel stamp's launch between
			// the return and the poison closed the window a missing
			// end barrier leaves: on one H200 under MPS oneshot without
			// its end barrier was caught in 0 of 5 runs with the stamp
			// first, 5 of 5 with it last
			// (docs/results/2026-11-26-h200-witness-shared-catch.md).
			// Kernel stamps, and every stamp in a capture, follow the
			// copies there (stampAfterCopies).
			if err := st.wit.stamp(j, mark); err != nil {
				return err
			}
		}
		if mark && st.marker != nil && (j+1)%progressEvery == 0 {
			if err := st.marker.MarkProgress(); err != nil {
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
