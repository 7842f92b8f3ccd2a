package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels/registry"
)

// examplePlugin is the example plugin's host twin, built once per test
// binary: a process holds one plugin of a name, as a run does.
var examplePlugin struct {
	once sync.Once
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if examplePlugin.path != "" {
		os.RemoveAll(filepath.Dir(examplePlugin.path))
	}
	os.Exit(code)
}

// buildExamplePlugin compiles the example plugin's host twin with cc, once.
func buildExamplePlugin(t *testing.T) string {
	t.Helper()
	examplePlugin.once.Do(func() {
		dir, err := os.MkdirTemp("", "artest-cli-plugin")
		if err != nil {
			examplePlugin.err = err
			return
		}
		out := filepath.Join(dir, "host_oneshot.so")
		msg, err := exec.Command("cc", "-std=c11", "-O2", "-fPIC", "-shared", "-ffp-contract=off", "-I../../plugin",
			"-o", out, "../../plugin/example/host_oneshot.c").CombinedOutput()
		if err != nil {
			examplePlugin.err = fmt.Errorf("cc: %v: %s", err, msg)
			return
		}
		examplePlugin.path = out
	})
	require.NoError(t, examplePlugin.err)
	return examplePlugin.path
}

func TestPluginVariantsSelectAndTakeParams(t *testing.T) {
	so := buildExamplePlugin(t)
	for _, tc := range []struct {
		name string
		args []string
		err  string
	}{
		{"select by name", []string{"--plugin", so, "--variant", "example:oneshot"}, ""},
		{"case id", []string{"--plugin", so, "--case", "example:oneshot/f32/sum/4100B/oop-reg-plain/np2"}, ""},
		{"param it lacks", []string{"--plugin", so, "--variant", "example:oneshot", "--param", "stages=2"}, "--param stages: example:oneshot has no such parameter"},
		{"missing plugin", []string{"--plugin", filepath.Join(t.TempDir(), "none.so")}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Len(t, o.PluginSHA256, 1, "the sum is part of the configuration ranks agree on")
			require.Equal(t, "trace check, device deadlines", o.pluginInfo()[0].Checks, "the example declares the device helpers")
		})
	}
}

// --list-variants lists a plugin's variants after the built-in ones.
func TestListVariantsNamesPluginVariants(t *testing.T) {
	so := buildExamplePlugin(t)
	res := runWorld(t, 1, same("--plugin", so, "--list-variants"))
	require.Equal(t, []int{0}, res.codes, res.stderr)
	lines := strings.Split(strings.TrimSuffix(res.stdout[0], "\n"), "\n")
	require.Len(t, lines, len(registry.Builtin)+1)
	require.Equal(t, "example:oneshot", lines[len(lines)-1])
}
