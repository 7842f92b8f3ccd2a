package report

import (
	"bufio"
	"fmt"
	"strings"
)

// A ModeTable describes the bench table of a timing mode that keeps its
// figures in Case.Modes rather than in fields of its own: the runner puts
// it into Header.ModeTables, so that the JSON report says what its
// figures are and a saved report prints the same table. A new mode needs
// nothing here.
type ModeTable struct {
	// Name is the mode's word, its key in Case.Modes.
	Name string `json:"name"`
	// Title says what the mode times; the table's first line is
	// "# NAME: TITLE; AGG over ranks".
	Title string `json:"title"`
	// Columns are its figures, after the case's own time.
	Columns []ModeColumn `json:"columns"`
}

// A ModeColumn is one figure of a mode's table.
type ModeColumn struct {
	// Key is the figure's key in ModeFigures.Values ("pair_us").
	Key string `json:"key"`
	// Head is the column's heading, Unit the line under it ("us").
	Head string `json:"head"`
	Unit string `json:"unit,omitempty"`
}

// ModeFigures are what a mode of a ModeTable measured in one case.
type ModeFigures struct {
	// Values are its figures by key (ModeColumn.Key).
	Values map[string]float64 `json:"values,omitempty"`
	// Note says why the mode did not time the case.
	Note string `json:"note,omitempty"`
}

// writeModeTables writes, for each table the header declares, a row per
// timed case with the mode's figures (the case's time first), then the
// cases the mode did not time, with why, once per variant and reason.
// Nothing for a mode without figures or notes. Its rows start with # like
// the rest that is not an nccl-tests data row.
func writeModeTables(w *bufio.Writer, r *Report) {
	for _, t := range r.Header.ModeTables {
		var rows, notes []*Case
		for i := range r.Cases {
			c := &r.Cases[i]
			switch f := c.Modes[t.Name]; {
			case len(f.Values) > 0 && c.TimeUS > 0:
				rows = append(rows, c)
			case f.Note != "":
				notes = append(notes, c)
			}
		}
		if len(rows) == 0 && len(notes) == 0 {
			continue
		}
		fmt.Fprintf(w, "#\n# %s: %s; %s over ranks\n", t.Name, t.Title, aggWord(aggName(&r.Header)))
		var head, unit strings.Builder
		fmt.Fprintf(&head, "# %-16s %10s %6s %6s %-18s %10s", "variant", "size", "type", "redop", "mode", "time")
		fmt.Fprintf(&unit, "# %-16s %10s %6s %6s %-18s %10s", "", "(B)", "", "", "", "(us)")
		for _, col := range t.Columns {
			n := columnWidth(col)
			fmt.Fprintf(&head, " %*s", n, col.Head)
			u := ""
			if col.Unit != "" {
				u = "(" + col.Unit + ")"
			}
			fmt.Fprintf(&unit, " %*s", n, u)
		}
		fmt.Fprintln(w, strings.TrimRight(head.String(), " "))
		fmt.Fprintln(w, strings.TrimRight(unit.String(), " "))
		for _, c := range rows {
			fmt.Fprintf(w, "# %-16s %10d %6s %6s %-18s %10.2f", c.Variant, c.Bytes, c.DType, c.Op, c.Mode, c.TimeUS)
			for _, col := range t.Columns {
				if v, ok := c.Modes[t.Name].Values[col.Key]; ok {
					fmt.Fprintf(w, " %*.2f", columnWidth(col), v)
				} else {
					fmt.Fprintf(w, " %*s", columnWidth(col), "-")
				}
			}
			fmt.Fprintln(w)
		}
		seen := map[string]bool{}
		for _, c := range notes {
			if k := c.Variant + ": " + c.Modes[t.Name].Note; !seen[k] {
				seen[k] = true
				fmt.Fprintf(w, "# not timed by %s: %s\n", t.Name, k)
			}
		}
	}
}

// columnWidth is a mode column's width: 10, or its heading's.
func columnWidth(col ModeColumn) int {
	return max(10, len(col.Head), len(col.Unit)+2)
}
