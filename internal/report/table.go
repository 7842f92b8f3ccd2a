package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// column is one fixed-width, right-aligned column of the table.
type column struct {
	title, unit string
	width       int
}

// The columns follow nccl-tests' all_reduce_perf (size and count as plain
// integers, so scripts that parse nccl-tests output keep working; the case ID
// on failure and skip lines carries the human-readable size), with the root
// column replaced by mode and the NCCL time and speed-up of the same case
// appended.
var tableColumns = []column{
	{"size", "(B)", 12},
	{"count", "(elements)", 12},
	{"type", "", 6},
	{"redop", "", 6},
	{"mode", "", 18}, // fits oop-reg-plain-off3
	{"time", "(us)", 9},
	{"algbw", "(GB/s)", 8},
	{"busbw", "(GB/s)", 8},
	{"#wrong", "", 7},
	{"nccl", "(us)", 9},
	{"speedup", "(x)", 8},
	{"verdict", "", 8},
}

const (
	columnGap = "  "
	absent    = "-"
	// maxTableRanks bounds the per-rank lines under a failed row; the JSON
	// and JUnit reports carry all of them.
	maxTableRanks = 4
)

// WriteTable writes the human table rank 0 prints: an environment header,
// one block per variant (in the order variants first appear in r.Cases) with
// one row per case, then the verdict counts and one line per failed case.
// Everything but the case rows starts with '#', as in nccl-tests, so
// `grep -v '^#'` leaves only numbers. Counts come from the cases themselves,
// not r.Summary, so the table cannot disagree with its own rows.
func WriteTable(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	writeTableHeader(bw, &r.Header)
	for _, block := range variantBlocks(r.Cases) {
		writeVariantBlock(bw, block, r.JSONPath != "")
	}
	writeTableSummary(bw, r)
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

func writeTableHeader(w *bufio.Writer, h *Header) {
	tool := h.Tool
	if tool == "" {
		tool = "artest"
	}
	version := h.Version
	if version == "" {
		version = "(unknown version)"
	}
	line := fmt.Sprintf("# %s %s", tool, version)
	if h.GitRevision != "" {
		line += ", revision " + h.GitRevision
	}
	fmt.Fprintln(w, line)
	if len(h.Command) > 0 {
		fmt.Fprintf(w, "# command: %s\n", ShellCommand(h.Command))
	}
	if !h.Start.IsZero() {
		fmt.Fprintf(w, "# start: %s\n", h.Start.Format("2006-01-02T15:04:05Z07:00"))
	}
	backend := h.Backend
	if backend == "" {
		backend = "(unknown)"
	}
	fmt.Fprintf(w, "# backend %s, %d %s on %s\n", backend, h.Ranks, plural(h.Ranks, "rank", "ranks"), hostsLine(h.Hosts))
	for _, p := range h.Plugins {
		fmt.Fprintf(w, "# plugin %s: %s (sha256 %s): %s\n", p.Name, p.Path, p.SHA256, p.ChecksLine())
	}
	if h.SharedGPUs != "" {
		fmt.Fprintf(w, "# SHARED GPUs: %s; protocol coverage only, the times below mean nothing\n", h.SharedGPUs)
	}
	if len(h.Devices) == 0 {
		fmt.Fprintln(w, "# devices: none reported")
	} else {
		fmt.Fprintln(w, "# devices:")
		for i, d := range h.Devices {
			fmt.Fprintf(w, "#   %d: %s\n", i, d)
		}
	}
	input := h.Input
	if input == "" {
		input = "(unknown)"
	}
	run := fmt.Sprintf("# seed %d, input %s, iters %d, warmup %d", h.Seed, input, h.Iters, h.Warmup)
	if h.Stress > 0 {
		run += fmt.Sprintf(", stress %d", h.Stress)
		if h.Schedules != "" {
			run += fmt.Sprintf(", schedules %s", h.Schedules)
		}
		if h.ScheduleNote != "" {
			run += fmt.Sprintf(" (%s)", h.ScheduleNote)
		}
		if h.Checker != "" {
			run += fmt.Sprintf(", checked on the %s", h.Checker)
		}
		if h.CheckerNote != "" {
			run += fmt.Sprintf(" (%s)", h.CheckerNote)
		}
	}
	fmt.Fprintln(w, run)
	if len(h.Inject) == 0 {
		fmt.Fprintln(w, "# injected faults: none")
	} else {
		fmt.Fprintf(w, "# injected faults: %s\n", strings.Join(h.Inject, ", "))
	}
	if len(h.Versions) > 0 {
		parts := make([]string, 0, len(h.Versions))
		for _, k := range sortedKeys(h.Versions) {
			parts = append(parts, k+"="+h.Versions[k])
		}
		fmt.Fprintf(w, "# versions: %s\n", strings.Join(parts, ", "))
	}
}

// writeVariantHeading opens one variant's block with its tally.
func writeVariantHeading(w *bufio.Writer, block []*Case) {
	pass, fail, skipped := 0, 0, 0
	for _, c := range block {
		switch verdictOf(c) {
		case Pass:
			pass++
		case Skipped:
			skipped++
		default:
			fail++
		}
	}
	fmt.Fprintln(w, "#")
	fmt.Fprintf(w, "# variant %s: %d %s, pass %d, FAIL %d, skipped %d\n",
		block[0].Variant, len(block), plural(len(block), "case", "cases"), pass, fail, skipped)
}

func writeVariantBlock(w *bufio.Writer, block []*Case, jsonReport bool) {
	writeVariantHeading(w, block)
	writeTitles(w, tableColumns)

	// A skip reason is printed once per block, under its first row, with the
	// number of rows it covers; when a block has several reasons, rows carry
	// the number of theirs.
	skipCount := map[string]int{}
	skipTag := map[string]int{}
	for _, c := range block {
		if verdictOf(c) != Skipped {
			continue
		}
		reason := skipReason(c)
		if _, ok := skipTag[reason]; !ok {
			skipTag[reason] = len(skipTag) + 1
		}
		skipCount[reason]++
	}
	tagged := len(skipTag) > 1
	explained := map[string]bool{}

	for _, c := range block {
		verdict := verdictOf(c)
		row := tableRow(c, verdict)
		switch verdict {
		case Skipped:
			reason := skipReason(c)
			tag := ""
			if tagged {
				tag = fmt.Sprintf(" [%d]", skipTag[reason])
				row += tag
			}
			fmt.Fprintln(w, row)
			if explained[reason] {
				continue
			}
			explained[reason] = true
			if n := skipCount[reason]; n > 1 {
				fmt.Fprintf(w, "#   skipped%s, %d cases in this block: %s\n", tag, n, reason)
			} else {
				fmt.Fprintf(w, "#   skipped%s: %s\n", tag, reason)
			}
		case Fail:
			fmt.Fprintln(w, row)
			fmt.Fprintf(w, "#   FAIL: %s\n", failureReason(c))
			if derivedFromOnlyFailure(c) {
				continue
			}
			for i := range c.Failures {
				if i == maxTableRanks {
					more := len(c.Failures) - maxTableRanks
					where := "--json FILE writes them all"
					if jsonReport {
						where = "see the JSON report"
					}
					fmt.Fprintf(w, "#     and %d more failing %s (%s)\n", more, plural(more, "rank", "ranks"), where)
					break
				}
				f := &c.Failures[i]
				line := rankFailureLine(f)
				if len(f.Mismatches) > 0 {
					line += "; first " + mismatchLine(&f.Mismatches[0], c.DType)
				}
				fmt.Fprintf(w, "#     %s\n", line)
			}
		default:
			fmt.Fprintln(w, row)
		}
	}
}

func writeTitles(w *bufio.Writer, cols []column) {
	titles := make([]string, len(cols))
	units := make([]string, len(cols))
	for i, c := range cols {
		titles[i], units[i] = c.title, c.unit
	}
	fmt.Fprintln(w, "#"+strings.TrimRight(alignCells(cols, titles, 1), " "))
	fmt.Fprintln(w, "#"+strings.TrimRight(alignCells(cols, units, 1), " "))
}

// alignCells right-aligns cells in cols; the first column is narrowed by
// shift so that a leading '#' keeps comment lines aligned.
func alignCells(cols []column, cells []string, shift int) string {
	var b strings.Builder
	for i, cell := range cells {
		width := cols[i].width
		if i == 0 {
			width -= shift
		} else {
			b.WriteString(columnGap)
		}
		fmt.Fprintf(&b, "%*s", width, cell)
	}
	return b.String()
}

func tableRow(c *Case, verdict Verdict) string {
	cells := []string{
		strconv.FormatInt(c.Bytes, 10),
		strconv.FormatInt(c.Count, 10),
		orAbsent(c.DType),
		orAbsent(c.Op),
		orAbsent(c.Mode),
		positiveOrAbsent(c.TimeUS, tableColumns[5].width, 2),
		positiveOrAbsent(c.AlgBW, tableColumns[6].width, 2),
		positiveOrAbsent(c.BusBW, tableColumns[7].width, 2),
		absent,
		positiveOrAbsent(c.NCCLTimeUS, tableColumns[9].width, 2),
		positiveOrAbsent(c.Speedup, tableColumns[10].width, 2),
		string(verdict),
	}
	if c.Verdict == Hung {
		cells[11] = string(Hung)
	}
	if verdict != Skipped {
		cells[8] = strconv.FormatUint(c.Wrong, 10)
	}
	return alignCells(tableColumns, cells, 0)
}

func orAbsent(s string) string {
	if s == "" {
		return absent
	}
	return s
}

// positiveOrAbsent prints a measured quantity; zero means "not measured" in
// the model (untimed case, NCCL not run), so it prints as absent.
func positiveOrAbsent(v float64, width, decimals int) string {
	if v == 0 {
		return absent
	}
	return fitNumber(v, width, decimals)
}

func writeTableSummary(w *bufio.Writer, r *Report) {
	pass, fail, skipped := countVerdicts(r.Cases)
	fmt.Fprintln(w, "#")
	fmt.Fprintf(w, "# pass %d, FAIL %d, skipped %d\n", pass, fail, skipped)
	for i := range r.Cases {
		c := &r.Cases[i]
		if verdictOf(c) == Fail {
			fmt.Fprintf(w, "# FAIL %s: %s\n", c.ID, failureReason(c))
		}
	}
	if r.Summary.Error != "" {
		fmt.Fprintf(w, "# run stopped early: %s\n", firstLine(r.Summary.Error))
	}
	if r.Summary.ExitCode != 0 {
		fmt.Fprintf(w, "# exit code %d\n", r.Summary.ExitCode)
	}
}

// derivedFromOnlyFailure reports whether the FAIL line already said all
// there is: no Reason, so it was built from the only rank failure, which
// lists no mismatches.
func derivedFromOnlyFailure(c *Case) bool {
	return firstLine(c.Reason) == "" && len(c.Failures) == 1 && len(c.Failures[0].Mismatches) == 0
}
