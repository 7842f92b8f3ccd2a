package runner

import (
	"fmt"
	"time"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/witness"
	"github.com/artest/artest/kernels"
)

// stampRecorder records one rank's stamps during a stress case.
type stampRecorder struct {
	st   backend.Stamper
	last backend.ClockSync
	out  witnessStamps
	// enq is when the host began to enqueue each stamp of the batch (0 in
	// a capture).
	enq []int64
}

// newWitness prepares the stamps of a stress case of batches of k
// iterations; nil (and no error) when the backend cannot stamp its stream.
// Called with the stream idle.
func (r *run) newWitness(k int) (*stampRecorder, error) {
	st, ok := r.b.(backend.Stamper)
	if !ok {
		return nil, nil
	}
	if s, ok := r.b.(interface{ StampReason() string }); ok && s.StampReason() != "" {
		return nil, nil
	}
	if err := st.PrepareStamps(k); err != nil {
		return nil, fmt.Errorf("witness: %d stamp slots: %w", k, err)
	}
	cs, err := st.ClockSync()
	if err != nil {
		st.FreeStamps()
		return nil, fmt.Errorf("witness: %w", err)
	}
	return &stampRecorder{st: st, last: cs, enq: make([]int64, k), out: witnessStamps{
		UncertaintyNs: cs.Uncertainty.Nanoseconds(), Domain: cs.Domain, Host: cs.Host, Stamps: cs.Stamps}}, nil
}

// stamp enqueues the stamp of the batch's iteration j; direct is false
// while a graph is captured.
func (w *stampRecorder) stamp(j int, direct bool) error {
	w.enq[j] = 0
	if direct {
		w.enq[j] = time.Now().UnixNano()
	}
	if err := w.st.Stamp(j, !direct); err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	return nil
}

// collect reads the stamps of a finished batch of kk iterations (loads:
// the load each of them ran, Ns 0 for none) and syncs
// the clocks again: a GPU's timer drifts from the host's wall clock (by
// about 20 us over a 13 s case on H200,
// docs/results/2026-11-26-h200-x2-stress.md), so each batch's
// stamps move to the wall clock by the offset interpolated between the
// syncs before and after it.
func (w *stampRecorder) collect(b backend.Backend, kk int, loads []witnessLoad) error {
	ends, err := w.st.Stamps(kk)
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	cs, err := w.st.ClockSync()
	if err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	ls, _ := w.st.(backend.LoadStamper)
	for j := range ends {
		if j < len(loads) && loads[j].Ns > 0 {
			l := loads[j]
			l.Iter = len(w.out.Ends) + j
			if l.Stamped && ls != nil {
				start, end, err := ls.LoadStamps(j)
				if err != nil {
					return fmt.Errorf("witness: %w", err)
				}
				l.CallAfterStartNs, l.CallAfterEndNs = ends[j]-start, ends[j]-end
			}
			w.out.Loads = append(w.out.Loads, l)
		}
	}
	w.out.Ends = append(w.out.Ends, ends...)
	w.out.Enqueued = append(w.out.Enqueued, w.enq[:kk]...)
	w.out.Walls = append(w.out.Walls, toWall(ends, w.last.Offset.Nanoseconds(), cs.Offset.Nanoseconds())...)
	w.out.UncertaintyNs = max(w.out.UncertaintyNs, cs.Uncertainty.Nanoseconds())
	w.last = cs
	return nil
}

// toWall moves a batch's stamps to the wall clock: iteration j of kk by the
// offset interpolated linearly from the sync before the batch (from) to the
// one after it (to).
func toWall(ends []int64, from, to int64) []int64 {
	out := make([]int64, len(ends))
	for j, e := range ends {
		out[j] = e - (from + (to-from)*int64(j+1)/int64(len(ends)))
	}
	return out
}

func (w *stampRecorder) free(backend.Backend) {
	if w != nil {
		w.st.FreeStamps()
	}
}

// earlyReturn is why a variant's ranks may return before their peers
// finish, or "" when its protocol has peers read a rank's input or staging
// until an end barrier.
func earlyReturn(v *kernels.Variant) string {
	switch {
	case v.Kind == kernels.KindNCCL:
		return "an NCCL baseline: NCCL's own protocol decides when a rank's buffers are free"
	}
	return v.EarlyReturn
}

// The witness's records as the runner keeps them (internal/witness).
type (
	witnessStamps = witness.Stamps
	witnessLoad   = witness.Load
	witnessRow    = witness.Row
)

// stampsOf is every rank's stamps of a case.
func stampsOf(rs []rankResult) []*witness.Stamps {
	out := make([]*witness.Stamps, len(rs))
	for i := range rs {
		out[i] = rs[i].Witness
	}
	return out
}
