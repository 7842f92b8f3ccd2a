package cuda

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
)

func TestCheckKnobs(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{env: nil},
		{env: map[string]string{"ARTEST_SM_PARTITION": "off", "ARTEST_LOAD_KIND": "sm", "ARTEST_WITNESS_STAMP": "kernel"}},
		{env: map[string]string{"ARTEST_LOAD_KIND": "memory", "ARTEST_WITNESS_STAMP": "events"}},
		{env: map[string]string{"ARTEST_LOAD_KIND": "SM"}, want: `ARTEST_LOAD_KIND="SM": want sm or memory, or leave it unset`},
		{env: map[string]string{"ARTEST_SM_PARTITION": "0"}, want: `ARTEST_SM_PARTITION="0": want off`},
		{env: map[string]string{"ARTEST_WITNESS_STAMP": "event"}, want: `ARTEST_WITNESS_STAMP="event": want kernel or events`},
		{env: map[string]string{"ARTEST_LOAD_SM_BLOCKS": "4", "ARTEST_WITNESS_LOAD_STAMPS": "off"}},
		{env: map[string]string{"ARTEST_LOAD_SM_BLOCKS": "3"}, want: `ARTEST_LOAD_SM_BLOCKS="3": want 1 or 2 or 4 or 8 or 16`},
		{env: map[string]string{"ARTEST_WITNESS_LOAD_STAMPS": "on"}, want: `ARTEST_WITNESS_LOAD_STAMPS="on": want off`},
	} {
		err := checkKnobs(func(k string) string { return tc.env[k] })
		if tc.want == "" {
			require.NoError(t, err)
			continue
		}
		require.ErrorContains(t, err, tc.want)
		require.Equal(t, exitcode.Usage, exitcode.Of(err))
	}
}
