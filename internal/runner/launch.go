package runner

import (
	"fmt"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
)

// Where a case's launch parameters came from (report.Case.LaunchFrom).
const (
	LaunchFromFlags   = "flags"   // --blocks, --threads or --param named this variant
	LaunchFromTuned   = "tuned"   // the tuning table (Config.Tuned)
	LaunchFromDefault = "default" // the registry
)

// launchFrom says which launch parameters variant v gets in case s: the
// user's when any flag applies to v, else the tuned entry when the table
// has one, else the registry's.
func (r *run) launchFrom(s *caseState, v *kernels.Variant) (string, kernels.TunedEntry) {
	if !v.Custom {
		return "", kernels.TunedEntry{}
	}
	if r.cfg.Blocks > 0 || r.cfg.Threads > 0 {
		return LaunchFromFlags, kernels.TunedEntry{}
	}
	for _, p := range v.Params {
		if _, ok := r.cfg.Params[p.Name]; ok {
			return LaunchFromFlags, kernels.TunedEntry{}
		}
	}
	if e, ok := r.cfg.Tuned.Lookup(v.Name, r.w.Size, s.c.DType.String(), s.c.Mode.Graph, s.bytes); ok {
		return LaunchFromTuned, e
	}
	return LaunchFromDefault, kernels.TunedEntry{}
}

// chooseLaunch sets l's variant parameters (then resolved), blocks and
// threads. A tuned entry's blocks are an upper bound like the registry's:
// the grid formula gives fewer to a message that needs fewer.
func (r *run) chooseLaunch(s *caseState, l *backend.Launch) {
	v := l.Variant
	from, e := r.launchFrom(s, v)
	if from != LaunchFromTuned {
		v.SetParams(&l.Args, r.cfg.Params, s.elem)
		l.Blocks, l.Threads = r.cfg.Blocks, r.cfg.Threads
		return
	}
	v.SetParams(&l.Args, e.Params, s.elem)
	l.Threads = e.Threads
	l.Blocks = kernels.Grid(v, &l.Args, s.elem, e.Blocks, e.Threads)
}

// fitGrid caps case s's launch when ranks share GPUs, so that the blocks of
// every rank on a GPU are resident at once (backend.Sharer): the cap is the
// smallest any rank computed, so every rank launches the same grid, which
// the per-block barriers need. It is collective on a sharing backend; it
// returns why the case cannot run there, or "". An External variant (a
// plugin, Custom too) launches its own grid, which artest cannot cap: the
// plugin must keep its grids resident together itself (docs/limits.md).
func (r *run) fitGrid(s *caseState) (string, error) {
	sh, ok := r.b.(backend.Sharer)
	if !ok || sh.RanksPerGPU() <= 1 || !s.launchV.Custom || s.launchV.External != nil {
		return "", nil
	}
	l := &s.launch
	l.ResolveGrid()
	// Stress's skew and straggler start one rank late on purpose: its
	// grid must find room beside its peers' spinning blocks
	// (coresident.Limits.Late).
	late := r.cfg.Stress > 0 && (r.sched.Skew || r.sched.Straggler)
	blocks, from, err := sh.GridCap(l, late)
	if err != nil {
		blocks, from = 0, fmt.Sprintf("rank %d: %v", r.w.Rank, err)
	}
	if blocks, from, err = comm.AgreeMin(r.c, blocks, from); err != nil {
		return "", err
	}
	s.capBlocks, s.capFrom = blocks, from
	if blocks <= 0 {
		return fmt.Sprintf("the grids of the %d ranks sharing a GPU cannot all be resident at once (%s)", sh.RanksPerGPU(), from), nil
	}
	l.Blocks = min(l.Blocks, blocks)
	return "", nil
}

// caseLaunch is what one rank launched in a case, for the report (every
// rank launches the same).
type caseLaunch struct {
	From    string            `json:"from"`
	Blocks  int               `json:"blocks,omitempty"`
	Threads int               `json:"threads,omitempty"`
	Params  map[string]uint32 `json:"params,omitempty"`
	Cap     int               `json:"cap,omitempty"`
	CapFrom string            `json:"cap_from,omitempty"`
}

// launchRecord is the launch of case s as it ran: the backend filled in
// the grid and block size it chose when the runner left them 0 (a stress
// run's launches are copies, so its grid may stay 0: the backend's
// default). nil for nccl.
func (r *run) launchRecord(s *caseState) *caseLaunch {
	if s == nil || !s.launchV.Custom {
		return nil
	}
	l := &s.launch
	from, _ := r.launchFrom(s, s.launchV)
	rec := &caseLaunch{From: from, Blocks: l.Blocks, Threads: l.Threads, Cap: s.capBlocks, CapFrom: s.capFrom}
	if rec.Threads <= 0 {
		rec.Threads = s.launchV.Threads
	}
	for _, p := range s.launchV.Params {
		if rec.Params == nil {
			rec.Params = map[string]uint32{}
		}
		rec.Params[p.Name] = *l.Args.ParamSlot(p.Slot)
	}
	return rec
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
