package comm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/artest/artest/internal/exitcode"
)

// Peers is the part of a Comm that Agree, AgreeReason and AgreeMin use:
// a world whose ranks exchange a fixed-size status each (Allgather), then
// the chosen rank's text (Bcast).
type Peers interface {
	Rank() int
	Size() int
	Allgather(send []byte) ([]byte, error)
	Bcast(buf []byte, root int) error
}

// RankError is a step's failure as every rank learns it from Agree: the
// lowest-numbered rank whose step failed, the text of its error and that
// error's exit code. Every rank of the world gets the same one.
type RankError struct {
	Rank int
	Code int    // exitcode.Of of the failing rank's error
	Msg  string // the failing rank's error's text
	// own is the error itself on the rank that failed; nil on the others.
	own error
}

// Error is Msg on the rank that failed and "rank R: Msg" on the others;
// a Msg that already starts with "rank " (it names where it came from, as
// an earlier agreement's does) is not prefixed again.
func (e *RankError) Error() string {
	if e.own != nil || strings.HasPrefix(e.Msg, "rank ") {
		return e.Msg
	}
	return fmt.Sprintf("rank %d: %s", e.Rank, e.Msg)
}

// Unwrap is the failing rank's own error on that rank; on the others an
// error of the same exit code (exitcode.Of) and text.
func (e *RankError) Unwrap() error {
	if e.own != nil {
		return e.own
	}
	return &exitcode.Error{Code: e.Code, Err: errors.New(e.Msg)}
}

// Agree is a step's outcome decided by every rank together, so that every
// rank stops at the same step when any rank's step failed: it returns nil
// when err is nil on every rank, and otherwise a *RankError naming the
// lowest-numbered failing rank, the same on every rank. Any other error is
// the failure of the collectives themselves. It is collective: one
// Allgather of a small status per rank, and one Bcast of the failing
// rank's text when some rank failed.
func Agree(c Peers, err error) error {
	code, text := int64(exitcode.OK), ""
	if err != nil {
		code, text = int64(exitcode.Of(err)), err.Error()
	}
	rank, vals, msg, cerr := pick(c, code, text, func(vals []int64) int {
		for r, v := range vals {
			if v != exitcode.OK {
				return r
			}
		}
		return -1
	})
	if cerr != nil {
		return fmt.Errorf("agree with the other ranks: %w", cerr)
	}
	if rank < 0 {
		return nil
	}
	re := &RankError{Rank: rank, Code: int(vals[rank]), Msg: msg}
	if rank == c.Rank() {
		re.own = err
	}
	return re
}

// AgreeReason is Agree for a reason not to go on (a case to skip) rather
// than an error: "" when no rank has one, else the lowest-numbered rank's
// reason, named "rank R: reason" on the other ranks. The error is the
// failure of the collectives only.
func AgreeReason(c Peers, reason string) (string, error) {
	var err error
	if reason != "" {
		err = errors.New(reason)
	}
	err = Agree(c, err)
	var re *RankError
	switch {
	case err == nil:
		return "", nil
	case errors.As(err, &re):
		return re.Error(), nil
	}
	return "", err
}

// AgreeMin is the smallest n of all ranks and the why of the rank that
// has it (the lowest-numbered one on a tie), the same on every rank. It is
// collective, as Agree.
func AgreeMin(c Peers, n int, why string) (int, string, error) {
	rank, vals, msg, err := pick(c, int64(n), why, func(vals []int64) int {
		best := 0
		for r, v := range vals {
			if v < vals[best] {
				best = r
			}
		}
		return best
	})
	if err != nil {
		return 0, "", fmt.Errorf("agree with the other ranks: %w", err)
	}
	return int(vals[rank]), msg, nil
}

// statusBytes is one rank's status in pick's Allgather: a value and the
// length of its text, little-endian.
const statusBytes = 16

// pick gathers every rank's (value, text), lets choose pick a rank from the
// values (every rank runs it on the same values, so all pick the same one;
// -1 for none) and returns that rank, every value and that rank's text,
// which travels in a Bcast from it only when it is not empty: texts of any
// length, and no text sent when none is chosen.
func pick(c Peers, value int64, text string, choose func(vals []int64) int) (int, []int64, string, error) {
	me := make([]byte, statusBytes)
	binary.LittleEndian.PutUint64(me, uint64(value))
	binary.LittleEndian.PutUint64(me[8:], uint64(len(text)))
	all, err := c.Allgather(me)
	if err != nil {
		return -1, nil, "", err
	}
	if len(all) != statusBytes*c.Size() {
		return -1, nil, "", fmt.Errorf("gathered %d bytes of status from %d ranks, want %d", len(all), c.Size(), statusBytes*c.Size())
	}
	vals := make([]int64, c.Size())
	lens := make([]uint64, c.Size())
	for r := range vals {
		vals[r] = int64(binary.LittleEndian.Uint64(all[r*statusBytes:]))
		lens[r] = binary.LittleEndian.Uint64(all[r*statusBytes+8:])
	}
	rank := choose(vals)
	if rank < 0 || lens[rank] == 0 {
		return rank, vals, "", nil
	}
	buf := make([]byte, lens[rank])
	if rank == c.Rank() {
		copy(buf, text)
	}
	if err := c.Bcast(buf, rank); err != nil {
		return -1, nil, "", fmt.Errorf("rank %d's text: %w", rank, err)
	}
	return rank, vals, string(buf), nil
}
