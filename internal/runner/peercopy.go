package runner

import (
	"fmt"
	"math"
	"time"

	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
)

// The links' copy bandwidth a bench run prints beside its bus bandwidth:
// each rank copies peerCopyBytes (or its staging capacity, when smaller)
// into its right neighbour's staging peerCopyReps times, all ranks at once,
// after one copy of warm-up. Below peerCopyMinBytes a copy's start costs
// as much as its bytes, and the rate says nothing about the links.
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
	// Start together, so that every rank's copies overlap its peers'.
	if _, err := comm.AgreeReason(r.c, ""); err != nil {
		return err
	}
	d, cerr := r.timePeerCopy(n)
	why = ""
	if cerr != nil {
		why = fmt.Sprintf("rank %d: %v", r.w.Rank, cerr)
	}
	if why, err = comm.AgreeReason(r.c, why); err != nil {
		return err
	}
	if why != "" {
		h.PeerCopyNote = "link copy not measured: " + why
		return nil
	}
	// Rates in MB/s agree as integers: the slowest rank, and the fastest
	// as the least negative.
	mbps := int(math.Round(float64(n*peerCopyReps) / d.Seconds() / 1e6))
	lo, _, err := comm.AgreeMin(r.c, mbps, "")
	if err != nil {
		return err
	}
	negHi, _, err := comm.AgreeMin(r.c, -mbps, "")
	if err != nil {
		return err
	}
	h.PeerCopy = &report.PeerCopy{Bytes: n, Reps: peerCopyReps, MinGBps: float64(lo) / 1e3, MaxGBps: float64(-negHi) / 1e3}
	return nil
}

// timePeerCopy copies n bytes of this rank's staging into its right
// neighbour's, once, then peerCopyReps times between two events.
func (r *run) timePeerCopy(n int64) (time.Duration, error) {
	w := r.w
	src, dst := w.Staging[w.Rank], w.Staging[(w.Rank+1)%w.Size]
	if err := r.b.Copy(dst, src, n); err != nil {
		return 0, fmt.Errorf("warm-up copy: %w", err)
	}
	start, err := r.b.Record()
	if err != nil {
		return 0, err
	}
	defer start.Destroy()
	for i := 0; i < peerCopyReps; i++ {
		if err := r.b.Copy(dst, src, n); err != nil {
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
	if err := r.b.Sync(timeout); err != nil {
		return 0, err
	}
	d, err := end.Since(start)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("the copies took %v", d)
	}
	return d, nil
}
