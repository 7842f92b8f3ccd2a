package host

import (
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel"
)

// Produce enqueues the model of --pdl's producer kernel (hostmodel.Producer):
// it holds the input as it is (poisoned by the runner) until the launch
// after it waits for it, or until the stream moves past that launch.
func (b *Backend) Produce(dst, src backend.Ptr, n int64) error {
	return b.stream.enqueue(func() error {
		if err := b.finishProducer(); err != nil {
			return err
		}
		b.producer = hostmodel.NewProducer(b, dst, src, n)
		return nil
	})
}

// PDLSkipReason: the host models every custom variant's pdl_wait; an
// External variant has no way to be told to wait for the producer.
func (b *Backend) PDLSkipReason(v *kernels.Variant) string {
	if v.External != nil {
		return "PDL needs the kernel to call griddepcontrol.wait, which a plugin is not told to do"
	}
	return ""
}

// finishProducer lets a pending producer run and waits for it, as a stream
// does before its next operation. Stream operations only.
func (b *Backend) finishProducer() error {
	p := b.producer
	if p == nil {
		return nil
	}
	b.producer = nil
	return p.Finish()
}

// enqueue is stream.enqueue for every operation other than a PDL launch:
// the operation starts after the producer before it has finished.
func (b *Backend) enqueue(op func() error) error {
	return b.stream.enqueue(func() error {
		if err := b.finishProducer(); err != nil {
			return err
		}
		return op()
	})
}

// enqueueLaunch enqueues a model launch. With PDL it starts while the
// producer before it may not have written anything yet, and its blocks
// wait for that producer themselves (unless kernels.InjectPdlNoWait); once
// it returns the producer is finished, so the next operation finds the
// stream as CUDA leaves it. A graph replays the same operation, so each run
// gets its own copy of the launch with that run's producer.
func (b *Backend) enqueueLaunch(launch *hostmodel.Launch, pdl bool) error {
	if !pdl {
		return b.enqueue(func() error { return hostmodel.Run(b, launch) })
	}
	return b.stream.enqueue(func() error {
		p := b.producer
		b.producer = nil
		l := *launch
		l.Producer = p
		err := hostmodel.Run(b, &l)
		if p != nil {
			if perr := p.Finish(); err == nil {
				err = perr
			}
		}
		return err
	})
}
