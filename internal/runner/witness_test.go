package runner

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A batch's stamps move to the wall clock by the offset interpolated
// between the clock syncs around it: a timer that drifts 20 us over the
// batch keeps every iteration within a microsecond.
func TestToWallInterpolatesTheDrift(t *testing.T) {
	// The GPU timer runs 1000 us ahead at the batch's start and 1020 us at
	// its end; iteration j happened at wall time 100*(j+1) us.
	const us = 1000
	var ends []int64
	for j := 0; j < 4; j++ {
		wall := int64(100 * (j + 1) * us)
		drift := int64(20 * us * (j + 1) / 4)
		ends = append(ends, wall+1000*us+drift)
	}
	require.Equal(t, []int64{100 * us, 200 * us, 300 * us, 400 * us}, toWall(ends, 1000*us, 1020*us))
}
