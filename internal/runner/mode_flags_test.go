package runner

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every mode flag has a name of its own and help, and excludes only flags
// that exist.
func TestModeFlagsDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range ModeFlags() {
		require.NotEmpty(t, f.Name)
		require.False(t, seen[f.Name], "flag --%s declared twice", f.Name)
		seen[f.Name] = true
		require.NotEmpty(t, f.Help, f.Name)
	}
	for _, f := range ModeFlags() {
		for _, x := range f.Excludes {
			require.True(t, seen[x.Flag], "--%s excludes --%s, which no mode declares", f.Name, x.Flag)
		}
	}
}

// A mode's flag without a field of its own: checked from its declaration,
// and handed to the mode in Config.ModeArgs.
func TestModeFlagWithoutField(t *testing.T) {
	saved := modeList
	t.Cleanup(func() { modeList = saved })
	modeList = append(slices.Clone(saved), modeDecl{func(*Config) timingMode { return nil }, []ModeFlag{
		{Name: "demo", Bool: true, Help: "h", Bench: "times demo calls", Excludes: []ModeExclusion{{"pdl", "why"}}},
		{Name: "demo-n", Help: "h", Check: func(v string) error {
			if v != "3" {
				return errors.New("--demo-n wants 3")
			}
			return nil
		}},
	}})
	for _, tc := range []struct {
		name    string
		given   map[string]string
		run     ModeRun
		wantErr string
	}{
		{"off", map[string]string{"demo": "false"}, ModeRun{}, ""},
		{"outside bench", map[string]string{"demo": "true"}, ModeRun{}, "--demo times demo calls: run artest bench"},
		{"under tune", map[string]string{"demo": "true"}, ModeRun{Tune: true}, "--demo is a flag of artest bench, not of artest tune"},
		{"excluded", map[string]string{"demo": "true", "pdl": "true"}, ModeRun{Bench: true}, "--demo and --pdl exclude each other: why"},
		{"excluded only when on", map[string]string{"demo": "true", "pdl": "false"}, ModeRun{Bench: true}, ""},
		{"the value's check", map[string]string{"demo-n": "4"}, ModeRun{}, "--demo-n wants 3"},
		{"a value outside bench, checked", map[string]string{"demo-n": "3"}, ModeRun{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckModeFlags(tc.given, tc.run)
			if tc.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.wantErr)
		})
	}
	var cfg Config
	cfg.SetModeFlags(map[string]string{"demo": "true", "demo-n": "3", "pdl": "true", "overlap": "66"})
	require.Equal(t, map[string]string{"demo": "true", "demo-n": "3"}, cfg.ModeArgs)
	require.True(t, cfg.modeSwitch("demo"))
	require.False(t, cfg.modeSwitch("other"))
	require.True(t, cfg.PDL, "a flag with a field of its own sets it")
	require.Equal(t, 66, cfg.Overlap)
}
