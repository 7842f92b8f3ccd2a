// Package knobs is the one table of artest's environment settings
// (ARTEST_*): their names, the values each takes, what each is for and
// where it is read and documented. The command line checks them all once,
// before the run, on every backend (Check); the code that reads one still
// reads it with os.Getenv, and this table is where a new one is declared.
package knobs

import (
	"fmt"
	"strings"

	"github.com/artest/artest/internal/exitcode"
)

// Knob is one environment setting.
type Knob struct {
	Name string
	// Values are the values it takes; nil: any non-empty value (a path).
	Values []string
	// What it is for, where it is read and where it is documented.
	What, ReadIn, Doc string
}

// Table lists every ARTEST_* variable artest reads.
var Table = []Knob{
	{"ARTEST_SM_PARTITION", []string{"off"}, "turn off the SM partition of shared-GPU ranks", "internal/backend/cuda/sms.go", "docs/shared-gpus.md"},
	{"ARTEST_LOAD_KIND", []string{"sm", "memory"}, "the straggler's load: SM work or memory traffic", "internal/backend/cuda/straggle.go", "docs/checks.md"},
	{"ARTEST_LOAD_SM_BLOCKS", []string{"1", "2", "4", "8", "16"}, "blocks per SM of the straggler's SM load", "internal/backend/cuda/straggle.go", "docs/checks.md"},
	{"ARTEST_WITNESS_STAMP", []string{"kernel", "events"}, "how the end-barrier witness stamps a call's return", "internal/backend/cuda/stamp.go", "docs/checks.md"},
	{"ARTEST_WITNESS_LOAD_STAMPS", []string{"off"}, "no event stamps around the straggler's loads", "internal/backend/cuda/stamp.go", "docs/checks.md"},
	{"ARTEST_WITNESS_DUMP", nil, "a file the witness's per-iteration rows are appended to", "internal/runner/runner.go", "docs/checks.md"},
	{"ARTEST_SIGNAL_DUMP", nil, "a directory for raw SignalBlock dumps at a hang", "internal/runner/runner.go", "docs/hangs.md"},
	{"ARTEST_STRESS_TRACE", nil, "print each stress batch's steps on stderr", "internal/runner/stress.go", "docs/checks.md"},
	{"ARTEST_FATBIN", nil, "the kernels' fatbin, where --fatbin is not given", "internal/backend/cuda/cuda.go", "README.md"},
	{"ARTEST_REQUIRE_CXX", nil, "tests: fail, not skip, where no host C++ compiler exists", "internal/hostcxx/hostcxx.go", "Makefile"},
}

// Check refuses a knob of the table that is set to a value it does not
// take, or set but empty (exit 2): either would otherwise be ignored
// without a word. lookup is os.LookupEnv in the binary.
func Check(lookup func(string) (string, bool)) error {
	for _, k := range Table {
		v, set := lookup(k.Name)
		if !set {
			continue
		}
		if v == "" {
			return exitcode.Usagef("%s is set but empty: %s; unset it for the default", k.Name, want(k))
		}
		if k.Values == nil {
			continue
		}
		known := false
		for _, w := range k.Values {
			known = known || v == w
		}
		if !known {
			return exitcode.Usagef("%s=%q: %s, or leave it unset", k.Name, v, want(k))
		}
	}
	return nil
}

func want(k Knob) string {
	if k.Values == nil {
		return "want a value (" + k.What + ")"
	}
	return fmt.Sprintf("want %s", strings.Join(k.Values, " or "))
}
