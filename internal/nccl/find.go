package nccl

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/artest/artest/internal/dl"
)

const (
	// Soname is the library NCCL 2 installs.
	Soname = "libnccl.so.2"
	// EnvPath names the environment variable that points at libnccl.so.2
	// (a file, or a directory that holds it).
	EnvPath = "ARTEST_NCCL"
)

// wheelLib is where NVIDIA's nvidia-nccl-cu12/cu13 wheels put the library,
// relative to site-packages.
const wheelLib = "nvidia/nccl/lib/" + Soname

// finder holds what Find depends on, so tests can run it against a fake
// file tree and environment.
type finder struct {
	getenv func(string) string
	// probe asks the dynamic loader for a soname and returns the file it
	// resolved to.
	probe func(soname string) (string, bool)
	// root prefixes the fixed system locations (not those from the
	// environment); "" on a real system.
	root string
}

// Find locates libnccl.so.2. It tries, in order: flagPath, $ARTEST_NCCL, the
// dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache), the usual
// install directories, and the site-packages of Python environments that
// may hold NVIDIA's NCCL wheel. A flag or environment value that names no
// library is an error rather than a reason to fall back to some other NCCL.
// tried lists every place looked at, in order, for the error report.
func Find(flagPath string) (path string, tried []string, err error) {
	f := finder{getenv: os.Getenv, probe: probeLoader}
	return f.find(flagPath)
}

func probeLoader(soname string) (string, bool) {
	lib, err := dl.Open(soname)
	if err != nil {
		return "", false
	}
	defer lib.Close()
	if p := lib.Resolved(); p != "" {
		return p, true
	}
	return soname, true
}

func (f finder) find(flagPath string) (string, []string, error) {
	var tried []string
	for _, explicit := range []struct{ what, value string }{
		{"--nccl", flagPath},
		{EnvPath, f.getenv(EnvPath)},
	} {
		if explicit.value == "" {
			continue
		}
		p := explicit.value
		if isDir(p) {
			p = filepath.Join(p, Soname)
		}
		tried = append(tried, p)
		if !isFile(p) {
			return "", tried, fmt.Errorf("%s %s: no NCCL library there", explicit.what, explicit.value)
		}
		return p, tried, nil
	}

	tried = append(tried, Soname+" (dynamic loader search path)")
	if p, ok := f.probe(Soname); ok {
		return p, tried, nil
	}

	for _, pattern := range f.candidates() {
		tried = append(tried, pattern)
		matches, _ := filepath.Glob(pattern) // the patterns are well-formed
		for _, m := range matches {
			if isFile(m) {
				return m, tried, nil
			}
		}
	}
	return "", tried, fmt.Errorf("%s not found (point --nccl or %s at it); tried: %s",
		Soname, EnvPath, strings.Join(tried, ", "))
}

// candidates are the well-known places, most specific first.
func (f finder) candidates() []string {
	multiarch := "x86_64-linux-gnu"
	if runtime.GOARCH == "arm64" {
		multiarch = "aarch64-linux-gnu"
	}
	sys := func(p string) string { return filepath.Join(f.root, p) }

	c := []string{
		sys("/usr/lib/" + multiarch + "/" + Soname),
		sys("/usr/local/nccl/lib/" + Soname),
		sys("/usr/local/cuda/lib64/" + Soname),
		sys("/usr/lib64/" + Soname),
	}
	// An active virtualenv or conda environment is the user's choice.
	for _, env := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if v := f.getenv(env); v != "" {
			c = append(c, filepath.Join(v, "lib/python3*/site-packages", wheelLib))
		}
	}
	for _, sitePackages := range []string{
		"/opt/*/.venv/lib/python3*/site-packages",
		"/opt/*/venv/lib/python3*/site-packages",
		"/opt/conda/lib/python3*/site-packages",
		"/usr/local/lib/python3*/dist-packages",
		"/usr/local/lib/python3*/site-packages",
		"/usr/lib/python3/dist-packages",
	} {
		c = append(c, sys(filepath.Join(sitePackages, wheelLib)))
	}
	if home := f.getenv("HOME"); home != "" {
		c = append(c, filepath.Join(home, ".local/lib/python3*/site-packages", wheelLib))
	}
	return c
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
