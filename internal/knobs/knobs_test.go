package knobs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{env: nil},
		{env: map[string]string{"ARTEST_SM_PARTITION": "off", "ARTEST_LOAD_KIND": "sm", "ARTEST_WITNESS_STAMP": "kernel"}},
		{env: map[string]string{"ARTEST_LOAD_KIND": "memory", "ARTEST_WITNESS_STAMP": "events", "ARTEST_WITNESS_DUMP": "/tmp/x"}},
		{env: map[string]string{"ARTEST_LOAD_KIND": "SM"}, want: `ARTEST_LOAD_KIND="SM": want sm or memory, or leave it unset`},
		{env: map[string]string{"ARTEST_SM_PARTITION": "0"}, want: `ARTEST_SM_PARTITION="0": want off`},
		{env: map[string]string{"ARTEST_WITNESS_STAMP": "event"}, want: `ARTEST_WITNESS_STAMP="event": want kernel or events`},
		{env: map[string]string{"ARTEST_LOAD_SM_BLOCKS": "4", "ARTEST_WITNESS_LOAD_STAMPS": "off"}},
		{env: map[string]string{"ARTEST_LOAD_SM_BLOCKS": "3"}, want: `ARTEST_LOAD_SM_BLOCKS="3": want 1 or 2 or 4 or 8 or 16`},
		{env: map[string]string{"ARTEST_WITNESS_LOAD_STAMPS": "on"}, want: `ARTEST_WITNESS_LOAD_STAMPS="on": want off`},
		{env: map[string]string{"ARTEST_LOAD_KIND": ""}, want: "ARTEST_LOAD_KIND is set but empty"},
		{env: map[string]string{"ARTEST_WITNESS_DUMP": ""}, want: "ARTEST_WITNESS_DUMP is set but empty"},
	} {
		err := Check(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if tc.want == "" {
			require.NoError(t, err)
			continue
		}
		require.ErrorContains(t, err, tc.want)
		require.Equal(t, exitcode.Usage, exitcode.Of(err))
	}
}

// Every ARTEST_* variable the Go code reads is in the table: one that is not
// would escape the check.
func TestTableHoldsEveryKnobRead(t *testing.T) {
	inTable := map[string]bool{}
	for _, k := range Table {
		inTable[k.Name] = true
	}
	read := regexp.MustCompile(`(?:Getenv|LookupEnv)\("(ARTEST_[A-Z_]+)"\)`)
	root := filepath.Join("..", "..")
	var missing []string
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if info.IsDir() && (info.Name() == ".git" || info.Name() == "bin" || info.Name() == ".tools") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range read.FindAllStringSubmatch(string(b), -1) {
			if !inTable[m[1]] {
				missing = append(missing, path+": "+m[1])
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, missing)
}
