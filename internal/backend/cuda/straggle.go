package cuda

import (
	"errors"
	"fmt"
	"time"

	"github.com/artest/artest/internal/backend"
	cu "github.com/artest/artest/internal/cudadrv"
	"github.com/artest/artest/kernels"
)

var _ backend.Straggler = (*Backend)(nil)

// loadState is the straggler's side stream, its fork and join events and
// the scratch its load streams over, made by PrepareStraggle.
type loadState struct {
	stream     cu.Stream
	fork, join cu.Event
	buf        cu.DevicePtr
}

// StraggleReason: the straggler's load needs artest_load in the fatbin.
func (b *Backend) StraggleReason() string {
	if _, err := b.fn(kernels.LoadKernel); err != nil {
		return fmt.Sprintf("the fatbin has no %s (%s): rebuild with make kernels", kernels.LoadKernel, b.fatbin)
	}
	return ""
}

// PrepareStraggle makes the side stream, the two events and the scratch
// once; later calls do nothing. Outside any capture, since allocation may
// not be captured.
func (b *Backend) PrepareStraggle() error {
	if b.load.buf != 0 {
		return nil
	}
	var err error
	if b.load.stream == 0 {
		if b.load.stream, err = b.d.StreamCreate(cu.StreamNonBlocking); err != nil {
			return fmt.Errorf("straggler side stream: %w", wrap(err))
		}
	}
	for _, e := range []*cu.Event{&b.load.fork, &b.load.join} {
		if *e == 0 {
			if *e, err = b.d.EventCreate(cu.EventDisableTiming); err != nil {
				return fmt.Errorf("straggler event: %w", wrap(err))
			}
		}
	}
	p, err := b.d.MemAlloc(kernels.LoadScratchBytes)
	if err != nil {
		return fmt.Errorf("straggler scratch of %d bytes: %w", kernels.LoadScratchBytes, wrap(err))
	}
	if err := b.d.MemsetD8Async(p, 0, kernels.LoadScratchBytes, b.stream); err != nil {
		_ = b.d.MemFree(p)
		return fmt.Errorf("clear the straggler scratch: %w", wrap(err))
	}
	b.load.buf = p
	return nil
}

// Straggle forks the side stream from the main one (an event), launches
// artest_load there with one block per multiprocessor, enqueues call on
// the main stream, and joins: the main stream waits for the load before
// what follows. Captured, the load is a branch of the graph beside the
// call.
func (b *Backend) Straggle(d time.Duration, call func() error) error {
	if b.load.buf == 0 {
		return errors.New("straggler: PrepareStraggle was not called")
	}
	f, err := b.fn(kernels.LoadKernel)
	if err != nil {
		return fmt.Errorf("straggler: kernel %s: %w", kernels.LoadKernel, err)
	}
	l := &b.load
	if err := b.d.EventRecord(l.fork, b.stream); err != nil {
		return fmt.Errorf("straggler: fork: %w", wrap(err))
	}
	if err := b.d.StreamWaitEvent(l.stream, l.fork); err != nil {
		return fmt.Errorf("straggler: fork: %w", wrap(err))
	}
	args := kernels.LoadArgs{Buf: uint64(l.buf), Bytes: kernels.LoadScratchBytes,
		Ns: uint64(min(max(d, 0), kernels.LoadMax).Nanoseconds())}
	if err := cu.LaunchArg(b.d, f, cu.D1(uint32(max(b.sms, 1))), cu.D1(kernels.LoadThreads), 0, l.stream, &args); err != nil {
		return fmt.Errorf("straggler: launch %s for %v: %w", kernels.LoadKernel, d, wrap(err))
	}
	if err := b.d.EventRecord(l.join, l.stream); err != nil {
		return fmt.Errorf("straggler: join: %w", wrap(err))
	}
	callErr := call()
	// Join even when call failed: a capture must not end with the side
	// stream's branch still open.
	if err := b.d.StreamWaitEvent(b.stream, l.join); err != nil && callErr == nil {
		return fmt.Errorf("straggler: join: %w", wrap(err))
	}
	return callErr
}

// closeLoad frees what PrepareStraggle made.
func (b *Backend) closeLoad() []error {
	var errs []error
	l := &b.load
	if l.buf != 0 {
		errs = append(errs, b.d.MemFree(l.buf))
	}
	for _, e := range []cu.Event{l.fork, l.join} {
		if e != 0 {
			errs = append(errs, b.d.EventDestroy(e))
		}
	}
	if l.stream != 0 {
		errs = append(errs, b.d.StreamDestroy(l.stream))
	}
	*l = loadState{}
	return errs
}
