package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteTableGolden(t *testing.T) {
	got := render(t, func(b *bytes.Buffer) error { return WriteTable(b, fixtureReport()) })
	checkGolden(t, "table.golden", got)
}

func TestWriteTableLayout(t *testing.T) {
	out := string(render(t, func(b *bytes.Buffer) error { return WriteTable(b, fixtureReport()) }))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")

	titleWidth := 0
	var rows []string
	var blocks []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "#") && strings.HasSuffix(l, "verdict"):
			titleWidth = len(l)
		case strings.HasPrefix(l, "# variant "):
			blocks = append(blocks, strings.SplitN(strings.TrimPrefix(l, "# variant "), ":", 2)[0])
		case !strings.HasPrefix(l, "#"):
			rows = append(rows, l)
		}
	}
	require.Equal(t, []string{"oneshot", "twoshot", "multimem", "nccl"}, blocks, "blocks in first-appearance order")
	require.Len(t, rows, len(fixtureReport().Cases), "one row per case")
	for _, row := range rows {
		// The verdict column ends where its title ends; only skip tags may
		// follow it.
		row, _, _ = strings.Cut(row, " [")
		require.Len(t, row, titleWidth, "row %q out of line with the titles", row)
	}
}

func TestWriteTableExplainsEachSkipReasonOncePerBlock(t *testing.T) {
	out := string(render(t, func(b *bytes.Buffer) error { return WriteTable(b, fixtureReport()) }))
	tests := []struct {
		reason string
		line   string
	}{
		{"multimem needs --multimem", "#   skipped, 3 cases in this block: multimem needs --multimem or ARTEST_MULTIMEM=1 (multicast objects are off by default)"},
		{"oneshot needs a multiple of 16 bytes", "#   skipped [1], 2 cases in this block: oneshot needs a multiple of 16 bytes"},
		{"CUDA graphs need the cuda backend", "#   skipped [2]: CUDA graphs need the cuda backend"},
		{"twoshot needs at least one element per rank", "#   skipped: twoshot needs at least one element per rank"},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			require.Equal(t, 1, strings.Count(out, tt.reason))
			require.Contains(t, out, tt.line+"\n")
		})
	}
}

func TestWriteTableFailures(t *testing.T) {
	out := string(render(t, func(b *bytes.Buffer) error { return WriteTable(b, fixtureReport()) }))
	for _, want := range []string{
		"# pass 4, FAIL 2, skipped 7\n",
		"# FAIL oneshot/f16/sum/4KiB/oop/np4: 5 wrong elements on ranks 1, 3 (skip-last injected)\n",
		"# FAIL twoshot/f32/min/1KiB/oop/np4: rank 2 guard: 4 guard bytes after the output changed\n",
		"#     rank 1 mismatch, 1 wrong, worst +Inf ulp: last element not written; first index 2047: got NaN (0x7e00) want 10 (0x4900), +Inf ulp\n",
		"# exit code 1\n",
	} {
		require.Contains(t, out, want)
	}
}

func TestWriteTableCapsRankLines(t *testing.T) {
	for _, tc := range []struct {
		name, jsonPath, want string
	}{
		{"without --json", "", "#     and 4 more failing ranks (--json FILE writes them all)\n"},
		{"with --json", "run.json", "#     and 4 more failing ranks (see the JSON report)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Header: Header{Ranks: 8}, Cases: []Case{{ID: "x", Variant: "oneshot", Verdict: Fail, Reason: "all wrong"}}, JSONPath: tc.jsonPath}
			for rank := range 8 {
				r.Cases[0].Failures = append(r.Cases[0].Failures, RankFailure{Rank: rank, Kind: "mismatch", Wrong: 1})
			}
			out := string(render(t, func(b *bytes.Buffer) error { return WriteTable(b, r) }))
			require.Equal(t, maxTableRanks, strings.Count(out, " mismatch, 1 wrong"))
			require.Contains(t, out, tc.want)
		})
	}
}

func TestWriteTableRunError(t *testing.T) {
	r := &Report{Summary: Summary{ExitCode: 3, Error: "watchdog: rank 2 stuck in the end barrier\nmore"}}
	out := string(render(t, func(b *bytes.Buffer) error { return WriteTable(b, r) }))
	require.Contains(t, out, "# pass 0, FAIL 0, skipped 0\n# run stopped early: watchdog: rank 2 stuck in the end barrier\n# exit code 3\n")
}

func TestWriteTableUnknownVerdictIsAFailure(t *testing.T) {
	r := &Report{Cases: []Case{{ID: "odd", Variant: "oneshot", Verdict: "maybe"}}}
	out := string(render(t, func(b *bytes.Buffer) error { return WriteTable(b, r) }))
	require.Contains(t, out, "# FAIL odd: unknown verdict \"maybe\"\n")
	require.Contains(t, out, "# pass 0, FAIL 1, skipped 0\n")
}

func TestWriteTableReportsWriteErrors(t *testing.T) {
	require.Error(t, WriteTable(failingWriter{}, fixtureReport()))
}

// The header's plugin line says what each variant gets checked, grouping
// neighbours that agree.
func TestPluginChecksLine(t *testing.T) {
	const with, without = "trace check, device deadlines", "no trace check, host watchdog only"
	for _, tc := range []struct {
		name string
		p    Plugin
		want string
	}{
		{"one variant", Plugin{Variants: []string{"ex:a"}, Checks: with, VariantChecks: []string{with}}, "ex:a: " + with},
		{"all agree", Plugin{Variants: []string{"ex:a", "ex:b"}, Checks: without, VariantChecks: []string{without, without}},
			"ex:a, ex:b: " + without},
		{"mixed", Plugin{Variants: []string{"ex:a", "ex:b", "ex:c"}, Checks: "per variant",
			VariantChecks: []string{with, with, without}}, "ex:a, ex:b: " + with + "; ex:c: " + without},
		{"a report without variant_checks", Plugin{Variants: []string{"ex:a", "ex:b"}, Checks: without},
			"ex:a, ex:b: " + without},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.p.ChecksLine())
			r := fixtureReport()
			r.Header.Plugins = []Plugin{tc.p}
			r.Header.Plugins[0].Name, r.Header.Plugins[0].Path, r.Header.Plugins[0].SHA256 = "ex", "/p/ex.so", "abc"
			out := string(render(t, func(b *bytes.Buffer) error { return WriteTable(b, r) }))
			require.Contains(t, out, "# plugin ex: /p/ex.so (sha256 abc): "+tc.want+"\n")
		})
	}
}
