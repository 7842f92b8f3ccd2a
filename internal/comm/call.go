package comm

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrAborted is returned by every collective that was waiting, or is
	// called, after some rank called Abort. Only the in-process world
	// returns it: under MPI the process is gone.
	ErrAborted = errors.New("world aborted")
	// ErrMismatch means the ranks entered different collectives at the same
	// step (another operation, root or length). Every rank of that step gets
	// it, so no rank waits forever for a peer that took another path.
	ErrMismatch = errors.New("ranks disagree on the collective")
	// ErrFinalized is returned by a collective called after Finalize.
	ErrFinalized = errors.New("communicator finalized")
)

// Op names a collective so that the ranks can check they entered the same one.
type Op uint8

const (
	OpBarrier Op = iota + 1
	OpAllgather
	OpBcast
	OpGather
)

func (o Op) String() string {
	switch o {
	case OpBarrier:
		return "Barrier"
	case OpAllgather:
		return "Allgather"
	case OpBcast:
		return "Bcast"
	case OpGather:
		return "Gather"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Call is what one rank says about the collective it entered: enough for
// every rank to tell whether all of them agree before any data moves.
type Call struct {
	Op   Op
	Len  int // bytes this rank passes
	Root int // meaningful for Bcast and Gather only
}

func (c Call) String() string {
	switch c.Op {
	case OpBarrier:
		return "Barrier()"
	case OpAllgather:
		return fmt.Sprintf("Allgather(%d bytes)", c.Len)
	default:
		return fmt.Sprintf("%v(%d bytes, root %d)", c.Op, c.Len, c.Root)
	}
}

// CheckCalls returns nil when calls (one per rank, in rank order) describe
// one collective the ranks agree on: the same operation, the same root, a
// root inside the world, and the same length where the operation needs one
// (Allgather and Bcast; Gather lengths may differ). Every rank runs it on the
// same calls and so reaches the same verdict.
func CheckCalls(calls []Call) error {
	if len(calls) == 0 {
		return fmt.Errorf("%w: no calls", ErrMismatch)
	}
	first := calls[0]
	var differ []string
	for r, c := range calls[1:] {
		if !sameCollective(first, c) {
			differ = append(differ, fmt.Sprintf("rank %d called %v", r+1, c))
		}
	}
	if len(differ) > 0 {
		return fmt.Errorf("%w: rank 0 called %v, %s", ErrMismatch, first, strings.Join(differ, ", "))
	}
	if (first.Op == OpBcast || first.Op == OpGather) && (first.Root < 0 || first.Root >= len(calls)) {
		return fmt.Errorf("%v: root %d outside world of %d ranks", first.Op, first.Root, len(calls))
	}
	for r, c := range calls {
		if c.Len < 0 {
			return fmt.Errorf("%v: rank %d passes negative length %d", c.Op, r, c.Len)
		}
	}
	return nil
}

func sameCollective(a, b Call) bool {
	if a.Op != b.Op {
		return false
	}
	switch a.Op {
	case OpAllgather:
		return a.Len == b.Len
	case OpBcast:
		return a.Len == b.Len && a.Root == b.Root
	case OpGather:
		return a.Root == b.Root
	}
	return true
}
