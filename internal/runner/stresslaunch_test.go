package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/backend"
)

// The poison's source starts at its destination's alignment when that is
// a whole number of elements, so the multiprocessor copy moves vectors
// and every element still gets the pattern.
func TestPoisonSource(t *testing.T) {
	st := &stressCase{poisonBuf: 0x10000}
	for _, tc := range []struct {
		dst  backend.Ptr
		elem int
		want backend.Ptr
	}{
		{0x20000, 2, 0x10000},
		{0x20002, 2, 0x10002},
		{0x2000e, 2, 0x1000e},
		{0x20010, 4, 0x10000},
		{0x2000c, 4, 0x1000c},
		{0x20003, 2, 0x10000}, // odd: no whole element
		{0x20006, 4, 0x10000}, // 6 is not a whole f32
		{0x20006, 0, 0x10000},
	} {
		got := st.poisonSource(tc.dst, tc.elem)
		require.Equal(t, tc.want, got, "dst %#x elem %d", tc.dst, tc.elem)
		require.Less(t, got-st.poisonBuf, backend.Ptr(poisonPad))
	}
}
