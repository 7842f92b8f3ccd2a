package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
)

func TestSMBudgetFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		budget  int
	}{
		{"off by default", []string{"bench"}, "", 0},
		{"bench --sm-budget 32", []string{"bench", "--sm-budget", "32"}, "", 32},
		{"one block", []string{"--bench", "--sm-budget=1"}, "", 1},
		{"the most blocks", []string{"bench", "--sm-budget", "256"}, "", 256},
		{"not a bench run", []string{"--sm-budget", "8"}, "--sm-budget 8 times collectives beside a compute load: run artest bench", 0},
		{"with --overlap", []string{"bench", "--sm-budget", "8", "--overlap", "66"}, "--sm-budget and --overlap exclude each other", 0},
		{"zero", []string{"bench", "--sm-budget", "0"}, `--sm-budget "0": want a whole number of blocks from 1 to 256`, 0},
		{"negative", []string{"bench", "--sm-budget", "-8"}, `--sm-budget "-8": want a whole number`, 0},
		{"too many", []string{"bench", "--sm-budget", "257"}, `--sm-budget "257": want a whole number`, 0},
		{"a list", []string{"bench", "--sm-budget", "8,16"}, `--sm-budget "8,16": want a whole number`, 0},
		{"empty", []string{"bench", "--sm-budget", ""}, "--sm-budget", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Equal(t, exitcode.Usage, exitcode.Of(err))
				require.NotContains(t, err.Error(), "\n", "one line")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.budget, o.smBudget)
		})
	}
}
