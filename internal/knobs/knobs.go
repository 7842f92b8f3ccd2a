// Package knobs is the one table of artest's environment settings
// (ARTEST_*): their names, the values each takes, what each is for and
// where it is read and documented. The command line reads and checks them
// all once, before the run, on every backend (Read), and hands the values
// down (Settings): no code below the command line reads the environment
// for them. This table is where a new one is declared.
package knobs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/artest/artest/internal/exitcode"
)

// Knob is one environment setting.
type Knob struct {
	Name string
	// Values are the values it takes; nil: any non-empty value (a path).
	Values []string
	// What it is for, where its value is used (Read reads them all) and
	// where it is documented.
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

// Settings are the knobs' values, as Read found them: the zero value is
// every knob unset.
type Settings struct {
	// SMPartitionOff: ARTEST_SM_PARTITION=off.
	SMPartitionOff bool
	// LoadKind: ARTEST_LOAD_KIND, "" (the default), "sm" or "memory".
	LoadKind string
	// LoadSMBlocks: ARTEST_LOAD_SM_BLOCKS; 0: the default.
	LoadSMBlocks int
	// WitnessStamp: ARTEST_WITNESS_STAMP, "", "kernel" or "events".
	WitnessStamp string
	// WitnessLoadStampsOff: ARTEST_WITNESS_LOAD_STAMPS=off.
	WitnessLoadStampsOff bool
	// WitnessDump, SignalDump: the paths of ARTEST_WITNESS_DUMP and
	// ARTEST_SIGNAL_DUMP ("": none).
	WitnessDump, SignalDump string
	// StressTrace: ARTEST_STRESS_TRACE is set.
	StressTrace bool
	// Fatbin: ARTEST_FATBIN ("": none).
	Fatbin string
}

// Read checks every knob (Check) and returns their values. lookup is
// os.LookupEnv in the binary.
func Read(lookup func(string) (string, bool)) (Settings, error) {
	if err := Check(lookup); err != nil {
		return Settings{}, err
	}
	get := func(name string) string { v, _ := lookup(name); return v }
	s := Settings{
		SMPartitionOff:       get("ARTEST_SM_PARTITION") == "off",
		LoadKind:             get("ARTEST_LOAD_KIND"),
		WitnessStamp:         get("ARTEST_WITNESS_STAMP"),
		WitnessLoadStampsOff: get("ARTEST_WITNESS_LOAD_STAMPS") == "off",
		WitnessDump:          get("ARTEST_WITNESS_DUMP"),
		SignalDump:           get("ARTEST_SIGNAL_DUMP"),
		StressTrace:          get("ARTEST_STRESS_TRACE") != "",
		Fatbin:               get("ARTEST_FATBIN"),
	}
	if v := get("ARTEST_LOAD_SM_BLOCKS"); v != "" {
		n, err := strconv.Atoi(v) // one of the table's values: Check passed it
		if err != nil {
			return Settings{}, fmt.Errorf("ARTEST_LOAD_SM_BLOCKS=%q: %w", v, err)
		}
		s.LoadSMBlocks = n
	}
	return s, nil
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
