package runner

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
)

// fakeEvent is an event at a time, in us from an origin.
type fakeEvent struct{ at float64 }

func (e fakeEvent) Since(earlier backend.Event) (time.Duration, error) {
	o, ok := earlier.(fakeEvent)
	if !ok {
		return 0, errors.New("not a fake event")
	}
	return time.Duration((e.at - o.at) * 1e3), nil
}

func (fakeEvent) Destroy() error { return nil }

func TestPairSpan(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		load, end, call, ret float64 // load start and end, calls start and end
		want                 float64
	}{
		{"the load outlasts the calls", 0, 100, 5, 60, 100},
		{"the calls outlast the load", 0, 40, 5, 60, 60},
		{"the calls start first", 10, 100, 0, 30, 100},
		{"the calls start first and end last", 10, 50, 0, 80, 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := overlapSpan{ls: fakeEvent{tc.load}, le: fakeEvent{tc.end}, a: fakeEvent{tc.call}, b: fakeEvent{tc.ret}}
			us := func(a, b backend.Event) (float64, error) {
				d, err := b.Since(a)
				return float64(d.Nanoseconds()) / 1e3, err
			}
			got, err := pairSpan(sp, us)
			require.NoError(t, err)
			require.InDelta(t, tc.want, got, 1e-6)
		})
	}
	_, err := pairSpan(overlapSpan{ls: fakeEvent{}, le: fakeEvent{}, a: nil, b: fakeEvent{}}, func(a, b backend.Event) (float64, error) {
		if b == nil {
			return 0, errors.New("no event")
		}
		return 0, nil
	})
	require.ErrorContains(t, err, "no event")
}

// The load's work is the same whatever the budget: fewer blocks get more
// units each.
func TestBudgetUnitsKeepTheWork(t *testing.T) {
	const sms, iters, unitUS = 132, 20, 10.0
	bytes := int64(16 << 20)
	var works []float64
	for _, budget := range []int{8, 16, 32, 66} {
		blocks := sms - budget
		u := budgetUnits(bytes, iters, blocks, sms, unitUS)
		works = append(works, float64(u*blocks))
	}
	for _, w := range works[1:] {
		require.InEpsilon(t, works[0], w, 0.01, "work per budget: %v", works)
	}
	// 20 calls of 16 MiB at 100 GB/s: about 3355 us on all 132 blocks.
	require.InDelta(t, 3355.0/unitUS*sms, works[0], 0.01*3355/unitUS*sms)
	require.Equal(t, 1, budgetUnits(bytes, iters, 0, sms, unitUS), "no block: one unit")
	require.Equal(t, 1, budgetUnits(4, 1, 124, sms, unitUS), "the smallest load is one unit")
}
