package report

import (
	"bufio"
	"fmt"
	"io"
	"sort"
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
				fmt.Fprintf(bw, "# ... and %d more failing %s (--table full, or the JSON report, lists them)\n", more, plural(more, "case", "cases"))
				break
			}
			listed++
			word := "FAIL"
			if c.Verdict == Hung {
				word = string(Hung)
			}
			fmt.Fprintf(bw, "# %s %s: %s\n", word, c.ID, failureReason(c))
			if c.Repro != "" {
				fmt.Fprintf(bw, "#   repro: %s\n", c.Repro)
			}
		}
	}
	writeWarnings(bw, r.Cases)
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
	fmt.Fprintf(bw, "# pass %d, FAIL %d, skipped %d (every case: --table full, or the JSON report)\n", pass, fail, skipped)
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
func writeWarnings(bw *bufio.Writer, cs []Case) {
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
		fmt.Fprintf(bw, "# ... and %d more cases with warnings (the JSON report lists them)\n", n-maxSummaryWarnings)
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
