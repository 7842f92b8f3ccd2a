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
	// CI's test target is built from the same pieces.
	testLine := regexp.MustCompile(`(?m)^test:(.*)$`).FindStringSubmatch(string(mk))
	require.NotNil(t, testLine)
	require.Contains(t, testLine[1], "unit")
	ci, err := os.ReadFile("../.ci/run")
	require.NoError(t, err)
	require.Contains(t, string(ci), "make test")
}

func TestSafetyEnvironment(t *testing.T) {
	joined := strings.Join(readLines(t, "Dockerfile"), "\n")
	require.Contains(t, joined, "NCCL_NVLS_ENABLE=0", "the image must not enable NVLS by default")
	require.NotContains(t, joined, "--allow-multicast")
}
