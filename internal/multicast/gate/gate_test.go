package gate

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// The gate table: every way it stays closed, and the one way it opens. The
// device is asked only when the flag and the environment already allow
// multicast, and a closed gate never hands out a valid permit.
func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name      string
		flag      bool
		env       func(string) (string, bool)
		supported bool
		attrErr   error
		open      bool
		queried   bool   // whether the device attribute was read
		reason    string // part of the reason
	}{
		{name: "flag absent", flag: false, env: env(), supported: true, reason: "--allow-multicast not given"},
		{name: "flag absent, NVLS on in the environment", flag: false, env: env(EnvNVLS, "1"), supported: true, reason: "--allow-multicast not given"},
		{name: "NCCL_NVLS_ENABLE=0", flag: true, env: env(EnvNVLS, "0"), supported: true, reason: `NCCL_NVLS_ENABLE="0" turns NVLS off`},
		{name: "NCCL_NVLS_ENABLE empty reads as 0", flag: true, env: env(EnvNVLS, ""), supported: true, reason: "turns NVLS off"},
		{name: "NCCL_NVLS_ENABLE=false reads as 0", flag: true, env: env(EnvNVLS, "false"), supported: true, reason: "turns NVLS off"},
		{name: "NCCL_NVLS_ENABLE=00", flag: true, env: env(EnvNVLS, " 00"), supported: true, reason: "turns NVLS off"},
		{name: "device says unsupported", flag: true, env: env(), supported: false, queried: true, reason: "does not support multicast"},
		{name: "device query fails", flag: true, env: env(), attrErr: errors.New("CUDA_ERROR_INVALID_DEVICE"), queried: true, reason: "CUDA_ERROR_INVALID_DEVICE"},
		{name: "all open, variable unset", flag: true, env: env(), supported: true, queried: true, open: true},
		{name: "all open, NCCL_NVLS_ENABLE=1", flag: true, env: env(EnvNVLS, "1"), supported: true, queried: true, open: true},
		{name: "all open, NCCL_NVLS_ENABLE=2 (NCCL's auto)", flag: true, env: env(EnvNVLS, "2"), supported: true, queried: true, open: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queried := false
			d := Decide(Inputs{Flag: tc.flag, LookupEnv: tc.env, Supported: func() (bool, error) {
				queried = true
				return tc.supported, tc.attrErr
			}})
			require.Equal(t, tc.open, d.Open)
			require.Equal(t, tc.queried, queried, "the device is read only after the flag and the environment allow it")
			require.Contains(t, d.Reason, tc.reason)
			p, err := d.Permit()
			if tc.open {
				require.NoError(t, err)
				require.True(t, p.Valid())
				return
			}
			require.ErrorContains(t, err, "multicast is off: "+d.Reason)
			require.False(t, p.Valid())
			require.Equal(t, Permit{}, p, "a closed gate's permit is the zero value")
		})
	}
}

func TestPermitZeroValueIsInvalid(t *testing.T) {
	require.False(t, Permit{}.Valid())
	_, err := Closed("rank 2: --allow-multicast not given").Permit()
	require.ErrorContains(t, err, "rank 2")
	_, err = Decision{Open: true}.Permit()
	require.Error(t, err, "a decision built by hand has no permit")
}

// The permit's type is internal/cudadrv's (so that the CUDA wrapper imports
// nothing above it), and so is the function that makes a valid one:
// Decide must be its only caller in the tree, outside tests.
func TestOnlyTheGateGrantsMulticast(t *testing.T) {
	root, err := filepath.Abs("../../..")
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(root, "go.mod"))
	var callers []string
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != root && (strings.HasPrefix(n, ".") || n == "bin" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		// Every use, qualified (cudadrv.GrantMulticast) or not (inside
		// internal/cudadrv), but not the declaration's own name.
		ast.Inspect(f, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == "GrantMulticast" && !isDecl(f, id) {
				callers = append(callers, rel)
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{filepath.Join("internal", "multicast", "gate", "gate.go")}, callers)
}

// isDecl reports whether id is the name of one of f's function declarations.
func isDecl(f *ast.File, id *ast.Ident) bool {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name == id {
			return true
		}
	}
	return false
}

// NCCL reads NCCL_NVLS_ENABLE with strtol: the gate must call a value "off"
// whenever NCCL does.
func TestEnvEnablesFollowsStrtol(t *testing.T) {
	for v, want := range map[string]bool{
		"1": true, "2": true, " 1": true, "+1": true, "-1": true, "1abc": true, "0x1": true, "010": true,
		"0": false, "": false, "  ": false, "00": false, "-0": false, "0x": false, "0x0": false,
		"08": false, "0_1": false, "0b1": false, "off": false, "false": false, "no": false, "x1": false,
	} {
		require.Equal(t, want, envEnables(v), "%q", v)
	}
}
