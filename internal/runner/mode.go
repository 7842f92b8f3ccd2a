package runner

import (
	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
)

// A timingMode is one way a run times a case's calls: the plain timing
// every run has (mode_plain.go), and the modes a flag adds, each timing
// the same calls again another way after it: --pdl (mode_pdl.go),
// --pdl-chain (mode_chain.go), --overlap (mode_overlap.go). A mode says
// why a case cannot run under it, times the case, and fills its own
// fields of the report; the runner calls every mode of the run at each
// step and branches on none. How the calls reach the stream, launched
// one by one or replayed from a graph, is the case's (callWay).
//
// A new mode is its file (with its test) and a line in modeList. The file
// declares the mode's flags (ModeFlag: help, checks, the flags it needs or
// excludes), which the cli registers, checks and hands over by looping
// over ModeFlags; a flag without a Config field of its own reaches the
// mode in Config.ModeArgs. Its figures go into report.Case.Modes under
// its name (setFigure), printed by the table it declares in the header
// (report.ModeTable); the first modes keep fields of their own in Config,
// report.Case and report.Header, and tables of their own in
// report.WriteBenchTable (modeSections).
type timingMode interface {
	// name is the mode's word ("plain", "pdl", "pdl-chain", "overlap");
	// what it measures on a rank is kept under it (rankResult.Modes).
	name() string
	// prepareRun readies the mode before the first case, on every rank
	// alike (collectives included), and fills its fields of the header.
	// An error ends the run with exit code 4.
	prepareRun(r *run, h *report.Header) error
	// skipReason says why case c of variant v cannot run under the mode
	// ("" if it can); the ranks agree on it with the case's other skip
	// reasons.
	skipReason(r *run, v *kernels.Variant, c cases.Case) string
	// agreeCase settles with every rank, once case s is prepared and
	// before any of its calls, why the mode will not time s ("" if it
	// will); the case runs either way. Every rank calls it for every
	// case that gets this far, so the mode's collectives stay matched.
	// The error is a failed collective.
	agreeCase(r *run, s *caseState) (string, error)
	// time times case s's calls (t) the mode's way, after the checked
	// call was right on every rank and after the modes listed before
	// it. It keeps what it measured in res and reports whether all went
	// well; failures are recorded in res.
	time(r *run, s *caseState, t *timedCalls, res *rankResult) bool
	// merge puts what every rank measured (rs) into the mode's fields of
	// the merged case.
	merge(out *report.Case, rs []rankResult, cfg *Config)
}

// modeList is the modes a run can have, in the order they time a case
// (each figure of a later mode is beside the plain one), each with its
// flags; each mode's maker returns nil where cfg does not ask for it.
var modeList = []modeDecl{
	{newPlainMode, nil},
	{newPDLMode, pdlFlags},
	{newChainMode, chainFlags},
	{newOverlapMode, overlapFlags},
}

// modesFor is the run's modes, chosen once from cfg.
func modesFor(cfg *Config) []timingMode {
	var modes []timingMode
	for _, d := range modeList {
		if m := d.make(cfg); m != nil {
			modes = append(modes, m)
		}
	}
	return modes
}

// A callShaper is a mode that changes every call of a case, the checked
// call and stress iterations included: --pdl puts a poison copy and a
// producer kernel before each allreduce and launches it with PDL. Of the
// run's modes, the last that is a callShaper makes the calls; the plain
// mode makes plain ones.
type callShaper interface {
	// prepareCalls allocates and fills what the calls of case s need,
	// once its buffers exist (on this rank only: an error fails the
	// case's readiness).
	prepareCalls(r *run, s *caseState) error
	// src is where each call of s copies its input from, or 0 for none.
	src(s *caseState) backend.Ptr
	// enqueue enqueues one call of s with launch l, its input copied
	// from src where that is not 0.
	enqueue(r *run, s *caseState, l *backend.Launch, src backend.Ptr) error
}

// callShaperOf is the mode that makes the calls of a run of modes.
func callShaperOf(modes []timingMode) callShaper {
	var shaper callShaper = plainMode{}
	for _, m := range modes {
		if cs, ok := m.(callShaper); ok {
			shaper = cs
		}
	}
	return shaper
}

// noSteps gives a mode the steps it does nothing in.
type noSteps struct{}

func (noSteps) prepareRun(*run, *report.Header) error                { return nil }
func (noSteps) skipReason(*run, *kernels.Variant, cases.Case) string { return "" }
func (noSteps) agreeCase(*run, *caseState) (string, error)           { return "", nil }
func (noSteps) time(*run, *caseState, *timedCalls, *rankResult) bool { return true }
func (noSteps) merge(*report.Case, []rankResult, *Config)            {}

// timedCalls are a case's calls as the modes time them (checkAndTime).
type timedCalls struct {
	way callWay     // how the case's calls reach the stream
	src backend.Ptr // where each call copies its input from (callShaper.src)
	one func() error
	// first is the checked call, one call of one; the warm-up enqueues
	// it again.
	first callUnit
	// rep is one timed repetition: cfg.Iters calls of one.
	rep callUnit
}

// modeResult is what one mode measured on one rank in one case.
type modeResult struct {
	// Series are per-repetition values by name (the mode's own).
	Series map[string][]float64 `json:"series,omitempty"`
	// Note says why the mode did not time the case (agreeCase).
	Note string `json:"note,omitempty"`
}

// addSeries appends xs to series name of mode.
func (res *rankResult) addSeries(mode, name string, xs ...float64) {
	if len(xs) == 0 {
		return
	}
	m := res.mode(mode)
	if m.Series == nil {
		m.Series = map[string][]float64{}
	}
	m.Series[name] = append(m.Series[name], xs...)
	res.Modes[mode] = m
}

// noteMode records why mode did not time the case.
func (res *rankResult) noteMode(mode, note string) {
	m := res.mode(mode)
	m.Note = note
	res.Modes[mode] = m
}

// mode is what mode measured, with res.Modes made.
func (res *rankResult) mode(mode string) modeResult {
	if res.Modes == nil {
		res.Modes = map[string]modeResult{}
	}
	return res.Modes[mode]
}

// series reads series name of mode from a rank's result.
func series(mode, name string) func(*rankResult) []float64 {
	return func(res *rankResult) []float64 { return res.Modes[mode].Series[name] }
}

// aggMedian combines each repetition's values of every rank (get) with
// cfg.Agg, as a case's time is, and returns the median over repetitions;
// 0 when some rank has none.
func aggMedian(rs []rankResult, cfg *Config, get func(*rankResult) []float64) float64 {
	if len(rs) == 0 {
		return 0
	}
	agg := cfg.Agg
	if agg == "" {
		agg = report.DefaultAgg
	}
	reps := len(get(&rs[0]))
	for i := range rs {
		reps = min(reps, len(get(&rs[i])))
	}
	if reps == 0 {
		return 0
	}
	per := make([]float64, reps)
	xs := make([]float64, len(rs))
	for k := range per {
		for j := range rs {
			xs[j] = get(&rs[j])[k]
		}
		per[k] = agg.Of(xs)
	}
	return median(per)
}

// prepareModes readies every mode for the run (timingMode.prepareRun).
func (r *run) prepareModes(h *report.Header) error {
	for _, m := range r.modes {
		if err := m.prepareRun(r, h); err != nil {
			return err
		}
	}
	return nil
}

// modeSkipReason is the first mode's reason not to run case c of v.
func (r *run) modeSkipReason(v *kernels.Variant, c cases.Case) string {
	for _, m := range r.modes {
		if reason := m.skipReason(r, v, c); reason != "" {
			return reason
		}
	}
	return ""
}

// agreeModes settles with every rank which modes time case s: the notes
// of those that do not go into s.modeNotes.
func (r *run) agreeModes(s *caseState) error {
	for _, m := range r.modes {
		note, err := m.agreeCase(r, s)
		if err != nil {
			return err
		}
		if note != "" {
			if s.modeNotes == nil {
				s.modeNotes = map[string]string{}
			}
			s.modeNotes[m.name()] = note
		}
	}
	return nil
}

// timeModes times case s in every mode, in order; false stops at the
// first that failed (its failures recorded in res).
func (r *run) timeModes(s *caseState, t *timedCalls, res *rankResult) bool {
	for _, m := range r.modes {
		if !m.time(r, s, t, res) {
			return false
		}
	}
	return true
}

// mergeModes has every mode fill its fields of the merged case.
func mergeModes(out *report.Case, rs []rankResult, cfg *Config, modes []timingMode) {
	for _, m := range modes {
		m.merge(out, rs, cfg)
	}
}
