package sigblock

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// GiveUp is what a block that gave up waiting records in its rank's
// diagnostic words (layout.go, Diag*) when the kernels' device-side deadline
// (--device-timeout) passes.
type GiveUp struct {
	Rank    int
	Variant uint32
	Block   int
	Kind    int // DiagKind*
	// Where is the barrier's phase (DiagKindBarrier) or the slot
	// (DiagKindRingData); 0 for ring credit.
	Where   int
	Peer    int    // the rank whose write never came
	Want    uint32 // the flag (epoch) or sequence waited for
	Seen    uint32 // what the word held at the give-up
	Waited  time.Duration
	Lane    int
	Timeout time.Duration
	// Name and Point name the variant and its wait point Where, for a
	// plugin's wait (DiagKindPluginWait): the words hold numbers, the
	// reader fills these from the variant's declaration (empty: unknown).
	Name, Point string
}

// CompareAndSwap swaps word off from old to new atomically and reports
// whether it did.
func (b Block) CompareAndSwap(off int, old, new uint32) bool {
	return atomic.CompareAndSwapUint32(b.word(off), old, new)
}

// RecordGiveUp writes g into the diagnostic words, as the kernels'
// record_give_up does: the first give-up of the rank claims the words with a
// compare-and-swap on DiagState and wins; later ones (other blocks that
// time out after it) leave them alone. It reports whether g was recorded.
func (b Block) RecordGiveUp(g GiveUp) bool {
	if !b.CompareAndSwap(DiagOffset(DiagState), 0, DiagClaimed) {
		return false
	}
	put := func(i int, v uint32) { b.Store(DiagOffset(i), v) }
	put(DiagVariant, g.Variant)
	put(DiagBlock, uint32(g.Block))
	put(DiagKind, uint32(g.Kind))
	put(DiagWhere, uint32(g.Where))
	put(DiagPeer, uint32(g.Peer))
	put(DiagWant, g.Want)
	put(DiagSeen, g.Seen)
	put(DiagWaitedMs, durationMs(g.Waited))
	put(DiagLane, uint32(g.Lane))
	put(DiagRank, uint32(g.Rank))
	put(DiagTimeoutMs, durationMs(g.Timeout))
	// Last, so a reader that sees it sees the rest (Go atomics are
	// sequentially consistent).
	put(DiagState, DiagGaveUp)
	return true
}

// durationMs is d in whole milliseconds, saturated to uint32 (49 days).
func durationMs(d time.Duration) uint32 {
	ms := d.Milliseconds()
	if ms < 0 {
		return 0
	}
	if ms > int64(^uint32(0)) {
		return ^uint32(0)
	}
	return uint32(ms)
}

// GaveUp reads the diagnostic words of a live SignalBlock: whether a block
// of this rank gave up waiting (DiagState is DiagGaveUp).
func (b Block) GaveUp() bool { return b.Load(DiagOffset(DiagState)) == DiagGaveUp }

// GiveUp decodes the diagnostic words of a SignalBlock copy; ok is false
// when nobody gave up (or the record is still being written).
func (s Snapshot) GiveUp() (g GiveUp, ok bool) {
	if len(s) < Size || s.Word(DiagOffset(DiagState)) != DiagGaveUp {
		return GiveUp{}, false
	}
	w := func(i int) uint32 { return s.Word(DiagOffset(i)) }
	return GiveUp{
		Rank:    int(w(DiagRank)),
		Variant: w(DiagVariant),
		Block:   int(w(DiagBlock)),
		Kind:    int(w(DiagKind)),
		Where:   int(w(DiagWhere)),
		Peer:    int(w(DiagPeer)),
		Want:    w(DiagWant),
		Seen:    w(DiagSeen),
		Waited:  time.Duration(w(DiagWaitedMs)) * time.Millisecond,
		Lane:    int(w(DiagLane)),
		Timeout: time.Duration(w(DiagTimeoutMs)) * time.Millisecond,
	}, true
}

// String is one line a person can act on, e.g.
// "rank 0 block 3 gave up after 10.0s at the end barrier waiting for rank 2 (flag 4, want 5)"
// or, for a tag mismatch, "rank 0 block 0 gave up at the start barrier:
// rank 1 launched a different call (tag ..., want ...: ...)".
func (g GiveUp) String() string {
	after := fmt.Sprintf("gave up after %.1fs", g.Waited.Seconds())
	switch g.Kind {
	case DiagKindBarrier:
		return fmt.Sprintf("rank %d block %d %s at the %s barrier waiting for rank %d (flag %d, want %d)",
			g.Rank, g.Block, after, PhaseName(g.Where), g.Peer, g.Seen, g.Want)
	case DiagKindRingData:
		return fmt.Sprintf("rank %d lane %d %s waiting for slot %d seq %d from rank %d (seen %d)",
			g.Rank, g.Lane, after, g.Where, g.Want, g.Peer, g.Seen)
	case DiagKindRingCredit:
		return fmt.Sprintf("rank %d lane %d %s waiting for credit %d from rank %d (seen %d)",
			g.Rank, g.Lane, after, g.Want, g.Peer, g.Seen)
	case DiagKindTagMismatch:
		return fmt.Sprintf("rank %d block %d gave up at the %s barrier: %s",
			g.Rank, g.Block, PhaseName(g.Where), tagMismatchText(g.Peer, g.Want, g.Seen))
	case DiagKindLlData:
		return fmt.Sprintf("rank %d block %d %s waiting for LL slot %d from rank %d (sequence %d, seen %d)",
			g.Rank, g.Block, after, g.Where, g.Peer, g.Want, g.Seen)
	case DiagKindSentinelData:
		return fmt.Sprintf("rank %d block %d %s waiting for slot %d from rank %d to be written (launch sequence %d, first word %#x)",
			g.Rank, g.Block, after, g.Where, g.Peer, g.Want, g.Seen)
	case DiagKindPluginWait:
		name, point := g.Name, fmt.Sprintf("wait point %d", g.Where)
		if name == "" {
			name = fmt.Sprintf("the plugin variant with trace id %#x", g.Variant)
		}
		if g.Point != "" {
			point = strconv.Quote(g.Point)
		}
		return fmt.Sprintf("rank %d block %d %s in %s at %s waiting for rank %d (word %d, want %d)",
			g.Rank, g.Block, after, name, point, g.Peer, g.Seen, g.Want)
	case DiagKindClaimed:
		return fmt.Sprintf("rank %d block %d gave up before the start barrier: another launch of rank %d was still using block %d's signal state (two allreduces in flight on one SignalBlock, e.g. on two streams)",
			g.Rank, g.Block, g.Rank, g.Block)
	}
	return fmt.Sprintf("rank %d block %d %s waiting (unknown kind %d) for rank %d (seen %d, want %d)",
		g.Rank, g.Block, after, g.Kind, g.Peer, g.Seen, g.Want)
}

// GiveUps decodes every rank's diagnostic words (snaps[r] for rank r),
// lowest rank first. A record whose rank word disagrees with its position
// keeps its position's rank: the position is where it was read from.
func GiveUps(snaps []Snapshot) []GiveUp {
	var out []GiveUp
	for r, s := range snaps {
		if g, ok := s.GiveUp(); ok {
			g.Rank = r
			out = append(out, g)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	return out
}

// SummarizeGiveUps is one line per rank that gave up, or "" when none did.
func SummarizeGiveUps(gs []GiveUp) string {
	lines := make([]string, len(gs))
	for i, g := range gs {
		lines[i] = g.String()
	}
	return strings.Join(lines, "\n")
}
