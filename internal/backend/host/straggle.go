package host

import (
	"runtime"
	"time"

	"github.com/artest/artest/internal/backend"
)

var _ backend.Straggler = (*Backend)(nil)

// PrepareStraggle: the host's load needs nothing allocated.
func (b *Backend) PrepareStraggle() error { return nil }

// Straggle is backend.Straggler on the host: in stream order, one
// goroutine per core starts spinning for d, beside the work after it, so
// the model's block goroutines of this rank share the cores with them and
// run late.
func (b *Backend) Straggle(d time.Duration) error {
	return b.enqueue(func() error {
		n := runtime.GOMAXPROCS(0)
		until := time.Now().Add(d)
		b.spinners.Add(n)
		for i := 0; i < n; i++ {
			go func() {
				defer b.spinners.Done()
				for time.Now().Before(until) {
					// Busy on purpose: a sleeping goroutine frees its core.
				}
			}()
		}
		return nil
	})
}

// JoinStraggle: the stream waits for the spinners started so far.
func (b *Backend) JoinStraggle() error {
	return b.enqueue(func() error {
		b.spinners.Wait()
		return nil
	})
}
