// Package layering checks the module's package graph: every package sits
// in one layer of the table below and imports only packages of lower
// layers, and no two packages share a name (nor a package and a standard
// library package the module imports).
package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/artest/artest"

// layers are the module's packages, lowest first, by path inside the
// module. A package imports only packages of lower layers (its tests may
// import more). A new package gets a place here, except a new variant
// folder: an entry "dir/*" places every package directly below dir that
// no other entry names, so kernels/<variant>/ needs no line of its own.
var layers = []struct {
	name string
	pkgs []string
}{
	{"numerics: dtypes, conversions and the reference reduction", []string{"reference"}},
	{"leaves: the SignalBlock layout, exit codes, dlopen, reports, the header-constant parser", []string{
		"sigblock", "internal/exitcode", "internal/dl", "internal/coresident",
		"internal/topo", "internal/report", "mpi/internal/chunk", "docker", "kernels/internal/cconst", "internal/hostcxx",
	}},
	{"the variant type and kernel ABI, the ranks' collectives, the CUDA driver, repro bundles", []string{
		"kernels", "internal/comm", "internal/cudadrv", "internal/repro", "internal/knobs",
	}},
	{"built on those: the host models' shared helpers, MPI, NCCL, MPS, the backend seam, the liveness board, the witness's judgement", []string{
		"kernels/hostmodel", "mpi", "internal/nccl", "internal/multicast/gate",
		"internal/mps", "internal/backend", "internal/liveness", "internal/witness",
	}},
	{"the host models' test harness", []string{"kernels/hostmodel/hostmodeltest"}},
	{"the variants, one folder each", []string{"kernels/*"}},
	{"the variant list", []string{"kernels/registry"}},
	{"the case matrix, plugins", []string{"cases", "internal/plugin"}},
	{"bench comparison, tuning, multicast set-up", []string{
		"internal/bench", "internal/tune", "internal/multicast",
	}},
	{"the backends and the runner", []string{
		"internal/backend/host", "internal/backend/cuda", "internal/runner",
	}},
	{"the command line", []string{"internal/cli"}},
	{"programs and end-to-end tests", []string{
		"cmd/artest", "mpi/internal/mpicheck", "test/doclinks", "test/integration", "test/ciscripts", "test/layering", "test/reproimage",
	}},
}

// pkg is what the check needs of `go list -json`.
type pkg struct {
	ImportPath string
	Name       string
	Imports    []string
}

// layerFor is rel's layer: its own entry's, else that of the entry
// "dir/*" for the folder it sits directly in. It also returns the entry
// that placed it.
func layerFor(rel string, layerOf map[string]int) (int, string, bool) {
	if l, ok := layerOf[rel]; ok {
		return l, rel, true
	}
	if dir := path.Dir(rel); dir != "." {
		if l, ok := layerOf[dir+"/*"]; ok {
			return l, dir + "/*", true
		}
	}
	return 0, "", false
}

// check returns every violation of the layering in pkgs: a package that
// is in no layer or in two, an import of a module package from the same or
// a higher layer, and a layer entry that places no package (a stale table).
func check(pkgs []pkg, layerOf map[string]int) []string {
	var bad []string
	listed := map[string]bool{}
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		me, entry, ok := layerFor(rel, layerOf)
		listed[entry] = true
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is in no layer: add it to layering_test.go's table", rel))
			continue
		}
		for _, imp := range p.Imports {
			dep, inModule := strings.CutPrefix(imp, module+"/")
			if !inModule {
				continue
			}
			l, _, ok := layerFor(dep, layerOf)
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s imports %s, which is in no layer", rel, dep))
			case l >= me:
				bad = append(bad, fmt.Sprintf("%s (layer %d: %s) imports %s (layer %d: %s)", rel, me, layers[me].name, dep, l, layers[l].name))
			}
		}
	}
	for rel := range layerOf {
		if !listed[rel] {
			bad = append(bad, fmt.Sprintf("layer table names %s, which places no package", rel))
		}
	}
	sort.Strings(bad)
	return bad
}

// checkNames returns every package name that two of pkgs share (commands,
// all named main, aside), or that one shares with a standard-library
// package any of pkgs imports: a file that needs both must rename one.
func checkNames(pkgs []pkg) []string {
	byName := map[string][]string{}
	std := map[string]string{}
	for _, p := range pkgs {
		if p.Name != "main" {
			byName[p.Name] = append(byName[p.Name], p.ImportPath)
		}
		for _, imp := range p.Imports {
			if first, _, _ := strings.Cut(imp, "/"); !strings.Contains(first, ".") {
				std[stdName(imp)] = imp
			}
		}
	}
	var bad []string
	for name, paths := range byName {
		sort.Strings(paths)
		if len(paths) > 1 {
			bad = append(bad, fmt.Sprintf("packages %s share the name %s", strings.Join(paths, ", "), name))
		}
		if s, ok := std[name]; ok {
			bad = append(bad, fmt.Sprintf("package %s has the name of the standard library's %s", paths[0], s))
		}
	}
	sort.Strings(bad)
	return bad
}

// stdName is the name of standard-library package path: its last element,
// or the one before a major version (math/rand/v2 is rand).
func stdName(path string) string {
	parts := strings.Split(path, "/")
	last := parts[len(parts)-1]
	if len(parts) > 1 && len(last) > 1 && last[0] == 'v' && strings.Trim(last[1:], "0123456789") == "" {
		return parts[len(parts)-2]
	}
	return last
}

// layerIndex maps each package to its layer; a package in two layers is
// an error.
func layerIndex() (map[string]int, error) {
	out := map[string]int{}
	var errs []error
	for i, l := range layers {
		for _, p := range l.pkgs {
			if j, dup := out[p]; dup {
				errs = append(errs, fmt.Errorf("%s is in layers %d and %d", p, j, i))
			}
			out[p] = i
		}
	}
	return out, errors.Join(errs...)
}

// goList is `go list -json` of every package of the module, with the
// build tags of its tests (test/integration has one).
func goList(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "integration", "-json", module+"/...")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "go list: %s", errb.String())
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for {
		var p pkg
		err := dec.Decode(&p)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

func TestLayering(t *testing.T) {
	idx, err := layerIndex()
	require.NoError(t, err)
	pkgs := goList(t)
	require.Empty(t, check(pkgs, idx))
	require.Empty(t, checkNames(pkgs))
}

// The name check finds what it is there to find.
func TestNamesCheckFails(t *testing.T) {
	tests := []struct {
		name string
		pkgs []pkg
		want []string
	}{
		{"distinct names", []pkg{
			{ImportPath: module + "/internal/cudadrv", Name: "cudadrv"},
			{ImportPath: module + "/internal/backend/cuda", Name: "cuda", Imports: []string{"fmt", "math/rand/v2"}},
		}, nil},
		{"commands share main", []pkg{
			{ImportPath: module + "/cmd/artest", Name: "main"},
			{ImportPath: module + "/mpi/internal/mpicheck", Name: "main"},
		}, nil},
		{"two packages named cuda", []pkg{
			{ImportPath: module + "/internal/cuda", Name: "cuda"},
			{ImportPath: module + "/internal/backend/cuda", Name: "cuda"},
		}, []string{"packages " + module + "/internal/backend/cuda, " + module + "/internal/cuda share the name cuda"}},
		{"a package named as an imported standard package", []pkg{
			{ImportPath: module + "/signal", Name: "signal"},
			{ImportPath: module + "/internal/mps", Name: "mps", Imports: []string{"os/signal"}},
		}, []string{"package " + module + "/signal has the name of the standard library's os/signal"}},
		{"a major version is not the name", []pkg{
			{ImportPath: module + "/rand", Name: "rand"},
			{ImportPath: module + "/x", Name: "x", Imports: []string{"math/rand/v2"}},
		}, []string{"package " + module + "/rand has the name of the standard library's math/rand/v2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, checkNames(tt.pkgs))
		})
	}
}

// The check finds what it is there to find.
func TestLayeringCheckFails(t *testing.T) {
	idx, err := layerIndex()
	require.NoError(t, err)
	all := func(extra ...pkg) []pkg {
		var ps []pkg
		for rel := range idx {
			// A "dir/*" entry places a package of that folder.
			ps = append(ps, pkg{ImportPath: module + "/" + strings.Replace(rel, "*", "somevariant", 1)})
		}
		return append(ps, extra...)
	}
	tests := []struct {
		name string
		pkgs []pkg
		want []string
	}{
		{"the table alone passes", all(), nil},
		{
			"an import of a higher layer",
			all(pkg{ImportPath: module + "/internal/comm", Imports: []string{module + "/internal/runner"}}),
			[]string{"internal/comm (layer 2: the variant type and kernel ABI, the ranks' collectives, the CUDA driver, repro bundles) imports internal/runner (layer 9: the backends and the runner)"},
		},
		{
			"an import within a layer",
			all(pkg{ImportPath: module + "/internal/runner", Imports: []string{"fmt", module + "/internal/backend/host"}}),
			[]string{"internal/runner (layer 9: the backends and the runner) imports internal/backend/host (layer 9: the backends and the runner)"},
		},
		{
			"a package in no layer",
			all(pkg{ImportPath: module + "/internal/newthing"}),
			[]string{"internal/newthing is in no layer: add it to layering_test.go's table"},
		},
		{
			"a stale table entry",
			func() []pkg {
				ps := all()
				for i, p := range ps {
					if p.ImportPath == module+"/internal/topo" {
						return append(ps[:i], ps[i+1:]...)
					}
				}
				return ps
			}(),
			[]string{"layer table names internal/topo, which places no package"},
		},
		{
			"a new variant folder needs no entry",
			all(pkg{ImportPath: module + "/kernels/newvariant", Imports: []string{module + "/kernels", module + "/kernels/hostmodel"}}),
			nil,
		},
		{
			"a variant folder imports another",
			all(pkg{ImportPath: module + "/kernels/newvariant", Imports: []string{module + "/kernels/somevariant"}}),
			[]string{"kernels/newvariant (layer 5: the variants, one folder each) imports kernels/somevariant (layer 5: the variants, one folder each)"},
		},
		{
			"a folder's entry covers one level only",
			all(pkg{ImportPath: module + "/kernels/newvariant/helper"}),
			[]string{"kernels/newvariant/helper is in no layer: add it to layering_test.go's table"},
		},
		{
			"no variant folder left",
			func() []pkg {
				ps := all()
				for i, p := range ps {
					if p.ImportPath == module+"/kernels/somevariant" {
						return append(ps[:i], ps[i+1:]...)
					}
				}
				return ps
			}(),
			[]string{"layer table names kernels/*, which places no package"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Each package once: the extra entry replaces the table's.
			seen := map[string]int{}
			var ps []pkg
			for _, p := range tt.pkgs {
				if i, ok := seen[p.ImportPath]; ok {
					ps[i] = p
					continue
				}
				seen[p.ImportPath] = len(ps)
				ps = append(ps, p)
			}
			require.Equal(t, tt.want, check(ps, idx))
		})
	}
}
