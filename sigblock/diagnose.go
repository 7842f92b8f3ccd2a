package sigblock

import (
	"fmt"
	"sort"
	"strings"
)

// Waiting is one block of one rank stuck at a barrier.
type Waiting struct {
	Rank, Block int
	Phase       int
	// Peer is the lowest rank whose flag has not arrived; Missing lists all.
	Peer    int
	Missing []int
	Seen    uint32 // Peer's flag as this rank sees it
	Want    uint32 // the epoch of the launch in progress
}

// Diagnose reads every rank's SignalBlock copy (snaps[r] for rank r) and
// reports, for the first blocks blocks, which ranks wait at which barrier
// for whom. A rank waits at phase ph of its launch in progress (epoch
// Epoch[b]+1) when it has announced ph (its own flag has that epoch) and
// some peer's flag in its block has not reached it. Ranks whose blocks wait
// nowhere (finished, or not yet started the launch) are not listed.
func Diagnose(snaps []Snapshot, blocks int) []Waiting {
	n := len(snaps)
	var out []Waiting
	for r, s := range snaps {
		if !s.Valid() {
			continue
		}
		for b := 0; b < blocks && b < MaxBlocks; b++ {
			want := s.Epoch(b) + 1
			for ph := 0; ph < NumPhases; ph++ {
				if !Reached(s.Flag(ph, b, r), want) {
					continue // never announced this phase in this launch
				}
				var missing []int
				for p := 0; p < n; p++ {
					if !Reached(s.Flag(ph, b, p), want) {
						missing = append(missing, p)
					}
				}
				if len(missing) > 0 {
					out = append(out, Waiting{Rank: r, Block: b, Phase: ph, Peer: missing[0], Missing: missing, Seen: s.Flag(ph, b, missing[0]), Want: want})
				}
			}
		}
	}
	return out
}

// Summarize turns Diagnose's list into a few lines a person can act on:
// one per (barrier, missing rank), naming the waiting ranks and blocks.
// It returns "" when nobody waits at a barrier.
func Summarize(ws []Waiting) string {
	type key struct{ phase, peer int }
	type group struct {
		ranks, blocks map[int]bool
		seen, want    uint32
	}
	groups := map[key]*group{}
	for _, w := range ws {
		for _, p := range w.Missing {
			k := key{w.Phase, p}
			g := groups[k]
			if g == nil {
				g = &group{ranks: map[int]bool{}, blocks: map[int]bool{}}
				groups[k] = g
			}
			g.ranks[w.Rank] = true
			g.blocks[w.Block] = true
			g.want = w.Want
			if p == w.Peer {
				g.seen = w.Seen
			}
		}
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].peer != keys[j].peer {
			return keys[i].peer < keys[j].peer
		}
		return keys[i].phase < keys[j].phase
	})
	var lines []string
	for _, k := range keys {
		g := groups[k]
		lines = append(lines, fmt.Sprintf("%s wait%s at the %s barrier for rank %d (blocks %s; its flag %d, want %d)",
			rankList(g.ranks), plural(len(g.ranks)), PhaseName(k.phase), k.peer, ranges(g.blocks), g.seen, g.want))
	}
	return strings.Join(lines, "\n")
}

// Culprits lists the ranks others wait for, lowest first.
func Culprits(ws []Waiting) []int {
	set := map[int]bool{}
	for _, w := range ws {
		for _, p := range w.Missing {
			set[p] = true
		}
	}
	var out []int
	for p := range set {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

func plural(n int) string {
	if n == 1 {
		return "s"
	}
	return ""
}

func rankList(set map[int]bool) string {
	var rs []int
	for r := range set {
		rs = append(rs, r)
	}
	sort.Ints(rs)
	if len(rs) == 1 {
		return fmt.Sprintf("rank %d", rs[0])
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprint(r)
	}
	return "ranks " + strings.Join(parts, ",")
}

// ranges prints a set of block numbers compactly: "0-3,7".
func ranges(set map[int]bool) string {
	var xs []int
	for x := range set {
		xs = append(xs, x)
	}
	sort.Ints(xs)
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, fmt.Sprint(xs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
