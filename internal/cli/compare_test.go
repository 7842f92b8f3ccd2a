package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/repro"
)

// compareRun is one in-process `artest compare`: its exit code, stdout and
// stderr.
func compareRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Compare(args, &out, &errb)
	return code, out.String(), errb.String()
}

// requireOneLine checks the usage-error shape: one line on stderr, from
// artest compare, nothing on stdout.
func requireOneLine(t *testing.T, stdout, stderr string) {
	t.Helper()
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	require.True(t, strings.HasPrefix(stderr, "artest compare: "), stderr)
	require.Empty(t, stdout)
}

// A threshold that is NaN or infinite compares false with everything, so
// it would turn the gate off: a 10x slowdown would pass. Each is refused.
func TestCompareRefusesNonFiniteThresholds(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	slow := filepath.Join(dir, "slow.json")
	for path, us := range map[string]float64{base: 10, slow: 100} {
		alg := report.AlgbwGBps(4<<10, us)
		writeReport(t, path, &report.Report{Header: report.Header{Tool: "artest", Ranks: 2, Backend: "host"}, Cases: []report.Case{{
			ID: "oneshot/bf16/sum/4KiB/oop-reg-plain/np2", Variant: "oneshot", Bytes: 4 << 10, Ranks: 2, Verdict: report.Pass,
			TimeUS: us, AlgBW: alg, BusBW: report.Busbw(alg, 2)}}})
	}
	code, out, _ := compareRun(t, base, slow)
	require.Equal(t, 1, code, "10x slower fails the gate:\n%s", out)

	tests := []struct{ flag, value, stderr string }{
		{"--max-slowdown-small", "nan", "--max-slowdown-small NaN: want a finite number"},
		{"--max-slowdown-small", "NaN", "--max-slowdown-small NaN: want a finite number"},
		{"--max-slowdown-small", "inf", "--max-slowdown-small +Inf: want a finite number"},
		{"--max-slowdown-small", "+Inf", "--max-slowdown-small +Inf: want a finite number"},
		{"--max-slowdown-small", "-Inf", "--max-slowdown-small -Inf: want a finite number"},
		{"--max-bw-drop", "nan", "--max-bw-drop NaN: want a finite number"},
		{"--max-bw-drop", "Infinity", "--max-bw-drop +Inf: want a finite number"},
		{"--max-bw-drop", "-inf", "--max-bw-drop -Inf: want a finite number"},
		{"--alpha", "nan", "--alpha NaN: want a finite number"},
		{"--alpha", "+inf", "--alpha +Inf: want a finite number"},
		{"--alpha", "-Inf", "--alpha -Inf: want a finite number"},
	}
	for _, tt := range tests {
		t.Run(tt.flag+"="+tt.value, func(t *testing.T) {
			code, out, errs := compareRun(t, base, slow, tt.flag, tt.value)
			require.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", out, errs)
			requireOneLine(t, out, errs)
			require.Contains(t, errs, tt.stderr)
		})
	}
}

// Inputs that are not a report of reasonable size are refused with one
// line before anything is read: /dev/zero used to be read until memory ran
// out, a FIFO waited for a writer forever, and a repro bundle (whose
// "header" looks like a report's) read as a report without cases.
func TestCompareRefusesWhatIsNotAReport(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	writeReport(t, base, &report.Report{Header: report.Header{Tool: "artest", Ranks: 2, Backend: "host"},
		Cases: []report.Case{{ID: "oneshot/bf16/sum/4KiB/oop-reg-plain/np2", Bytes: 4 << 10, Verdict: report.Pass, TimeUS: 10}}})

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(report.MaxReportBytes+1)) // sparse: no disk, no time
	require.NoError(t, f.Close())

	bundle := filepath.Join(dir, "bundle.json")
	b, err := json.MarshalIndent(&repro.Bundle{Format: repro.FormatVersion, Case: "oneshot/bf16/sum/4KiB/oop-reg-plain/np2", Ranks: 2,
		Args: []string{"--case", "oneshot/bf16/sum/4KiB/oop-reg-plain/np2"}, Header: report.Header{Tool: "artest", Ranks: 2},
		Result: report.Case{ID: "oneshot/bf16/sum/4KiB/oop-reg-plain/np2", Verdict: report.Fail}}, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bundle, b, 0o644))
	compactBundle := filepath.Join(dir, "compact-bundle.json")
	b, err = json.Marshal(&repro.Bundle{Format: repro.FormatVersion, Case: "x", Args: []string{"--case", "x"}, Header: report.Header{Tool: "artest"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(compactBundle, b, 0o644))
	// A header and no cases or summary: another tool's file that happens
	// to hold an artest header. (On one line and alone, a header is the
	// JSON Lines stream of a run that stopped before its first case.)
	headerOnly := filepath.Join(dir, "header-only.json")
	require.NoError(t, os.WriteFile(headerOnly, []byte("{\n  \"header\": {\"tool\": \"artest\", \"ranks\": 2},\n  \"note\": 1\n}\n"), 0o644))
	headerOnlyLine := filepath.Join(dir, "header-only-line.json")
	require.NoError(t, os.WriteFile(headerOnlyLine, []byte(`{"header": {"tool": "artest", "ranks": 2}, "note": 1}`), 0o644))

	tests := []struct {
		name     string
		old, new string
		stderr   string
	}{
		{"/dev/zero", "/dev/zero", "/dev/zero", "artest compare: /dev/zero: not a regular file (a character device); want the --json or --jsonl file of an artest run\n"},
		{"a directory", base, dir, ": not a regular file (a directory)"},
		{"a FIFO", fifo, base, "fifo: not a regular file (a FIFO)"},
		{"too large", base, huge, "huge.json: 536870913 bytes, larger than such a file can be (at most 536870912)"},
		{"a repro bundle as OLD", bundle, base, "artest compare: " + bundle + " is a repro bundle, not a report; rerun it with mpirun -np 2 artest --repro " + bundle + "\n"},
		{"a repro bundle as NEW", base, bundle, bundle + " is a repro bundle, not a report"},
		{"a repro bundle twice", bundle, bundle, bundle + " is a repro bundle, not a report"},
		{"a repro bundle on one line", compactBundle, base, compactBundle + " is a repro bundle, not a report; rerun it with artest --repro " + compactBundle + "\n"},
		{"a header without cases or summary", headerOnly, base, "header-only.json: not an artest report"},
		{"a header without cases or summary, on one line", base, headerOnlyLine, "header-only-line.json: not an artest report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := compareRun(t, tt.old, tt.new)
			require.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", out, errs)
			requireOneLine(t, out, errs)
			require.Contains(t, errs, tt.stderr)
		})
	}
}
