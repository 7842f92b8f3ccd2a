package report

import (
	"bufio"
	"fmt"
)

// writeOverlap writes, for a bench --overlap run, per timed case: the
// allreduce's time per call without and with the compute load beside it,
// the load's time alone and beside a repetition of calls, and its
// slowdown; or, when the load could not run, why. Nothing for other
// runs. Its rows start with # like the rest that is not an nccl-tests data
// row, so scripts that read those rows are not confused.
func writeOverlap(w *bufio.Writer, r *Report) {
	h := &r.Header
	if h.SMBudget > 0 {
		fmt.Fprintf(w, "#\n# sm-budget: every collective's grid capped at %d %s per GPU (NCCL's by NCCL_MAX_CTAS=%d), the compute load on the other multiprocessors\n",
			h.SMBudget, plural(h.SMBudget, "block", "blocks"), h.SMBudget)
	}
	if h.Overlap <= 0 && h.OverlapNote == "" {
		return
	}
	if h.OverlapNote != "" {
		fmt.Fprintf(w, "#\n# %s\n", h.OverlapNote)
		return
	}
	var rows []*Case
	for i := range r.Cases {
		if c := &r.Cases[i]; c.OverlapTimeUS > 0 && c.TimeUS > 0 {
			rows = append(rows, c)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "#\n# overlap: a compute load of %d %s beside every timed repetition; allreduce time per call without and with it, the load's time alone and beside the calls (us), %s over ranks; slowdown = beside / alone\n",
		h.Overlap, plural(h.Overlap, "block", "blocks"), aggWord(aggName(h)))
	if h.SMBudget <= 0 {
		fmt.Fprintf(w, "# %-16s %10s %6s %6s %-16s %10s %10s %10s %10s %8s\n", "variant", "size", "type", "redop", "mode", "time", "loaded", "load", "beside", "slowdown")
		fmt.Fprintf(w, "# %-16s %10s %6s %6s %-16s %10s %10s %10s %10s %8s\n", "", "(B)", "", "", "", "(us)", "(us)", "(us)", "(us)", "(x)")
		for _, c := range rows {
			fmt.Fprintf(w, "# %-16s %10d %6s %6s %-16s %10.2f %10.2f %10.2f %10.2f %8.2f\n",
				c.Variant, c.Bytes, c.DType, c.Op, c.Mode, c.TimeUS, c.OverlapTimeUS, c.LoadAloneUS, c.LoadWithAllreduceUS, c.LoadSlowdown)
		}
		return
	}
	// Under --sm-budget the load's work is fixed per size, so the pair's
	// span compares across budgets and variants.
	fmt.Fprintf(w, "# pair: from the first start to the last end of a repetition of calls and the load of fixed work beside it (us)\n")
	fmt.Fprintf(w, "# %-16s %10s %6s %6s %-16s %10s %10s %10s %10s %8s %10s\n", "variant", "size", "type", "redop", "mode", "time", "loaded", "load", "beside", "slowdown", "pair")
	fmt.Fprintf(w, "# %-16s %10s %6s %6s %-16s %10s %10s %10s %10s %8s %10s\n", "", "(B)", "", "", "", "(us)", "(us)", "(us)", "(us)", "(x)", "(us)")
	for _, c := range rows {
		fmt.Fprintf(w, "# %-16s %10d %6s %6s %-16s %10.2f %10.2f %10.2f %10.2f %8.2f %10.2f\n",
			c.Variant, c.Bytes, c.DType, c.Op, c.Mode, c.TimeUS, c.OverlapTimeUS, c.LoadAloneUS, c.LoadWithAllreduceUS, c.LoadSlowdown, c.PairUS)
	}
}
