//go:build integration

package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/repro"
)

// A planted failure prints a one-line rerun command and writes a bundle;
// `artest --repro` reruns exactly that case and fails the same way.
func TestReproBundleRerunsTheFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	id := "twoshot/bf16/sum/4100B/oop-reg-plain/np2"
	o := mpirun(t, 2, 2*time.Minute, "--variant", "twoshot", "--dtype", "bf16", "--op", "sum", "--size", "4100",
		"--mode", "oop,reg,plain,aligned", "--inject", "skip-last", "--seed", "7", "--repro-dir", dir,
		"--json", filepath.Join(dir, "first.json"))
	require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
	bundle := filepath.Join(dir, repro.FileName(id))
	// The lines name the binary the run used (it is not on PATH) and the
	// --oversubscribe it was started with (ARTEST_* variables of the test's
	// environment may sit between them).
	require.Contains(t, o.stderr, "artest: repro "+id+": mpirun -np 2 --oversubscribe ")
	require.Contains(t, o.stderr, binary(t)+" --backend host --case "+id+" --seed 7")
	require.Contains(t, o.stderr, binary(t)+" --repro "+bundle)

	b, err := repro.Read(bundle)
	require.NoError(t, err)
	require.Equal(t, id, b.Case)
	require.Equal(t, 2, b.Ranks)
	require.Contains(t, strings.Join(b.Args, " "), "--inject skip-last")
	require.Equal(t, report.Fail, b.Result.Verdict)
	require.NotEmpty(t, b.Result.Failures)
	require.NotEmpty(t, b.Result.Failures[0].Mismatches, "the bundle keeps the first mismatches")
	require.NotEmpty(t, b.Header.Versions["artest"])
	first := readReport(t, filepath.Join(dir, "first.json"))

	again := filepath.Join(dir, "again.json")
	o = mpirun(t, 2, 2*time.Minute, "--repro", bundle, "--json", again)
	require.Equal(t, 1, o.code, "%s\n%s", o.stdout, o.stderr)
	r := readReport(t, again)
	require.Len(t, r.Cases, 1)
	require.Equal(t, id, r.Cases[0].ID)
	require.Equal(t, first.Cases[0].Wrong, r.Cases[0].Wrong)
	require.Equal(t, first.Cases[0].Reason, r.Cases[0].Reason)

	// The bundle is for 2 ranks: another world size is a usage error.
	o = mpirun(t, 3, time.Minute, "--repro", bundle)
	require.Equal(t, 2, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stderr, "is for 2 ranks; this run has 3")

	o = mpirun(t, 2, time.Minute, "--repro", filepath.Join(dir, "missing.json"))
	require.Equal(t, 2, o.code)
	require.Len(t, artestLines(o.stderr), 1, o.stderr)
}

// A rank killed with SIGKILL mid-run: the job ends (mpirun names the lost
// rank) well within the timeout, and the JSON Lines file keeps every case
// that finished before the kill. (--timeout is generous: 2000 host calls
// of a case on a loaded 2-core machine once took over 20 s, a false hang.)
func TestKilledRankKeepsFinishedCases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jl := filepath.Join(dir, "run.jsonl")
	cmd := exec.Command("mpirun", "-np", "2", "--oversubscribe", binary(t), "--backend", "host",
		"--variant", "oneshot", "--dtype", "f32", "--op", "sum", "--size", "4,8,12,16,20,24,28,32,36,40,44,48",
		"--mode", "oop,reg,plain,aligned", "--iters", "2000", "--timeout", "60s", "--jsonl", jl)
	cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	// Wait for two finished cases, then kill rank 1 (a child of mpirun).
	deadline := time.Now().Add(2 * time.Minute)
	var finished []string
	for {
		data, _ := os.ReadFile(jl)
		finished = caseLines(string(data))
		if len(finished) >= 2 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no 2 cases finished in time; stderr:\n%s", errb.String())
		time.Sleep(100 * time.Millisecond)
	}
	pid := rankPID(t, cmd.Process.Pid, 1)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	start := time.Now()
	select {
	case <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the job did not end within a minute of the kill\n%s", errb.String())
	}
	require.NotEqual(t, 0, cmd.ProcessState.ExitCode())
	require.Less(t, time.Since(start), 30*time.Second)
	require.Contains(t, errb.String(), "rank 1", "mpirun names the lost rank")

	f, err := os.Open(jl)
	require.NoError(t, err)
	defer f.Close()
	rep, complete, err := report.ReadJSONL(f)
	require.NoError(t, err)
	// mpirun ends the other rank with SIGTERM: rank 0 may still write its
	// summary line, marked interrupted; a summary of a finished run it is not.
	require.True(t, !complete || rep.Summary.Interrupted != "", "a killed run has no summary line, or one that says it was interrupted: %+v", rep.Summary)
	require.GreaterOrEqual(t, len(rep.Cases), len(finished))
	for i, c := range rep.Cases {
		require.Equal(t, report.Pass, c.Verdict, "case %d", i)
	}
	require.Equal(t, "host", rep.Header.Backend)
}

// caseLines are the whole case lines of a JSON Lines stream ({"run": ID,
// "case": ...}); a line being written does not parse yet.
func caseLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		var line struct {
			Case json.RawMessage `json:"case"`
		}
		if json.Unmarshal([]byte(l), &line) == nil && line.Case != nil {
			out = append(out, l)
		}
	}
	return out
}

// rankPID finds the process of MPI rank r among mpirun's descendants, by
// the OMPI_COMM_WORLD_RANK in its environment.
func rankPID(t *testing.T, mpirunPID, r int) int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/environ")
	require.NoError(t, err)
	want := "OMPI_COMM_WORLD_RANK=" + itoa(r)
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		found := false
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == want {
				found = true
			}
		}
		if !found {
			continue
		}
		pidDir := filepath.Dir(p)
		var pid int
		for _, c := range filepath.Base(pidDir) {
			pid = pid*10 + int(c-'0')
		}
		if descends(pid, mpirunPID) {
			return pid
		}
	}
	t.Fatalf("rank %d of mpirun %d not found", r, mpirunPID)
	return 0
}

func descends(pid, ancestor int) bool {
	for i := 0; i < 16 && pid > 1; i++ {
		if pid == ancestor {
			return true
		}
		stat, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
		if err != nil {
			return false
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at the last ')'.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 {
			return false
		}
		pid = 0
		for _, c := range fields[1] {
			pid = pid*10 + int(c-'0')
		}
	}
	return false
}
