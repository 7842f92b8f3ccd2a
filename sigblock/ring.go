package sigblock

import (
	"fmt"
	"sort"
	"strings"
)

// The ring variant's words (layout in layout.go, the protocol in
// kernels/ring/protocol.go and kernels/ring/ring.cu). Lane l of rank r is a pipe from r to
// its right neighbour (r+1)%N and from its left neighbour (r-1+N)%N to r.
// Pieces move through a ring of S slots (a power of two) in the receiver's
// staging buffer; piece t of a launch has the sequence Head+t+1 and lives in
// slot (Head+t) % S.
//
//   - Seq[s], in the receiver's record, is written by the producer (the
//     receiver's left neighbour) with release semantics after the slot's
//     payload: "slot s now holds the piece with this sequence". The consumer
//     waits (acquire) until it reaches the sequence it expects.
//   - Credit, in the producer's record, is written by the consumer (the
//     producer's right neighbour) with release semantics after it has read a
//     slot: "every piece up to this sequence is consumed" (the gating
//     sequence). The producer waits until it reaches q-S before it writes
//     piece q, whose slot held piece q-S.
//   - Head counts the pieces that went through the lane in completed
//     launches (produced and consumed are equal: every launch moves as many
//     pieces out as in). It is kept on the device like Epoch[b], so a launch
//     or a graph replay never mistakes an old sequence for a new one; values
//     wrap around uint32 and are compared with Reached.
//   - Target, Slots and the Wait* words exist for diagnosis: a lane is in a
//     launch while Head != Target, and Wait* say what its block waits for.

// RingOffset is the byte offset of word off (a RingOff* constant) of lane
// l's record.
func RingOffset(l, off int) int { return OffRing + RingLaneBytes*l + off }

// RingSeqOffset is the byte offset of slot s's sequence word of lane l.
func RingSeqOffset(l, s int) int { return RingOffset(l, RingOffSeq+4*s) }

// RingWait is one lane of one rank waiting for a peer on the ring.
type RingWait struct {
	Rank, Lane int
	Kind       int // RingWaitData or RingWaitCredit
	// Peer is the rank that must write: the left neighbour for data, the
	// right neighbour for credit.
	Peer int
	Slot int    // the slot (data waits)
	Want uint32 // the sequence (data) or credit awaited
	Seen uint32 // what the word holds now
}

// RingBusy is a rank with lanes in a ring launch that wait for nobody:
// running, or delayed (the lane others wait for, in a hang).
type RingBusy struct {
	Rank  int
	Lanes []int
}

// DiagnoseRing reads every rank's SignalBlock copy (snaps[r] for rank r)
// and reports, for every lane in a ring launch (Head != Target), what its
// block waits for, or that it waits for nothing. Lanes not in a launch (no
// ring launch ever ran, or the last one finished) are left out, so a hang
// in another variant lists nothing here.
func DiagnoseRing(snaps []Snapshot) ([]RingWait, []RingBusy) {
	n := len(snaps)
	var waits []RingWait
	var busy []RingBusy
	for r, s := range snaps {
		if !s.Valid() {
			continue
		}
		var idle []int
		for l := 0; l < RingMaxLanes; l++ {
			if s.Word(RingOffset(l, RingOffHead)) == s.Word(RingOffset(l, RingOffTarget)) {
				continue
			}
			w := RingWait{Rank: r, Lane: l, Kind: int(s.Word(RingOffset(l, RingOffWaitKind))),
				Want: s.Word(RingOffset(l, RingOffWaitWant))}
			switch w.Kind {
			case RingWaitData:
				w.Peer = (r - 1 + n) % n
				w.Slot = int(s.Word(RingOffset(l, RingOffWaitSlot)) % RingMaxSlots)
				w.Seen = s.Word(RingSeqOffset(l, w.Slot))
			case RingWaitCredit:
				w.Peer = (r + 1) % n
				w.Seen = s.Word(RingOffset(l, RingOffCredit))
			default:
				idle = append(idle, l)
				continue
			}
			waits = append(waits, w)
		}
		if len(idle) > 0 {
			busy = append(busy, RingBusy{Rank: r, Lanes: idle})
		}
	}
	return waits, busy
}

// SummarizeRing turns DiagnoseRing's findings into lines: one per rank and
// kind of wait, naming the lanes, the peer and the first lane's sequences,
// e.g. "rank 2 lane 0 waits for slot 3 seq 17 from rank 1 (seen 13)". A
// rank whose lanes wait for nobody while others wait is named too: it is
// the one the ring waits for. It returns "" when no lane is in a launch.
func SummarizeRing(waits []RingWait, busy []RingBusy) string {
	type key struct{ rank, kind int }
	groups := map[key][]RingWait{}
	var keys []key
	for _, w := range waits {
		k := key{w.Rank, w.Kind}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], w)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].rank != keys[j].rank {
			return keys[i].rank < keys[j].rank
		}
		return keys[i].kind < keys[j].kind
	})
	var lines []string
	for _, k := range keys {
		ws := groups[k]
		lanes := map[int]bool{}
		for _, w := range ws {
			lanes[w.Lane] = true
		}
		w := ws[0]
		who := fmt.Sprintf("rank %d lane %d", w.Rank, w.Lane)
		more := ""
		if len(ws) > 1 {
			more = fmt.Sprintf("; lanes %s wait alike", ranges(lanes))
		}
		if k.kind == RingWaitData {
			lines = append(lines, fmt.Sprintf("%s waits for slot %d seq %d from rank %d (seen %d%s)",
				who, w.Slot, w.Want, w.Peer, w.Seen, more))
		} else {
			lines = append(lines, fmt.Sprintf("%s waits for credit %d from rank %d (seen %d%s)",
				who, w.Want, w.Peer, w.Seen, more))
		}
	}
	for _, b := range busy {
		lanes := map[int]bool{}
		for _, l := range b.Lanes {
			lanes[l] = true
		}
		what := "lanes %s are in a ring launch and wait"
		if len(b.Lanes) == 1 {
			what = "lane %s is in a ring launch and waits"
		}
		lines = append(lines, fmt.Sprintf("rank %d "+what+" for no peer (running, or delayed)", b.Rank, ranges(lanes)))
	}
	return strings.Join(lines, "\n")
}
