// Package repro writes and reads repro bundles: for one failing case, the
// exact artest flags that rerun it, the one-line command, the environment it
// failed in (versions, devices, topology) and what was wrong (the first
// mismatches). `artest --repro FILE` reruns a bundle.
package repro

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Command is the shell line that reruns args on ranks ranks.
func Command(ranks int, args []string) string {
	return report.ShellCommand(append([]string{"mpirun", "-np", fmt.Sprint(ranks), "artest"}, args...))
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

// Write stores b in dir under FileName(b.Case), atomically, and returns the
// path. When that path is the bundle keep (the one a rerun was started
// from), the new bundle goes under the first free name of the form
// artest-repro-<case>.rerun-N.json instead, so the original is never lost.
func Write(dir string, b *Bundle, keep string) (string, error) {
	b.Format = FormatVersion
	path := filepath.Join(dir, FileName(b.Case))
	if keep != "" && sameFile(path, keep) {
		base := strings.TrimSuffix(FileName(b.Case), ".json")
		for n := 1; ; n++ {
			path = filepath.Join(dir, fmt.Sprintf("%s.rerun-%d.json", base, n))
			if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
	}
	err := report.WriteFileAtomic(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(b)
	})
	if err != nil {
		return "", fmt.Errorf("write repro bundle: %w", err)
	}
	return path, nil
}

// sameFile reports whether a and b name one existing file (through links,
// relative paths or hard links alike).
func sameFile(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	if err != nil {
		return false
	}
	return os.SameFile(ia, ib)
}

// Read loads a bundle and checks that it can be rerun.
func Read(path string) (*Bundle, error) {
	data, err := os.ReadFile(path)
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
