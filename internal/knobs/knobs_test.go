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

// The environment is read in one place: no Go code outside this package
// reads an ARTEST_* variable (they come down as Settings), but for
// internal/hostcxx, whose knob is the tests'. Every knob of the table is
// read by Read (or is that one).
func TestKnobsAreReadOnceHere(t *testing.T) {
	read := regexp.MustCompile(`(?:Getenv|LookupEnv)\("(ARTEST_[A-Z_]+)"\)`)
	root := filepath.Join("..", "..")
	var outside []string
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
		rel, _ := filepath.Rel(root, path)
		if strings.HasPrefix(rel, "internal/knobs/") || strings.HasPrefix(rel, "internal/hostcxx/") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range read.FindAllStringSubmatch(string(b), -1) {
			outside = append(outside, rel+": "+m[1])
		}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, outside, "read the knob in knobs.Read and hand its value down")

	src, err := os.ReadFile("knobs.go")
	require.NoError(t, err)
	for _, k := range Table {
		if k.Name == "ARTEST_REQUIRE_CXX" {
			continue
		}
		require.Contains(t, string(src), `get("`+k.Name+`")`, "Read does not read %s", k.Name)
	}
}

// Read gives each knob's value, and refuses what Check refuses.
func TestReadGivesTheValues(t *testing.T) {
	env := map[string]string{"ARTEST_SM_PARTITION": "off", "ARTEST_LOAD_KIND": "memory", "ARTEST_LOAD_SM_BLOCKS": "4",
		"ARTEST_WITNESS_STAMP": "kernel", "ARTEST_WITNESS_LOAD_STAMPS": "off", "ARTEST_WITNESS_DUMP": "/tmp/w",
		"ARTEST_SIGNAL_DUMP": "/tmp/s", "ARTEST_STRESS_TRACE": "1", "ARTEST_FATBIN": "/x.fatbin"}
	s, err := Read(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	require.NoError(t, err)
	require.Equal(t, Settings{SMPartitionOff: true, LoadKind: "memory", LoadSMBlocks: 4, WitnessStamp: "kernel",
		WitnessLoadStampsOff: true, WitnessDump: "/tmp/w", SignalDump: "/tmp/s", StressTrace: true, Fatbin: "/x.fatbin"}, s)
	none, err := Read(func(string) (string, bool) { return "", false })
	require.NoError(t, err)
	require.Equal(t, Settings{}, none)
	_, err = Read(func(k string) (string, bool) {
		if k == "ARTEST_LOAD_KIND" {
			return "bogus", true
		}
		return "", false
	})
	require.Equal(t, exitcode.Usage, exitcode.Of(err))
}
