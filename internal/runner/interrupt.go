package runner

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/artest/artest/internal/exitcode"
)

// watchSignals waits for the first signal on sigs until done closes, and
// ends the run on it.
func (r *run) watchSignals(sigs <-chan os.Signal, done <-chan struct{}) {
	select {
	case sig := <-sigs:
		r.interrupt(sig)
	case <-done:
	}
}

// interrupt ends the run on signal sig. Nothing here waits for the loop:
// a case may run for minutes or wait in a collective for a peer that is
// already gone. Rank 0 takes the report from the loop (mu), writes every
// report of the cases that finished, marked interrupted, prints one line
// and exits. The other ranks wait AbortGrace before they exit: a rank that
// exits non-zero first makes mpirun kill the rest, rank 0 possibly in the
// middle of its writes. (Open MPI's mpirun, on SIGINT or SIGTERM, passes
// SIGTERM to every rank and SIGKILL a second later; docs/reports.md, Exit codes.)
func (r *run) interrupt(sig os.Signal) {
	code := interruptCode(sig)
	if r.c.Rank() != 0 {
		time.Sleep(r.cfg.AbortGrace)
		r.exitWith(code)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.reported {
		// The run's own reports are written: it ended before the
		// signal, and ends as they say.
		return
	}
	name := signalName(sig)
	msg := fmt.Sprintf("interrupted by %s after %d of %d cases", name, len(r.rep.Cases), len(r.cfg.Cases))
	r.interrupted = true
	r.rep.Summary.Interrupted = name
	r.rep.Summary.ExitCode = code
	r.rep.Summary.Error = msg
	_ = r.writeReports()
	fmt.Fprintf(r.cfg.Stderr, "artest: %s; reports hold the finished cases\n", msg)
	if f, ok := r.cfg.Stdout.(*os.File); ok {
		_ = f.Sync()
	}
	r.exitWith(code)
}

func (r *run) exitWith(code int) {
	if r.cfg.exit != nil {
		r.cfg.exit(code)
		return
	}
	os.Exit(code)
}

// interruptCode is the exit code after sig: 128 plus its number, as a shell
// reports a process the signal killed.
func interruptCode(sig os.Signal) int {
	switch sig {
	case syscall.SIGINT:
		return exitcode.Interrupted
	case syscall.SIGTERM:
		return exitcode.Terminated
	}
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return exitcode.Terminated
}

// signalName is sig as the reports name it: "SIGTERM", not "terminated".
func signalName(sig os.Signal) string {
	switch sig {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return sig.String()
}
