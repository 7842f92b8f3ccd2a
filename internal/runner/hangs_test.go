package runner

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
)

func TestParseHangScenarios(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want Inject
		err  string
	}{
		{"size-mismatch:rank=1", Inject{SizeMismatch: true, SizeMismatchRank: 1}, ""},
		{"reregister:rank=2", Inject{Reregister: true, ReregisterRank: 2}, ""},
		{"two-streams", Inject{TwoStreams: true}, ""},
		{"size-mismatch:rank=-1", Inject{}, "want size-mismatch:rank=R"},
		{"size-mismatch:rnk=1", Inject{}, "want size-mismatch:rank=R"},
		{"reregister:rank=x", Inject{}, "want reregister:rank=R"},
		{"reregister", Inject{}, "unknown --inject"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			var in Inject
			err := in.Parse(tc.spec, nil)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, []string{tc.spec}, in.Specs())
			in.specs = nil
			require.Equal(t, tc.want, in)
		})
	}
	require.Contains(t, FaultHelp(), "size-mismatch:rank=R")
	require.Contains(t, FaultHelp(), "reregister:rank=R")
	require.Contains(t, FaultHelp(), "two-streams")
}

func TestHangScenarioArgs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		in        Inject
		rank      uint32
		elem      int64
		wantCount uint64
		wantDelay bool
	}{
		{"size-mismatch rank shrinks by one f32 slot", Inject{SizeMismatch: true, SizeMismatchRank: 1}, 1, 4, 1020, false},
		{"size-mismatch rank shrinks by one bf16 slot", Inject{SizeMismatch: true, SizeMismatchRank: 1}, 1, 2, 1016, false},
		{"other ranks keep the count", Inject{SizeMismatch: true, SizeMismatchRank: 1}, 0, 4, 1024, false},
		{"two-streams holds the first launch", Inject{TwoStreams: true}, 0, 4, 1024, true},
		{"nothing injected", Inject{}, 1, 4, 1024, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := kernels.Args{Count: 1024, Rank: tc.rank, NRanks: 4}
			tc.in.hangScenario(&a, tc.elem)
			require.Equal(t, tc.wantCount, a.Count)
			require.Equal(t, tc.wantDelay, a.Inject&kernels.InjectDelay != 0)
			if tc.wantDelay {
				require.Equal(t, uint32(3), a.DelayRank)
				require.Equal(t, uint64(twoStreamsHold.Nanoseconds()), a.DelayNs)
			}
		})
	}
	// A delay the user asked for is kept.
	a := kernels.Args{Count: 1024, NRanks: 4, Inject: kernels.InjectDelay, DelayRank: 1, DelayNs: uint64(time.Second)}
	in := Inject{TwoStreams: true}
	in.hangScenario(&a, 4)
	require.Equal(t, uint32(1), a.DelayRank)
	require.Equal(t, uint64(time.Second), a.DelayNs)
}
