package comm

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// LocalWorld is an in-process world of ranks, one goroutine each, with the
// semantics of the MPI one: a collective returns on a rank only after every
// rank entered it, data is copied in and out, and ranks that enter different
// collectives at the same step all get ErrMismatch. Unlike MPI it never lets
// a test hang on a rank that is gone: a rank that finalized or aborted makes
// the others' collectives fail.
type LocalWorld struct {
	ranks []*Local

	mu        sync.Mutex
	step      *step // the collective being entered; nil between steps
	finalized []bool
	aborted   chan struct{} // closed by the first Abort
	abortCode int
	abortSet  bool
	abortRank int // the rank whose Abort came first
}

// step is one collective while ranks enter it. calls, data and err are
// written under the world's mutex and read by the ranks after done closes.
type step struct {
	calls   []Call   // zero Op: rank not arrived yet
	data    [][]byte // each rank's copy of what it passed
	arrived int
	done    chan struct{}
	err     error
}

// Local is one rank of a LocalWorld; it implements Comm.
type Local struct {
	world *LocalWorld
	rank  int
}

var _ Comm = (*Local)(nil)

// NewLocal returns the ranks of a new in-process world of n ranks. Use each
// from its own goroutine. The concrete type is *Local; World reaches the
// LocalWorld (for AbortCode).
func NewLocal(n int) []Comm {
	ranks := NewLocalWorld(n).ranks
	comms := make([]Comm, len(ranks))
	for i, r := range ranks {
		comms[i] = r
	}
	return comms
}

// NewLocalWorld returns an in-process world of n ranks. It panics if n < 1.
func NewLocalWorld(n int) *LocalWorld {
	if n < 1 {
		panic(fmt.Sprintf("comm.NewLocalWorld: %d ranks", n))
	}
	w := &LocalWorld{
		finalized: make([]bool, n),
		aborted:   make(chan struct{}),
	}
	w.ranks = make([]*Local, n)
	for i := range w.ranks {
		w.ranks[i] = &Local{world: w, rank: i}
	}
	return w
}

// Rank returns rank i of the world.
func (w *LocalWorld) Rank(i int) *Local { return w.ranks[i] }

// Size is the number of ranks.
func (w *LocalWorld) Size() int { return len(w.ranks) }

// AbortCode returns the code passed to the first Abort, and whether any rank
// aborted.
func (w *LocalWorld) AbortCode() (code int, aborted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.abortCode, w.abortSet
}

// AbortedBy returns the rank whose Abort came first, and whether any did.
// Under MPI that rank's abort ends the others: what they would have written
// after it is lost.
func (w *LocalWorld) AbortedBy() (rank int, aborted bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.abortRank, w.abortSet
}

// Aborted is closed when some rank aborts.
func (w *LocalWorld) Aborted() <-chan struct{} { return w.aborted }

// AbortedNotify is closed when some rank aborts (comm.AbortWatcher).
func (l *Local) AbortedNotify() <-chan struct{} { return l.world.aborted }

var _ AbortWatcher = (*Local)(nil)

// World is the LocalWorld this rank belongs to.
func (l *Local) World() *LocalWorld { return l.world }

func (l *Local) Rank() int      { return l.rank }
func (l *Local) Size() int      { return len(l.world.ranks) }
func (l *Local) LocalRank() int { return l.rank }
func (l *Local) LocalSize() int { return len(l.world.ranks) }

// Hostname is fixed, so output that names hosts stays the same on every
// machine the tests run on.
func (l *Local) Hostname() string { return "localhost" }

func (l *Local) Barrier() error {
	_, err := l.world.enter(l.rank, Call{Op: OpBarrier}, nil)
	return err
}

func (l *Local) Allgather(send []byte) ([]byte, error) {
	s, err := l.world.enter(l.rank, Call{Op: OpAllgather, Len: len(send)}, send)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(send)*len(s.data))
	for _, d := range s.data {
		out = append(out, d...)
	}
	return out, nil
}

func (l *Local) Bcast(buf []byte, root int) error {
	var send []byte
	if l.rank == root {
		send = buf
	}
	s, err := l.world.enter(l.rank, Call{Op: OpBcast, Len: len(buf), Root: root}, send)
	if err != nil {
		return err
	}
	if l.rank != root {
		copy(buf, s.data[root])
	}
	return nil
}

func (l *Local) Gather(send []byte, root int) ([][]byte, error) {
	s, err := l.world.enter(l.rank, Call{Op: OpGather, Len: len(send), Root: root}, send)
	if err != nil || l.rank != root {
		return nil, err
	}
	// The copies were made for this step and only the root reads them, so
	// they can be handed over without copying again.
	return append([][]byte(nil), s.data...), nil
}

// Abort records code (the first Abort wins), fails every waiting and future
// collective of every rank with ErrAborted, and ends the calling goroutine
// with runtime.Goexit, as MPI_Abort ends the process: deferred calls run,
// nothing after Abort does. Call it from a rank's goroutine or a watchdog's,
// never from a test's own goroutine.
func (l *Local) Abort(code int) {
	w := l.world
	w.mu.Lock()
	if !w.abortSet {
		w.abortSet = true
		w.abortCode = code
		w.abortRank = l.rank
		close(w.aborted)
	}
	w.mu.Unlock()
	runtime.Goexit()
}

// Finalize ends this rank. Peers waiting in a collective, and peers that
// enter one later, get ErrMismatch: this rank will never join them.
func (l *Local) Finalize() error {
	w := l.world
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.abortSet {
		return fmt.Errorf("rank %d: Finalize: %w", l.rank, ErrAborted)
	}
	if w.finalized[l.rank] {
		return fmt.Errorf("rank %d: Finalize again: %w", l.rank, ErrFinalized)
	}
	w.finalized[l.rank] = true
	if w.step != nil {
		w.failStep(fmt.Errorf("%w: rank %d called Finalize while %s", ErrMismatch, l.rank, w.step.waiting()))
	}
	return nil
}

// enter adds rank's call to the current step and waits until every rank
// entered it (or the step failed, or the world aborted). data is copied.
func (w *LocalWorld) enter(rank int, call Call, data []byte) (*step, error) {
	w.mu.Lock()
	if w.abortSet {
		w.mu.Unlock()
		return nil, fmt.Errorf("rank %d: %v: %w", rank, call.Op, ErrAborted)
	}
	if w.finalized[rank] {
		w.mu.Unlock()
		return nil, fmt.Errorf("rank %d: %v: %w", rank, call.Op, ErrFinalized)
	}
	if w.step == nil {
		w.step = &step{
			calls: make([]Call, len(w.ranks)),
			data:  make([][]byte, len(w.ranks)),
			done:  make(chan struct{}),
		}
	}
	s := w.step
	s.calls[rank] = call
	s.data[rank] = append([]byte{}, data...)
	s.arrived++
	if s.arrived == len(w.ranks) {
		s.err = CheckCalls(s.calls)
		w.step = nil
		close(s.done)
	} else if gone := w.anyFinalized(); gone >= 0 {
		w.failStep(fmt.Errorf("%w: rank %d finalized, so %s can never complete", ErrMismatch, gone, s.waiting()))
	}
	w.mu.Unlock()
	return w.wait(rank, call, s)
}

// wait blocks until the step completes or the world aborts.
func (w *LocalWorld) wait(rank int, call Call, s *step) (*step, error) {
	select {
	case <-s.done:
	case <-w.aborted:
		// A step that completed before the abort keeps its result, as an MPI
		// collective that returned before MPI_Abort killed the job.
		select {
		case <-s.done:
		default:
			return nil, fmt.Errorf("rank %d: %v: %w", rank, call.Op, ErrAborted)
		}
	}
	if s.err != nil {
		return nil, fmt.Errorf("rank %d: %w", rank, s.err)
	}
	return s, nil
}

// failStep releases the ranks of the current step with err. Caller holds mu.
func (w *LocalWorld) failStep(err error) {
	w.step.err = err
	close(w.step.done)
	w.step = nil
}

func (w *LocalWorld) anyFinalized() int {
	for r, f := range w.finalized {
		if f {
			return r
		}
	}
	return -1
}

// waiting describes who waits in the step, for error messages.
func (s *step) waiting() string {
	var who []string
	for r, c := range s.calls {
		if c.Op != 0 {
			who = append(who, fmt.Sprintf("rank %d waits in %v", r, c))
		}
	}
	return strings.Join(who, ", ")
}
