package runner

import (
	"fmt"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// Where a case's launch parameters came from (report.Case.LaunchFrom).
const (
	LaunchFromFlags   = "flags"   // --blocks, --threads or --param named this variant
	LaunchFromTuned   = "tuned"   // the tuning table (Config.Tuned)
	LaunchFromDefault = "default" // the registry
	LaunchFromStress  = "stress"  // the variant's StressParams, in a stress run
)

// caseLaunch is how every launch of a case is made, decided once per case
// (resolveLaunch), and the report's record of it (every rank launches the
// same).
type caseLaunch struct {
	From    string            `json:"from"`
	Blocks  int               `json:"blocks,omitempty"`
	Threads int               `json:"threads,omitempty"`
	Params  map[string]uint32 `json:"params,omitempty"`
	// Cap and CapFrom: with shared GPUs, the grid cap every rank agreed
	// on and how it was computed; Blocks keeps to it.
	Cap     int    `json:"cap,omitempty"`
	CapFrom string `json:"cap_from,omitempty"`
	// set are the parameter values the variant's SetParams is given
	// (--param's or the tuned entry's); Params are what they resolved to.
	set map[string]uint32
}

// apply makes l the launch p describes: the variant's parameters (then
// resolved from the message), the blocks and the threads.
func (p *caseLaunch) apply(l *backend.Launch) {
	l.Variant.SetParams(&l.Args, p.set, int64(l.DType.Size()))
	l.Blocks, l.Threads = p.Blocks, p.Threads
}

// resolveLaunch decides case s's launch once, for every call the case makes
// (stress's copies, the hang scenarios' rebuilt launches and the launches
// of another variant under wrong-kernel included), and builds s.launch:
//
//   - the parameters, threads and blocks come from the flags when any of
//     them names the variant, else from the tuned entry, else from the
//     registry (launchFrom); a tuned entry's blocks are an upper bound
//     like the registry's: kernels.Grid gives fewer to a message that
//     needs fewer; the registry's grid is the backend's (DefaultBlocks);
//   - with shared GPUs, the blocks are capped so that every rank's grid
//     is resident at once (capGrid).
//
// s.plan is the result, and the case's report record. It is collective on
// a sharing backend; it returns why the case cannot run there, or "".
func (r *run) resolveLaunch(s *caseState) (string, error) {
	s.plan = r.chooseLaunch(s)
	if skip := r.budgetGrid(s); skip != "" {
		return skip, nil
	}
	skip, err := r.capGrid(s)
	if err != nil || skip != "" {
		return skip, err
	}
	s.launch = r.newLaunch(s, s.outOf(s.out))
	return "", nil
}

// launchFrom says which launch parameters variant v gets in case s: the
// user's when any flag applies to v, else in a stress run the variant's
// StressParams when it has some, else the tuned entry when the table has
// one, else the registry's.
func (r *run) launchFrom(s *caseState, v *kernels.Variant) (string, kernels.TunedEntry) {
	if !v.Custom() {
		return "", kernels.TunedEntry{}
	}
	if r.flagsName(v) {
		return LaunchFromFlags, kernels.TunedEntry{}
	}
	// A stress run launches the variant in the shape that stretches its
	// protocol, when it declares one; the tuning table is for speed.
	if r.cfg.Stress > 0 && len(v.StressParams) > 0 {
		return LaunchFromStress, kernels.TunedEntry{}
	}
	// The tuning table holds allreduce launches: another collective of the
	// variant gets the registry's.
	if s.c.Coll != reference.AllReduce {
		return LaunchFromDefault, kernels.TunedEntry{}
	}
	if e, ok := r.cfg.Tuned.Lookup(v.Name, r.w.Size, s.c.DType.String(), s.c.Mode.Graph, s.bytes); ok {
		return LaunchFromTuned, e
	}
	return LaunchFromDefault, kernels.TunedEntry{}
}

// flagsName says whether --blocks, --threads or a --param of v's set v's
// launch.
func (r *run) flagsName(v *kernels.Variant) bool {
	if r.cfg.Blocks > 0 || r.cfg.Threads > 0 {
		return true
	}
	for _, p := range v.Params {
		if _, ok := r.cfg.Params[p.Name]; ok {
			return true
		}
	}
	return false
}

// chooseLaunch is case s's launch before any grid cap. A variant that is
// not custom (nccl) gets --param's values and no grid of artest's; an
// External one (a plugin's) launches its own grid, so only --blocks gives
// it one.
func (r *run) chooseLaunch(s *caseState) caseLaunch {
	v := s.launchV
	from, e := r.launchFrom(s, v)
	p := caseLaunch{From: from, set: r.cfg.Params}
	if from == LaunchFromStress {
		p.set = v.StressParams
	}
	if !v.Custom() {
		return p
	}
	l := backend.Launch{Variant: v, DType: s.c.DType, Op: s.c.Op, Args: r.launchArgs(s, s.outOf(s.out))}
	if from == LaunchFromTuned {
		p.set = e.Params
		v.SetParams(&l.Args, p.set, s.elem)
		p.Threads = e.Threads
		p.Blocks = kernels.Grid(v, &l.Args, s.elem, e.Blocks, e.Threads)
		if p.Threads <= 0 {
			p.Threads = v.DefaultThreads(&l.Args, s.elem)
		}
	} else {
		v.SetParams(&l.Args, p.set, s.elem)
		p.Blocks, p.Threads = r.cfg.Blocks, r.cfg.Threads
		if p.Threads <= 0 {
			p.Threads = v.DefaultThreads(&l.Args, s.elem)
		}
		if p.Blocks <= 0 && v.External == nil {
			l.Threads = p.Threads
			p.Blocks = r.b.DefaultBlocks(&l)
		}
	}
	for _, prm := range v.Params {
		if p.Params == nil {
			p.Params = map[string]uint32{}
		}
		p.Params[prm.Name] = *l.Args.ParamSlot(prm.Slot)
	}
	return p
}

// capGrid caps case s's launch when ranks share GPUs, so that the blocks of
// every rank on a GPU are resident at once (backend.Sharer): the cap is the
// smallest any rank computed, so every rank launches the same grid, which
// the per-block barriers need. An uncapped grid leaves some blocks of some
// rank not resident while their peers spin for them. It is collective on a
// sharing backend; it returns why the case cannot run there, or "". An
// External variant (a plugin's) launches its own grid, which
// artest cannot cap: the plugin must keep its grids resident together
// itself (docs/limits.md).
func (r *run) capGrid(s *caseState) (string, error) {
	sh, ok := r.b.(backend.Sharer)
	if !ok || sh.RanksPerGPU() <= 1 || s.launchV.Kind != kernels.KindKernel {
		return "", nil
	}
	l := r.newLaunch(s, s.outOf(s.out))
	// Stress's skew and straggler start one rank late on purpose: its
	// grid must find room beside its peers' spinning blocks
	// (coresident.Limits.Late).
	late := r.cfg.Stress > 0 && (r.sched.Skew || r.sched.Straggler)
	blocks, from, err := sh.GridCap(&l, late)
	if err != nil {
		blocks, from = 0, fmt.Sprintf("rank %d: %v", r.w.Rank, err)
	}
	if blocks, from, err = comm.AgreeMin(r.c, blocks, from); err != nil {
		return "", err
	}
	s.plan.Cap, s.plan.CapFrom = blocks, from
	if blocks <= 0 {
		return fmt.Sprintf("the grids of the %d ranks sharing a GPU cannot all be resident at once (%s)", sh.RanksPerGPU(), from), nil
	}
	s.plan.Blocks = min(s.plan.Blocks, blocks)
	return "", nil
}

// budgetGrid caps case s's grid at --sm-budget's blocks: a block runs on
// one multiprocessor, so the grid uses at most that many. NCCL keeps to the
// budget through NCCL_MAX_CTAS (the backend sets it); a plugin launches its
// own grid, which artest cannot cap, so its cases are skipped with the
// reason it returns.
func (r *run) budgetGrid(s *caseState) string {
	b := r.cfg.SMBudget
	if b <= 0 || !s.launchV.Custom() {
		return ""
	}
	if s.launchV.External != nil {
		return fmt.Sprintf("%s launches its own grid, which --sm-budget cannot cap", s.launchV.Name)
	}
	if s.plan.Blocks > b {
		s.plan.Blocks = b
	}
	s.plan.Cap, s.plan.CapFrom = b, fmt.Sprintf("--sm-budget %d", b)
	return ""
}

// launchRecord is case s's launch for the report: s.plan, as every call of
// the case was made; nil for a variant without a grid of artest's (nccl).
func (s *caseState) launchRecord() *caseLaunch {
	if s == nil || !s.launchV.Custom() {
		return nil
	}
	rec := s.plan
	return &rec
}

// setLaunch copies rank 0's launch record into the merged case.
func setLaunch(out *report.Case, rs []rankResult) {
	if len(rs) == 0 || rs[0].Launch == nil {
		return
	}
	l := rs[0].Launch
	out.LaunchFrom, out.Blocks, out.Threads, out.Params = l.From, l.Blocks, l.Threads, l.Params
	out.GridCap, out.GridCapFrom = l.Cap, l.CapFrom
}

// newLaunch is one call of case s writing to out, as the case's launch
// (s.plan) has every call made.
func (r *run) newLaunch(s *caseState, out backend.Ptr) backend.Launch {
	l := backend.Launch{Variant: s.launchV, DType: s.c.DType, Op: s.c.Op, Args: r.launchArgs(s, out),
		Faults: r.cfg.Inject.pluginFaults(s.launchV)}
	s.plan.apply(&l)
	return l
}

// launchArgs are the kernel arguments of one call of case s writing to
// out, before the variant's parameters.
func (r *run) launchArgs(s *caseState, out backend.Ptr) kernels.Args {
	w := r.w
	a := kernels.Args{
		Out:        uint64(out),
		Count:      uint64(s.c.Count()),
		Rank:       uint32(w.Rank),
		NRanks:     uint32(w.Size),
		Inject:     r.cfg.Inject.Bits,
		DelayRank:  uint32(r.cfg.Inject.DelayRank),
		DelayNs:    uint64(r.cfg.Inject.Delay.Nanoseconds()),
		VariantID:  s.launchV.ID,
		StageBytes: uint64(w.Capacity - s.lead),
	}
	a.WaitTimeoutNs = uint64(r.cfg.DeviceTimeout.Nanoseconds())
	r.cfg.Inject.hangScenario(&a, s.elem)
	a.SetColl(s.c.Coll)
	for p := 0; p < w.Size; p++ {
		in := w.Input[p]
		if p == w.Rank {
			in = s.inRegion // the world's, or the backend's own (OwnRegioner)
		}
		a.PeerIn[p] = uint64(s.msg(in)) + uint64(s.peerInAt(p))
		a.PeerStage[p] = uint64(s.msg(w.Staging[p]))
		a.PeerSignal[p] = uint64(w.Signal[p])
	}
	if out == s.outOf(s.inRegion) {
		a.Flags |= kernels.FlagInPlace
	}
	return a
}

// enqueueCall enqueues one call of s as the run makes them
// (callShaper.enqueue), its input copied from src where that is not 0.
func (r *run) enqueueCall(s *caseState, l *backend.Launch, src backend.Ptr) error {
	return r.call.enqueue(r, s, l, src)
}
