package runner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/artest/artest/internal/report"
)

// A ModeFlag is a command-line flag of a timing mode, declared in the
// mode's file and listed with the mode in modeList: the cli adds every
// mode's flags to its flag set, checks those given (CheckModeFlags) and
// hands them to the run (Config.SetModeFlags) by looping over ModeFlags,
// and names no mode itself.
type ModeFlag struct {
	// Name is the flag without its dashes ("overlap"), Help its line in
	// artest --help.
	Name, Help string
	// Bool makes the flag a switch (--pdl, --pdl=false); otherwise it
	// takes a value, "" by default.
	Bool bool
	// Bench, when not "", makes it a flag of artest bench and says what
	// it does there, for the usage error outside bench ("--overlap 4
	// times calls beside a compute load: run artest bench"); artest tune
	// refuses it.
	Bench string
	// Excludes are the mode flags it cannot be given with.
	Excludes []ModeExclusion
	// Check checks a given value (nil: any value): its error is the
	// usage message.
	Check func(value string) error
	// Set hands a given, checked value to the mode, into its field of
	// Config; nil: the mode reads it from Config.ModeArgs.
	Set func(cfg *Config, value string)
}

// A ModeExclusion is a flag a mode flag cannot be given with, and why:
// "--sm-budget and --overlap exclude each other: WHY".
type ModeExclusion struct{ Flag, Why string }

// ModeRun is what checking the mode flags needs to know of the run.
type ModeRun struct {
	// Bench: an artest bench run; Tune: an artest tune run.
	Bench, Tune bool
}

// A modeDecl is one line of modeList: the mode, and its flags.
type modeDecl struct {
	// make makes the mode where cfg asks for it (else nil).
	make  func(cfg *Config) timingMode
	flags []ModeFlag
}

// ModeFlags are every timing mode's flags, in modeList's order (the order
// CheckModeFlags checks them in).
func ModeFlags() []ModeFlag {
	var out []ModeFlag
	for _, d := range modeList {
		out = append(out, d.flags...)
	}
	return out
}

// on reports whether flag f is on among the flags given: given, and for a
// switch, true.
func (f ModeFlag) on(given map[string]string) bool {
	v, ok := given[f.Name]
	if !ok {
		return false
	}
	if f.Bool {
		b, _ := strconv.ParseBool(v)
		return b
	}
	return true
}

// CheckModeFlags checks the mode flags given (by name, as given: "true" or
// "false" for a switch) for run, each in ModeFlags' order: refused by tune
// or outside bench, given with a flag it excludes, or its value wrong. The
// error, the first found, is a usage error's message.
func CheckModeFlags(given map[string]string, run ModeRun) error {
	flags := ModeFlags()
	byName := map[string]ModeFlag{}
	for _, f := range flags {
		byName[f.Name] = f
	}
	for _, f := range flags {
		if !f.on(given) {
			continue
		}
		v := given[f.Name]
		if f.Bench != "" && run.Tune {
			return fmt.Errorf("--%s is a flag of artest bench, not of artest tune", f.Name)
		}
		if f.Bench != "" && !run.Bench {
			text := "--" + f.Name
			if !f.Bool {
				text += " " + v
			}
			return fmt.Errorf("%s %s: run artest bench", text, f.Bench)
		}
		for _, x := range f.Excludes {
			if byName[x.Flag].on(given) {
				return fmt.Errorf("--%s and --%s exclude each other: %s", f.Name, x.Flag, x.Why)
			}
		}
		if f.Check != nil {
			if err := f.Check(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetModeFlags hands the mode flags given (checked by CheckModeFlags) to
// the modes: each flag's Set, or cfg.ModeArgs for a flag without one.
func (cfg *Config) SetModeFlags(given map[string]string) {
	for _, f := range ModeFlags() {
		v, ok := given[f.Name]
		switch {
		case !ok:
		case f.Set != nil:
			f.Set(cfg, v)
		default:
			if cfg.ModeArgs == nil {
				cfg.ModeArgs = map[string]string{}
			}
			cfg.ModeArgs[f.Name] = v
		}
	}
}

// modeSwitch reports whether switch name is on in cfg.ModeArgs.
func (cfg *Config) modeSwitch(name string) bool {
	on, _ := strconv.ParseBool(cfg.ModeArgs[name])
	return on
}

// setBool is a switch's Set: *field is whether it is on.
func setBool(field func(cfg *Config) *bool) func(cfg *Config, value string) {
	return func(cfg *Config, value string) { *field(cfg), _ = strconv.ParseBool(value) }
}

// wholeFlag is a flag's Check and Set for a whole number of what from 1
// to most (--overlap 66): the message names the flag and the value given.
func wholeFlag(name, what string, most int, field func(cfg *Config) *int) (func(string) error, func(*Config, string)) {
	check := func(v string) error {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > most {
			return fmt.Errorf("--%s %q: want a whole number of %s from 1 to %d", name, v, what, most)
		}
		return nil
	}
	set := func(cfg *Config, v string) { *field(cfg), _ = strconv.Atoi(strings.TrimSpace(v)) }
	return check, set
}

// setFigure puts figure key of mode name, v, into the merged case: the
// place of a mode without fields of its own in report.Case, printed by
// the table the mode declared (report.ModeTable, in the header's
// ModeTables).
func setFigure(out *report.Case, mode, key string, v float64) {
	f := out.Modes[mode]
	if f.Values == nil {
		f.Values = map[string]float64{}
	}
	f.Values[key] = v
	if out.Modes == nil {
		out.Modes = map[string]report.ModeFigures{}
	}
	out.Modes[mode] = f
}

// noteFigures says, in the merged case, why mode did not time it.
func noteFigures(out *report.Case, mode, note string) {
	if out.Modes == nil {
		out.Modes = map[string]report.ModeFigures{}
	}
	f := out.Modes[mode]
	f.Note = note
	out.Modes[mode] = f
}
