// Package hostcxx finds the host C++ compiler for the tests that let a real
// compiler evaluate a CUDA header's host-side code (layouts, constants,
// formulas) and compare it with Go. Without one such a test skips, unless
// ARTEST_REQUIRE_CXX is set (make test sets it after checking that g++
// exists), where it fails: CI must not pass by skipping them.
package hostcxx

import (
	"os"
	"os/exec"
	"testing"
)

// Find returns the path of g++ (else c++), or skips t (fails it under
// ARTEST_REQUIRE_CXX).
func Find(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"g++", "c++"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("ARTEST_REQUIRE_CXX") != "" {
		t.Fatal("no host C++ compiler (g++ or c++) on PATH, and ARTEST_REQUIRE_CXX is set")
	}
	t.Skip("no host C++ compiler (g++ or c++) on PATH")
	return ""
}
