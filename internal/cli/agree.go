package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
)

// hash identifies a configuration: ranks started with different flags
// would run different cases and wait for each other for ever.
func (o *Options) hash() string {
	b, _ := json.Marshal(o)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// hello is what each rank tells rank 0 once every rank parsed its flags
// and opened its backend.
type hello struct {
	Hash string `json:"hash,omitempty"`
	Host string `json:"host"`
	// Flags are the flags given, as "--name value", so that ranks started
	// differently can be told which flag differs.
	Flags   []string `json:"flags,omitempty"`
	Backend string   `json:"backend,omitempty"`
}

// givenText is the flags given, one "--name value" (or "--name" for a
// true bool) per flag occurrence.
func (o *Options) givenText() []string {
	out := make([]string, 0, len(o.given))
	for _, g := range o.given {
		switch {
		case g.isBool && g.value == "true":
			out = append(out, flagName(g.name))
		case g.isBool:
			out = append(out, flagName(g.name)+"="+g.value)
		default:
			out = append(out, flagName(g.name)+" "+g.value)
		}
	}
	return out
}

// flagDiff lists the flags of mine that theirs lacks, or "none" when the
// difference is only in what theirs has; "" when both are the same.
func flagDiff(mine, theirs []string) string {
	only := missingFrom(mine, theirs)
	if len(only) == 0 && len(missingFrom(theirs, mine)) == 0 {
		return ""
	}
	if len(only) == 0 {
		return "none of them"
	}
	return strings.Join(only, ", ")
}

// flagDiffOther is flagDiff seen from the other side.
func flagDiffOther(mine, theirs []string) string {
	only := missingFrom(theirs, mine)
	if len(only) == 0 {
		return "none of them"
	}
	return strings.Join(only, ", ")
}

// missingFrom lists the items of a that b does not hold.
func missingFrom(a, b []string) []string {
	has := map[string]int{}
	for _, x := range b {
		has[x]++
	}
	var out []string
	for _, x := range a {
		if has[x] > 0 {
			has[x]--
			continue
		}
		out = append(out, x)
	}
	return out
}

// agree is where every rank learns whether the run can start. First
// whether every rank parsed its flags and opened its backend (startErr):
// the first failing rank's error reaches every rank. Then rank 0 compares
// every rank's hello with its own, and its verdict reaches every rank the
// same way. It returns every rank's hello on rank 0 (nil on the others),
// or the error every rank stops with (agreedCode is its exit code).
func agree(c comm.Comm, me hello, startErr error) ([]hello, error) {
	if err := comm.Agree(c, startErr); err != nil {
		return nil, err
	}
	blob, _ := json.Marshal(me)
	all, err := c.Gather(blob, 0)
	if err != nil {
		return nil, fmt.Errorf("gather configuration: %w", err)
	}
	var hellos []hello
	var verdict error
	if c.Rank() == 0 {
		hellos, verdict = compareHellos(all)
	}
	if err := comm.Agree(c, verdict); err != nil {
		return nil, err
	}
	return hellos, nil
}

// compareHellos (rank 0) decodes every rank's hello and says how the
// first rank that differs from rank 0 differs: its flags (a usage error)
// or its backend (an environment error).
func compareHellos(all [][]byte) ([]hello, error) {
	hellos := make([]hello, len(all))
	for i, b := range all {
		if err := json.Unmarshal(b, &hellos[i]); err != nil {
			return nil, exitcode.Envf("rank %d configuration: %v", i, err)
		}
	}
	for i, h := range hellos {
		if h.Hash != hellos[0].Hash {
			if d := flagDiff(h.Flags, hellos[0].Flags); d != "" {
				return nil, exitcode.Usagef("ranks were started with different flags: rank %d has %s, rank 0 %s", i, d, flagDiffOther(h.Flags, hellos[0].Flags))
			}
			return nil, exitcode.Usagef("ranks were started with different flags: rank %d's configuration differs from rank 0's (hash %s vs %s)", i, h.Hash, hellos[0].Hash)
		}
		if h.Backend != hellos[0].Backend {
			return nil, exitcode.Envf("ranks chose different backends: rank 0 %s, rank %d %s (pass --backend)", hellos[0].Backend, i, h.Backend)
		}
	}
	return hellos, nil
}

// agreedCode is the exit code of an agreement's error: the failing rank's,
// or exitcode.Env when the collectives themselves failed.
func agreedCode(err error) int {
	var re *comm.RankError
	if errors.As(err, &re) {
		return re.Code
	}
	return exitcode.Env
}

// envError makes an error without an exit code of its own (a wrong result
// would be exit 1) an environment error: opening or setting up a backend
// failed.
func envError(err error) error {
	if exitcode.Of(err) == exitcode.Wrong {
		return &exitcode.Error{Code: exitcode.Env, Err: err}
	}
	return err
}
