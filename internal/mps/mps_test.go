package mps

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDecide(t *testing.T) {
	yes := func() (bool, error) { return true, nil }
	no := func() (bool, error) { return false, nil }
	unknown := func() (bool, error) {
		return false, errors.New("cuDeviceGetExecAffinitySupport: entry point not exported")
	}
	never := func() (bool, error) { t.Fatal("MPS queried though no GPU is shared"); return false, nil }
	for _, c := range []struct {
		name               string
		ranks, gpus        int
		share, timeSlicing bool
		mps                func() (bool, error)
		perGPU             int
		scheduler          string
		code               int
		msg                []string
	}{
		{name: "one rank per GPU", ranks: 4, gpus: 4, mps: never, perGPU: 1},
		{name: "fewer ranks than GPUs", ranks: 2, gpus: 8, share: true, mps: never, perGPU: 1},
		{name: "shared without the flag", ranks: 4, gpus: 1, mps: never, perGPU: 4, code: exitcode.Env,
			msg: []string{"4 ranks on node but only 1 GPUs", "--share-gpus"}},
		{name: "shared under MPS", ranks: 4, gpus: 1, share: true, mps: yes, perGPU: 4, scheduler: SchedulerMPS},
		{name: "uneven: 3 ranks on 2 GPUs", ranks: 3, gpus: 2, share: true, mps: yes, perGPU: 2, scheduler: SchedulerMPS},
		{name: "8 ranks on 1 GPU under MPS", ranks: 8, gpus: 1, share: true, mps: yes, perGPU: 8, scheduler: SchedulerMPS},
		{name: "shared without MPS", ranks: 4, gpus: 1, share: true, mps: no, perGPU: 4, code: exitcode.Env,
			msg: []string{"no MPS server serves them", "artest mps -- mpirun -np 4 artest --share-gpus", "--time-slicing", "no daemon's pid file in /tmp/nvidia-mps"}},
		{name: "time-slicing asked for", ranks: 4, gpus: 1, share: true, timeSlicing: true, mps: no, perGPU: 4, scheduler: SchedulerTimeSlicing},
		{name: "MPS under time-slicing flag is still MPS", ranks: 2, gpus: 1, share: true, timeSlicing: true, mps: yes, perGPU: 2, scheduler: SchedulerMPS},
		{name: "driver cannot tell", ranks: 2, gpus: 1, share: true, mps: unknown, perGPU: 2, code: exitcode.Env,
			msg: []string{"cannot say whether an MPS server serves them", "entry point not exported", "--time-slicing"}},
		{name: "driver cannot tell, time-slicing", ranks: 2, gpus: 1, share: true, timeSlicing: true, mps: unknown, perGPU: 2, scheduler: SchedulerTimeSlicing},
		{name: "no GPU", ranks: 2, gpus: 0, share: true, mps: never, code: exitcode.Env, msg: []string{"no GPU on node"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Decide(Request{Host: "node", LocalRanks: c.ranks, GPUs: c.gpus, Share: c.share, TimeSlicing: c.timeSlicing, MPSClient: c.mps, Getenv: env(nil)})
			require.Equal(t, c.code, exitcode.Of(err), "%v", err)
			for _, m := range c.msg {
				require.ErrorContains(t, err, m)
			}
			if err == nil {
				require.Equal(t, c.perGPU, s.PerGPU)
				require.Equal(t, c.scheduler, s.Scheduler)
				require.Equal(t, c.perGPU > 1, s.Shared())
			}
		})
	}
}

func TestPipeDirAndDaemonState(t *testing.T) {
	require.Equal(t, DefaultPipeDir, PipeDir(env(nil)))
	require.Equal(t, "/x/pipe", PipeDir(env(map[string]string{"CUDA_MPS_PIPE_DIRECTORY": "/x/pipe"})))

	dir := t.TempDir()
	require.Contains(t, daemonState(dir), "no daemon's pid file")
	pidFile := filepath.Join(dir, "nvidia-cuda-mps-control.pid")
	require.NoError(t, os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644))
	require.True(t, daemonRunning(dir))
	require.Contains(t, daemonState(dir), "is not its client")
	// A pid that cannot exist (above the kernel's pid_max ceiling).
	require.NoError(t, os.WriteFile(pidFile, []byte("99999999"), 0o644))
	require.False(t, daemonRunning(dir))
	require.Contains(t, daemonState(dir), "names pid 99999999, which is gone")
}

func TestContextError(t *testing.T) {
	dir := t.TempDir()
	getenv := env(map[string]string{"CUDA_MPS_PIPE_DIRECTORY": dir})
	cause := errors.New("cuDevicePrimaryCtxRetain: CUDA_ERROR_UNKNOWN (999)")

	// No daemon: the driver's words.
	err := ContextError(errors.New("cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY (2)"), 2, getenv)
	require.Equal(t, exitcode.Env, exitcode.Of(err))
	require.EqualError(t, err, "cuDevicePrimaryCtxRetain: CUDA_ERROR_OUT_OF_MEMORY (2)")

	err = ContextError(cause, 999, getenv)
	require.Equal(t, exitcode.Env, exitcode.Of(err))
	require.ErrorContains(t, err, "no MPS daemon at "+dir)

	// A live daemon: the poisoned-server line, with the fix.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "nvidia-cuda-mps-control.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644))
	err = ContextError(cause, 999, getenv)
	require.Equal(t, exitcode.Env, exitcode.Of(err))
	require.ErrorContains(t, err, "the MPS server at "+dir+" likely still holds a job that ended while its kernels ran")
	require.ErrorContains(t, err, "echo quit | CUDA_MPS_PIPE_DIRECTORY="+dir+" nvidia-cuda-mps-control")
	require.ErrorContains(t, err, "artest mps --")
	require.NotContains(t, err.Error(), "\n")
	// The same server also answered CUDA_ERROR_LAUNCH_FAILED (H100).
	err = ContextError(errors.New("cuDevicePrimaryCtxRetain: CUDA_ERROR_LAUNCH_FAILED (719): unspecified launch failure"), 719, getenv)
	require.Equal(t, exitcode.Env, exitcode.Of(err))
	require.ErrorContains(t, err, "likely still holds a job that ended while its kernels ran")
}

func fakeControl(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("testdata/fake-mps-control")
	require.NoError(t, err)
	return p
}

// alive reports whether pid still runs some 5 s after the caller expected
// it to end. A zombie does not run: a server whose daemon is gone is
// reparented to pid 1, which reaps it when it gets to it (in a container, a
// while later), and SIGKILL itself takes effect asynchronously.
func alive(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil || zombie(pid) || time.Now().After(deadline) {
			return syscall.Kill(pid, 0) == nil && !zombie(pid)
		}
	}
}

// zombie reports whether pid has exited and waits to be reaped (state Z in
// /proc/PID/stat; the state follows the command name's closing parenthesis).
func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

func shortWaits(t *testing.T) {
	s, g := startWait, stopGrace
	startWait, stopGrace = 3*time.Second, 1*time.Second
	t.Cleanup(func() { startWait, stopGrace = s, g })
}

func TestMainRunsTheJobUnderItsOwnDaemon(t *testing.T) {
	shortWaits(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "seen")
	var stderr bytes.Buffer
	code := Main([]string{"--control", fakeControl(t), "--dir", dir, "--", "sh", "-c",
		`echo "$CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY" > ` + out + `; exit 3`}, &stderr)
	require.Equal(t, 3, code, "the job's exit code: %s", stderr.String())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "pipe")+" "+filepath.Join(dir, "log")+"\n", string(b))
	server := readPID(t, filepath.Join(dir, "pipe", "server.pid"))
	require.False(t, alive(server), "the server is gone")
	require.NoFileExists(t, filepath.Join(dir, "pipe", "nvidia-cuda-mps-control.pid"), "the daemon quit in order")
	require.Contains(t, stderr.String(), "the daemon's logs are in "+filepath.Join(dir, "log"))
}

func TestMainKillsADaemonThatDoesNotQuit(t *testing.T) {
	shortWaits(t)
	t.Setenv("FAKE_MPS_MODE", "stuck")
	dir := t.TempDir()
	var stderr bytes.Buffer
	code := Main([]string{"--control", fakeControl(t), "--dir", dir, "--", "true"}, &stderr)
	require.Equal(t, 0, code)
	daemon := readPID(t, filepath.Join(dir, "pipe", "nvidia-cuda-mps-control.pid"))
	server := readPID(t, filepath.Join(dir, "pipe", "server.pid"))
	require.False(t, alive(daemon), "daemon %d killed", daemon)
	require.False(t, alive(server), "server %d killed", server)
	require.Contains(t, stderr.String(), "did not quit within 1s; killed pid(s) ")
	require.Contains(t, stderr.String(), strconv.Itoa(server))
}

func TestMainRemovesItsTempDirAfterACleanRun(t *testing.T) {
	shortWaits(t)
	t.Setenv("TMPDIR", t.TempDir())
	var stderr bytes.Buffer
	require.Equal(t, 0, Main([]string{"--control", fakeControl(t), "--", "true"}, &stderr), stderr.String())
	left, err := os.ReadDir(os.Getenv("TMPDIR"))
	require.NoError(t, err)
	require.Empty(t, left)
	require.Empty(t, stderr.String())
}

func TestMainErrors(t *testing.T) {
	shortWaits(t)
	for _, c := range []struct {
		name string
		mode string
		args []string
		code int
		msg  string
	}{
		{name: "no command", args: []string{"--control", "true"}, code: exitcode.Usage, msg: "no command to run"},
		{name: "bad flag", args: []string{"--nope", "--", "true"}, code: exitcode.Usage, msg: "flag provided but not defined: -nope"},
		{name: "no control program", args: []string{"--control", "/nonexistent/nvidia-cuda-mps-control", "--", "true"}, code: exitcode.Env, msg: "ships with the NVIDIA driver"},
		{name: "daemon fails", mode: "fail", code: exitcode.Env, msg: "exited before it was ready"},
		{name: "daemon never ready", mode: "noready", code: exitcode.Env, msg: "made no control socket"},
		{name: "job cannot start", args: []string{"--control", "", "--", "/nonexistent/job"}, code: exitcode.Env, msg: "run /nonexistent/job"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("FAKE_MPS_MODE", c.mode)
			args := c.args
			if args == nil {
				args = []string{"--control", fakeControl(t), "--dir", t.TempDir(), "--", "true"}
			}
			if len(args) > 1 && args[0] == "--control" && args[1] == "" {
				args[1] = fakeControl(t)
			}
			var stderr bytes.Buffer
			require.Equal(t, c.code, Main(args, &stderr), stderr.String())
			require.Contains(t, stderr.String(), c.msg)
			require.True(t, strings.HasPrefix(stderr.String(), "artest mps: "), stderr.String())
			require.NotContains(t, stderr.String(), "goroutine", "no stack trace")
		})
	}
}
