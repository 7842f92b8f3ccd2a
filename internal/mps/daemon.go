package mps

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ControlProgram is the MPS control daemon and client; it ships with the
// NVIDIA driver.
const ControlProgram = "nvidia-cuda-mps-control"

// Daemon is an MPS control daemon of one job: its pipe and log directories
// are its own, so it serves that job's ranks only, and stopping it cannot
// touch another daemon. It runs in the foreground (-f) as a child of this
// process, so its pid is known without reading files.
type Daemon struct {
	Control string // path of nvidia-cuda-mps-control
	PipeDir string
	LogDir  string
	cmd     *exec.Cmd
	done    chan error // the daemon's Wait result
	log     *os.File
}

// Env is the environment that makes a process a client of d.
func (d *Daemon) Env() []string {
	return []string{"CUDA_MPS_PIPE_DIRECTORY=" + d.PipeDir, "CUDA_MPS_LOG_DIRECTORY=" + d.LogDir}
}

// Start runs a daemon with its directories under dir and waits until its
// control socket is there (ready: up to wait).
func Start(control, dir string, wait time.Duration) (*Daemon, error) {
	d := &Daemon{Control: control, PipeDir: filepath.Join(dir, "pipe"), LogDir: filepath.Join(dir, "log"), done: make(chan error, 1)}
	for _, p := range []string{d.PipeDir, d.LogDir} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, fmt.Errorf("mps directory: %w", err)
		}
	}
	var err error
	if d.log, err = os.Create(filepath.Join(d.LogDir, "control-stdout.log")); err != nil {
		return nil, fmt.Errorf("mps log: %w", err)
	}
	d.cmd = exec.Command(control, "-f")
	d.cmd.Env = append(os.Environ(), d.Env()...)
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	// Its own process group: a Ctrl-C at the terminal reaches the job, not
	// the daemon, which Stop then ends in order.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		d.log.Close()
		return nil, fmt.Errorf("start %s -f: %w", control, err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	deadline := time.Now().Add(wait)
	for {
		if _, err := os.Stat(filepath.Join(d.PipeDir, "control")); err == nil {
			return d, nil
		}
		select {
		case err := <-d.done:
			d.done <- err
			d.log.Close()
			return nil, fmt.Errorf("%s -f exited before it was ready (%v): %s", control, err, tail(filepath.Join(d.LogDir, "control-stdout.log")))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.kill()
			return nil, fmt.Errorf("%s -f made no control socket in %s within %s: %s", control, d.PipeDir, wait, tail(filepath.Join(d.LogDir, "control-stdout.log")))
		}
	}
}

// Stop asks d to quit (it shuts its server down first) and waits up to
// grace; a daemon or server still there then is killed, by pid: the
// daemon's own, and its servers found as its child processes. It says what
// it had to kill.
func (d *Daemon) Stop(grace time.Duration) (string, error) {
	defer d.log.Close()
	quit := exec.Command(d.Control)
	quit.Env = append(os.Environ(), d.Env()...)
	quit.Stdin = strings.NewReader("quit\n")
	qerr := runWithin(quit, grace)
	select {
	case <-d.done:
		return "", nil
	case <-time.After(grace):
	}
	killed := d.kill()
	note := fmt.Sprintf("the MPS daemon did not quit within %s; killed pid(s) %s", grace, strings.Join(killed, ", "))
	if qerr != nil {
		note += fmt.Sprintf(" (quit: %v)", qerr)
	}
	return note, nil
}

// kill ends the daemon's servers and the daemon with SIGKILL and reaps the
// daemon; it returns the pids it signalled.
func (d *Daemon) kill() []string {
	pid := d.cmd.Process.Pid
	var killed []string
	for _, c := range children(pid) {
		if syscall.Kill(c, syscall.SIGKILL) == nil {
			killed = append(killed, strconv.Itoa(c))
		}
	}
	if d.cmd.Process.Signal(syscall.SIGKILL) == nil {
		killed = append(killed, strconv.Itoa(pid))
	}
	select {
	case <-d.done:
	case <-time.After(5 * time.Second):
	}
	return killed
}

// children lists the pids whose parent is pid (from /proc/*/stat).
func children(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		c, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after
		// its closing parenthesis.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, c)
		}
	}
	return out
}

// runWithin runs cmd, killing it if it takes longer than d.
func runWithin(cmd *exec.Cmd, d time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		<-done
		return errors.New("no answer within " + d.String())
	}
}

// tail is the last lines of a log, for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return "(no log)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}
