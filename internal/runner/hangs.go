package runner

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/sigblock"
)

// The hang scenarios that must be diagnosed, not hung (--inject):
//
//   - size-mismatch:rank=R: rank R launches every call with one 16-byte
//     slot fewer elements than its peers. Its launch tag differs, so every
//     rank's blocks find another tag at the start barrier and give up at
//     once (kernels.Args.PeerTag).
//   - reregister:rank=R (graph cases): after every rank captured the
//     checked call's graph, rank R re-registers its input buffer (a new
//     allocation, its handle exchanged with every rank, generation + 1)
//     and captures its graph again; the other ranks replay the graphs
//     they hold, with R's old pointers and the old generation in their
//     tags, and give up at the start barrier naming R. (R itself, whose
//     expectations all hold, passes it and gives up at its next barrier's
//     deadline, its peers having left.)
//   - two-streams (plain cases): every call is launched a second time on a
//     second stream, not ordered with the first, so two launches of one
//     rank share its SignalBlock; the one that finds a block's epoch word
//     claimed gives up before the start barrier. Unless another delay is
//     injected, the last rank holds every block for twoStreamsHold after
//     its start barrier, so that the first launch still holds its claims
//     when the second starts, whatever the scheduling.

// twoStreamsHold is how long the two-streams scenario keeps the first
// launch in flight: far longer than launching a kernel takes (microseconds).
const twoStreamsHold = 20 * time.Millisecond

// parseRankSpec reads "<name>:rank=R".
func parseRankSpec(spec, name string) (int, error) {
	v, ok := strings.CutPrefix(spec, name+":rank=")
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n < 0 {
		return 0, fmt.Errorf("bad --inject %q: want %s:rank=R", spec, name)
	}
	return n, nil
}

// hangScenario changes one launch's arguments for the scenarios that need
// it: the smaller count of size-mismatch's rank, two-streams' hold.
func (in *Inject) hangScenario(a *kernels.Args, elem int64) {
	if in.SizeMismatch && int(a.Rank) == in.SizeMismatchRank {
		if slot := uint64(kernels.VecBytes / elem); a.Count > slot {
			a.Count -= slot
		}
	}
	if in.TwoStreams && a.Inject&kernels.InjectDelay == 0 {
		a.Inject |= kernels.InjectDelay
		a.DelayRank = a.NRanks - 1
		a.DelayNs = uint64(twoStreamsHold.Nanoseconds())
	}
}

// concurrentCall is two-streams' second launch of the call l just made,
// on the backend's second stream. Graph cases are left alone: a capture
// records one stream.
func (r *run) concurrentCall(s *caseState, l *backend.Launch) error {
	if !r.cfg.Inject.TwoStreams || s.c.Mode.Graph || !l.Variant.Custom() {
		return nil
	}
	cl, ok := r.b.(backend.ConcurrentLauncher)
	if !ok {
		return fmt.Errorf("launch %s on a second stream: %w", l.Variant.Name, backend.ErrUnsupported)
	}
	second := *l
	if err := cl.AllreduceConcurrent(&second); err != nil {
		return fmt.Errorf("launch %s on a second stream: %w", l.Variant.Name, err)
	}
	s.calls++
	return nil
}

// reregister is the reregister scenario, between the capture of the
// checked call's graph g and its first replay: every rank takes part in the
// re-registration; rank R moves its case to the new buffer (inputs written
// there, the launch rebuilt) and returns a graph captured again, the
// others keep g. Other cases and modes return g as it is.
func (r *run) reregister(s *caseState, g backend.Graph, one func() error) (backend.Graph, error) {
	in := &r.cfg.Inject
	if !in.Reregister || !s.c.Mode.Graph || !s.v.Custom() {
		return g, nil
	}
	owner := in.ReregisterRank
	if owner >= r.w.Size {
		_ = g.Destroy()
		return nil, fmt.Errorf("reregister:rank=%d: the world has %d ranks", owner, r.w.Size)
	}
	rr, ok := r.b.(backend.Reregisterer)
	if !ok {
		_ = g.Destroy()
		return nil, fmt.Errorf("re-register rank %d's input: %w", owner, backend.ErrUnsupported)
	}
	if err := rr.ReregisterInput(r.c, owner); err != nil {
		_ = g.Destroy()
		return nil, fmt.Errorf("re-register rank %d's input: %w", owner, err)
	}
	if r.w.Rank != owner {
		return g, nil
	}
	_ = g.Destroy()
	s.inRegion = r.w.Input[owner]
	s.in = s.regIn(s.inRegion, owner)
	if s.c.Mode.InPlace && s.c.Mode.Registered {
		s.out = s.inRegion
	}
	if err := r.writeInputs(s, 0); err != nil {
		return nil, err
	}
	s.launch = r.newLaunch(s, s.outOf(s.out))
	leave := r.dog.enter(phaseCall, "the capture of a graph of 1 call")
	ng, err := r.b.Capture(one)
	leave()
	if err != nil {
		return nil, fmt.Errorf("capture again after re-registering: %w", err)
	}
	s.calls-- // the first capture counted the call already
	return ng, nil
}

// scenarioSkipReason says why case c of variant v cannot run the injected
// hang scenario on this backend ("" if it can): the backend lacks the
// optional interface the scenario needs. Only the cases the scenario
// touches are skipped.
func (r *run) scenarioSkipReason(v *kernels.Variant, c cases.Case) string {
	in := &r.cfg.Inject
	if !v.Custom() {
		return ""
	}
	if _, ok := r.b.(backend.Reregisterer); in.Reregister && c.Mode.Graph && !ok {
		return fmt.Sprintf("--inject reregister: the %s backend cannot re-register an input buffer", r.b.Name())
	}
	if _, ok := r.b.(backend.ConcurrentLauncher); in.TwoStreams && !c.Mode.Graph && !ok {
		return fmt.Sprintf("--inject two-streams: the %s backend has no second stream", r.b.Name())
	}
	return ""
}

// gaveUpMessage heads the diagnosis when a kernel block of this rank gave
// up: after the deadline, or at once for a launch-tag mismatch or a
// claimed SignalBlock.
func (r *run) gaveUpMessage(c cases.Case, what, diag string) string {
	why := fmt.Sprintf("gave up waiting after the device timeout %s", r.cfg.DeviceTimeout)
	if raw, err := r.b.ReadSignal(r.c.Rank()); err == nil {
		if g, ok := sigblock.Snapshot(raw).GiveUp(); ok {
			switch g.Kind {
			case sigblock.DiagKindTagMismatch:
				why = "gave up at a barrier: a peer's launch is not the call this launch made (launch tags differ)"
			case sigblock.DiagKindClaimed:
				why = "gave up at its start: another launch of this rank was using its SignalBlock"
			}
		}
	}
	return fmt.Sprintf("hang in case %s: on rank %d, a kernel block of %s %s\n%s", c.ID(), r.c.Rank(), what, why, indent(diag))
}
