package cli

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
)

func TestOverlapFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		blocks  int
	}{
		{"off by default", []string{"bench"}, "", 0},
		{"bench --overlap 66", []string{"bench", "--overlap", "66"}, "", 66},
		{"--bench --overlap=1", []string{"--bench", "--overlap=1"}, "", 1},
		{"the most blocks", []string{"bench", "--overlap", "65536"}, "", 65536},
		{"not a bench run", []string{"--overlap", "4"}, "--overlap 4 times calls beside a compute load: run artest bench", 0},
		{"zero", []string{"bench", "--overlap", "0"}, `--overlap "0": want a whole number of thread blocks from 1 to 65536`, 0},
		{"negative", []string{"bench", "--overlap", "-3"}, `--overlap "-3": want a whole number`, 0},
		{"not a number", []string{"bench", "--overlap", "many"}, `--overlap "many": want a whole number`, 0},
		{"a fraction", []string{"bench", "--overlap", "1.5"}, `--overlap "1.5": want a whole number`, 0},
		{"too many", []string{"bench", "--overlap", "65537"}, `--overlap "65537": want a whole number`, 0},
		{"empty", []string{"bench", "--overlap", ""}, "--overlap", 0},
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
			require.Equal(t, tc.blocks, o.overlap)
		})
	}
}
