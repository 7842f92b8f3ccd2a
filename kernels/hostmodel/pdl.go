package hostmodel

import (
	"fmt"
	"sync"
	"time"

	"github.com/artest/artest/kernels"
)

// Producer is the host model of --pdl's producer kernel
// (kernels/harness/pdl.cu): it copies a call's input from private memory
// into the registered input, which the runner poisoned just before, while
// the allreduce after it may already run (programmatic dependent launch).
//
// The model takes the worst schedule the GPU allows, so that the outcome
// is deterministic: the producer writes nothing until something waits for
// it, either the allreduce's pdl_wait (Wait) or the stream moving past the
// allreduce (Finish), as a next stream operation waits for every kernel
// before it. A kernel that waits therefore always sees the whole input; a
// kernel that skips the wait (kernels.InjectPdlNoWait) always reads the
// poison, on every rank, since peers read our input before our launch ends
// (its end or mid barrier waits for them), and never a half-written mix
// that might pass by luck.
type Producer struct {
	release sync.Once
	start   chan struct{} // closed when something waits for the producer
	done    chan struct{} // closed when the copy is complete
	err     error         // set before done is closed
}

// NewProducer starts the producer of n bytes from src to dst. It holds
// until Wait or Finish is called.
func NewProducer(mem Memory, dst, src uint64, n int64) *Producer {
	p := &Producer{start: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		<-p.start
		defer func() {
			if r := recover(); r != nil {
				p.err = fmt.Errorf("host pdl producer: %v", r)
			}
		}()
		copy(mem.Bytes(dst, n), mem.Bytes(src, n))
	}()
	return p
}

func (p *Producer) unblock() { p.release.Do(func() { close(p.start) }) }

// pollStop is how often a block waiting for the producer checks Stop.
const pollStop = 10 * time.Millisecond

// Wait is griddepcontrol.wait: it returns once the producer has written the
// whole input (or with ErrStopped when stop reports true first).
func (p *Producer) Wait(stop func() bool) error {
	p.unblock()
	for {
		select {
		case <-p.done:
			return p.err
		case <-time.After(pollStop):
			if stop != nil && stop() {
				return ErrStopped
			}
		}
	}
}

// Finish lets the producer run and waits for it: what the stream does
// before its next operation.
func (p *Producer) Finish() error {
	p.unblock()
	<-p.done
	return p.err
}

// pdlWait is the kernels' pdl_wait, at the start of every block of a
// launch made with PDL, unless the fault switch skips it.
func (k *Kernel) pdlWait() error {
	p := k.l.Producer
	if p == nil || k.Injected(kernels.InjectPdlNoWait) {
		return nil
	}
	return p.Wait(k.l.Stop)
}
