package report

import (
	"bufio"
	"fmt"
)

// writePDLChain writes, for a bench --pdl-chain run, per case the time of
// one call of the back-to-back calls launched normally and with each
// allreduce launched with PDL after the previous one, and the gain; then
// the cases that were not timed so, with why. Nothing for other runs.
func writePDLChain(w *bufio.Writer, r *Report) {
	var rows, notes []*Case
	for i := range r.Cases {
		switch c := &r.Cases[i]; {
		case c.ChainTimeUS > 0 && c.TimeUS > 0:
			rows = append(rows, c)
		case c.ChainNote != "":
			notes = append(notes, c)
		}
	}
	if len(rows) == 0 && len(notes) == 0 {
		return
	}
	fmt.Fprintf(w, "#\n# pdl-chain: back-to-back calls, each allreduce launched normally and with PDL after the previous one; time per call (us), %s over ranks\n", aggWord(aggName(&r.Header)))
	fmt.Fprintf(w, "# %-16s %10s %6s %6s %-18s %10s %10s %10s\n", "variant", "size", "type", "redop", "mode", "normal", "chained", "gain")
	fmt.Fprintf(w, "# %-16s %10s %6s %6s %-18s %10s %10s %10s\n", "", "(B)", "", "", "", "(us)", "(us)", "(us)")
	for _, c := range rows {
		fmt.Fprintf(w, "# %-16s %10d %6s %6s %-18s %10.2f %10.2f %10.2f\n",
			c.Variant, c.Bytes, c.DType, c.Op, c.Mode, c.TimeUS, c.ChainTimeUS, c.ChainGainUS)
	}
	seen := map[string]bool{}
	for _, c := range notes {
		if k := c.Variant + ": " + c.ChainNote; !seen[k] {
			seen[k] = true
			fmt.Fprintf(w, "# not chained: %s\n", k)
		}
	}
}
