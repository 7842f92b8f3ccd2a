package runner

import (
	"fmt"

	"github.com/artest/artest/internal/backend"
)

// graphReplays captures a unit of a case's calls into a graph once and
// replays the graph each time the unit is enqueued: the graph modes, as a
// framework replays a captured step. A capture records the calls without
// running them: they are counted in the case's calls when replayed.
type graphReplays struct{}

func (graphReplays) unit(r *run, s *caseState, n int, enqueue func(capturing bool) error) (callUnit, error) {
	leave := r.dog.enter(phaseCall, fmt.Sprintf("the capture of a graph of %d call(s)", n))
	g, err := r.b.Capture(func() error { return enqueue(true) })
	leave()
	if err != nil {
		return nil, err
	}
	r.dog.launched(-n) // counted when replayed
	s.calls -= uint32(n)
	return &graphUnit{g: g, s: s, n: n, dog: r.dog}, nil
}

// checked captures the checked call; the reregister scenario (hangs.go)
// plays between the capture and the first replay.
func (w graphReplays) checked(r *run, s *caseState, one func() error) (callUnit, error) {
	u, err := w.unit(r, s, 1, func(bool) error { return one() })
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	gu := u.(*graphUnit)
	if gu.g, err = r.reregister(s, gu.g, one); err != nil {
		return nil, err
	}
	return gu, nil
}

// sample samples nothing: a graph's calls run as one replay, with no
// event between them.
func (graphReplays) sample(*run, func() error) ([]backend.Event, error) { return nil, nil }

// graphUnit is a captured unit of n calls of case s.
type graphUnit struct {
	g   backend.Graph
	s   *caseState
	n   int
	dog *watchdog
}

func (u *graphUnit) enqueue() error {
	leave := u.dog.enter(phaseCall, fmt.Sprintf("the replay of a graph of %d call(s)", u.n))
	err := u.g.Launch()
	leave()
	u.dog.launched(u.n)
	u.s.calls += uint32(u.n)
	return err
}

func (*graphUnit) oneStep() bool { return true }

func (u *graphUnit) release() { _ = u.g.Destroy() }
