package host

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/artest/artest/internal/backend"
)

// stream runs enqueued work in order on one goroutine, like a CUDA stream.
// Its queue is bounded like a CUDA stream's: an enqueue behind queueDepth
// unfinished operations waits for one to finish, so an operation that
// never ends (a plugin's call that never returns) blocks the runner's main
// thread in its next launches as it does on a GPU, and only the runner's
// watchdog, on a goroutine of its own, can end the job.
type stream struct {
	mu        sync.Mutex
	cond      *sync.Cond
	queue     []func() error
	depth     int    // the most queued operations; 0: unbounded
	progress  func() // called after every operation that finished (NotifyProgress)
	busy      bool   // the worker is running an op
	finished  uint64 // ops run (or dropped) so far: sync's measure of progress
	err       error
	capturing *[]func() error
	closed    bool
}

// queueDepth is how many operations a host stream holds before an enqueue
// waits, as many as a CUDA stream's launch queue holds: on one H200 a
// stress batch behind a kernel that never ended blocked after 234 to 238
// calls of four operations each, about a thousand
// (docs/results/2026-11-29-h200-mps-watchdog.md). A stress batch of up
// to stressMaxBatch calls then blocks here as there.
const queueDepth = 1024

func newStream() *stream {
	s := &stream{depth: queueDepth}
	s.cond = sync.NewCond(&s.mu)
	go s.work()
	return s
}

func (s *stream) work() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for len(s.queue) == 0 && !s.closed {
			s.cond.Wait()
		}
		if s.closed {
			return
		}
		op := s.queue[0]
		s.queue = s.queue[1:]
		s.busy = true
		failed := s.err != nil
		s.mu.Unlock()
		var err error
		if !failed { // after an error the rest of the queue is dropped, like a sticky CUDA error
			err = op()
		}
		s.mu.Lock()
		s.busy = false
		s.finished++
		if s.progress != nil {
			s.progress()
		}
		if err != nil && s.err == nil {
			s.err = err
		}
		s.cond.Broadcast()
	}
}

func (s *stream) enqueue(op func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("host stream closed")
	}
	if s.capturing != nil {
		*s.capturing = append(*s.capturing, op)
		return nil
	}
	for s.depth > 0 && len(s.queue) >= s.depth && !s.closed {
		s.cond.Wait()
	}
	if s.closed {
		return errors.New("host stream closed")
	}
	s.queue = append(s.queue, op)
	s.cond.Broadcast()
	return nil
}

func (s *stream) capture(fn func() error) ([]func() error, error) {
	s.mu.Lock()
	if s.capturing != nil {
		s.mu.Unlock()
		return nil, errors.New("host stream is already capturing")
	}
	var ops []func() error
	s.capturing = &ops
	s.mu.Unlock()
	err := fn()
	s.mu.Lock()
	s.capturing = nil
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return ops, nil
}

func (s *stream) setProgress(f func()) {
	s.mu.Lock()
	s.progress = f
	s.mu.Unlock()
}

func (s *stream) progressFunc() func() {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.progress
}

// NotifyProgress is backend.ProgressNotifier's: f is called on a stream's
// goroutine each time one of its operations finishes.
func (b *Backend) NotifyProgress(f func()) {
	b.stream.setProgress(f)
	if b.side != nil {
		b.side.setProgress(f)
	}
}

var _ backend.ProgressNotifier = (*Backend)(nil)

func (s *stream) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.queue) == 0 && !s.busy
}

// sync waits for the queue to drain and returns (and clears) the first
// error of the work since the last sync. It times out when no op finished
// within timeout: the deadline moves with every op that finishes, so a
// long queue of quick ops (a stress batch of a thousand calls) is no hang,
// and one op that never ends is, timeout after the last one that did.
func (s *stream) sync(timeout time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := time.Now().Add(timeout)
	// The timer only wakes the wait; the deadline decides. Each wait arms
	// it for what is left of the deadline: a wake-up that came before the
	// deadline (the timer started before the deadline was read, or a
	// broadcast for another reason) must not leave the wait without one,
	// or an op that never ends is never called a hang.
	timer := time.AfterFunc(timeout, func() {
		s.mu.Lock()
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer timer.Stop()
	seen := s.finished
	for len(s.queue) > 0 || s.busy {
		if s.finished != seen {
			seen = s.finished
			deadline = time.Now().Add(timeout)
		} else if !time.Now().Before(deadline) {
			return backend.ErrTimeout
		}
		timer.Reset(time.Until(deadline))
		s.cond.Wait()
	}
	err := s.err
	s.err = nil
	return err
}

func (s *stream) close() {
	s.mu.Lock()
	s.closed = true
	s.queue = nil
	s.cond.Broadcast()
	s.mu.Unlock()
}

// Delay holds the stream for d: the work enqueued after it starts d later
// (backend.Delayer).
func (b *Backend) Delay(d time.Duration) error {
	return b.enqueue(func() error {
		time.Sleep(d)
		return nil
	})
}

// PrepareStamps readies n stamp slots (backend.Stamper).
func (b *Backend) PrepareStamps(n int) error {
	b.stampMu.Lock()
	defer b.stampMu.Unlock()
	if len(b.stamps) < n {
		b.stamps = make([]int64, n)
	}
	return nil
}

// Stamp writes the wall clock (Unix ns) into slot j when the stream
// reaches it; a captured graph's replay runs the same function again.
func (b *Backend) Stamp(j int, _ bool) error {
	b.stampMu.Lock()
	n := len(b.stamps)
	b.stampMu.Unlock()
	if j < 0 || j >= n {
		return fmt.Errorf("stamp %d of %d prepared", j, n)
	}
	return b.enqueue(func() error {
		now := time.Now().UnixNano()
		b.stampMu.Lock()
		b.stamps[j] = now
		b.stampMu.Unlock()
		return nil
	})
}

// Stamps reads slots 0..n-1.
func (b *Backend) Stamps(n int) ([]int64, error) {
	b.stampMu.Lock()
	defer b.stampMu.Unlock()
	if n > len(b.stamps) {
		return nil, fmt.Errorf("%d stamps read, %d prepared", n, len(b.stamps))
	}
	return append([]int64(nil), b.stamps[:n]...), nil
}

// FreeStamps drops the slots.
func (b *Backend) FreeStamps() {
	b.stampMu.Lock()
	b.stamps = nil
	b.stampMu.Unlock()
}

// ClockSync: the host stream's clock is the host's wall clock.
func (b *Backend) ClockSync() (backend.ClockSync, error) {
	host, _ := os.Hostname()
	return backend.ClockSync{Domain: "wall clock of " + host, Host: host, Stamps: "wall clock"}, nil
}
