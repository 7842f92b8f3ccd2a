package mpi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// These tests run mpicheck (./internal/mpicheck), which checks every call of
// this package from inside MPI, under mpirun and alone. On the 2-core CI
// machine mpirun starts 4 ranks in about 0.3 s, so the whole file takes a
// few seconds. Set ARTEST_MPI_LARGE=1 to also move buffers over 2 GiB
// (about 40 s and 7 GiB per rank).

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "artest-mpi-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var buildMpicheck = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "mpicheck")
	args := []string{"build", "-o", bin}
	if flavor == "mpich" {
		args = append(args, "-tags", "mpich")
	}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command("go", append(args, "./internal/mpicheck")...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build mpicheck: %v\n%s", err, out)
	}
	return bin, nil
})

func mpicheck(t *testing.T) string {
	t.Helper()
	bin, err := buildMpicheck()
	require.NoError(t, err)
	return bin
}

// mpirun finds the launcher. CI installs Open MPI, so a missing mpirun
// fails there; ARTEST_ALLOW_NO_MPI=1 turns that into a skip elsewhere.
func mpirun(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("mpirun")
	if err == nil {
		return path
	}
	if os.Getenv("ARTEST_ALLOW_NO_MPI") == "1" {
		t.Skipf("mpirun not on PATH (%v) and ARTEST_ALLOW_NO_MPI=1", err)
	}
	t.Fatalf("mpirun not on PATH (%v): install Open MPI (apt-get install openmpi-bin libopenmpi-dev), "+
		"or set ARTEST_ALLOW_NO_MPI=1 to skip the tests that launch ranks", err)
	return ""
}

func mpirunArgs(np int) []string {
	if flavor == "mpich" {
		return []string{"-n", fmt.Sprint(np)}
	}
	// --oversubscribe: more ranks than the CI machine has cores.
	return []string{"-np", fmt.Sprint(np), "--oversubscribe"}
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs a command with the test's environment minus the variables in
// which launchers announce world sizes (this test may itself run inside an
// srun step), plus env. A run that hangs is killed and fails the test.
func run(t *testing.T, env []string, name string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	// SIGTERM lets mpirun take its ranks down with it.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.ContainsFunc(launcherVars, func(v struct{ name, launcher string }) bool { return v.name == name })
	})
	cmd.Env = append(cmd.Env, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s: %v in %v", filepath.Base(name), strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
	require.NoError(t, ctx.Err(), "timed out\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		res.code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", name, err)
	}
	return res
}

func requireAllRanksOK(t *testing.T, res result, np int) {
	t.Helper()
	require.Zero(t, res.code, "exit code\nstdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	require.NotContains(t, res.stderr, "FAIL")
	for r := range np {
		require.Contains(t, res.stdout, fmt.Sprintf("rank %d/%d ok", r, np), "stderr:\n%s", res.stderr)
	}
}

func TestMpicheckUnderMpirun(t *testing.T) {
	for _, np := range []int{1, 3, 4} {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			launcher, bin := mpirun(t), mpicheck(t)
			res := run(t, nil, launcher, append(mpirunArgs(np), bin)...)
			requireAllRanksOK(t, res, np)
		})
	}
}

func TestMpicheckLarge(t *testing.T) {
	if os.Getenv("ARTEST_MPI_LARGE") != "1" {
		t.Skip("set ARTEST_MPI_LARGE=1 to move buffers over 2 GiB (about 40 s, 7 GiB per rank)")
	}
	launcher, bin := mpirun(t), mpicheck(t)
	res := run(t, nil, launcher, append(mpirunArgs(2), bin, "-large")...)
	requireAllRanksOK(t, res, 2)
}

// A binary started without mpirun is a world of one (singleton MPI_Init).
func TestMpicheckSingleton(t *testing.T) {
	res := run(t, nil, mpicheck(t))
	requireAllRanksOK(t, res, 1)
}

// A launcher that announces more ranks than MPI sees means the binary was
// linked against another MPI; it must stop, not run as N lone rank 0s.
func TestLauncherMismatchStops(t *testing.T) {
	tests := []struct {
		env  string
		want string
	}{
		{"OMPI_COMM_WORLD_SIZE=4", "OMPI_COMM_WORLD_SIZE=4 (set by Open MPI mpirun) announces 4 ranks, but MPI_Comm_size is 1"},
		{"PMI_SIZE=2", "PMI_SIZE=2 (set by MPICH/Intel MPI mpiexec (Hydra) or srun --mpi=pmi2) announces 2 ranks"},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			res := run(t, []string{tt.env}, mpicheck(t))
			require.Equal(t, 2, res.code, "mpicheck exits 2 when Init fails\nstdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
			require.Contains(t, res.stderr, ErrLauncherMismatch.Error())
			require.Contains(t, res.stderr, tt.want)
			require.NotContains(t, res.stdout, "rank 0/1 ok")
		})
	}
}

// Open MPI 4.1's mpirun exits with the code the aborting rank passed to
// MPI_Abort (it also prints "MPI_ABORT was invoked on rank R ... errorcode
// C", though 4.1.4 in this image loses that help text to an ORTE_ERROR_LOG
// line); a singleton exits with the code itself.
func TestAbortExitCode(t *testing.T) {
	tests := []struct {
		name     string
		np       int // 0: singleton, no mpirun
		rank     int
		code     int
		watchdog bool
	}{
		{"np2 rank1", 2, 1, 3, false},
		{"np2 rank1 watchdog", 2, 1, 3, true},
		{"np3 rank0 watchdog", 3, 0, 7, true},
		{"singleton", 0, 0, 5, false},
		{"singleton watchdog", 0, 0, 5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bin := mpicheck(t)
			args := []string{bin, "-abort-rank", fmt.Sprint(tt.rank), "-abort-code", fmt.Sprint(tt.code)}
			if tt.watchdog {
				args = append(args, "-watchdog")
			}
			var res result
			if tt.np == 0 {
				res = run(t, nil, args[0], args[1:]...)
			} else {
				res = run(t, nil, mpirun(t), append(mpirunArgs(tt.np), args...)...)
			}
			require.Equal(t, tt.code, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
			require.NotContains(t, res.stderr, "barrier returned", "a rank got past the abort")
			require.NotContains(t, res.stderr, "Abort returned")
		})
	}
}
