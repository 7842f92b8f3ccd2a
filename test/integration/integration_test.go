//go:build integration

// Package integration runs the built binary under mpirun, as users and CI
// do, on the host backend: exit codes, the JSON report, injected faults, a
// hang, and bad input. `make integration` builds bin/artest first.
package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

func binary(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../../bin/artest")
	require.NoError(t, err)
	_, err = os.Stat(p)
	require.NoError(t, err, "build it first: make build")
	_, err = exec.LookPath("mpirun")
	require.NoError(t, err, "mpirun missing: make deps installs Open MPI")
	return p
}

type outcome struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, limit time.Duration, name string, args ...string) outcome {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "NCCL_NVLS_ENABLE=0")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(limit):
		_ = cmd.Process.Kill()
		t.Fatalf("%s %v did not finish within %s\nstdout:\n%s\nstderr:\n%s", name, args, limit, out.String(), errb.String())
	}
	return outcome{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
}

func mpirun(t *testing.T, np int, limit time.Duration, args ...string) outcome {
	t.Helper()
	// Failing cases write repro bundles; keep them out of the source tree
	// (a test that wants them names its own --repro-dir, which wins).
	full := append([]string{"-np", itoa(np), "--oversubscribe", binary(t), "--backend", "host", "--repro-dir", t.TempDir()}, args...)
	return run(t, limit, "mpirun", full...)
}

func itoa(n int) string { return strconv.Itoa(n) }

func readReport(t *testing.T, path string) *report.Report {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r, err := report.ReadJSON(f)
	require.NoError(t, err)
	return r
}

// artestLines are the lines artest itself wrote to stderr (mpirun adds its own).
func artestLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "artest: ") {
			out = append(out, l)
		}
	}
	return out
}

// Every variant's quick matrix passes at 4 ranks with one timed call per
// timing mode after the checked one (the timed path and the check after
// it; more timed calls add time and nothing to a verdict on the host), and
// at 2 and 3 ranks with the checked call alone (--iters 0) in f32 and bf16.
func TestQuickMatrixPassesOnEveryWorldSize(t *testing.T) {
	t.Parallel()
	for _, np := range []int{4, 2, 3} {
		dir := t.TempDir()
		js, ju := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
		// At 2 and 3 ranks, f32 and bf16: what a world size changes is the
		// split of the work, the same for every dtype of one width (f16
		// takes bf16's 16-bit paths, and every dtype ran at 4 ranks).
		args := []string{"--quick", "--json", js, "--junit", ju, "--iters", "0", "--dtype", "f32,bf16"}
		if np == 4 {
			args = []string{"--quick", "--json", js, "--junit", ju, "--iters", "1", "--reps", "1", "--warmup", "0"}
		}
		o := mpirun(t, np, 5*time.Minute, args...)
		require.Equal(t, 0, o.code, "np %d\n%s\n%s", np, o.stdout, o.stderr)
		require.Contains(t, o.stdout, "# pass ")
		r := readReport(t, js)
		require.Equal(t, np, r.Header.Ranks)
		require.Equal(t, "host", r.Header.Backend)
		require.Len(t, r.Header.Hosts, np)
		require.Zero(t, r.Summary.Fail)
		require.Zero(t, r.Summary.ExitCode)
		var custom, cpasync int
		for _, c := range r.Cases {
			if c.Variant == "oneshot-cpasync" {
				// It has every op: none of its cases is skipped (TestOneshotCpasync).
				cpasync++
				require.Equal(t, report.Pass, c.Verdict, c.ID)
			}
			if !report.IsNCCLBaseline(c.Variant) {
				if c.Verdict == report.Skipped && c.Reason == c.Variant+" has no "+c.Op+" kernel" {
					continue // a variant without this op (multimem: sum only)
				}
				custom++
				require.Equal(t, report.Pass, c.Verdict, c.ID)
			}
		}
		require.Positive(t, custom)
		require.Positive(t, cpasync, "np %d: the quick matrix runs oneshot-cpasync", np)
		x, err := os.ReadFile(ju)
		require.NoError(t, err)
		require.Contains(t, string(x), `<testsuite name="artest.oneshot"`)
	}
}

// oneshot-cpasync computes oneshot's bits, so only the trace word can tell
// that it ran: a dispatcher that runs plain oneshot instead must fail the
// case with right values. Its barriers and planted bugs are caught as
// oneshot's are. (That it passes --quick with no case skipped, on 2, 3 and 4
// ranks, TestQuickMatrixPassesOnEveryWorldSize checks.)
func TestOneshotCpasync(t *testing.T) {
	t.Parallel()
	one := []string{"--variant", "oneshot-cpasync", "--dtype", "f32", "--op", "sum", "--size", "4K", "--mode", "oop,reg,plain,aligned"}
	js := filepath.Join(t.TempDir(), "r.json")
	o := mpirun(t, 4, 2*time.Minute, append(one, "--inject", "wrong-kernel", "--json", js)...)
	require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "# FAIL oneshot-cpasync/f32/sum/4KiB/oop-reg-plain/np4")
	require.Contains(t, o.stdout, "the case names oneshot-cpasync (id 0x53) but the kernel that ran wrote oneshot (id 0x51)")
	r := readReport(t, js)
	require.Equal(t, 1, r.Summary.Fail)
	require.Len(t, r.Cases, 1)
	require.Zero(t, r.Cases[0].Wrong, "oneshot's values are right: the trace word alone fails the case")

	stress := append(one, "--stress", "50")
	o = mpirun(t, 4, 3*time.Minute, append(stress, "--inject", "no-end-barrier", "--inject", "delay:rank=1,us=500")...)
	require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "# FAIL oneshot-cpasync/f32/sum/4KiB/oop-reg-plain/np4")
	o = mpirun(t, 4, 3*time.Minute, stress...)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)

	for _, tc := range []struct {
		inject []string
		stress string
	}{
		{[]string{"skip-last"}, "20"},
		{[]string{"overrun"}, "20"},
		// Without the start barrier a rank reads a late peer's input
		// before the peer wrote it only in some iterations, in bursts: 20
		// iterations missed it in 2 runs of 8 on 2 loaded cores, 200 never
		// in 10 (about half of them wrong).
		{[]string{"no-start-barrier", "delay:rank=1,us=2000"}, "200"},
	} {
		args := []string{"--variant", "oneshot-cpasync", "--dtype", "bf16", "--op", "sum", "--size", "64K", "--mode", "oop,reg,plain,aligned", "--stress", tc.stress}
		for _, x := range tc.inject {
			args = append(args, "--inject", x)
		}
		o := mpirun(t, 2, 2*time.Minute, args...)
		require.Equal(t, 1, o.code, "%v\n%s\n%s", tc.inject, o.stdout, o.stderr)
	}
	// In place, the mid barrier keeps the result in staging until every
	// peer has finished reading this rank's input.
	o = mpirun(t, 2, 2*time.Minute, "--variant", "oneshot-cpasync", "--dtype", "bf16", "--op", "sum", "--size", "64K",
		"--mode", "ip,reg,plain,aligned", "--stress", "20", "--inject", "no-mid-barrier", "--inject", "delay:rank=1,us=2000")
	require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
}

// A usage error under mpirun: exit 2 from the job, one line from all its
// ranks together, no Go stack trace. One input for each place a usage
// error is found: the flags, opening the backend, building the cases (the
// messages of every input are internal/cli's TestUsageErrorsExit2WithOneLine).
// The inputs run in parallel (t.Parallel): each mpirun that ends with a
// non-zero code takes a second or two of Open MPI's teardown, and almost
// no CPU.
func TestBadInputIsOneLineAndExitTwo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--size", "1X"}, "bad size"},
		{[]string{"--shm-dir", "/no/such/dir", "--quick"}, "does not exist"},
		{[]string{"--case", "oneshot/f32/sum/4KiB/oop-reg-plain/np8"}, "is for 8 ranks"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			o := mpirun(t, 2, time.Minute, tc.args...)
			require.Equal(t, 2, o.code, "%v\n%s", tc.args, o.stderr)
			lines := artestLines(o.stderr)
			require.Len(t, lines, 1, "%v: %q", tc.args, o.stderr)
			require.Contains(t, lines[0], tc.want)
			require.NotContains(t, o.stderr, "goroutine ", "no Go stack trace")
		})
	}
}

func TestRanksStartedWithDifferentFlags(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	o := run(t, time.Minute, "mpirun", "--oversubscribe",
		"-np", "1", bin, "--backend", "host", "--quick", "--size", "4K", ":",
		"-np", "1", bin, "--backend", "host", "--quick", "--size", "8K")
	require.Equal(t, 2, o.code, o.stderr)
	require.Contains(t, strings.Join(artestLines(o.stderr), "\n"), "different flags")
}

func TestWithoutMpirunItIsOneRank(t *testing.T) {
	t.Parallel()
	o := run(t, 2*time.Minute, binary(t), "--backend", "host", "--quick", "--dtype", "f32", "--op", "sum")
	require.Equal(t, 0, o.code, o.stderr)
	require.Contains(t, o.stdout, "1 rank")
}

func TestLauncherOfAnotherMPIIsAnEnvironmentError(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary(t), "--backend", "host", "--quick")
	cmd.Env = append(os.Environ(), "OMPI_COMM_WORLD_SIZE=4")
	out, _ := cmd.CombinedOutput()
	require.Equal(t, 4, cmd.ProcessState.ExitCode(), string(out))
	require.Contains(t, string(out), "OMPI_COMM_WORLD_SIZE")
}
