package twoshot

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels/hostmodel/hostmodeltest"
	"github.com/artest/artest/reference"
)

// The checks every model with barriers passes.
func TestBarrierGivesUpAfterTheDeadline(t *testing.T) {
	v := Variant()
	hostmodeltest.CheckBarrierGivesUp(t, &v)
}

func TestTagMismatchDiagnosesADifferentCall(t *testing.T) {
	v := Variant()
	hostmodeltest.CheckTagMismatch(t, &v)
}

// Matching tags change nothing: launch after launch passes, and every
// block's claim is released at its end.
func TestMatchingTagsPassAndReleaseClaims(t *testing.T) {
	v := Variant()
	w := hostmodeltest.NewWorld(3, reference.F32, 1024, false)
	for iter := 0; iter < 3; iter++ {
		w.Fill(iter)
		errs, _ := w.LaunchTagged(t, &v, []int64{1024, 1024, 1024}, hostmodeltest.SameGens(3, 1, 2, 1), 0)
		for r := 0; r < 3; r++ {
			require.NoError(t, errs[r])
			_, ok := w.Snapshot(r).GiveUp()
			require.False(t, ok)
		}
	}
	for r := 0; r < 3; r++ {
		for b := 0; b < v.HostBlocks; b++ {
			require.Zero(t, w.Snapshot(r).Claim(b))
			require.Equal(t, uint32(3), w.Snapshot(r).Epoch(b))
		}
	}
}
