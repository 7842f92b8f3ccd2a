package runner

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/artest/artest/internal/backend"
)

// Schedules are the adversarial schedules of a stress run: perturbations
// from outside the kernel that need nothing from it (no fault hook, no
// trace word), so they apply to any variant, a plugin's included. Every
// rank derives the same per-iteration plan from the seed, the case and the
// iteration, so no rank has to tell another what it does.
type Schedules struct {
	// Poison: right after each call, the rank's registered input (the
	// message bytes) is overwritten with the poison pattern, stream-ordered
	// after the call, so a peer still reading it (a missing end barrier)
	// reads poison.
	Poison bool
	// Skew: in each iteration one rank, drawn from the seed (or none, one
	// iteration in N+1), delays its stream by a drawn time before it
	// copies its input in and launches, through backend.Delayer, so peers
	// that do not wait for it (a missing start barrier) read its previous
	// input.
	Skew bool
	// Straggler: in each iteration one rank, drawn from the seed (or
	// none), runs a bounded load on its own device beside the call
	// (backend.Straggler): on the cuda backend the load starves its SMs
	// (ARTEST_LOAD_KIND=memory: streams its memory instead), so its blocks
	// read slowly and a peer that returns without waiting for it (a
	// missing end barrier) lets poison or the next input land while it
	// still reads. Where ranks share a GPU, the cuda backend gives each SMs
	// of its own and the load stays on the loaded rank's SMs, so its peers
	// run at full speed.
	Straggler bool
	// Link: in half the straggler's iterations, drawn from the seed, its
	// load reads its peers' input buffers instead (backend.LinkStraggler),
	// so the straggling rank's own reads of its peers queue behind the
	// load's on the links while theirs of it do not: a peer that returns
	// without waiting for it (a missing end barrier) leaves it reading for
	// longer, even in a kernel whose every thread reads one vector. It
	// turns the straggler on. Off where the ranks share a GPU (no link
	// between them) and on the host backend.
	Link bool
	// Memory: in half the straggler's iterations, drawn from the seed,
	// its load streams the GPU's memory instead of starving its SMs
	// (backend.MemoryStraggler), so every rank's reads of its peers' data,
	// which on a GPU the ranks share are this GPU's memory reads and often
	// L2 hits, wait behind it: a peer's data arrives late, as over a link,
	// and a kernel that reads a tile before its copy landed or overwrites
	// a slot its reader has not read shows it. It turns the straggler on.
	// On where ranks share a GPU only (the link load does this where each
	// has its own), and not on the host backend.
	Memory bool
}

// Schedule names, as --schedule takes them.
const (
	SchedPoison    = "poison-after-return"
	SchedSkew      = "skew"
	SchedStraggler = "straggler"
	SchedLink      = "link"
	SchedMemory    = "memory"
)

// ScheduleNames lists every schedule, in the order reports name them.
var ScheduleNames = []string{SchedPoison, SchedSkew, SchedStraggler, SchedLink, SchedMemory}

// AllSchedules is what --stress runs without --schedule.
func AllSchedules() Schedules {
	return Schedules{Poison: true, Skew: true, Straggler: true, Link: true, Memory: true}
}

// ParseSchedules reads a --schedule value: "all", "none", or a
// comma-separated list of names.
func ParseSchedules(spec string) (Schedules, error) {
	var s Schedules
	valid := "all, none, " + strings.Join(ScheduleNames, ", ")
	words := strings.Split(spec, ",")
	n := 0
	for _, w := range words {
		w = strings.TrimSpace(w)
		if w == "" {
			continue
		}
		n++
		switch w {
		case "all":
			s = AllSchedules()
		case "none":
			if len(words) > 1 {
				return Schedules{}, fmt.Errorf("bad --schedule %q: none combines with no other schedule", spec)
			}
		case SchedPoison:
			s.Poison = true
		case SchedSkew:
			s.Skew = true
		case SchedStraggler:
			s.Straggler = true
		case SchedLink:
			s.Straggler, s.Link = true, true
		case SchedMemory:
			s.Straggler, s.Memory = true, true
		default:
			return Schedules{}, fmt.Errorf("unknown --schedule %q (valid: %s)", w, valid)
		}
	}
	if n == 0 {
		return Schedules{}, fmt.Errorf("empty --schedule (valid: %s)", valid)
	}
	return s, nil
}

// Names lists the schedules that are on.
func (s Schedules) Names() []string {
	var out []string
	if s.Poison {
		out = append(out, SchedPoison)
	}
	if s.Skew {
		out = append(out, SchedSkew)
	}
	if s.Straggler {
		out = append(out, SchedStraggler)
	}
	if s.Link {
		out = append(out, SchedLink)
	}
	if s.Memory {
		out = append(out, SchedMemory)
	}
	return out
}

// String is the --schedule value that selects exactly s ("none" when off).
func (s Schedules) String() string {
	if n := s.Names(); len(n) > 0 {
		return strings.Join(n, ",")
	}
	return "none"
}

// Any reports whether a schedule is on.
func (s Schedules) Any() bool { return s.Poison || s.Skew || s.Straggler }

// Supported drops what backend b cannot do and says why ("" when it can
// do all of s; one clause per schedule dropped).
func (s Schedules) Supported(b backend.Backend) (Schedules, string) {
	var notes []string
	if _, ok := b.(backend.Delayer); s.Skew && !ok {
		s.Skew = false
		notes = append(notes, fmt.Sprintf("%s off: the %s backend has no stream-ordered delay", SchedSkew, b.Name()))
	}
	// A Delayer that needs something it may lack (cuda: the delay kernel
	// in its fatbin) says so.
	if d, ok := b.(interface{ DelayReason() string }); s.Skew && ok {
		if why := d.DelayReason(); why != "" {
			s.Skew = false
			notes = append(notes, fmt.Sprintf("%s off: %s", SchedSkew, why))
		}
	}
	if _, ok := b.(backend.Straggler); s.Straggler && !ok {
		s.Straggler = false
		notes = append(notes, fmt.Sprintf("%s off: the %s backend has no side load", SchedStraggler, b.Name()))
	}
	if d, ok := b.(interface{ StraggleReason() string }); s.Straggler && ok {
		if why := d.StraggleReason(); why != "" {
			s.Straggler = false
			notes = append(notes, fmt.Sprintf("%s off: %s", SchedStraggler, why))
		}
	}
	if _, ok := b.(backend.LinkStraggler); s.Link && (!ok || !s.Straggler) {
		s.Link = false
		why := fmt.Sprintf("the %s backend's load cannot read its peers", b.Name())
		if ok {
			why = "it needs the straggler's load"
		}
		notes = append(notes, fmt.Sprintf("%s off: %s", SchedLink, why))
	}
	if d, ok := b.(interface{ LinkReason() string }); s.Link && ok {
		if why := d.LinkReason(); why != "" {
			s.Link = false
			notes = append(notes, fmt.Sprintf("%s off: %s", SchedLink, why))
		}
	}
	if _, ok := b.(backend.MemoryStraggler); s.Memory && (!ok || !s.Straggler) {
		s.Memory = false
		why := fmt.Sprintf("the %s backend's load cannot stream device memory", b.Name())
		if ok {
			why = "it needs the straggler's load"
		}
		notes = append(notes, fmt.Sprintf("%s off: %s", SchedMemory, why))
	}
	if m, ok := b.(backend.MemoryStraggler); s.Memory && ok {
		if why := m.MemoryLoadReason(); why != "" {
			s.Memory = false
			notes = append(notes, fmt.Sprintf("%s off: %s", SchedMemory, why))
		}
	}
	return s, strings.Join(notes, "; ")
}

// Skew's delays are drawn from [skewMin, skewMin+skewSpan): above a host
// call (about 150 us at 4 ranks) and a small GPU call (5 us), so the
// delayed rank is still copying its input when its peers launch, and
// short enough that 10,000 iterations cost seconds, not minutes.
const (
	skewMin  = 20 * time.Microsecond
	skewSpan = 480 * time.Microsecond
)

// Straggler loads last [stragMin, stragMin+stragSpan): long enough to
// cover a small call's whole read phase on a GPU (a few us at 64 KiB) and
// a good part of a 4 MiB one, short enough that 10,000 iterations cost
// seconds.
const (
	stragMin  = 10 * time.Microsecond
	stragSpan = 190 * time.Microsecond
)

// step is one iteration's plan.
type step struct {
	skewRank  int // the rank that delays (-1: none)
	skewDelay time.Duration
	stragRank int // the rank that runs a side load (-1: none)
	stragLoad time.Duration
	// stragLink: the load reads the peers' inputs over the links
	// (backend.LinkStraggler) instead of its own GPU's memory.
	stragLink bool
	// stragMemory: the load streams the GPU's memory
	// (backend.MemoryStraggler) instead of starving its SMs.
	stragMemory bool
}

// loadKind is the kind of the iteration's load.
func (st step) loadKind() backend.LoadKind {
	switch {
	case st.stragLink:
		return backend.LoadLink
	case st.stragMemory:
		return backend.LoadMemory
	}
	return backend.LoadOwn
}

// plan is iteration iter's schedule for case id on a world of n ranks: the
// same on every rank. Skew and straggler draw from separate hashes, so
// either may hit any rank whatever the other drew.
func (s Schedules) plan(seed uint64, id string, iter, n int) step {
	st := step{skewRank: -1, stragRank: -1}
	if n < 2 {
		return st
	}
	if s.Skew {
		x := splitmix(planHash(seed, id, iter, ""))
		// n+1 outcomes: every rank, and no rank (the unperturbed schedule).
		if r := int(x % uint64(n+1)); r < n {
			st.skewRank = r
			st.skewDelay = skewMin + time.Duration(splitmix(x)%uint64(skewSpan))
		}
	}
	if s.Straggler {
		x := splitmix(planHash(seed, id, iter, SchedStraggler))
		if r := int(x % uint64(n+1)); r < n {
			st.stragRank = r
			st.stragLoad = stragMin + time.Duration(splitmix(x)%uint64(stragSpan))
			// Half the loads read over the links: the other half keep
			// the witness's leads meaningful (a link load holds its
			// GPU's kernel ends, correct kernels' too).
			st.stragLink = s.Link && splitmix(planHash(seed, id, iter, SchedLink))&1 == 0
			// Half the other loads stream the GPU's memory, which the
			// link load never does where both are on: the SM load stays
			// the one that starves the loaded rank's blocks alone.
			st.stragMemory = s.Memory && !st.stragLink && splitmix(planHash(seed, id, iter, SchedMemory))&1 == 0
		}
	}
	return st
}

// planHash is the FNV-1a hash of one iteration's coordinates; salt
// separates the schedules' draws ("" keeps skew's draws as they were).
func planHash(seed uint64, id string, iter int, salt string) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", seed, id, iter)
	if salt != "" {
		fmt.Fprintf(h, "/%s", salt)
	}
	return h.Sum64()
}

// Late is the rank that iteration iter of case id delays under skew on a
// world of n ranks, and for how long (-1 and 0: none), as every rank
// computes it.
func (s Schedules) Late(seed uint64, id string, iter, n int) (int, time.Duration) {
	st := s.plan(seed, id, iter, n)
	return st.skewRank, st.skewDelay
}

// Straggling is the rank that iteration iter of case id loads under the
// straggler schedule on a world of n ranks, and for how long (-1 and 0:
// none), as every rank computes it.
func (s Schedules) Straggling(seed uint64, id string, iter, n int) (int, time.Duration) {
	st := s.plan(seed, id, iter, n)
	return st.stragRank, st.stragLoad
}

// splitmix is SplitMix64's finaliser: spreads the FNV hash's bits.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
