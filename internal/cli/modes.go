package cli

import (
	"flag"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/runner"
)

// The timing modes' flags (--pdl, --pdl-chain, --overlap, --sm-budget, and
// any mode's to come) are declared by the modes themselves
// (runner.ModeFlags: help, checks, the flags they need or exclude); the
// cli adds them, keeps what was given and checks it by looping over them,
// and names no mode here.

// addModeFlags adds every timing mode's flags to fs: a switch as a bool
// flag, any other as a string flag with "" for its default.
func addModeFlags(fs *flag.FlagSet) {
	for _, f := range runner.ModeFlags() {
		if f.Bool {
			fs.Bool(f.Name, false, f.Help)
		} else {
			fs.String(f.Name, "", f.Help)
		}
	}
}

// readModeFlags keeps the timing modes' flags given on fs in o.ModeArgs,
// as given ("true" or "false" for a switch), and the first modes' settings
// in their fields of o (PDL, PDLChain, overlap, smBudget; values still
// unchecked read as 0).
func (o *Options) readModeFlags(fs *flag.FlagSet) {
	for _, f := range runner.ModeFlags() {
		if !o.set[f.Name] {
			continue
		}
		if o.ModeArgs == nil {
			o.ModeArgs = map[string]string{}
		}
		o.ModeArgs[f.Name] = fs.Lookup(f.Name).Value.String()
	}
	var cfg runner.Config
	cfg.SetModeFlags(o.ModeArgs)
	o.PDL, o.PDLChain, o.overlap, o.smBudget = cfg.PDL, cfg.PDLChain, cfg.Overlap, cfg.SMBudget
}

// checkModeFlags checks the timing modes' flags given, in a tune run when
// tune is set: a usage error, or nil.
func (o *Options) checkModeFlags(tune bool) error {
	if err := runner.CheckModeFlags(o.ModeArgs, runner.ModeRun{Bench: o.Bench, Tune: tune}); err != nil {
		return exitcode.Usagef("%v", err)
	}
	return nil
}
