package host

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/artest/artest/internal/backend"
)

var _ backend.Overlapper = (*Backend)(nil)

// overlapUnitSteps is the multiply-adds of one unit of the host's load per
// goroutine: about 10 to 50 us of one core, the order of a GPU unit
// (kernels.ComputeItersPerUnit). Host times mean nothing for GPUs; the
// load exists so that the code path runs in CI.
const overlapUnitSteps = 1 << 14

// overlapSink keeps the loads' results alive, so the arithmetic is done.
var overlapSink atomic.Uint64

var _ backend.SMCounter = (*Backend)(nil)

// hostModelSMs is the multiprocessors the host backend claims for bench
// --sm-budget's arithmetic (the load gets hostModelSMs - N goroutines):
// a small GPU's worth, so that budgets like 2 or 4 leave the load some.
// Like every host time, what it measures means nothing for GPUs; it makes
// the budget's code path run in CI.
const hostModelSMs = 8

// SMs is backend.SMCounter's on the host: hostModelSMs.
func (b *Backend) SMs() int { return hostModelSMs }

// OverlapReason: the host's load needs nothing.
func (b *Backend) OverlapReason() string { return "" }

// PrepareOverlap keeps the number of goroutines each load starts.
func (b *Backend) PrepareOverlap(blocks int) error {
	if blocks < 1 {
		return fmt.Errorf("overlap: %d blocks: want at least 1", blocks)
	}
	b.overlapBlocks = blocks
	return nil
}

// StartOverlap is backend.Overlapper on the host: in stream order, blocks
// goroutines each start units * overlapUnitSteps multiply-adds beside the
// work after it; the start event is when they were started, the end event
// when the last one finished.
func (b *Backend) StartOverlap(units int) (backend.Event, backend.Event, error) {
	n := b.overlapBlocks
	if n < 1 {
		return nil, nil, errors.New("overlap: PrepareOverlap was not called")
	}
	units = max(units, 1)
	start, end := &event{}, &event{}
	err := b.enqueue(func() error {
		left := atomic.Int64{}
		left.Store(int64(n))
		b.overlapping.Add(n)
		start.at = time.Now()
		for i := 0; i < n; i++ {
			go func(seed int) {
				defer b.overlapping.Done()
				overlapSink.Add(math.Float64bits(overlapWork(units*overlapUnitSteps, seed)))
				if left.Add(-1) == 0 {
					end.at = time.Now() // before Done: JoinOverlap's wait orders it before any read
				}
			}(i)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("overlap: start: %w", err)
	}
	return start, end, nil
}

// overlapWork is steps dependent multiply-adds on a small array, as a
// GEMM's inner loop does on its tiles.
func overlapWork(steps, seed int) float64 {
	var tile [16]float64
	for i := range tile {
		tile[i] = 1 + float64(i+seed)*1e-3
	}
	acc := 0.0
	for s := 0; s < steps; s++ {
		acc = acc*0.999 + tile[s&15]
	}
	return acc
}

// JoinOverlap: the stream waits for the loads started so far.
func (b *Backend) JoinOverlap() error {
	return b.enqueue(func() error {
		b.overlapping.Wait()
		return nil
	})
}
