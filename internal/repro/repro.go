// Package repro writes and reads repro bundles: for one failing case, the
// exact artest flags that rerun it, the one-line command, the environment it
// failed in (versions, devices, topology) and what was wrong (the first
// mismatches). `artest --repro FILE` reruns a bundle.
package repro

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/artest/artest/internal/report"
)

// FormatVersion is written into every bundle; Read refuses other versions.
const FormatVersion = 1

// Bundle is one failing case, ready to rerun.
type Bundle struct {
	Format int    `json:"artest_repro"`
	Case   string `json:"case"`
	Ranks  int    `json:"ranks"`
	// Command is the one line to paste: mpirun -np N artest <Args>.
	Command string `json:"command"`
	// Args are the artest flags that select exactly this case with the same
	// seed, input kind, faults, launch parameters and iteration counts.
	Args   []string      `json:"args"`
	Header report.Header `json:"header"`
	Result report.Case   `json:"result"`
}

// Command is the shell line that reruns args on ranks ranks, with artest
// found on PATH and mpirun's defaults.
func Command(ranks int, args []string) string {
	return Launch{}.Command(ranks, args)
}

// Launch is how a rerun line starts artest, as the failing run was started.
type Launch struct {
	// Binary is the artest to run: a path, or "" for artest on PATH.
	Binary string
	// Oversubscribe adds mpirun's --oversubscribe.
	Oversubscribe bool
	// Env are NAME=VALUE pairs mpirun exports to the ranks (-x NAME=VALUE).
	Env []string
	// MPS: the ranks shared GPUs under an MPS server, which the rerun
	// needs too: the line starts with BINARY mps --, which starts a
	// private one (artest mps).
	MPS bool
}

// Command is the shell line that reruns args on ranks ranks:
// [BINARY mps --] mpirun -np N [--oversubscribe] [-x NAME=VALUE ...] BINARY ARGS.
func (l Launch) Command(ranks int, args []string) string {
	bin := l.Binary
	if bin == "" {
		bin = "artest"
	}
	var words []string
	if l.MPS {
		words = append(words, bin, "mps", "--")
	}
	words = append(words, "mpirun", "-np", fmt.Sprint(ranks))
	if l.Oversubscribe {
		words = append(words, "--oversubscribe")
	}
	for _, kv := range l.Env {
		words = append(words, "-x", kv)
	}
	return report.ShellCommand(append(append(words, bin), args...))
}

// FileName is the bundle's file name for case id: the ID with every
// character outside [A-Za-z0-9._-] replaced by '_'.
func FileName(id string) string {
	var b strings.Builder
	b.WriteString("artest-repro-")
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	b.WriteString(".json")
	return b.String()
}

// maxNames bounds the names Write tries for one case in one directory.
const maxNames = 10000

// Write stores b in dir under a name no file has yet and returns the path:
// FileName(b.Case), else artest-repro-<case>.2.json, .3, ... A rerun of a
// bundle (rerun is true) names its bundles artest-repro-<case>.rerun-N.json
// from N = 1, so a rerun's bundles sit beside the original and never take
// a first run's name. An existing file is never written over, whatever
// wrote it: the bundle is written to a temporary file, synced, and linked
// to its name with link(2), which fails when the name exists, so two runs
// writing into one directory at once cannot take the same name either.
func Write(dir string, b *Bundle, rerun bool) (string, error) {
	b.Format = FormatVersion
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode repro bundle: %w", err)
	}
	data = append(data, '\n')
	tmp, err := os.CreateTemp(dir, ".artest-repro-*.tmp")
	if err != nil {
		return "", fmt.Errorf("write repro bundle: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write repro bundle %s: %w", tmpName, err)
	}
	base := strings.TrimSuffix(FileName(b.Case), ".json")
	for n := 1; n <= maxNames; n++ {
		name := base + ".json"
		switch {
		case rerun:
			name = fmt.Sprintf("%s.rerun-%d.json", base, n)
		case n > 1:
			name = fmt.Sprintf("%s.%d.json", base, n)
		}
		path := filepath.Join(dir, name)
		err := os.Link(tmpName, path)
		if err != nil && !errors.Is(err, fs.ErrExist) {
			// A file system without hard links: claim the name with an
			// exclusive create instead (not atomic against a crash mid-write,
			// but never over another file).
			err = writeExclusive(path, data)
		}
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("write repro bundle %s: %w", path, err)
		}
		return path, nil
	}
	return "", fmt.Errorf("write repro bundle: %d bundles of %s in %s already: move some away", maxNames, b.Case, dir)
}

// writeExclusive creates path, which must not exist, with data.
func writeExclusive(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// Read loads a bundle and checks that it can be rerun.
func Read(path string) (*Bundle, error) {
	data, err := report.ReadInputFile(path, report.MaxBundleBytes)
	if err != nil {
		return nil, fmt.Errorf("read repro bundle: %w", err)
	}
	var b Bundle
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("repro bundle %s: %w", path, err)
	}
	switch {
	case b.Format != FormatVersion:
		return nil, fmt.Errorf("repro bundle %s: format %d, this artest reads %d", path, b.Format, FormatVersion)
	case b.Case == "" || len(b.Args) == 0:
		return nil, fmt.Errorf("repro bundle %s: no case or no flags in it", path)
	}
	for _, a := range b.Args {
		if a == "--repro" || strings.HasPrefix(a, "--repro=") {
			return nil, fmt.Errorf("repro bundle %s: its flags name another bundle", path)
		}
	}
	return &b, nil
}
