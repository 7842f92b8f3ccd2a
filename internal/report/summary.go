package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/artest/artest/reference"
)

// maxSummaryFailures bounds the failing cases the summary lists, each with
// its repro line; the full table and the JSON report list them all.
const maxSummaryFailures = 10

// maxSummarySkipReasons bounds the skip reasons listed per variant.
const maxSummarySkipReasons = 3

// WriteSummary writes what a person at a terminal reads after a run, short
// enough for one screen whatever the matrix: the environment header, the
// failing cases first (each with its reason and its repro line), then per
// variant the verdict counts by dtype, the modes with failures and the most
// common skip reasons, and the totals. WriteTable prints every case.
func WriteSummary(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	writeTableHeader(bw, &r.Header)
	pass, fail, skipped := countVerdicts(r.Cases)
	if fail > 0 {
		fmt.Fprintln(bw, "#")
		listed := 0
		for i := range r.Cases {
			c := &r.Cases[i]
			if verdictOf(c) != Fail {
				continue
			}
			if listed == maxSummaryFailures {
				more := fail - listed
				fmt.Fprintf(bw, "# ... and %d more failing %s (%s)\n", more, plural(more, "case", "cases"), r.listedBy("lists them"))
				break
			}
			listed++
			word := "FAIL"
			if c.Verdict == Hung {
				word = string(Hung)
			}
			fmt.Fprintf(bw, "# %s %s: %s\n", word, c.ID, failureReason(c))
			if first, reading := stressEvidence(c); first != "" {
				fmt.Fprintf(bw, "#   first wrong: %s\n", first)
				if reading != "" {
					fmt.Fprintf(bw, "#   reading: %s\n", reading)
				}
			}
			if c.Repro != "" {
				fmt.Fprintf(bw, "#   repro: %s\n", c.Repro)
			}
		}
	}
	writeWarnings(bw, r)
	fmt.Fprintln(bw, "#")
	for _, block := range variantBlocks(r.Cases) {
		t := tally{}
		for _, c := range block {
			t.add(c)
		}
		fmt.Fprintf(bw, "# variant %s: %d %s, pass %d, FAIL %d, skipped %d\n",
			block[0].Variant, len(block), plural(len(block), "case", "cases"), t.pass, t.fail, t.skipped)
		writeVariantCounts(bw, block)
	}
	fmt.Fprintln(bw, "#")
	fmt.Fprintf(bw, "# pass %d, FAIL %d, skipped %d (every case: %s)\n", pass, fail, skipped, r.listedBy(""))
	if r.Summary.Error != "" {
		fmt.Fprintf(bw, "# run stopped early: %s\n", firstLine(r.Summary.Error))
	}
	if r.Summary.ExitCode != 0 {
		fmt.Fprintf(bw, "# exit code %d\n", r.Summary.ExitCode)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// maxSummaryWarnings bounds the warning lines of the summary.
const maxSummaryWarnings = 10

// writeWarnings lists the cases that passed (or failed) with a warning: the
// end-barrier witness's lead.
func writeWarnings(bw *bufio.Writer, r *Report) {
	cs := r.Cases
	n := 0
	for i := range cs {
		c := &cs[i]
		if c.Witness == nil || c.Witness.Warning == "" {
			continue
		}
		if n == 0 {
			fmt.Fprintln(bw, "#")
		}
		if n++; n > maxSummaryWarnings {
			continue
		}
		fmt.Fprintf(bw, "# WARNING %s %s: %s\n", c.ID, verdictOf(c), c.Witness.Warning)
	}
	if n > maxSummaryWarnings {
		fmt.Fprintf(bw, "# ... and %d more cases with warnings (%s)\n", n-maxSummaryWarnings, r.listedBy("lists them"))
	}
}

// tally is one line of counts.
type tally struct{ pass, fail, skipped int }

func (t *tally) add(c *Case) {
	switch verdictOf(c) {
	case Pass:
		t.pass++
	case Skipped:
		t.skipped++
	default:
		t.fail++
	}
}

// writeVariantCounts prints one variant's counts by dtype (in first
// appearance order), the modes that have failures, and its most common
// skip reasons.
func writeVariantCounts(w *bufio.Writer, block []*Case) {
	var dtypes, modes []string
	byDType, byMode := map[string]*tally{}, map[string]*tally{}
	skips := map[string]int{}
	for _, c := range block {
		if byDType[c.DType] == nil {
			byDType[c.DType] = &tally{}
			dtypes = append(dtypes, c.DType)
		}
		byDType[c.DType].add(c)
		if byMode[c.Mode] == nil {
			byMode[c.Mode] = &tally{}
			modes = append(modes, c.Mode)
		}
		byMode[c.Mode].add(c)
		if verdictOf(c) == Skipped {
			skips[skipReason(c)]++
		}
	}
	for _, d := range dtypes {
		t := byDType[d]
		fmt.Fprintf(w, "#   %s: pass %d, FAIL %d, skipped %d\n", orAbsent(d), t.pass, t.fail, t.skipped)
	}
	line := ""
	for _, m := range modes {
		if t := byMode[m]; t.fail > 0 {
			if line != "" {
				line += ", "
			}
			line += fmt.Sprintf("%s %d", orAbsent(m), t.fail)
		}
	}
	if line != "" {
		fmt.Fprintf(w, "#   FAIL by mode: %s\n", line)
	}
	if onlyInPlaceRegisteredFail(block) {
		for _, l := range inPlaceRegisteredHint {
			fmt.Fprintf(w, "#   %s\n", l)
		}
	}
	reasons := make([]string, 0, len(skips))
	for r := range skips {
		reasons = append(reasons, r)
	}
	sort.SliceStable(reasons, func(i, j int) bool {
		if skips[reasons[i]] != skips[reasons[j]] {
			return skips[reasons[i]] > skips[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	for i, r := range reasons {
		if i == maxSummarySkipReasons {
			fmt.Fprintf(w, "#   skipped for %d more reasons\n", len(reasons)-i)
			break
		}
		fmt.Fprintf(w, "#   skipped %d: %s\n", skips[r], r)
	}
}

// inPlaceRegisteredHint is what a variant's failures point at when only its
// in-place registered modes fail: there the output is the rank's registered
// input, which its peers read, so a kernel that writes its output before
// every peer has read that input corrupts what they read. Two lines.
var inPlaceRegisteredHint = [...]string{
	"only in-place registered modes (ip-reg) fail, out-of-place ones pass: there the output is this rank's registered input, which its peers read,",
	"so writing the output before every peer has read that input corrupts their reads: a barrier missing between the last peer read and the first " +
		"output write (reduce into staging, end barrier, then copy out: plugin/README.md, the protocol)",
}

// onlyInPlaceRegisteredFail reports whether every failing case of one
// variant's block is in an in-place registered mode ("ip-reg-plain",
// "ip-reg-graph-off1") while at least one out-of-place case passed.
func onlyInPlaceRegisteredFail(block []*Case) bool {
	failed, oopPassed := false, false
	for _, c := range block {
		switch verdictOf(c) {
		case Fail:
			if !strings.HasPrefix(c.Mode, "ip-reg-") {
				return false
			}
			failed = true
		case Pass:
			oopPassed = oopPassed || strings.HasPrefix(c.Mode, "oop-")
		}
	}
	return failed && oopPassed
}

// listedBy names where every case can be read, followed by verb: the full
// table, and the JSON report only when the run writes one.
func (r *Report) listedBy(verb string) string {
	s := "--table full"
	if r.JSONPath != "" {
		s += ", or the JSON report (" + r.JSONPath + ")"
		if verb != "" {
			s += ","
		}
	}
	if verb != "" {
		s += " " + verb
	}
	return s
}

// stressEvidence is, for a case whose stress iterations went wrong, where it
// first did (the lowest iteration of any rank: that rank, the element, got
// and want with their bits, and the schedules on) and, when the bits say
// so, what they show. Both are "" for a case without such a mismatch.
func stressEvidence(c *Case) (first, reading string) {
	var m *Mismatch
	rank := 0
	for i := range c.Failures {
		f := &c.Failures[i]
		if !strings.HasPrefix(f.Detail, "iteration ") {
			continue
		}
		for j := range f.Mismatches {
			if x := &f.Mismatches[j]; m == nil || x.Iter < m.Iter || (x.Iter == m.Iter && f.Rank < rank) {
				m, rank = x, f.Rank
			}
		}
	}
	if m == nil {
		return "", ""
	}
	sched := c.Schedule
	if sched == "" {
		sched = "none"
	}
	first = fmt.Sprintf("iteration %d, rank %d, element [%d]: %s; schedules on: %s",
		m.Iter, rank, m.Index, gotWant(m, c.DType), strings.ReplaceAll(sched, ",", ", "))
	return first, poisonReading(c.DType, m.GotBits, strings.Contains(","+c.Schedule+",", ",poison-after-return,"), c.Input != "")
}

// poisonReading says what got's bits show about where it came from, or ""
// when they show nothing certain. artest's poison is a signalling NaN with
// a payload (reference.PoisonBits), written into outputs before each call
// and, under the poison-after-return schedule, into a rank's input once its
// call returned; no input is that NaN, and arithmetic on a signalling NaN
// gives it back quiet, with its payload. Special inputs (special) hold
// NaNs, and arithmetic that combines a NaN's bits with a number's can
// yield the quiet poison too: for them only the poison itself is read.
func poisonReading(dtype string, got uint32, poisonAfterReturn, special bool) string {
	d, err := reference.ParseDType(dtype)
	if err != nil {
		return ""
	}
	poison := reference.PoisonBits(d)
	quiet := map[reference.DType]uint32{reference.F32: 1 << 22, reference.F16: 1 << 9, reference.BF16: 1 << 6}[d]
	switch {
	case got == poison && !poisonAfterReturn:
		return "got is the output's poison pattern, which no arithmetic yields: the output was never written"
	case got == poison:
		return "got is the poison pattern, which no arithmetic yields: the output was never written, or a poisoned input " +
			"(poison-after-return writes it into a rank's input when its call returns) was copied into it unchanged"
	case special:
		return ""
	case got == poison|quiet && poisonAfterReturn:
		return "got is the poison pattern made quiet, as arithmetic on it gives: it was computed from poison, either a peer's input " +
			"read after that peer's call had returned (poison-after-return writes the poison there then: a missing or early end barrier) " +
			"or this output's own poison read before it was written"
	case got == poison|quiet:
		return "got is the poison pattern made quiet, as arithmetic on it gives: it was computed from poison, such as this output's own " +
			"read before it was written"
	}
	return ""
}
