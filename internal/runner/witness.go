package runner

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/report"
)

// The witness's base threshold: a lead of more than this (plus the two
// ranks' clock uncertainty) between one rank's return and another's finish
// counts. With an end barrier every rank's call returns within the
// barrier's release (a few microseconds on a GPU) of the last; without one,
// a rank returns while a straggling peer still reads, tens to hundreds of
// microseconds early under the straggler schedule. The host backend's
// "kernels" are goroutines that the OS may park for milliseconds between a
// call's end and the stamp after it.
const (
	witnessBaseCUDA = 20 * time.Microsecond
	witnessBaseHost = 50 * time.Millisecond
)

// witnessStamps are one rank's stamps of a stress case: when each
// iteration's call returned, on the host's wall clock (Unix ns).
type witnessStamps struct {
	Ends []int64 `json:"ends"`
	// UncertaintyNs bounds the error of this rank's clock offset.
	UncertaintyNs int64 `json:"uncertainty_ns"`
}

// witness records one rank's stamps during a stress case.
type witness struct {
	st     backend.Stamper
	buf    backend.Ptr // one 8-byte slot per iteration of a batch
	offset time.Duration
	out    witnessStamps
}

// newWitness prepares the stamps of a stress case of batches of k
// iterations; nil (and no error) when the backend cannot stamp its stream.
// Called with the stream idle.
func (r *run) newWitness(k int) (*witness, error) {
	st, ok := r.b.(backend.Stamper)
	if !ok {
		return nil, nil
	}
	if s, ok := r.b.(interface{ StampReason() string }); ok && s.StampReason() != "" {
		return nil, nil
	}
	offset, unc, err := st.ClockOffset()
	if err != nil {
		return nil, fmt.Errorf("witness: %w", err)
	}
	buf, err := r.b.Alloc(int64(k) * 8)
	if err != nil {
		return nil, fmt.Errorf("witness: alloc %d stamp slots: %w", k, err)
	}
	return &witness{st: st, buf: buf, offset: offset, out: witnessStamps{UncertaintyNs: unc.Nanoseconds()}}, nil
}

// stamp enqueues the stamp of the batch's iteration j.
func (w *witness) stamp(j int) error {
	if err := w.st.Stamp(w.buf + backend.Ptr(8*j)); err != nil {
		return fmt.Errorf("witness: %w", err)
	}
	return nil
}

// collect reads the stamps of a finished batch of kk iterations.
func (w *witness) collect(b backend.Backend, kk int) error {
	raw := make([]byte, 8*kk)
	if err := b.Download(raw, w.buf); err != nil {
		return fmt.Errorf("witness: download %d stamps: %w", kk, err)
	}
	for j := 0; j < kk; j++ {
		t := int64(binary.LittleEndian.Uint64(raw[8*j:]))
		w.out.Ends = append(w.out.Ends, t-w.offset.Nanoseconds())
	}
	return nil
}

func (w *witness) free(b backend.Backend) {
	if w != nil && w.buf != 0 {
		_ = b.Free(w.buf)
	}
}

// mergeWitness compares the ranks' stamps, iteration by iteration: nil
// unless every rank stamped every iteration.
func mergeWitness(rs []rankResult, backendName string) *report.Witness {
	if len(rs) < 2 {
		return nil
	}
	n := -1
	for _, r := range rs {
		if r.Witness == nil || (n >= 0 && len(r.Witness.Ends) != n) {
			return nil
		}
		n = len(r.Witness.Ends)
	}
	if n == 0 {
		return nil
	}
	base := witnessBaseCUDA
	if backendName == "host" {
		base = witnessBaseHost
	}
	w := &report.Witness{Iterations: n, Iteration: -1}
	var worstThreshold time.Duration
	for i := 0; i < n; i++ {
		first, last := 0, 0
		for r := range rs {
			if rs[r].Witness.Ends[i] < rs[first].Witness.Ends[i] {
				first = r
			}
			if rs[r].Witness.Ends[i] > rs[last].Witness.Ends[i] {
				last = r
			}
		}
		lead := time.Duration(rs[last].Witness.Ends[i] - rs[first].Witness.Ends[i])
		threshold := base + time.Duration(rs[first].Witness.UncertaintyNs+rs[last].Witness.UncertaintyNs)
		if lead > threshold {
			w.Over++
		}
		if us := float64(lead.Nanoseconds()) / 1e3; w.Iteration < 0 || us > w.MaxLeadUS {
			w.MaxLeadUS, w.Iteration, w.First, w.Last = us, i, first, last
			worstThreshold = threshold
		}
	}
	w.ThresholdUS = float64(worstThreshold.Nanoseconds()) / 1e3
	if w.Over > 0 {
		w.Warning = report.WitnessWarning(w)
	}
	return w
}
