package runner

import (
	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
)

// A callWay is how a case's calls reach the stream: plainLaunches
// launches every call (calls_plain.go); graphReplays, the graph modes',
// captures a unit of calls once and replays the graph (calls_graph.go).
// The case's mode decides it (wayOf); the checked call, the timed
// repetitions, the bench modes' second timings and the stress batches all
// go through it.
type callWay interface {
	// unit readies n calls that enqueue makes as one unit, enqueued
	// again and again (callUnit). capturing tells enqueue that it runs
	// inside a graph capture, where nothing may wait on the stream.
	unit(r *run, s *caseState, n int, enqueue func(capturing bool) error) (callUnit, error)
	// checked readies the checked call: one call of one, which the
	// warm-up enqueues again.
	checked(r *run, s *caseState, one func() error) (callUnit, error)
	// sample enqueues the bench's single calls of one, each between two
	// events (sampleCalls), or nothing where calls cannot be told apart.
	sample(r *run, one func() error) ([]backend.Event, error)
}

// A callUnit is a fixed number of a case's calls enqueued as one.
type callUnit interface {
	// enqueue enqueues the unit's calls, counted in the case's calls.
	enqueue() error
	// oneStep reports whether the unit reaches the stream as one step (a
	// graph replay): a progress mark goes after it, not between its
	// calls.
	oneStep() bool
	// release frees what the unit holds.
	release()
}

// wayOf is how case c's calls reach the stream.
func wayOf(c cases.Case) callWay {
	if c.Mode.Graph {
		return graphReplays{}
	}
	return plainLaunches{}
}

// repeat is an enqueue of a unit: cfg.Iters calls of one, back to back.
func (r *run) repeat(one func() error) func(capturing bool) error {
	return func(bool) error {
		for i := 0; i < r.cfg.Iters; i++ {
			if err := one(); err != nil {
				return err
			}
		}
		return nil
	}
}
