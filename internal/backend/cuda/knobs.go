package cuda

import (
	"strings"

	"github.com/artest/artest/internal/exitcode"
)

// envKnobs are the environment settings the cuda backend reads, each with
// the values it takes ("" leaves the default): a value it does not know
// would otherwise be ignored without a word.
var envKnobs = []struct {
	name   string
	values []string
}{
	{"ARTEST_SM_PARTITION", []string{"off"}},                      // sms.go
	{"ARTEST_LOAD_KIND", []string{"sm", "memory"}},                // straggle.go
	{"ARTEST_LOAD_SM_BLOCKS", []string{"1", "2", "4", "8", "16"}}, // straggle.go
	{"ARTEST_WITNESS_STAMP", []string{stampKernel, stampEvents}},  // stamp.go
	{"ARTEST_WITNESS_LOAD_STAMPS", []string{"off"}},               // stamp.go
}

// checkKnobs refuses a knob set to a value it does not take (exit 2).
func checkKnobs(getenv func(string) string) error {
	for _, k := range envKnobs {
		v := getenv(k.name)
		if v == "" {
			continue
		}
		known := false
		for _, w := range k.values {
			known = known || v == w
		}
		if !known {
			return exitcode.Usagef("%s=%q: want %s, or leave it unset", k.name, v, strings.Join(k.values, " or "))
		}
	}
	return nil
}
