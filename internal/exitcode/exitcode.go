// Package exitcode maps what went wrong to artest's documented exit codes.
package exitcode

import (
	"errors"
	"fmt"
)

// The exit codes, as docs/reports.md documents them.
const (
	OK    = 0 // every case passed or was skipped with a reason
	Wrong = 1 // a case failed: wrong result, guard bytes, trace word, kernel error
	Usage = 2 // bad flags, bad selection, ranks started with different flags
	Hang  = 3 // the watchdog fired: a rank waited longer than --timeout
	Env   = 4 // the environment cannot run the job: no GPU, no space, a library missing, a report not written whole

	// A signal ended the run (the reports hold the cases that finished):
	// 128 plus the signal's number, as a shell reports a process killed by
	// it.
	Interrupted = 130 // SIGINT (Ctrl-C)
	Terminated  = 143 // SIGTERM (a CI timeout, mpirun passing on a signal)
)

// Error carries an exit code with its cause.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Usagef is a usage or configuration error (exit 2).
func Usagef(format string, args ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// Envf is an environment error (exit 4).
func Envf(format string, args ...any) error {
	return &Error{Code: Env, Err: fmt.Errorf(format, args...)}
}

// Hangf is a watchdog timeout (exit 3).
func Hangf(format string, args ...any) error {
	return &Error{Code: Hang, Err: fmt.Errorf(format, args...)}
}

// Of is the exit code for err: the code of the outermost *Error in its
// chain, Wrong for any other error, OK for nil.
func Of(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Wrong
}
