// Package doclinks checks the repository's Markdown: every relative link
// names a file that exists, and every #fragment pointing into a Markdown
// file names one of its headings (as GitHub makes the anchor). A page cut
// short, or a heading renamed, otherwise leaves links that lead nowhere.
// It also checks that every kernel source a Go file names exists, and
// (layout_test.go) that docs/layout.md has a row for every folder and names
// none that does not exist.
package doclinks

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// roots are the Markdown files and folders checked, from the repository
// root. Results pages are included: their links are the evidence trail.
var roots = []string{"README.md", "docs", "ci", "plugin", "docker"}

var (
	linkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*$`)
	fenceRE   = regexp.MustCompile("^\\s*```")
	// GitHub's anchor: lower case, punctuation other than '-' and '_'
	// dropped, spaces to '-'.
	dropRE = regexp.MustCompile(`[^\p{L}\p{N}\-_ ]`)
)

// anchor is the fragment GitHub gives a heading's text.
func anchor(heading string) string {
	return strings.ReplaceAll(dropRE.ReplaceAllString(strings.ToLower(heading), ""), " ", "-")
}

// anchors are every heading's fragment in one Markdown text (a repeated
// heading gets -1, -2, ... as on GitHub); headings inside code fences are
// not headings.
func anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if fenceRE.MatchString(line) {
			fenced = !fenced
			continue
		}
		m := headingRE.FindStringSubmatch(line)
		if fenced || m == nil {
			continue
		}
		a := anchor(m[2])
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// broken lists the links of the Markdown files under root (paths from
// root) that lead nowhere, one line each, sorted.
func broken(root string, files []string) ([]string, error) {
	cache := map[string]map[string]bool{}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		text := string(b)
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(link, "#")
			target := f
			if path != "" {
				target = filepath.Clean(filepath.Join(filepath.Dir(f), path))
			}
			if strings.HasPrefix(target, "..") {
				continue // outside the repository (the shared notes beside it)
			}
			if _, err := os.Stat(filepath.Join(root, target)); err != nil {
				out = append(out, fmt.Sprintf("%s: %s: no such file", f, link))
				continue
			}
			if frag == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, ok := cache[target]
			if !ok {
				tb, err := os.ReadFile(filepath.Join(root, target))
				if err != nil {
					return nil, fmt.Errorf("read %s: %w", target, err)
				}
				a = anchors(string(tb))
				cache[target] = a
			}
			if !a[frag] {
				out = append(out, fmt.Sprintf("%s: %s: no heading %q in %s", f, link, frag, target))
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// markdown lists the .md files under roots, paths from root.
func markdown(root string, roots []string) ([]string, error) {
	var files []string
	for _, r := range roots {
		err := filepath.WalkDir(filepath.Join(root, r), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".md") {
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				files = append(files, rel)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("walk %s: %w", r, err)
		}
	}
	return files, nil
}

func TestRepositoryLinks(t *testing.T) {
	const root = "../.."
	files, err := markdown(root, roots)
	require.NoError(t, err)
	require.Greater(t, len(files), 20, "the Markdown files were not found from %s", root)
	bad, err := broken(root, files)
	require.NoError(t, err)
	require.Empty(t, bad, "links that lead nowhere")
}

// The checker on a small tree: each kind of broken link is reported, and
// the links that work are not.
func TestBrokenLinksAreFound(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write("docs/perf.md", "# Perf\n\n## The field at 2 ranks (2 H200, 2026-11-26)\n\n## Notes\n\n## Notes\n\n"+
		"```\n# not a heading\n```\n")
	write("docs/results/page.md", "# Page\n")
	write("README.md", strings.Join([]string{
		"[ok](docs/perf.md#the-field-at-2-ranks-2-h200-2026-11-26)",
		"[ok, repeated heading](docs/perf.md#notes-1)",
		"[ok, file](docs/results/page.md)",
		"[ok, outside](../shared/design.md)",
		"[ok, web](https://example.com/x#y)",
		"[ok, own](#readme-heading)",
		"# README heading",
		"[bad anchor](docs/perf.md#the-field-at-4-ranks)",
		"[bad, fenced heading](docs/perf.md#not-a-heading)",
		"[bad file](docs/missing.md)",
	}, "\n"))
	bad, err := broken(dir, []string{"README.md", "docs/perf.md", "docs/results/page.md"})
	require.NoError(t, err)
	require.Equal(t, []string{
		`README.md: docs/missing.md: no such file`,
		`README.md: docs/perf.md#not-a-heading: no heading "not-a-heading" in docs/perf.md`,
		`README.md: docs/perf.md#the-field-at-4-ranks: no heading "the-field-at-4-ranks" in docs/perf.md`,
	}, bad)
}

func TestAnchor(t *testing.T) {
	for _, tt := range []struct{ heading, want string }{
		{"The field at 2 ranks in one visit (2 H200, 2026-11-26)", "the-field-at-2-ranks-in-one-visit-2-h200-2026-11-26"},
		{"artest's NCCL timing against nccl-tests", "artests-nccl-timing-against-nccl-tests"},
		{"Plot: `--plot`", "plot---plot"},
		{"SM budgets: `bench --sm-budget N`", "sm-budgets-bench---sm-budget-n"},
		{"vLLM's one-stage kernel at 256 KiB: where the gap is", "vllms-one-stage-kernel-at-256-kib-where-the-gap-is"},
	} {
		require.Equal(t, tt.want, anchor(tt.heading), tt.heading)
	}
}
