package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
)

// ARTEST_WITNESS_DUMP is an output like the reports: a directory is
// refused (exit 2), so is a file another report writes, and a file that
// cannot be created is an environment error (exit 4), all before the run.
func TestWitnessDumpIsPlannedAsAnOutput(t *testing.T) {
	dir := t.TempDir()
	json := filepath.Join(dir, "r.json")
	for _, tc := range []struct {
		name, dump string
		code       int
		msg        string
	}{
		{"a file", filepath.Join(dir, "leads.txt"), 0, ""},
		{"a directory", dir, exitcode.Usage, "ARTEST_WITNESS_DUMP"},
		{"the JSON report's file", json, exitcode.Usage, "each report needs its own file"},
		{"in no directory", filepath.Join(dir, "none", "leads.txt"), exitcode.Env, "ARTEST_WITNESS_DUMP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{JSON: json, ReproDir: dir}
			o.Knobs.WitnessDump = tc.dump
			err := o.checkOutputPlan()
			require.Equal(t, tc.code, exitcode.Of(err), "%v", err)
			if tc.msg != "" {
				require.ErrorContains(t, err, tc.msg)
			}
		})
	}
}
