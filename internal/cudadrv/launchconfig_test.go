package cudadrv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The layout of CUlaunchConfig and CUlaunchAttribute that trampolines.h
// declares (and asserts with _Static_assert) and LaunchAttribute mirrors:
// offsets on x86_64 and aarch64.
var launchLayout = []struct {
	expr string
	want int
}{
	{"sizeof(CUlaunchConfig)", 56},
	{"offsetof(CUlaunchConfig, gridDimX)", 0},
	{"offsetof(CUlaunchConfig, blockDimX)", 12},
	{"offsetof(CUlaunchConfig, sharedMemBytes)", 24},
	{"offsetof(CUlaunchConfig, hStream)", 32},
	{"offsetof(CUlaunchConfig, attrs)", 40},
	{"offsetof(CUlaunchConfig, numAttrs)", 48},
	{"sizeof(CUlaunchAttribute)", 72},
	{"offsetof(CUlaunchAttribute, id)", 0},
	{"offsetof(CUlaunchAttribute, value)", 8},
	{"sizeof(CUlaunchAttributeValue)", 64},
	{"CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION", int(LaunchAttrProgrammaticStreamSerialization)},
	{"CU_LAUNCH_ATTRIBUTE_COOPERATIVE", int(LaunchAttrCooperative)},
	{"CU_LAUNCH_ATTRIBUTE_PRIORITY", int(LaunchAttrPriority)},
}

// cudaInclude finds a cuda.h: the toolkit's, or the pinned nvcc wheel's
// that make kernels-check installs.
func cudaInclude() string {
	for _, dir := range []string{"/usr/local/cuda/include", "../../.tools/nvcc/nvidia/cu13/include"} {
		if _, err := os.Stat(filepath.Join(dir, "cuda.h")); err == nil {
			abs, _ := filepath.Abs(dir)
			return abs
		}
	}
	return ""
}

// TestLaunchConfigLayoutMatchesCudaH has a C compiler check every number of
// launchLayout against the real cuda.h, and the declarations of
// trampolines.h against the same numbers (its _Static_asserts), so that
// cuLaunchKernelEx receives the config and attributes the driver expects.
func TestLaunchConfigLayoutMatchesCudaH(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	inc := cudaInclude()
	if inc == "" {
		t.Skip("no cuda.h (make kernels-check installs the nvcc wheels that hold one)")
	}
	var src strings.Builder
	src.WriteString("#include <stddef.h>\n#include <cuda.h>\n")
	for i, l := range launchLayout {
		fmt.Fprintf(&src, "_Static_assert(%s == %d, \"check %d: %s\");\n", l.expr, l.want, i, l.expr)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "layout.c")
	require.NoError(t, os.WriteFile(file, []byte(src.String()), 0o644))
	out, err := exec.Command(cc, "-fsyntax-only", "-I"+inc, file).CombinedOutput()
	require.NoError(t, err, "cuda.h disagrees:\n%s", out)

	tramp := filepath.Join(dir, "tramp.c")
	require.NoError(t, os.WriteFile(tramp, []byte("#include \"trampolines.h\"\n"), 0o644))
	wd, err := os.Getwd()
	require.NoError(t, err)
	out, err = exec.Command(cc, "-fsyntax-only", "-I"+wd, tramp).CombinedOutput()
	require.NoError(t, err, "trampolines.h disagrees:\n%s", out)
}
