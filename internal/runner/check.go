package runner

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// Checkers of stress runs, as --check takes them.
const (
	// CheckAuto: the device checker where the backend has one (cuda with
	// artest_check in its fatbin), else the host.
	CheckAuto = "auto"
	// CheckHost: every iteration's output downloaded and checked with the
	// Go reference.
	CheckHost = "host"
	// CheckDevice: every iteration checked on the device, a few per batch
	// also on the host; a backend without a device checker is an error.
	CheckDevice = "device"
)

// CheckModes lists --check's values.
var CheckModes = []string{CheckAuto, CheckHost, CheckDevice}

// ParseCheck reads a --check value.
func ParseCheck(s string) (string, error) {
	for _, m := range CheckModes {
		if s == m {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown --check %q (valid: %s)", s, strings.Join(CheckModes, ", "))
}

// resolveChecker decides, on every rank alike, what checks stress
// iterations: the device checker when cfg.Check allows it and every rank's
// backend has one. It returns the checker and, when the device checker was
// wanted but cannot run, why; err is a communication failure, or the
// reason under --check device.
func (r *run) resolveChecker() (dc backend.DeviceChecker, note string, err error) {
	mode := r.cfg.Check
	if mode == "" {
		mode = CheckAuto
	}
	if mode == CheckHost {
		return nil, "", nil
	}
	// The device checker has no model of special inputs: their cases are
	// checked on the host (checksOnDevice).
	special, specials := "", 0
	for _, c := range r.cfg.Cases {
		if c.Input == reference.Special {
			special = cmp.Or(special, c.ID())
			specials++
		}
	}
	if mode == CheckDevice && special != "" {
		return nil, "", fmt.Errorf("--check device: case %s has special inputs, which the device checker has no model of (kernels/harness/check.cuh): use --check auto (those cases on the host) or --check host", special)
	}
	if specials == len(r.cfg.Cases) {
		if _, ok := r.b.(backend.DeviceChecker); !ok {
			return nil, "", nil // as below: the host backend checks on the host by design
		}
		return nil, "device checker off: every case has special inputs, which it has no model of", nil
	}
	reason := ""
	d, ok := r.b.(backend.DeviceChecker)
	if !ok {
		reason = fmt.Sprintf("the %s backend has no device checker", r.b.Name())
	} else {
		reason = d.DeviceCheckReason()
	}
	agreed, err := comm.AgreeReason(r.c, reason)
	if err != nil {
		return nil, "", fmt.Errorf("agree on the checker: %w", err)
	}
	if agreed == "" {
		if special != "" {
			return d, "the special-input cases are checked on the host: the device checker has no model of special inputs", nil
		}
		return d, "", nil
	}
	if mode == CheckDevice {
		return nil, agreed, fmt.Errorf("--check device: %s", agreed)
	}
	if !ok {
		// The host backend checks on the host by design: nothing to note.
		return nil, "", nil
	}
	return nil, "device checker off: " + agreed, nil
}

// checksOnDevice reports whether the device checker checks case c's stress
// iterations: where the run has one, the inputs are not special and the
// collective's output is one the checker reads (deviceCheckable).
func (r *run) checksOnDevice(c cases.Case) bool {
	return r.devCheck != nil && c.Input != reference.Special && deviceCheckable(c)
}

// checkStats is how one rank checked one stress case.
type checkStats struct {
	Checker     string  `json:"checker"`
	DeviceIters int     `json:"device_iters"`
	HostIters   int     `json:"host_iters"`
	DeviceSec   float64 `json:"device_s"`
	HostSec     float64 `json:"host_s"`
	Bytes       int64   `json:"bytes"` // message bytes of one iteration
}

// mergeChecks is the case's StressCheck: the fewest iterations and the
// lowest rate over the ranks that report one.
func mergeChecks(rs []rankResult) *report.StressCheck {
	var out *report.StressCheck
	rate := func(iters int, sec float64, bytes int64) float64 {
		if iters == 0 || sec <= 0 {
			return 0
		}
		return float64(iters) * float64(bytes) / sec / 1e9
	}
	minRate := func(a, b float64) float64 {
		if a == 0 {
			return b
		}
		if b == 0 {
			return a
		}
		return math.Min(a, b)
	}
	for _, res := range rs {
		c := res.Check
		if c == nil {
			continue
		}
		dev, host := rate(c.DeviceIters, c.DeviceSec, c.Bytes), rate(c.HostIters, c.HostSec, c.Bytes)
		if out == nil {
			out = &report.StressCheck{Checker: c.Checker, DeviceIters: c.DeviceIters, HostIters: c.HostIters, DeviceGBps: dev, HostGBps: host}
			continue
		}
		out.DeviceIters = min(out.DeviceIters, c.DeviceIters)
		out.HostIters = min(out.HostIters, c.HostIters)
		out.DeviceGBps = minRate(out.DeviceGBps, dev)
		out.HostGBps = minRate(out.HostGBps, host)
	}
	return out
}

// Spot checks: the stress iterations the host checks too under the
// device checker, besides the wrong ones. The first and the last iteration
// of a case always; of the others, one in spotPeriod(bytes), drawn from
// the seed, the case and the iteration (the same on every rank, and the
// same in a rerun). The period grows with the message so that the host
// checks about spotBytes per iteration on average above a MiB: a constant
// host cost per iteration, where checking every iteration on the host
// costs time in proportion to the message (about 0.2 to 0.6 GB/s per rank,
// docs/perf.md).
const (
	// spotMinPeriod: at most one iteration in 16 goes to the host, so that
	// small messages at many ranks per GPU (the CPU-bound case) gain too.
	spotMinPeriod = 16
	spotBytes     = 64 << 10
)

func spotPeriod(bytes int64) uint64 {
	return uint64(max(spotMinPeriod, (bytes+spotBytes-1)/spotBytes))
}

// spotKey is the per-case part of the spot-check draw.
func spotKey(seed uint64, id string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "check/%d/%s", seed, id)
	return h.Sum64()
}

// SpotChecked reports whether the host checks iteration iter of a stress
// case of n iterations of bytes each (case id, seed) under the device
// checker, whatever the device found.
func SpotChecked(seed uint64, id string, iter, n int, bytes int64) bool {
	return spotted(spotKey(seed, id), iter, n, bytes)
}

func spotted(key uint64, iter, n int, bytes int64) bool {
	return iter == 0 || iter == n-1 || splitmix(key^uint64(iter))%spotPeriod(bytes) == 0
}

// checkBatchOnDevice checks stress iterations s0..s0+kk-1, whose output
// regions start at region, slot bytes apart: every one on the device, then
// on the host the spot checks (SpotChecked) and the first wrong ones the device found
// (up to maxStressFailures in the case, for the usual detailed report). A
// host verdict that differs from the device's is itself a failure. It
// fills results and oks like the host path and returns an error when the
// device check could not run.
func (r *run) checkBatchOnDevice(s *caseState, dc backend.DeviceChecker, region backend.Ptr, slot int64, s0, kk int,
	failedSoFar int, results []rankResult, oks []bool, st *checkStats) error {
	spec := r.checkSpec(s, s0)
	spec.First = s.c.Coll.OutputFirst(s.c.Count(), r.w.Size, r.w.Rank)
	start := time.Now()
	verdicts, err := dc.CheckOnDevice(backend.DeviceCheck{
		Spec: spec, Region: region, SlotBytes: slot, Lead: s.lead, GuardAfter: s.region - s.lead - s.outBytes,
		Count: uint64(s.outBytes / s.elem), Slots: kk, Guard: guardByte,
	}, r.cfg.Timeout)
	st.DeviceSec += time.Since(start).Seconds()
	if err != nil {
		return fmt.Errorf("device check of stress iterations %d..%d: %w", s0, s0+kk-1, err)
	}
	st.DeviceIters += kk
	onHost := map[int]bool{}
	key := spotKey(r.cfg.Seed, s.c.ID())
	for j := 0; j < kk; j++ {
		if spotted(key, s0+j, r.cfg.Stress, s.outBytes) {
			onHost[j] = true
		}
	}
	rechecks := 0
	for j, v := range verdicts {
		oks[j] = v.Wrong == 0 && v.GuardBad == 0
		if !oks[j] && failedSoFar+rechecks < maxStressFailures {
			onHost[j] = true
			rechecks++
		}
	}
	start = time.Now()
	img := make([]byte, s.region)
	for j := 0; j < kk; j++ {
		v, iter := &verdicts[j], s0+j
		prefix := fmt.Sprintf("iteration %d: ", iter)
		if !onHost[j] {
			if !oks[j] {
				results[j] = deviceFailure(s.c.DType, v, iter, prefix)
			}
			continue
		}
		if err := r.b.Download(img, region+backend.Ptr(int64(j)*slot)); err != nil {
			return fmt.Errorf("download stress output %d: %w", iter, err)
		}
		st.HostIters++
		var host rankResult
		hostOK := r.checkImage(s, img, iter, &host, prefix)
		hostGuard := s.fenceDamage(img) != ""
		results[j] = host
		if hostOK != oks[j] || host.Wrong != v.Wrong || hostGuard != (v.GuardBad != 0) {
			guards := "intact guards"
			if hostGuard {
				guards = "damaged guards"
			}
			results[j].Failures = append(results[j].Failures, report.RankFailure{Kind: "checker",
				Detail: fmt.Sprintf("device checker disagrees with the Go reference at iteration %d: the device found %d wrong elements and %d damaged guard bytes, the host %d wrong elements and %s",
					iter, v.Wrong, v.GuardBad, host.Wrong, guards)})
			oks[j] = false
		} else {
			oks[j] = hostOK
		}
	}
	st.HostSec += time.Since(start).Seconds()
	return nil
}

// deviceCheckable reports whether the device checker can check case c's
// outputs: it compares elements with the allreduce at an index (an
// allreduce's output, a reduce-scatter's chunk of it) between guard bytes,
// so the collective must reduce the full-size inputs. An all-gather's
// output is the inputs themselves, and in place a chunked output sits
// beside the input: both are checked on the host.
func deviceCheckable(c cases.Case) bool {
	d := c.Coll.Desc()
	return d.Reduces && !d.ChunkIn && (!d.ChunkOut || !c.Mode.InPlace)
}

// deviceFailure describes a wrong iteration from the device's verdict
// alone: the count and the few elements it recorded.
func deviceFailure(d reference.DType, v *kernels.CheckSlot, iter int, prefix string) rankResult {
	var res rankResult
	if v.Wrong > 0 {
		res.Wrong = v.Wrong
		f := report.RankFailure{Kind: "mismatch", Wrong: v.Wrong,
			Detail: fmt.Sprintf("%s%d wrong (device checker)", prefix, v.Wrong)}
		for _, m := range v.Recorded() {
			f.Mismatches = append(f.Mismatches, report.Mismatch{Index: m.Index, Got: d.ToF64(m.Got), Want: m.Ref(), GotBits: m.Got, WantBits: m.Want, Iter: iter})
		}
		res.Failures = append(res.Failures, f)
	}
	if v.GuardBad > 0 {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "guard",
			Detail: fmt.Sprintf("%s%d guard bytes overwritten (device checker)", prefix, v.GuardBad)})
	}
	return res
}
