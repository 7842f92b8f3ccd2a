package comm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckCalls(t *testing.T) {
	tests := []struct {
		name     string
		calls    []Call
		mismatch bool
		msg      string // "" : no error
	}{
		{"one rank", []Call{{Op: OpBarrier}}, false, ""},
		{"barriers", []Call{{Op: OpBarrier}, {Op: OpBarrier}, {Op: OpBarrier}}, false, ""},
		{"allgather same length", []Call{{Op: OpAllgather, Len: 8}, {Op: OpAllgather, Len: 8}}, false, ""},
		{"gather lengths may differ", []Call{{Op: OpGather, Len: 0, Root: 1}, {Op: OpGather, Len: 9, Root: 1}}, false, ""},
		{
			"ops differ",
			[]Call{{Op: OpBarrier}, {Op: OpBarrier}, {Op: OpAllgather, Len: 4}},
			true, "rank 0 called Barrier(), rank 2 called Allgather(4 bytes)",
		},
		{
			"allgather lengths differ",
			[]Call{{Op: OpAllgather, Len: 8}, {Op: OpAllgather, Len: 7}},
			true, "rank 1 called Allgather(7 bytes)",
		},
		{
			"bcast lengths differ",
			[]Call{{Op: OpBcast, Len: 8}, {Op: OpBcast, Len: 7}},
			true, "rank 1 called Bcast(7 bytes, root 0)",
		},
		{
			"bcast roots differ",
			[]Call{{Op: OpBcast, Len: 8, Root: 1}, {Op: OpBcast, Len: 8}},
			true, "rank 0 called Bcast(8 bytes, root 1), rank 1 called Bcast(8 bytes, root 0)",
		},
		{
			"gather roots differ",
			[]Call{{Op: OpGather, Root: 0}, {Op: OpGather, Root: 1}},
			true, "rank 1 called Gather(0 bytes, root 1)",
		},
		{"root too large", []Call{{Op: OpGather, Root: 2}, {Op: OpGather, Root: 2}}, false, "root 2 outside world of 2 ranks"},
		{"root negative", []Call{{Op: OpBcast, Root: -1}}, false, "root -1 outside world of 1 ranks"},
		{"negative length", []Call{{Op: OpGather, Len: 1}, {Op: OpGather, Len: -1}}, false, "rank 1 passes negative length -1"},
		{"unknown op", []Call{{Op: 99}, {Op: OpBarrier}}, true, "rank 0 called Op(99)(0 bytes, root 0)"},
		{"no ranks", nil, true, "no calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCalls(tt.calls)
			if tt.msg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.msg)
			if tt.mismatch {
				require.ErrorIs(t, err, ErrMismatch)
			} else {
				require.NotErrorIs(t, err, ErrMismatch)
			}
		})
	}
}
