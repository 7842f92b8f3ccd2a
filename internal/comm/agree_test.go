package comm

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
)

var errBoom = errors.New("boom")

// rankErrs builds each rank's error from a map of the failing ones.
func rankErrs(n int, failing map[int]error) []error {
	errs := make([]error, n)
	for r, err := range failing {
		errs[r] = err
	}
	return errs
}

func TestAgree(t *testing.T) {
	long := strings.Repeat("x", 10_000) // longer than any fixed status field
	tests := []struct {
		name    string
		n       int
		failing map[int]error
		// Expected on every rank: the failing rank (-1: none), its code,
		// and the text each rank's error has (index: rank).
		rank int
		code int
		msg  []string
	}{
		{name: "all succeed", n: 4, rank: -1},
		{name: "one rank", n: 1, failing: map[int]error{0: errBoom}, rank: 0, code: exitcode.Wrong, msg: []string{"boom"}},
		{
			name: "rank 2 fails", n: 4, failing: map[int]error{2: exitcode.Envf("no memory")},
			rank: 2, code: exitcode.Env,
			msg: []string{"rank 2: no memory", "rank 2: no memory", "no memory", "rank 2: no memory"},
		},
		{
			name: "the lowest failing rank wins on every rank", n: 3,
			failing: map[int]error{1: exitcode.Usagef("bad flag"), 2: exitcode.Envf("no GPU")},
			rank:    1, code: exitcode.Usage,
			msg: []string{"rank 1: bad flag", "bad flag", "rank 1: bad flag"},
		},
		{
			name: "a message that names its rank is not prefixed again", n: 2,
			failing: map[int]error{1: errors.New("rank 3: gone")},
			rank:    1, code: exitcode.Wrong,
			msg: []string{"rank 3: gone", "rank 3: gone"},
		},
		{
			name: "long message travels whole", n: 2, failing: map[int]error{0: errors.New(long)},
			rank: 0, code: exitcode.Wrong, msg: []string{long, "rank 0: " + long},
		},
		{
			name: "empty message", n: 2, failing: map[int]error{1: errors.New("")},
			rank: 1, code: exitcode.Wrong, msg: []string{"rank 1: ", ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewLocalWorld(tt.n)
			mine := rankErrs(tt.n, tt.failing)
			got := runRanks(t, w, func(c *Local) error { return Agree(c, mine[c.Rank()]) })
			for r, err := range got {
				if tt.rank < 0 {
					require.NoError(t, err, "rank %d", r)
					continue
				}
				var re *RankError
				require.ErrorAs(t, err, &re, "rank %d", r)
				require.Equal(t, tt.rank, re.Rank, "rank %d", r)
				require.Equal(t, tt.code, re.Code, "rank %d", r)
				require.Equal(t, tt.code, exitcode.Of(err), "rank %d: exitcode.Of", r)
				require.Equal(t, tt.msg[r], err.Error(), "rank %d", r)
				if r == tt.rank {
					require.ErrorIs(t, err, mine[r], "rank %d: its own error stays in the chain", r)
				}
			}
		})
	}
}

func TestAgreeReason(t *testing.T) {
	tests := []struct {
		name    string
		reasons []string
		want    []string
	}{
		{"none", []string{"", "", ""}, []string{"", "", ""}},
		{"one rank", []string{"", "no P2P", ""}, []string{"rank 1: no P2P", "no P2P", "rank 1: no P2P"}},
		{"lowest wins", []string{"", "a", "b"}, []string{"rank 1: a", "a", "rank 1: a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewLocalWorld(len(tt.reasons))
			got := make([]string, len(tt.reasons))
			errs := runRanks(t, w, func(c *Local) error {
				var err error
				got[c.Rank()], err = AgreeReason(c, tt.reasons[c.Rank()])
				return err
			})
			for r := range errs {
				require.NoError(t, errs[r], "rank %d", r)
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestAgreeMin(t *testing.T) {
	tests := []struct {
		name    string
		ns      []int
		whys    []string
		wantN   int
		wantWhy string
	}{
		{"one rank", []int{7}, []string{"seven"}, 7, "seven"},
		{"smallest wins", []int{8, 3, 5}, []string{"a", "b", "c"}, 3, "b"},
		{"lowest rank on a tie", []int{4, 2, 2}, []string{"a", "b", "c"}, 2, "b"},
		{"negative and zero", []int{0, -1, 5}, []string{"zero", "minus", ""}, -1, "minus"},
		{"empty why", []int{1, 0}, []string{"one", ""}, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewLocalWorld(len(tt.ns))
			ns := make([]int, len(tt.ns))
			whys := make([]string, len(tt.ns))
			errs := runRanks(t, w, func(c *Local) error {
				var err error
				ns[c.Rank()], whys[c.Rank()], err = AgreeMin(c, tt.ns[c.Rank()], tt.whys[c.Rank()])
				return err
			})
			for r := range errs {
				require.NoError(t, errs[r], "rank %d", r)
				require.Equal(t, tt.wantN, ns[r], "rank %d", r)
				require.Equal(t, tt.wantWhy, whys[r], "rank %d", r)
			}
		})
	}
}

// brokenPeers fails the collective named by fail.
type brokenPeers struct {
	*Local
	fail string
}

func (b brokenPeers) Allgather(send []byte) ([]byte, error) {
	if b.fail == "Allgather" {
		return nil, errBoom
	}
	return b.Local.Allgather(send)
}

func (b brokenPeers) Bcast(buf []byte, root int) error {
	if b.fail == "Bcast" {
		return errBoom
	}
	return b.Local.Bcast(buf, root)
}

// A failing collective is returned as such, never as a rank's failure.
func TestAgreeCollectiveFails(t *testing.T) {
	for _, fail := range []string{"Allgather", "Bcast"} {
		t.Run(fail, func(t *testing.T) {
			c := brokenPeers{NewLocalWorld(1).Rank(0), fail}
			err := Agree(c, errors.New("step failed"))
			require.ErrorIs(t, err, errBoom)
			require.ErrorContains(t, err, "agree with the other ranks")
			var re *RankError
			require.False(t, errors.As(err, &re), "a broken collective is not a rank's failure: %v", err)

			_, rerr := AgreeReason(c, "skip")
			require.ErrorIs(t, rerr, errBoom)
			_, _, merr := AgreeMin(c, 1, "why")
			require.ErrorIs(t, merr, errBoom)
		})
	}
}

// Agree is a collective like the others: a rank that enters another one at
// the same step makes every rank fail instead of hanging.
func TestAgreeMismatchedStep(t *testing.T) {
	w := NewLocalWorld(2)
	errs := runRanks(t, w, func(c *Local) error {
		if c.Rank() == 1 {
			return c.Barrier()
		}
		return Agree(c, nil)
	})
	for r, err := range errs {
		require.ErrorIs(t, err, ErrMismatch, fmt.Sprintf("rank %d", r))
	}
}
