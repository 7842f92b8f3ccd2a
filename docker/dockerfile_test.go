// Package docker holds the container build. These tests check the build
// files without an engine: nothing is fetched from the network (no registry
// base image, no download command), NVLS stays off, and the make targets
// and CI step that build and test the image exist.
package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// instructions are a build file's instructions: continuation lines joined,
// comments and blank lines dropped.
func instructions(text string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(text, "\n") {
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

// fetchers are commands and forms that reach the network from a build.
var fetchers = regexp.MustCompile(`(?i)\b(curl|wget|apt-get|apt|apk|dnf|yum|pip3?|git\s+clone|go\s+install|go\s+mod\s+download)\b|ADD\s+(--\S+\s+)*(https?|git)://`)

// localImage is a base that never comes from a registry: scratch, an image
// under localhost/, or an earlier stage of the same file.
func localImage(ref string, stages map[string]bool) bool {
	return ref == "scratch" || strings.HasPrefix(ref, "localhost/") || stages[strings.ToLower(ref)]
}

// fromImage splits a FROM instruction's operands into the base image and
// the stage name (lower case, "" when none); options (--platform) are
// skipped.
func fromImage(operands []string) (ref, stage string) {
	var f []string
	for _, o := range operands {
		if !strings.HasPrefix(o, "--") {
			f = append(f, o)
		}
	}
	if len(f) == 0 {
		return "", ""
	}
	if len(f) >= 3 && strings.EqualFold(f[1], "AS") {
		return f[0], strings.ToLower(f[2])
	}
	return f[0], ""
}

// networkFetches lists the instructions of a build file that would fetch
// from the network: a FROM of a registry image (an ARG used as the base must
// default to a local one) or a download command anywhere.
func networkFetches(text string) []string {
	var bad []string
	args := map[string]string{}
	stages := map[string]bool{}
	argRef := regexp.MustCompile(`^\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?$`)
	for _, in := range instructions(text) {
		f := strings.Fields(in)
		switch strings.ToUpper(f[0]) {
		case "ARG":
			if name, def, ok := strings.Cut(f[1], "="); ok {
				args[name] = strings.Trim(def, `"'`)
			}
		case "FROM":
			ref, stage := fromImage(f[1:])
			if m := argRef.FindStringSubmatch(ref); m != nil {
				ref = args[m[1]]
			}
			if !localImage(ref, stages) {
				bad = append(bad, fmt.Sprintf("%s (base %q is not local)", in, ref))
			}
			if stage != "" {
				stages[stage] = true
			}
		}
		if fetchers.MatchString(in) {
			bad = append(bad, in+" (fetches from the network)")
		}
	}
	return bad
}

func TestNetworkFetchesCatches(t *testing.T) {
	for name, tc := range map[string]struct {
		text string
		bad  int
	}{
		"local base":         {"ARG BASE=localhost/artest-base:bookworm\nFROM ${BASE}\nCOPY root/ /\n", 0},
		"scratch":            {"FROM scratch\nCOPY artest /\n", 0},
		"registry base":      {"FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04\n", 1},
		"registry by arg":    {"ARG BASE=debian:bookworm\nFROM $BASE\n", 1},
		"arg without a base": {"ARG BASE\nFROM ${BASE}\n", 1},
		"curl":               {"FROM scratch\nRUN curl -fsSL https://go.dev/dl/go.tgz | tar -xz\n", 1},
		"wget continued":     {"FROM scratch\nRUN true && \\\n    wget https://x\n", 1},
		"apt-get":            {"FROM scratch\nRUN apt-get update\n", 1},
		"ADD url":            {"FROM scratch\nADD https://example.com/x /x\n", 1},
		"stage":              {"FROM localhost/b AS build\nFROM build\n", 0},
		"platform option":    {"FROM --platform=linux/amd64 nvidia/cuda:13.0.1-base-ubuntu24.04 AS run\n", 1},
		"comment only":       {"# FROM nvidia/cuda and curl are gone\nFROM scratch\n", 0},
	} {
		require.Len(t, networkFetches(tc.text), tc.bad, name)
	}
}

// buildFiles are the container build files of this directory.
func buildFiles(t *testing.T) []string {
	var files []string
	for _, pattern := range []string{"Containerfile*", "Dockerfile*", "*.Dockerfile", "*.Containerfile"} {
		m, err := filepath.Glob(pattern)
		require.NoError(t, err)
		files = append(files, m...)
	}
	return files
}

func TestNoNetworkFetches(t *testing.T) {
	files := buildFiles(t)
	require.Contains(t, files, "Containerfile")
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		require.Empty(t, networkFetches(string(data)), "%s must build without a registry or a download", f)
	}
}

func TestSafetyEnvironment(t *testing.T) {
	data, err := os.ReadFile("Containerfile")
	require.NoError(t, err)
	joined := strings.Join(instructions(string(data)), "\n")
	require.Contains(t, joined, "NCCL_NVLS_ENABLE=0", "the image must not enable NVLS by default")
	require.NotContains(t, joined, "--allow-multicast")
}

// The image's make targets exist and run the scripts that build and test
// it; CI runs the image test after make test.
func TestMakeTargetsAndCI(t *testing.T) {
	mk, err := os.ReadFile("../Makefile")
	require.NoError(t, err)
	for target, script := range map[string]string{
		"image":       "ci/build-image.sh",
		"test-image":  "ci/image-test.sh",
		"repro-image": "ci/repro-in-image.sh",
	} {
		recipe := regexp.MustCompile(`(?m)^` + target + `:[^\n]*\n((?:\t[^\n]*\n)*)`).FindStringSubmatch(string(mk))
		require.NotNil(t, recipe, "make target %q is not defined", target)
		require.Contains(t, recipe[1], script, "make %s runs %s", target, script)
		_, err := os.Stat("../" + script)
		require.NoError(t, err)
	}
	ci, err := os.ReadFile("../.ci/run")
	require.NoError(t, err)
	run := string(ci)
	test, image := strings.Index(run, "\nmake test\n"), strings.Index(run, "\nmake test-image\n")
	require.True(t, test >= 0 && image > test, ".ci/run runs make test-image after make test")
}
