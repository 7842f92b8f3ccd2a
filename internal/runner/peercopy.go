package runner

import (
	"fmt"
	"math"
	"time"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
)

// The links' copy bandwidth a bench run prints beside its bus bandwidth:
// each rank copies peerCopyBytes (or its staging capacity, when smaller)
// into its right neighbour's staging peerCopyReps times, all ranks at once,
// after one copy of warm-up; with the copy engine, with a kernel storing
// into the neighbour's memory, and with the kernel loading from it into
// its own (the kernels' two ways of moving data over a link). Below
// peerCopyMinBytes a copy's start costs as much as its bytes, and the rate
// says nothing about the links.
const (
	peerCopyBytes    = 256 << 20
	peerCopyMinBytes = 16 << 20
	peerCopyReps     = 5
)

// peerCopyReason says why this rank cannot measure the copy ("" when it
// can): only GPUs have links between them, and ranks that share one GPU
// copy within its memory.
func (r *run) peerCopyReason() string {
	switch {
	case r.b.Name() != "cuda":
		return fmt.Sprintf("the %s backend has no links between GPUs", r.b.Name())
	case r.w.Size < 2:
		return "one rank: no neighbour to copy to"
	case r.w.Capacity < peerCopyMinBytes:
		return fmt.Sprintf("the largest message is below %d MiB: the buffers are too small to time the links", peerCopyMinBytes>>20)
	}
	if sh, ok := r.b.(interface{ RanksPerGPU() int }); ok && sh.RanksPerGPU() > 1 {
		return "ranks share a GPU: their copies do not cross a link"
	}
	return ""
}

// measurePeerCopy fills h.PeerCopy (or h.PeerCopyNote): collective, before
// the first case, while no call uses the staging buffers. A failed copy
// is a note, not the run's end; a failed collective is an error.
func (r *run) measurePeerCopy(h *report.Header) error {
	why, err := comm.AgreeReason(r.c, r.peerCopyReason())
	if err != nil {
		return err
	}
	if why != "" {
		h.PeerCopyNote = why
		return nil
	}
	n := min(int64(peerCopyBytes), r.w.Capacity) &^ (1<<20 - 1)
	p := &report.PeerCopy{Bytes: n, Reps: peerCopyReps}
	var sm func(dst, src backend.Ptr, n int64) error
	smWhy := fmt.Sprintf("the %s backend has no copy on the multiprocessors", r.b.Name())
	if c, ok := r.b.(backend.SMCopier); ok {
		// A fatbin built before artest_copy says so.
		if smWhy = c.SMCopyReason(); smWhy == "" {
			sm = c.CopySM
		}
	}
	if smWhy, err = comm.AgreeReason(r.c, smWhy); err != nil {
		return err
	}
	var why2 string
	if p.MinGBps, p.MaxGBps, why2, err = r.peerCopyRate(n, r.b.Copy); err != nil {
		return err
	}
	if why2 != "" {
		h.PeerCopyNote = "link copy not measured: " + why2
		return nil
	}
	if smWhy == "" {
		if p.SMMinGBps, p.SMMaxGBps, why2, err = r.peerCopyRate(n, sm); err != nil {
			return err
		}
		smWhy = why2
	}
	if smWhy == "" {
		if p.SMReadMinGBps, p.SMReadMaxGBps, why2, err = r.peerCopyRate(n, pull(sm)); err != nil {
			return err
		}
		smWhy = why2
	}
	if smWhy != "" {
		h.PeerCopyNote = "copy on the multiprocessors not measured: " + smWhy
	}
	h.PeerCopy = p
	return nil
}

// pull turns a copy into the right neighbour's staging into a copy out of
// it into ours: the same kernel, its loads crossing the link instead of
// its stores. (While we read the neighbour's staging our left neighbour
// reads ours and we overwrite it: the bytes mean nothing, only the rate.)
func pull(copy func(dst, src backend.Ptr, n int64) error) func(dst, src backend.Ptr, n int64) error {
	return func(dst, src backend.Ptr, n int64) error { return copy(src, dst, n) }
}

// peerCopyRate times copy into the right neighbour on every rank at once
// and returns the slowest and fastest rank's rate in GB/s, or why it
// could not ("": it could). The error is a failed collective.
func (r *run) peerCopyRate(n int64, copy func(dst, src backend.Ptr, n int64) error) (lo, hi float64, why string, err error) {
	// Start together, so that every rank's copies overlap its peers'.
	if _, err := comm.AgreeReason(r.c, ""); err != nil {
		return 0, 0, "", err
	}
	d, cerr := r.timePeerCopy(n, copy)
	if cerr != nil {
		why = fmt.Sprintf("rank %d: %v", r.w.Rank, cerr)
	}
	if why, err = comm.AgreeReason(r.c, why); err != nil || why != "" {
		return 0, 0, why, err
	}
	// Rates in MB/s agree as integers: the slowest rank, and the fastest
	// as the least negative.
	mbps := int(math.Round(float64(n*peerCopyReps) / d.Seconds() / 1e6))
	low, _, err := comm.AgreeMin(r.c, mbps, "")
	if err != nil {
		return 0, 0, "", err
	}
	negHigh, _, err := comm.AgreeMin(r.c, -mbps, "")
	if err != nil {
		return 0, 0, "", err
	}
	return float64(low) / 1e3, float64(-negHigh) / 1e3, "", nil
}

// timePeerCopy copies n bytes of this rank's staging into its right
// neighbour's with copy, once, then peerCopyReps times between two events.
func (r *run) timePeerCopy(n int64, copy func(dst, src backend.Ptr, n int64) error) (time.Duration, error) {
	w := r.w
	src, dst := w.Staging[w.Rank], w.Staging[(w.Rank+1)%w.Size]
	if err := copy(dst, src, n); err != nil {
		return 0, fmt.Errorf("warm-up copy: %w", err)
	}
	start, err := r.b.Record()
	if err != nil {
		return 0, err
	}
	defer start.Destroy()
	for i := 0; i < peerCopyReps; i++ {
		if err := copy(dst, src, n); err != nil {
			return 0, fmt.Errorf("copy %d: %w", i, err)
		}
	}
	end, err := r.b.Record()
	if err != nil {
		return 0, err
	}
	defer end.Destroy()
	timeout := r.cfg.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	leave := r.dog.enter(phaseSync, "the wait for the peer copies")
	err = r.b.Sync(timeout)
	leave()
	if err != nil {
		return 0, err
	}
	r.dog.drained()
	d, err := end.Since(start)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("the copies took %v", d)
	}
	return d, nil
}
