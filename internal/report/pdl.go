package report

import (
	"bufio"
	"fmt"
)

// writePDLGain writes, for a --pdl bench run, what programmatic dependent
// launch gains: per case, the time of one call (poison copy, producer
// kernel, allreduce) with the allreduce launched with PDL and launched
// normally, and the difference. Nothing for other runs. Its rows start
// with # like the rest that is not an nccl-tests data row, so scripts that
// read those rows are not confused.
func writePDLGain(w *bufio.Writer, r *Report) {
	var rows []*Case
	for i := range r.Cases {
		if c := &r.Cases[i]; c.NoPDLTimeUS > 0 && c.TimeUS > 0 {
			rows = append(rows, c)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "#\n# pdl: one call is the input poisoned, the producer kernel and the allreduce; time per call (us), %s over ranks\n", aggWord(aggName(&r.Header)))
	fmt.Fprintf(w, "# %-16s %10s %6s %6s %-16s %10s %10s %10s\n", "variant", "size", "type", "redop", "mode", "with pdl", "without", "gain")
	fmt.Fprintf(w, "# %-16s %10s %6s %6s %-16s %10s %10s %10s\n", "", "(B)", "", "", "", "(us)", "(us)", "(us)")
	for _, c := range rows {
		fmt.Fprintf(w, "# %-16s %10d %6s %6s %-16s %10.2f %10.2f %10.2f\n",
			c.Variant, c.Bytes, c.DType, c.Op, c.Mode, c.TimeUS, c.NoPDLTimeUS, c.PDLGainUS)
	}
}
