// Package ciscripts tests the Python helpers of ci/ on bad input: a missing
// file, a JSON Lines history where a JSON report belongs, or a file of the
// wrong kind gets one line naming the file and a non-zero exit, never a
// Python traceback or a silent exit 0.
package ciscripts

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBadInputIsOneLineAndNonZero(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not found: the ci/ helpers need it")
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	jsonl := filepath.Join(dir, "history.jsonl")
	require.NoError(t, os.WriteFile(jsonl, []byte(`{"run":"a","header":{}}`+"\n"+`{"run":"a","case":{}}`+"\n"), 0o644))
	notReport := filepath.Join(dir, "list.json")
	require.NoError(t, os.WriteFile(notReport, []byte(`[1, 2]`), 0o644))
	for _, tc := range []struct {
		script, input string
	}{
		{"sm-budget-table.py", missing},
		{"sm-budget-table.py", jsonl},
		{"sm-budget-table.py", notReport},
		{"witness-leads.py", missing},
		{"witness-leads.py", jsonl},
		{"catch-summary.py", missing},
		{"catch-summary.py", jsonl},
		{"catch-summary.py", notReport},
	} {
		t.Run(tc.script+" "+filepath.Base(tc.input), func(t *testing.T) {
			cmd := exec.Command("python3", filepath.Join("..", "..", "ci", tc.script), tc.input)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "want a non-zero exit; stdout:\n%s", stdout.String())
			require.NotContains(t, stderr.String(), "Traceback")
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			require.Len(t, lines, 1, "one line on stderr: %q", stderr.String())
			require.Contains(t, lines[0], tc.input)
		})
	}
}
