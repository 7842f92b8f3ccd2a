package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Launch kinds, the last word of a mode unless an offset follows.
const (
	launchPlain = "plain"
	launchGraph = "graph"
)

// column is one right-aligned column of the benchmark tables.

// The per-variant block of the benchmark table keeps nccl-tests'
// all_reduce_perf columns (size, count, type, redop, then time, algbw,
// busbw, #wrong per group); where nccl-tests puts its out-of-place and
// in-place groups side by side, artest puts plain launches and CUDA graph
// replays, and the root column is the rest of the mode (oop-reg).
var (
	benchKeyColumns = []column{
		{"size", "(B)", 12},
		{"count", "(elements)", 12},
		{"type", "", 6},
		{"redop", "", 6},
		{"mode", "", 12}, // fits oop-stg-off3
	}
	benchGroupColumns = []column{
		{"time", "(us)", 9},
		{"algbw", "(GB/s)", 8},
		{"busbw", "(GB/s)", 8},
		{"#wrong", "", 7},
	}
)

// modeSections write the tables of the timing modes a bench run may have
// (pdl.go, pdlchain.go, overlap.go), in the order the modes time a case,
// then those the header declares for the modes without fields of their
// own (modes.go); each writes nothing for a run without its mode.
var modeSections = []func(w *bufio.Writer, r *Report){
	writePDLGain,
	writePDLChain,
	writeOverlap,
	writeModeTables,
}

// WriteBenchTable writes what `artest bench` prints: the run's header and
// how times were taken, one block per variant with a row per dtype, op,
// mode and size and a column group per launch kind, then one comparison
// block per dtype, op, mode and launch kind with every variant's time per
// size, NCCL's, the fastest artest variant and its speed-up over NCCL,
// then one fieldbest block per dtype, op, mode and launch kind with each
// own variant's gain over the fastest NCCL mode or plugin variant
// (benchfield.go), and the verdict counts. As in the test table, every line but the data rows
// starts with '#'.
func WriteBenchTable(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	writeTableHeader(bw, &r.Header)
	writeBenchMethod(bw, &r.Header)
	launches := benchLaunches(r.Cases)
	for _, block := range variantBlocks(r.Cases) {
		writeBenchBlock(bw, block, launches)
	}
	writeComparison(bw, r)
	writeFieldBest(bw, r)
	for _, write := range modeSections {
		write(bw, r)
	}
	writeTableSummary(bw, r)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write bench table: %w", err)
	}
	return nil
}

// aggName is the header's aggregation, the default for reports that
// predate --agg.
func aggName(h *Header) string {
	if h.Agg == "" {
		return string(DefaultAgg)
	}
	return h.Agg
}

func writeBenchMethod(w *bufio.Writer, h *Header) {
	reps := "repetitions"
	if h.Reps > 0 {
		reps = fmt.Sprintf("%d %s", h.Reps, plural(h.Reps, "repetition", "repetitions"))
	}
	fmt.Fprintf(w, "# bench: time is per call, the median over %s of %d back-to-back %s after %d warm-up %s;\n",
		reps, h.Iters, plural(h.Iters, "call", "calls"), h.Warmup, plural(h.Warmup, "call", "calls"))
	fmt.Fprintf(w, "#   each repetition's time is the %s over ranks (--agg %s); every case is checked once before timing (#wrong)\n", aggWord(aggName(h)), aggName(h))
	if h.Backend == "host" {
		fmt.Fprintln(w, "# host backend: these times measure Go models of the kernels on CPU cores and say nothing about GPUs")
	}
	writePeerCopy(w, h)
}

// writePeerCopy says what the links carried when every rank copied into
// its right neighbour at once: a reference for the busbw below. Nothing on
// the host backend, which has no links.
func writePeerCopy(w *bufio.Writer, h *Header) {
	switch {
	case h.PeerCopy != nil:
		p := h.PeerCopy
		fmt.Fprintf(w, "# links: every rank copying %d MiB into its right neighbour's memory at once, %d times after one of warm-up: copy engine %.0f to %.0f GB/s per rank",
			p.Bytes>>20, p.Reps, p.MinGBps, p.MaxGBps)
		if p.SMMaxGBps > 0 {
			fmt.Fprintf(w, ", a kernel (artest_copy) %.0f to %.0f GB/s", p.SMMinGBps, p.SMMaxGBps)
		}
		if p.SMReadMaxGBps > 0 {
			fmt.Fprintf(w, "; the kernel reading the neighbour's memory into its own %.0f to %.0f GB/s", p.SMReadMinGBps, p.SMReadMaxGBps)
		}
		fmt.Fprintln(w)
		if h.PeerCopyNote != "" {
			fmt.Fprintf(w, "#   %s\n", h.PeerCopyNote)
		}
	case h.PeerCopyNote != "" && h.Backend != "host":
		fmt.Fprintf(w, "# links: not measured: %s\n", h.PeerCopyNote)
	}
}

func aggWord(agg string) string {
	switch Agg(agg) {
	case AggAvg:
		return "average"
	case AggMin:
		return "minimum"
	case AggMax:
		return "maximum"
	}
	return agg
}

// splitMode cuts a mode like "oop-reg-graph-off1" into its launch kind
// ("graph") and the rest ("oop-reg-off1"). A mode without a launch word
// counts as plain.
func splitMode(mode string) (rest, launch string) {
	words := strings.Split(mode, "-")
	kept := words[:0:0]
	launch = launchPlain
	for _, w := range words {
		switch w {
		case launchPlain, launchGraph:
			launch = w
		default:
			kept = append(kept, w)
		}
	}
	return strings.Join(kept, "-"), launch
}

// benchLaunches are the launch kinds any case has, plain first.
func benchLaunches(cs []Case) []string {
	has := map[string]bool{}
	for i := range cs {
		_, l := splitMode(cs[i].Mode)
		has[l] = true
	}
	var out []string
	for _, l := range []string{launchPlain, launchGraph} {
		if has[l] {
			out = append(out, l)
		}
	}
	return out
}

// benchRowKey identifies a row: everything of a case but variant and
// launch kind.
type benchRowKey struct {
	dtype, op, mode string
	bytes           int64
}

type benchRow struct {
	key   benchRowKey
	count int64
	cells map[string]*Case // by launch kind
}

// benchRows groups cases into rows in the order rows first appear.
func benchRows(cases []*Case) []*benchRow {
	index := map[benchRowKey]*benchRow{}
	var rows []*benchRow
	for _, c := range cases {
		rest, launch := splitMode(c.Mode)
		k := benchRowKey{c.DType, c.Op, rest, c.Bytes}
		row, ok := index[k]
		if !ok {
			row = &benchRow{key: k, count: c.Count, cells: map[string]*Case{}}
			index[k] = row
			rows = append(rows, row)
		}
		row.cells[launch] = c
	}
	return rows
}

func writeBenchBlock(w *bufio.Writer, block []*Case, launches []string) {
	writeVariantHeading(w, block)

	cols := append([]column{}, benchKeyColumns...)
	for range launches {
		cols = append(cols, benchGroupColumns...)
	}
	writeGroupTitles(w, launches)
	writeTitles(w, cols)

	// Skip reasons are listed once per block, after its rows.
	var reasons []string
	reasonCount := map[string]int{}
	for _, row := range benchRows(block) {
		cells := []string{
			strconv.FormatInt(row.key.bytes, 10),
			strconv.FormatInt(row.count, 10),
			orAbsent(row.key.dtype),
			orAbsent(row.key.op),
			orAbsent(row.key.mode),
		}
		var fails []string
		for _, l := range launches {
			c := row.cells[l]
			if c == nil || verdictOf(c) == Skipped {
				cells = append(cells, absent, absent, absent, absent)
				if c != nil {
					reason := skipReason(c)
					if reasonCount[reason] == 0 {
						reasons = append(reasons, reason)
					}
					reasonCount[reason]++
				}
				continue
			}
			cells = append(cells,
				positiveOrAbsent(c.TimeUS, benchGroupColumns[0].width, 2),
				positiveOrAbsent(c.AlgBW, benchGroupColumns[1].width, 2),
				positiveOrAbsent(c.BusBW, benchGroupColumns[2].width, 2),
				strconv.FormatUint(c.Wrong, 10))
			if verdictOf(c) == Fail {
				fails = append(fails, fmt.Sprintf("#   FAIL %s: %s", l, failureReason(c)))
			}
		}
		fmt.Fprintln(w, alignCells(cols, cells, 0))
		for _, f := range fails {
			fmt.Fprintln(w, f)
		}
	}
	for _, reason := range reasons {
		if n := reasonCount[reason]; n > 1 {
			fmt.Fprintf(w, "#   skipped, %d cases in this block: %s\n", n, reason)
		} else {
			fmt.Fprintf(w, "#   skipped: %s\n", reason)
		}
	}
}

// writeGroupTitles names each launch group over its columns, nccl-tests'
// "out-of-place / in-place" line.
func writeGroupTitles(w *bufio.Writer, launches []string) {
	keyWidth := 0
	for i, c := range benchKeyColumns {
		keyWidth += c.width
		if i > 0 {
			keyWidth += len(columnGap)
		}
	}
	groupWidth := 0
	for _, c := range benchGroupColumns {
		groupWidth += len(columnGap) + c.width
	}
	var b strings.Builder
	b.WriteString("#")
	b.WriteString(strings.Repeat(" ", keyWidth-1))
	for _, l := range launches {
		b.WriteString(centred(launchTitle(l), groupWidth))
	}
	fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
}

// centred pads s with spaces on both sides to width (left gets the odd one).
func centred(s string, width int) string {
	if len(s) >= width {
		return s
	}
	pad := width - len(s)
	return strings.Repeat(" ", pad-pad/2) + s + strings.Repeat(" ", pad/2)
}

// comparisonKey is one comparison block: the rows are sizes.
type comparisonKey struct {
	dtype, op, mode, launch string
}

// writeComparison writes, per dtype, op, mode and launch kind, one row per
// size with every variant's time, the fastest passing variant of artest's
// own and its speed-up over NCCL (NCCL's time / its time). Failed and
// skipped cases show no time and are never the fastest; neither are
// NCCL's modes nor plugins' variants, which are the field artest's
// variants are measured against (fieldbest.go). When more than one NCCL
// baseline (NCCLBaselines) ran, two more columns name NCCL's best mode at
// the size and the best own variant's speed-up over it.
func writeComparison(w *bufio.Writer, r *Report) {
	var variants []string
	seenVariant := map[string]bool{}
	hasBaseline := map[string]bool{}
	for i := range r.Cases {
		v := r.Cases[i].Variant
		if IsNCCLBaseline(v) {
			hasBaseline[v] = true
			continue
		}
		if !seenVariant[v] {
			seenVariant[v] = true
			variants = append(variants, v)
		}
	}
	if len(variants) == 0 {
		return
	}
	shown := append([]string{}, variants...)
	for _, v := range NCCLBaselines {
		if hasBaseline[v] {
			shown = append(shown, v)
		}
	}
	withBest := len(hasBaseline) > 1

	type block struct {
		key   comparisonKey
		sizes []int64
		times map[int64]map[string]float64 // size -> variant -> time of passing cases
	}
	index := map[comparisonKey]*block{}
	var blocks []*block
	for _, launch := range benchLaunches(r.Cases) {
		for i := range r.Cases {
			c := &r.Cases[i]
			rest, l := splitMode(c.Mode)
			if l != launch {
				continue
			}
			k := comparisonKey{c.DType, c.Op, rest, l}
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
			if verdictOf(c) == Pass && c.TimeUS > 0 {
				b.times[c.Bytes][c.Variant] = c.TimeUS
			}
		}
	}

	nameWidth := len("best")
	for _, v := range shown {
		nameWidth = max(nameWidth, len(v))
	}
	cols := []column{{"size", "(B)", 12}}
	for _, v := range shown {
		cols = append(cols, column{v, "(us)", max(9, len(v))})
	}
	cols = append(cols, column{"best", "", nameWidth}, column{"speedup", "(x)", 8})
	if withBest {
		cols = append(cols, column{"ncclbest", "", nameWidth}, column{"vsbest", "(x)", 8})
	}

	for _, b := range blocks {
		fmt.Fprintln(w, "#")
		fmt.Fprintf(w, "# comparison %s %s %s, %s: time per call (us), %s over ranks; best is the fastest artest variant, speedup its gain over nccl\n",
			orAbsent(b.key.dtype), orAbsent(b.key.op), orAbsent(b.key.mode), launchTitle(b.key.launch), aggName(&r.Header))
		if withBest {
			fmt.Fprintln(w, "#   ncclbest is NCCL's fastest mode at the size, vsbest the best artest variant's gain over it")
		}
		writeTitles(w, cols)
		for _, size := range b.sizes {
			times := b.times[size]
			cells := []string{strconv.FormatInt(size, 10)}
			best, bestUS := "", 0.0
			for _, v := range shown {
				t := times[v]
				cells = append(cells, positiveOrAbsent(t, max(9, len(v)), 2))
				if KindOf(&r.Header, v) == Own && t > 0 && (best == "" || t < bestUS) {
					best, bestUS = v, t
				}
			}
			speedup := 0.0
			if nccl := times[ncclVariant]; nccl > 0 && bestUS > 0 {
				speedup = nccl / bestUS
			}
			cells = append(cells, orAbsent(best), positiveOrAbsent(speedup, 8, 2))
			if withBest {
				ncclBest, ncclUS := BestNCCL(times)
				vsBest := 0.0
				if ncclUS > 0 && bestUS > 0 {
					vsBest = ncclUS / bestUS
				}
				cells = append(cells, orAbsent(ncclBest), positiveOrAbsent(vsBest, 8, 2))
			}
			fmt.Fprintln(w, alignCells(cols, cells, 0))
		}
	}
}

// ncclVariant is the baseline's variant name.
const ncclVariant = "nccl"

// NCCLBaselines are the variants that time ncclAllReduce itself, one per
// way of passing the buffers: plain, registered (ncclCommRegister) and on a
// symmetric window. NCCL's best mode at a size is the fastest of them.
var NCCLBaselines = []string{ncclVariant, "nccl-reg", "nccl-win"}

// BestNCCL is the fastest NCCL baseline among times (variant -> time of a
// passing case; absent or 0: did not run) and its time; "", 0 when none
// ran. Ties go to the earlier of NCCLBaselines.
func BestNCCL(times map[string]float64) (string, float64) {
	best, bestUS := "", 0.0
	for _, v := range NCCLBaselines {
		if t := times[v]; t > 0 && (best == "" || t < bestUS) {
			best, bestUS = v, t
		}
	}
	return best, bestUS
}

// IsNCCLBaseline says whether variant is one of NCCLBaselines.
func IsNCCLBaseline(variant string) bool {
	for _, v := range NCCLBaselines {
		if v == variant {
			return true
		}
	}
	return false
}

func launchTitle(l string) string {
	if l == launchGraph {
		return "CUDA graph replays"
	}
	return "plain launches"
}
