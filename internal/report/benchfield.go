package report

import (
	"bufio"
	"fmt"
	"strconv"
)

// writeFieldBest writes, after the comparison, one block per dtype, op,
// mode and launch kind with a row per size: the fieldbest there (the
// fastest passing NCCL mode or plugin variant, fieldbest.go), its time,
// and each own variant's gain over it (the fieldbest's time / the
// variant's, >1: faster). A size where no field entry passed shows "-" for
// the fieldbest and every gain; a variant that did not pass there shows
// "-" for its gain. Nothing for a run without field variants or without
// own variants.
func writeFieldBest(w *bufio.Writer, r *Report) {
	var own []string
	seen := map[string]bool{}
	hasField := false
	for i := range r.Cases {
		v := r.Cases[i].Variant
		if KindOf(&r.Header, v) != Own {
			hasField = true
			continue
		}
		if !seen[v] {
			seen[v] = true
			own = append(own, v)
		}
	}
	if !hasField || len(own) == 0 {
		return
	}
	bests := FieldBests(r)

	type block struct {
		key   comparisonKey
		sizes []int64
		times map[int64]map[string]float64 // size -> own variant -> time of passing cases
	}
	index := map[comparisonKey]*block{}
	var blocks []*block
	for _, launch := range benchLaunches(r.Cases) {
		for i := range r.Cases {
			c := &r.Cases[i]
			fk := FieldKeyOf(c)
			if fk.Launch != launch {
				continue
			}
			k := comparisonKey{c.DType, c.Op, fk.Mode, launch}
			b, ok := index[k]
			if !ok {
				b = &block{key: k, times: map[int64]map[string]float64{}}
				index[k] = b
				blocks = append(blocks, b)
			}
			if _, ok := b.times[c.Bytes]; !ok {
				b.times[c.Bytes] = map[string]float64{}
				b.sizes = append(b.sizes, c.Bytes)
			}
			if seen[c.Variant] && verdictOf(c) == Pass && c.TimeUS > 0 {
				b.times[c.Bytes][c.Variant] = c.TimeUS
			}
		}
	}

	nameWidth := len("fieldbest")
	for _, v := range fieldOrder(&r.Header) {
		nameWidth = max(nameWidth, len(v))
	}
	cols := []column{{"size", "(B)", 12}, {"fieldbest", "", nameWidth}, {"time", "(us)", 9}}
	for _, v := range own {
		cols = append(cols, column{v, "(x)", max(8, len(v))})
	}
	for _, b := range blocks {
		fmt.Fprintln(w, "#")
		fmt.Fprintf(w, "# fieldbest %s %s %s, %s: the fastest passing NCCL mode or plugin variant, its time per call (us), %s over ranks;\n",
			orAbsent(b.key.dtype), orAbsent(b.key.op), orAbsent(b.key.mode), launchTitle(b.key.launch), aggName(&r.Header))
		fmt.Fprintln(w, "#   then each artest variant's gain over it: fieldbest's time / the variant's (>1: the variant is faster)")
		writeTitles(w, cols)
		for _, size := range b.sizes {
			e, ok := bests[FieldKey{b.key.dtype, b.key.op, b.key.mode, b.key.launch, size}]
			cells := []string{strconv.FormatInt(size, 10), absent, absent}
			if ok {
				cells[1], cells[2] = e.Variant, positiveOrAbsent(e.TimeUS, cols[2].width, 2)
			}
			for i, v := range own {
				cells = append(cells, positiveOrAbsent(FieldGain(e, b.times[size][v]), cols[3+i].width, 2))
			}
			fmt.Fprintln(w, alignCells(cols, cells, 0))
		}
	}
}
