package runner

import (
	"fmt"
	"strings"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

func (r *run) readTrace(s *caseState) error {
	if !s.v.Custom() || s.v.ID == 0 {
		return nil
	}
	sig, err := r.b.ReadSignal(r.w.Rank)
	if err != nil {
		return fmt.Errorf("read trace word: %w", err)
	}
	s.trace0 = sigblock.Snapshot(sig).Word(sigblock.OffTraceCount)
	return nil
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
	r.dog.beat()
	ok := true
	if bad := s.fenceDamage(img); bad != "" {
		res.Failures = append(res.Failures, report.RankFailure{Kind: "guard", Detail: prefix + bad})
		ok = false
	}
	at := s.lead + s.outAt
	got := img[at : at+s.outBytes]
	cr := reference.CheckCollective(s.c.Coll, r.checkSpec(s, iter), r.w.Rank, s.c.Count(), got)
	if cr.Wrong > 0 {
		res.Wrong += cr.Wrong
		f := report.RankFailure{Kind: "mismatch", Detail: prefix + cr.String(), Wrong: cr.Wrong, WorstULP: cr.WorstULP}
		for _, m := range cr.First {
			f.Mismatches = append(f.Mismatches, report.Mismatch{
				Index: m.Index, Got: m.Got, Want: m.Want, GotBits: m.GotBits, WantBits: m.WantBits, ULP: m.ULP, Iter: iter,
				Accept: m.Accept, Inputs: m.Inputs,
			})
		}
		res.Failures = append(res.Failures, f)
		ok = false
	}
	return ok
}

// checkSpec is what produced an output of case s in iteration iter, for
// the reference (reference.CheckCollective sets First).
func (r *run) checkSpec(s *caseState, iter int) reference.CheckSpec {
	return reference.CheckSpec{Gen: r.genFor(s), Op: s.c.Op, NRanks: r.w.Size, Iter: iter, Order: s.v.Order}
}

// fenceDamage describes the guard bytes of an output region's image that
// the call overwrote (outside fence).
func (s *caseState) fenceDamage(img []byte) string {
	lo, hi := s.fence()
	return guardDamage(img, lo, hi)
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
	if !s.v.Custom() || s.v.ID == 0 {
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
