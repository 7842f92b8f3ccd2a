package mps

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/artest/artest/internal/exitcode"
)

// How long the daemon may take to come up, and to quit once asked (tests
// shorten them). Seen on an H100: ready in well under a second, a quit with
// its server in 0.1 s.
var (
	startWait = 15 * time.Second
	stopGrace = 10 * time.Second
)

// Main is `artest mps [--dir DIR] -- COMMAND [ARG...]`: it starts a private
// MPS control daemon, runs COMMAND with CUDA_MPS_PIPE_DIRECTORY and
// CUDA_MPS_LOG_DIRECTORY pointing at it, and stops the daemon when COMMAND
// ends, whichever way it ends (a hang abort included), so the next job
// starts with a fresh server. It returns COMMAND's exit code (128+N when a
// signal N ended it), 2 for bad usage and 4 when no daemon could start.
func Main(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("artest mps", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := fs.String("dir", "", "directory for the daemon's pipe/ and log/ (default: a new one under $TMPDIR, removed after a clean run)")
	control := fs.String("control", ControlProgram, "the MPS control program")
	say := func(format string, a ...any) { fmt.Fprintf(stderr, "artest mps: "+format+"\n", a...) }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "usage: artest mps [--dir DIR] [--control PROGRAM] -- COMMAND [ARG...]")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return exitcode.OK
		}
		say("%v (usage: artest mps [--dir DIR] -- COMMAND [ARG...])", err)
		return exitcode.Usage
	}
	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 {
		say("no command to run (usage: artest mps [--dir DIR] -- COMMAND [ARG...])")
		return exitcode.Usage
	}
	path, err := exec.LookPath(*control)
	if err != nil {
		say("%s not found (%v): it ships with the NVIDIA driver; MPS needs it", *control, err)
		return exitcode.Env
	}
	base, temp := *dir, false
	if base == "" {
		if base, err = os.MkdirTemp("", "artest-mps-"); err != nil {
			say("%v", err)
			return exitcode.Env
		}
		temp = true
	}
	d, err := Start(path, base, startWait)
	if err != nil {
		say("%v", err)
		if temp {
			os.RemoveAll(base)
		}
		return exitcode.Env
	}

	// Signals reach the job (the terminal's go to its whole process group;
	// a kill of this process is passed on); this process stays to stop the
	// daemon.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	job := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	job.Env = append(os.Environ(), d.Env()...)
	job.Stdin, job.Stdout, job.Stderr = os.Stdin, os.Stdout, os.Stderr
	code := exitcode.OK
	if err := job.Start(); err != nil {
		say("run %s: %v", cmdArgs[0], err)
		code = exitcode.Env
	} else {
		done := make(chan error, 1)
		go func() { done <- job.Wait() }()
	wait:
		for {
			select {
			case s := <-sigs:
				_ = job.Process.Signal(s)
			case err := <-done:
				code = jobCode(err)
				break wait
			}
		}
	}
	note, _ := d.Stop(stopGrace)
	if note != "" {
		say("%s", note)
	}
	switch {
	case temp && code == exitcode.OK && note == "":
		os.RemoveAll(base)
	case code != exitcode.OK || note != "":
		say("the daemon's logs are in %s", d.LogDir)
	}
	return code
}

// jobCode is the exit code a shell would give for the job's end.
func jobCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return exitcode.Env
}
