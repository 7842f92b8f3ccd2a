// Package docker holds the container build. No Docker engine runs on this
// project's machines, so this test checks what can be checked without one:
// the Dockerfile pins its base images by tag and builds with the make
// targets CI runs, and those targets exist.
package docker

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	// Join continuation lines, drop comments.
	var out []string
	cur := ""
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		cur += l
		if strings.TrimSpace(cur) != "" {
			out = append(out, strings.TrimSpace(cur))
		}
		cur = ""
	}
	return out
}

func TestBaseImagesArePinnedByTag(t *testing.T) {
	var froms []string
	for _, l := range readLines(t, "Dockerfile") {
		if strings.HasPrefix(l, "FROM ") {
			froms = append(froms, strings.Fields(l)[1])
		}
	}
	require.Len(t, froms, 2, "a build stage and a run stage")
	tag := regexp.MustCompile(`^nvidia/cuda:\d+\.\d+\.\d+-(devel|runtime)-ubuntu\d+\.\d+$`)
	for _, f := range froms {
		require.Regexp(t, tag, f, "pin the base image by a full version tag")
		require.NotContains(t, f, "latest")
	}
}

// The image builds what CI builds: the make targets of .ci/run's `make
// test` that do not need MPI ranks (deps, vet's build, unit) plus build and
// kernels (the GPU machines' targets), and every target it names exists.
func TestMakeTargetsAreCIs(t *testing.T) {
	var targets []string
	for _, l := range readLines(t, "Dockerfile") {
		if strings.HasPrefix(l, "RUN make ") {
			targets = append(targets, strings.Fields(strings.TrimPrefix(l, "RUN make "))...)
		}
	}
	require.Equal(t, []string{"deps", "build", "kernels", "unit"}, targets)

	mk, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	kmk, err := os.ReadFile("../kernels/kernels.mk")
	require.NoError(t, err)
	defined := regexp.MustCompile(`(?m)^([a-z][a-z0-9-]*):`)
	have := map[string]bool{}
	for _, m := range defined.FindAllStringSubmatch(string(mk)+string(kmk), -1) {
		have[m[1]] = true
	}
	for _, tg := range targets {
		require.True(t, have[tg], "make target %q is not defined", tg)
	}
	// CI's test target is built from the same pieces: unit is among the
	// targets make test reaches, through prerequisites or $(MAKE) lines.
	reached := reachable(string(mk), "test", have)
	for _, tg := range []string{"vet", "unit", "kernels-check", "kernels-sass-check", "integration"} {
		require.True(t, reached[tg], "make test does not reach %q", tg)
	}
	ci, err := os.ReadFile("../.ci/run")
	require.NoError(t, err)
	require.Contains(t, string(ci), "make test")
}

// reachable is the set of targets that `make root` builds according to mk:
// a target's prerequisites, and the targets named on the $(MAKE) lines of
// its recipe, followed to the end. Only names in defined count.
func reachable(mk, root string, defined map[string]bool) map[string]bool {
	lines := strings.Split(mk, "\n")
	// named is what one target's line and recipe name.
	named := func(target string) []string {
		var out []string
		for i, l := range lines {
			prereqs, ok := strings.CutPrefix(l, target+":")
			if !ok {
				continue
			}
			out = append(out, strings.Fields(prereqs)...)
			for _, r := range lines[i+1:] {
				if !strings.HasPrefix(r, "\t") {
					break
				}
				if strings.Contains(r, "$(MAKE)") {
					out = append(out, strings.Fields(r)...)
				}
			}
		}
		return out
	}
	seen := map[string]bool{}
	todo := []string{root}
	for len(todo) > 0 {
		tg := todo[0]
		todo = todo[1:]
		for _, n := range named(tg) {
			if defined[n] && !seen[n] {
				seen[n] = true
				todo = append(todo, n)
			}
		}
	}
	return seen
}

func TestSafetyEnvironment(t *testing.T) {
	joined := strings.Join(readLines(t, "Dockerfile"), "\n")
	require.Contains(t, joined, "NCCL_NVLS_ENABLE=0", "the image must not enable NVLS by default")
	require.NotContains(t, joined, "--allow-multicast")
}
