package host

import (
	"runtime"
	"sync"
	"time"

	"github.com/artest/artest/internal/backend"
)

var _ backend.Straggler = (*Backend)(nil)

// PrepareStraggle: the host's load needs nothing allocated.
func (b *Backend) PrepareStraggle() error { return nil }

// Straggle is backend.Straggler on the host: in stream order, one
// goroutine per core spins for d beside the call, so the model's block
// goroutines of this rank share the cores with it and run late; the
// stream waits for the spinners before what follows, as cuda's join does.
func (b *Backend) Straggle(d time.Duration, call func() error) error {
	var spin sync.WaitGroup
	if err := b.enqueue(func() error {
		n := runtime.GOMAXPROCS(0)
		spin.Add(n)
		until := time.Now().Add(d)
		for i := 0; i < n; i++ {
			go func() {
				defer spin.Done()
				for time.Now().Before(until) {
					// Busy on purpose: a sleeping goroutine frees its core.
				}
			}()
		}
		return nil
	}); err != nil {
		return err
	}
	if err := call(); err != nil {
		return err
	}
	return b.enqueue(func() error {
		spin.Wait()
		return nil
	})
}
