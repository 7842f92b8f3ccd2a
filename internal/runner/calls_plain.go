package runner

import "github.com/artest/artest/internal/backend"

// plainLaunches launches every call of a case as it is enqueued: the
// plain modes.
type plainLaunches struct{}

func (plainLaunches) unit(_ *run, _ *caseState, _ int, enqueue func(capturing bool) error) (callUnit, error) {
	return plainUnit{fn: enqueue}, nil
}

func (plainLaunches) checked(_ *run, _ *caseState, one func() error) (callUnit, error) {
	return plainUnit{fn: func(bool) error { return one() }}, nil
}

func (plainLaunches) sample(r *run, one func() error) ([]backend.Event, error) {
	return r.sampleCalls(one)
}

// plainUnit makes its calls anew each time it is enqueued.
type plainUnit struct{ fn func(capturing bool) error }

func (u plainUnit) enqueue() error { return u.fn(false) }
func (plainUnit) oneStep() bool    { return false }
func (plainUnit) release()         {}
