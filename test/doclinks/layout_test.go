package doclinks

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// layoutDoc is the repository's map, from the repository root.
const layoutDoc = "docs/layout.md"

var (
	// codeRE is one backticked span on a line.
	codeRE = regexp.MustCompile("`([^`\n]+)`")
	// placeholderRE is the part of a pattern row's path that stands for a
	// folder name: kernels/<variant>/.
	placeholderRE = regexp.MustCompile(`<[^<>/]+>`)
	// nameRE is a bare folder name, as a pattern row lists its folders.
	nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

// mappedFolders are the folders docs/layout.md must name, paths from root
// with '/': every folder holding a .go file (a package, or a folder of
// tests only such as test/doclinks), every top-level folder, and every
// folder directly under kernels/ (the variants, device/, harness/) and
// plugin/ (the example, the adapters). Skipped, as the go tool skips them
// or because they are not the repository's layout: folders whose name
// starts with '.' or '_', testdata/, bin/ and artest-repro/ (outputs),
// vendored code, and docs/results/ (results pages, indexed by their own
// README).
func mappedFolders(root string) ([]string, error) {
	skip := func(rel, name string) bool {
		switch {
		case strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_"):
			return true
		case name == "testdata" || name == "vendor" || name == "node_modules" || name == "third_party":
			return true
		}
		// bin/ and artest-repro/ are what builds and runs write (both in
		// .gitignore), not part of the repository.
		return rel == "bin" || rel == "artest-repro" || rel == "docs/results"
	}
	set := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if skip(rel, d.Name()) {
				return filepath.SkipDir
			}
			if dir := path.Dir(rel); dir == "." || dir == "kernels" || dir == "plugin" {
				set[rel] = true
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && path.Dir(rel) != "." {
			set[path.Dir(rel)] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

// layoutRow is one row of the map's table: the backticked paths of its
// first cell and the backticked spans of the rest.
type layoutRow struct {
	paths []string
	text  []string
}

// codeSpans are the backticked spans of s.
func codeSpans(s string) []string {
	var out []string
	for _, m := range codeRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// layoutRows are the table rows of the map, without the header and the
// separator.
func layoutRows(text string) []layoutRow {
	var rows []layoutRow
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 2 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		paths := codeSpans(cells[0])
		if len(paths) == 0 {
			continue // the header, or a row naming no path
		}
		rows = append(rows, layoutRow{paths: paths, text: codeSpans(strings.Join(cells[1:], "|"))})
	}
	return rows
}

// named are the folders the map's rows name, paths without a trailing '/'.
// A row names the paths of its first cell; the folders its text writes as
// `name/` below each of those (`plugin/`'s `example/`); and, when its
// path is a pattern (`kernels/<variant>/`), each bare `name` of its text
// put in place of the placeholder. A path only mentioned in another row's
// text is not named: the map has a row for it, or its parent's row names
// it as a folder.
func named(rows []layoutRow) map[string]bool {
	out := map[string]bool{}
	for _, r := range rows {
		for _, p := range r.paths {
			p = strings.TrimSuffix(p, "/")
			if placeholderRE.MatchString(p) {
				for _, t := range r.text {
					if nameRE.MatchString(t) {
						out[placeholderRE.ReplaceAllLiteralString(p, t)] = true
					}
				}
				continue
			}
			out[p] = true
			for _, t := range r.text {
				if strings.HasSuffix(t, "/") && folderLike(t) {
					out[path.Join(p, t)] = true
				}
			}
		}
	}
	return out
}

// folderLike reports whether a backticked span reads as a folder path of
// the repository: it has a '/', no space, quote, glob or placeholder, is
// not absolute, a flag or outside the repository, and its last element has
// no extension (so a file such as kernels/device/signal.cuh is not one),
// and it is not a module or host path.
func folderLike(s string) bool {
	if !strings.Contains(s, "/") || strings.ContainsAny(s, " \t\"'*?<>[]{}$:") {
		return false
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "-") || strings.HasPrefix(s, "..") {
		return false
	}
	// A first element with a dot in it (not a hidden folder's leading one)
	// is a host: github.com/artest/artest is the module, not a folder.
	if first, _, _ := strings.Cut(s, "/"); strings.Contains(strings.TrimPrefix(first, "."), ".") {
		return false
	}
	return path.Ext(strings.TrimSuffix(s, "/")) == ""
}

// unmapped are the folders of root the map does not name.
func unmapped(folders []string, names map[string]bool) []string {
	var out []string
	for _, f := range folders {
		if !names[f] {
			out = append(out, f)
		}
	}
	return out
}

// stale are the folder-like paths the map names that do not exist under
// root: anywhere in the page, a path from the root; in a row's text, also
// a path below one of the row's own paths (`testdata/` in
// `internal/report`'s row). One line each, sorted.
func stale(root, text string) []string {
	exists := func(p string) bool {
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
		return err == nil
	}
	bases := map[string][]string{} // a span in a row's text -> its row's paths
	for _, r := range layoutRows(text) {
		for _, t := range r.text {
			bases[t] = append(bases[t], r.paths...)
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range codeSpans(text) {
		if seen[s] || !folderLike(s) || exists(s) {
			continue
		}
		seen[s] = true
		found := false
		for _, b := range bases[s] {
			if !placeholderRE.MatchString(b) && exists(path.Join(b, s)) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// docs/layout.md is the map of the repository: a package or top-level
// folder added without a row leaves readers a folder the map does not
// know, and a row left behind by a move sends them to one that is gone.
func TestLayoutNamesEveryFolder(t *testing.T) {
	root := filepath.Join("..", "..")
	b, err := os.ReadFile(filepath.Join(root, layoutDoc))
	require.NoError(t, err)
	folders, err := mappedFolders(root)
	require.NoError(t, err)
	// Guard against a walk from the wrong place passing with nothing to check.
	require.Contains(t, folders, "internal/runner", "the repository's folders were not found from %s", root)
	require.Contains(t, folders, "kernels/oneshot")

	rows := layoutRows(string(b))
	require.Greater(t, len(rows), 20, "the table of %s was not found", layoutDoc)
	missing := unmapped(folders, named(rows))
	require.Empty(t, missing, "folders %s does not name: add a row to docs/layout.md for each "+
		"(its path in backticks, then what it holds), or name a variant folder in the `kernels/<variant>/` row", layoutDoc)

	gone := stale(root, string(b))
	require.Empty(t, gone, "%s names folders that do not exist: fix or remove their rows", layoutDoc)
}

// The checker on a small tree: every kind of folder is required, every way
// the map may name one is accepted, and a folder only mentioned, or named
// but gone, is reported.
func TestLayoutCheckerOnASmallTree(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	for _, f := range []string{
		"cmd/tool/main.go",
		"internal/a/a.go",
		"internal/b/b.go",          // only mentioned in a's row: reported
		"internal/c/c_test.go",     // a folder of tests only is a package too
		"internal/a/testdata/x.go", // testdata is skipped, and named as a's folder below
		"kernels/k.go",
		"kernels/one/one.go",
		"kernels/two/two.go", // not listed in the pattern row: reported
		"kernels/device/d.h",
		"plugin/example/e.cu",
		"plugin/adapters/a.py",
		"ci/run.sh",
		".hidden/h.go",
		"bin/tool",
		"artest-repro/case.json",
		"_skip/s.go",
		"docs/results/r/x.go",
		"docs/layout.md",
	} {
		write(f, "")
	}
	doc := strings.Join([]string{
		"# Layout",
		"Intro naming `internal/x/` (gone), `ldd bin/tool`, `kernels/device/d.h` and `/dev/shm`.",
		"| path | what it holds |",
		"|---|---|",
		"| `cmd/tool` | the program |",
		"| `internal/a` | a, with `internal/b` beside it and goldens in `testdata/`; not `nothere/` |",
		"| `internal/c/` | c |",
		"| `kernels/` | shared |",
		"| `kernels/device/` | headers |",
		"| `kernels/<variant>/` | one folder per variant: `one`, `host.go`, `Variant()` |",
		"| `plugin/` | the ABI, `example/`, `adapters/` |",
		"| `ci/`, `docs/` | scripts; pages |",
	}, "\n")

	folders, err := mappedFolders(dir)
	require.NoError(t, err)
	require.Equal(t, []string{
		"ci", "cmd", "cmd/tool", "docs", "internal", "internal/a", "internal/b", "internal/c",
		"kernels", "kernels/device", "kernels/one", "kernels/two", "plugin", "plugin/adapters", "plugin/example",
	}, folders)
	require.Equal(t, []string{"cmd", "internal", "internal/b", "kernels/two"},
		unmapped(folders, named(layoutRows(doc))))
	require.Equal(t, []string{"internal/x/", "nothere/"}, stale(dir, doc))
}

func TestFolderLike(t *testing.T) {
	for _, tt := range []struct {
		span string
		want bool
	}{
		{"internal/runner", true},
		{"kernels/device/", true},
		{".ci/run", true},
		{"testdata/", true},
		{"kernels/device/signal.cuh", false}, // a file
		{"kernels/<variant>/", false},        // a pattern
		{"kernels/*", false},
		{"ldd bin/artest", false}, // a command
		{"/dev/shm", false},       // outside the repository
		{`"device/common.cuh"`, false},
		{"oneshot", false},                  // no '/': a name, not a path
		{"github.com/artest/artest", false}, // the module
		{"gonum.org/v1/plot", false},
		{"--plot", false},
	} {
		require.Equal(t, tt.want, folderLike(tt.span), tt.span)
	}
}
