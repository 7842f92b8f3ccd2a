package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
)

// Run hands the subcommands that need no MPI world to their own mains
// before MPI starts (a test process has no launcher, and MPI is never
// initialised here).
func TestRunWithoutWorld(t *testing.T) {
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr string
	}{
		{"compare", []string{"compare", "--help"}, exitcode.OK, "usage: artest compare", ""},
		{"compare without reports", []string{"compare"}, exitcode.Usage, "", "artest compare"},
		{"mps", []string{"mps"}, exitcode.Usage, "", "artest mps: no command to run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			require.Equal(t, tt.code, Run(&out, &errb, tt.args), "stderr: %s", errb.String())
			require.Contains(t, out.String(), tt.stdout)
			require.Contains(t, errb.String(), tt.stderr)
		})
	}
}
