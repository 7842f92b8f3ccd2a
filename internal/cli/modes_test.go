package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/runner"
)

// Every timing mode's flag is on the command line with the mode's help,
// kept as given, and carried into rerun lines: a rerun times the case the
// same way.
func TestModeFlagsOnTheCommandLine(t *testing.T) {
	fs := newFlagSet(&Options{})
	for _, f := range runner.ModeFlags() {
		fl := fs.Lookup(f.Name)
		require.NotNil(t, fl, "--%s", f.Name)
		require.Equal(t, f.Help, fl.Usage)
		_, isBool := fl.Value.(interface{ IsBoolFlag() bool })
		require.Equal(t, f.Bool, isBool, "--%s", f.Name)
		_, effective := rerunEffective[f.Name]
		require.False(t, effective || rerunLeftOut[f.Name], "--%s: a rerun line carries mode flags as given", f.Name)

		value := "v"
		if f.Bool {
			value = "true"
		}
		o := &Options{given: []givenFlag{{name: f.Name, value: value, isBool: f.Bool}}}
		args := o.rerunArgs("oneshot/f32/sum/4KiB/oop-reg-plain/np2", "host")
		want := []string{"--" + f.Name}
		if !f.Bool {
			want = append(want, value)
		}
		require.Contains(t, strings.Join(args, "\x00")+"\x00", strings.Join(want, "\x00")+"\x00", "--%s", f.Name)
	}
}

// What a mode flag was given as reaches o.ModeArgs and the run's Config.
func TestModeArgs(t *testing.T) {
	o, err := Parse([]string{"bench", "--overlap", "66", "--pdl"})
	require.NoError(t, err)
	require.Equal(t, map[string]string{"overlap": "66", "pdl": "true"}, o.ModeArgs)
	var cfg runner.Config
	cfg.SetModeFlags(o.ModeArgs)
	require.Equal(t, 66, cfg.Overlap)
	require.True(t, cfg.PDL)
	o, err = Parse(nil)
	require.NoError(t, err)
	require.Empty(t, o.ModeArgs)
}
