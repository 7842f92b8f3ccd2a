package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
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
