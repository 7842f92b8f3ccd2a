// Package hostcxx finds the host C++ compiler for the tests that let a real
// compiler evaluate a CUDA header's host-side code (layouts, constants,
// formulas) and compare it with Go. Without one such a test skips, unless
// ARTEST_REQUIRE_CXX is set (make test sets it after checking that g++
// exists), where it fails: CI must not pass by skipping them.
package hostcxx

import (
	"os"
	"os/exec"
	"path/filepath"
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

// Output compiles the C++17 program src with the host compiler (warnings
// are errors; each of includes is a -I folder), runs it and returns what it
// printed. A compile or run failure fails t with the compiler's words.
func Output(t testing.TB, src string, includes ...string) []byte {
	t.Helper()
	cxx := Find(t)
	dir := t.TempDir()
	file, bin := filepath.Join(dir, "probe.cc"), filepath.Join(dir, "probe")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"-std=c++17", "-Wall", "-Werror"}
	for _, inc := range includes {
		abs, err := filepath.Abs(inc)
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "-I", abs)
	}
	if out, err := exec.Command(cxx, append(args, "-o", bin, file)...).CombinedOutput(); err != nil {
		t.Fatalf("compile with %s: %v\n%s", cxx, err, out)
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatalf("run the compiled probe: %v", err)
	}
	return out
}
