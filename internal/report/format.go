package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/artest/artest/reference"
)

// failureReason is the one-line reason a failed case reports: its Reason,
// else the first rank failure. A verdict nobody classified says so, because
// the writers report it as a failure.
func failureReason(c *Case) string {
	reason := firstLine(c.Reason)
	if reason == "" && len(c.Failures) > 0 {
		reason = rankFailureLine(&c.Failures[0])
		if more := len(c.Failures) - 1; more > 0 {
			reason += fmt.Sprintf(" (and %d more %s)", more, plural(more, "rank", "ranks"))
		}
	}
	if c.Verdict != Fail && c.Verdict != Hung {
		unknown := fmt.Sprintf("unknown verdict %q", string(c.Verdict))
		if reason == "" {
			return unknown
		}
		return unknown + ": " + reason
	}
	if reason == "" {
		return "no reason given"
	}
	return reason
}

// skipReason never comes back empty: a skip without a reason is a bug in the
// caller, and the report should show that rather than a blank.
func skipReason(c *Case) string {
	if r := firstLine(c.Reason); r != "" {
		return r
	}
	return "no reason given"
}

// rankFailureLine is one rank's failure on one line, its first mismatch
// included, for the table and the head of the JUnit details.
func rankFailureLine(f *RankFailure) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rank %d", f.Rank)
	if f.Kind != "" {
		b.WriteString(" " + f.Kind)
	}
	if f.Wrong > 0 {
		fmt.Fprintf(&b, ", %d wrong", f.Wrong)
	}
	if f.WorstULP != 0 {
		fmt.Fprintf(&b, ", worst %s ulp", formatFloat(f.WorstULP))
	}
	if d := firstLine(f.Detail); d != "" {
		b.WriteString(": " + d)
	}
	return b.String()
}

// mismatchLine shows value and bits of got and want: a NaN or a poison
// pattern is only recognisable from its bits.
func mismatchLine(m *Mismatch, dtype string) string {
	s := fmt.Sprintf("index %d: %s", m.Index, gotWant(m, dtype))
	if m.ULP != 0 {
		s += fmt.Sprintf(", %s ulp", formatFloat(m.ULP))
	}
	if m.Iter != 0 {
		s += fmt.Sprintf(", stress iteration %d", m.Iter)
	}
	return s
}

// gotWant is "got V (BITS) want V (BITS)"; for special inputs, with zeros
// signed, what else was right, and the element's inputs on every rank:
// "got +0 (0x0000) want -0 (0x8000); inputs: rank 0 -0 (0x8000), rank 1 -0 (0x8000)".
func gotWant(m *Mismatch, dtype string) string {
	d, err := reference.ParseDType(dtype)
	if m.Inputs == nil || err != nil {
		return fmt.Sprintf("got %s (%s) want %s (%s)",
			formatFloat(m.Got), formatBits(m.GotBits, dtype), formatFloat(m.Want), formatBits(m.WantBits, dtype))
	}
	want := m.Accept
	if want == "" {
		want = d.Describe(m.WantBits)
	}
	return fmt.Sprintf("got %s want %s; inputs: %s", d.Describe(m.GotBits), want, reference.DescribeInputs(d, m.Inputs))
}

// formatBits prints an element's bits at the width of its dtype.
func formatBits(bits uint32, dtype string) string {
	switch dtype {
	case "f32":
		return fmt.Sprintf("0x%08x", bits)
	case "f16", "bf16":
		return fmt.Sprintf("0x%04x", bits)
	}
	return fmt.Sprintf("%#x", bits)
}

// formatFloat is the shortest text that reads back as the same float64.
func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// fitNumber prints v with at most maxDecimals decimals, dropping decimals
// until it fits width, the way nccl-tests keeps large times in their column.
// A number too large even without decimals is printed whole and pushes the
// row out of line rather than losing digits.
func fitNumber(v float64, width, maxDecimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return formatFloat(v)
	}
	s := ""
	for d := maxDecimals; d >= 0; d-- {
		s = strconv.FormatFloat(v, 'f', d, 64)
		if len(s) <= width {
			break
		}
	}
	return s
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// hostsLine summarises the per-rank host list: "node1 (ranks 0-3), node2
// (ranks 4-7)", hosts in the order their first rank appears.
func hostsLine(hosts []string) string {
	if len(hosts) == 0 {
		return "no hosts reported"
	}
	var order []string
	ranks := map[string][]int{}
	for r, h := range hosts {
		if _, ok := ranks[h]; !ok {
			order = append(order, h)
		}
		ranks[h] = append(ranks[h], r)
	}
	parts := make([]string, len(order))
	for i, h := range order {
		name := h
		if name == "" {
			name = "(unnamed)"
		}
		rs := ranks[h]
		parts[i] = fmt.Sprintf("%s (%s %s)", name, plural(len(rs), "rank", "ranks"), rankRanges(rs))
	}
	return fmt.Sprintf("%d %s: %s", len(order), plural(len(order), "host", "hosts"), strings.Join(parts, ", "))
}

// rankRanges writes ascending ranks as ranges: 0-3,6.
func rankRanges(ranks []int) string {
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(ranks[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// ShellCommand quotes args for a POSIX shell so the printed command can be
// pasted back to reproduce the run.
func ShellCommand(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
		return ansiCQuote(s)
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ansiCQuote quotes s as bash's $'...', which writes a line break or another
// control character as an escape: the command stays on one line, and
// bash, zsh and ksh read it back as s.
func ansiCQuote(s string) string {
	var b strings.Builder
	b.WriteString("$'")
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '\'':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// sortedKeys gives map keys in a stable order for the writers.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
