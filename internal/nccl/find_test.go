package nccl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// tree is a fake file system root with an environment.
type tree struct {
	t    *testing.T
	root string
	env  map[string]string
	// loader is what the dynamic loader would resolve libnccl.so.2 to; ""
	// when it finds nothing.
	loader string
}

func newTree(t *testing.T) *tree {
	return &tree{t: t, root: t.TempDir(), env: map[string]string{}}
}

// lib creates root/rel as a fake library file and returns its full path.
func (tr *tree) lib(rel string) string {
	p := filepath.Join(tr.root, rel)
	require.NoError(tr.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(tr.t, os.WriteFile(p, []byte("ELF"), 0o644))
	return p
}

func (tr *tree) find(flag string) (string, []string, error) {
	f := finder{
		getenv: func(k string) string { return tr.env[k] },
		probe: func(string) (string, bool) {
			return tr.loader, tr.loader != ""
		},
		root: tr.root,
	}
	return f.find(flag)
}

const torchWheel = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2"

func TestFindExplicitPaths(t *testing.T) {
	tr := newTree(t)
	flagLib := tr.lib("flag/libnccl.so.2")
	envLib := tr.lib("env/libnccl.so.2")
	tr.lib("/usr/local/cuda/lib64/libnccl.so.2")
	tr.loader = "/usr/lib/libnccl.so.2"

	t.Run("flag file beats everything", func(t *testing.T) {
		tr.env[EnvPath] = envLib
		p, tried, err := tr.find(flagLib)
		require.NoError(t, err)
		require.Equal(t, flagLib, p)
		require.Equal(t, []string{flagLib}, tried)
	})
	t.Run("flag directory", func(t *testing.T) {
		p, _, err := tr.find(filepath.Dir(flagLib))
		require.NoError(t, err)
		require.Equal(t, flagLib, p)
	})
	t.Run("flag naming nothing is an error, not a fallback", func(t *testing.T) {
		missing := filepath.Join(tr.root, "nope/libnccl.so.2")
		_, tried, err := tr.find(missing)
		require.ErrorContains(t, err, "--nccl "+missing)
		require.Equal(t, []string{missing}, tried)
	})
	t.Run("environment without flag", func(t *testing.T) {
		p, _, err := tr.find("")
		require.NoError(t, err)
		require.Equal(t, envLib, p)
	})
	t.Run("environment naming nothing is an error", func(t *testing.T) {
		tr.env[EnvPath] = filepath.Join(tr.root, "gone")
		_, _, err := tr.find("")
		require.ErrorContains(t, err, EnvPath+" "+tr.env[EnvPath])
	})
}

func TestFindSearchOrder(t *testing.T) {
	tr := newTree(t)
	home := filepath.Join(tr.root, "home/user")
	venv := filepath.Join(tr.root, "work/venv")
	tr.env["HOME"] = home
	tr.env["VIRTUAL_ENV"] = venv

	// Create candidates from last to first; each step must find the newest.
	steps := []struct {
		name string
		make func() string
	}{
		{"user site-packages", func() string {
			return tr.lib("home/user/.local/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2")
		}},
		{"system dist-packages", func() string {
			return tr.lib("/usr/local/lib/python3.10/dist-packages/nvidia/nccl/lib/libnccl.so.2")
		}},
		{"venv under /opt (the GPU machines' torch wheel)", func() string { return tr.lib(torchWheel) }},
		{"active virtualenv", func() string {
			return tr.lib("work/venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2")
		}},
		{"CUDA toolkit directory", func() string { return tr.lib("/usr/local/cuda/lib64/libnccl.so.2") }},
		{"NCCL install directory", func() string { return tr.lib("/usr/local/nccl/lib/libnccl.so.2") }},
		{"dynamic loader", func() string {
			tr.loader = "/usr/lib/x86_64-linux-gnu/libnccl.so.2"
			return tr.loader
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			want := s.make()
			p, _, err := tr.find("")
			require.NoError(t, err)
			require.Equal(t, want, p)
		})
	}
}

func TestFindNothing(t *testing.T) {
	tr := newTree(t)
	tr.env["HOME"] = "/home/nobody"
	// A directory named like the library is not the library.
	require.NoError(t, os.MkdirAll(filepath.Join(tr.root, "/usr/local/cuda/lib64/libnccl.so.2"), 0o755))

	_, tried, err := tr.find("")
	require.Error(t, err)
	require.Equal(t, "libnccl.so.2 (dynamic loader search path)", tried[0])
	require.Contains(t, tried, filepath.Join(tr.root, "/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2"))
	require.Contains(t, tried, "/home/nobody/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2")
	require.ErrorContains(t, err, "point --nccl or ARTEST_NCCL at it")
	require.ErrorContains(t, err, strings.Join(tried, ", "))
}

// On this machine, with no NCCL anywhere, the real Find reports every place
// it tried; with NCCL somewhere (or ARTEST_NCCL set), it returns a file that
// loads as NCCL 2.
func TestFindOnThisMachine(t *testing.T) {
	p, tried, err := Find("")
	require.NotEmpty(t, tried)
	if err != nil {
		require.Empty(t, p)
		require.ErrorContains(t, err, "not found")
		return
	}
	require.FileExists(t, p)
	l, err := Load(p)
	require.NoError(t, err, "the NCCL Find chose must load")
	defer l.Close()
	require.Equal(t, 2, l.Version().Major)
	t.Logf("found NCCL %v at %s", l.Version(), p)
}
