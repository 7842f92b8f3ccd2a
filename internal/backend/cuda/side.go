package cuda

import (
	"fmt"

	cu "github.com/artest/artest/internal/cudadrv"
)

// sideStream is a stream beside the main one for work that runs next to
// the calls and that no call waits for: the straggler's load and bench
// --overlap's compute load. fork makes it start after what the main stream
// holds so far; join makes the main stream wait for everything started on
// it since the last join. Captured, the work is a branch of the graph.
type sideStream struct {
	what       string // for errors: "straggler", "overlap"
	stream     cu.Stream
	fork, join cu.Event
	pending    bool // work was forked since the last join
}

// open makes the stream and its two events once; later calls do nothing.
func (s *sideStream) open(b *Backend, what string) error {
	s.what = what
	var err error
	if s.stream == 0 {
		if s.stream, err = b.newStream(); err != nil {
			return fmt.Errorf("%s side stream: %w", what, wrap(err))
		}
	}
	for _, e := range []*cu.Event{&s.fork, &s.join} {
		if *e == 0 {
			if *e, err = b.d.EventCreate(cu.EventDisableTiming); err != nil {
				return fmt.Errorf("%s event: cuEventCreate: %w", what, wrap(err))
			}
		}
	}
	return nil
}

// forkFrom makes the side stream wait for what b's main stream holds now;
// the caller then enqueues its work on s.stream.
func (s *sideStream) forkFrom(b *Backend) error {
	if err := b.d.EventRecord(s.fork, b.stream); err != nil {
		return fmt.Errorf("%s: fork: cuEventRecord: %w", s.what, wrap(err))
	}
	if err := b.d.StreamWaitEvent(s.stream, s.fork); err != nil {
		return fmt.Errorf("%s: fork: cuStreamWaitEvent: %w", s.what, wrap(err))
	}
	s.pending = true
	return nil
}

// joinInto makes b's main stream wait for the side stream's work (one
// event recorded after the last; a no-op when nothing was forked since
// the last join).
func (s *sideStream) joinInto(b *Backend) error {
	if !s.pending {
		return nil
	}
	s.pending = false
	if err := b.d.EventRecord(s.join, s.stream); err != nil {
		return fmt.Errorf("%s: join: cuEventRecord: %w", s.what, wrap(err))
	}
	if err := b.d.StreamWaitEvent(b.stream, s.join); err != nil {
		return fmt.Errorf("%s: join: cuStreamWaitEvent: %w", s.what, wrap(err))
	}
	return nil
}

// close destroys the events and the stream.
func (s *sideStream) close(b *Backend) []error {
	var errs []error
	for _, e := range []cu.Event{s.fork, s.join} {
		if e != 0 {
			errs = append(errs, b.d.EventDestroy(e))
		}
	}
	if s.stream != 0 {
		errs = append(errs, b.d.StreamDestroy(s.stream))
	}
	*s = sideStream{}
	return errs
}
