package cuda

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetNCCLMaxCTAs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		n       int
		have    string
		setErr  error
		want    string // the reason; "" when it may run
		wantSet string // what was set; "" for nothing
	}{
		{"no budget", 0, "4", nil, "", ""},
		{"set", 8, "", nil, "", "8"},
		{"already the same", 8, "8", nil, "", "8"},
		{"another value", 8, "16", nil, "NCCL_MAX_CTAS=16 is set, but --sm-budget 8 needs NCCL_MAX_CTAS=8", ""},
		{"setenv fails", 8, "", errors.New("boom"), "set NCCL_MAX_CTAS=8: boom", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := ""
			got := setNCCLMaxCTAs(tc.n, func(string) string { return tc.have }, func(k, v string) error {
				require.Equal(t, "NCCL_MAX_CTAS", k)
				if tc.setErr != nil {
					return tc.setErr
				}
				set = v
				return nil
			})
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.wantSet, set)
		})
	}
}
