package runner

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/reference"
)

// Per-iteration wall time of a stress case, for the plan's first estimate
// (the progress lines then extrapolate from the cases done):
//   - cuda, one rank per GPU: 0.39 ms on 2 H200
//     (docs/results/2026-11-26-h200-x2-stress.md);
//   - cuda, ranks sharing a GPU under MPS: 0.64 ms at 4 ranks on one H100
//     (docs/results/2026-11-25-h100-x1-late-ranks-bulk-overlap-chain.md);
//   - host: 1.2 ms at 2 ranks on 2 cores (`mpirun -np 2 artest --stress
//     200 --variant oneshot` on the developer's machine: no GPU result).
const (
	stressIterCUDA       = 390 * time.Microsecond
	stressIterCUDAShared = 640 * time.Microsecond
	stressIterHost       = 1200 * time.Microsecond
)

// stressEstimate is the plan's estimate of a stress run's time.
func stressEstimate(b backend.Backend, cases, iters int) time.Duration {
	per := stressIterHost
	if b.Name() == "cuda" {
		per = stressIterCUDA
		if sh, ok := b.(backend.Sharer); ok && sh.RanksPerGPU() > 1 {
			per = stressIterCUDAShared
		}
	}
	return time.Duration(cases) * time.Duration(iters) * per
}

// announceStress (rank 0) says before the first case what the stress run
// will do: its cases and variants, iterations, schedules and checker, and
// an estimate of its time.
func (r *run) announceStress() {
	variants := map[string]bool{}
	var order, shaped []string
	for _, c := range r.cfg.Cases {
		if !variants[c.Label()] {
			variants[c.Label()] = true
			order = append(order, c.Label())
			if v := c.Variant; v.Custom() && len(v.StressParams) > 0 && !r.flagsName(v) {
				shaped = append(shaped, fmt.Sprintf("%s %s", c.Label(), paramList(v.StressParams)))
			}
		}
	}
	checker := r.cfg.Header.Checker
	if checker == "" {
		checker = CheckHost
	}
	est := stressEstimate(r.b, len(r.cfg.Cases), r.cfg.Stress)
	variantWord := "variants"
	if len(order) == 1 {
		variantWord = "variant"
	}
	sched := r.sched.String()
	if note := r.cfg.Header.ScheduleNote; note != "" {
		sched += " (" + note + ")"
	}
	launch := ""
	if len(shaped) > 0 {
		launch = ", launched in their stress shape: " + strings.Join(shaped, "; ")
	}
	fmt.Fprintf(r.cfg.Stderr, "# stress plan: %d cases of %d %s (%s), %d iterations each, schedules %s, checked on the %s%s; about %s (skipped cases take none)\n",
		len(r.cfg.Cases), len(order), variantWord, strings.Join(order, ", "), r.cfg.Stress, sched, checker, launch, roundDuration(est))
}

// paramList spells parameter values as --param takes them, by name.
func paramList(set map[string]uint32) string {
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		names[i] = fmt.Sprintf("%s=%d", n, set[n])
	}
	return strings.Join(names, ",")
}

// roundDuration prints d to a precision a person reads.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// planStress plans stress case s on this rank: cfg.Stress iterations in
// batches whose input and output slots fit stressBudget, at most
// stressMaxBatch each, under the run's schedules.
func (r *run) planStress(s *caseState, res *rankResult) *stressCase {
	sh, isSharer := r.b.(backend.Sharer)
	st := &stressCase{r: r, s: s, res: res, n: r.cfg.Stress, slot: s.region, sched: r.sched,
		shared: isSharer && sh.RanksPerGPU() > 1,
		way:    wayOf(s.c), units: map[int]callUnit{}, loads: map[int][]witnessLoad{}, trace: stressTracer(r),
		stats: checkStats{Checker: CheckHost, Bytes: s.outBytes}}
	st.k = int(min(int64(st.n), stressMaxBatch, max(1, stressBudget/(2*st.slot))))
	st.marker, _ = r.b.(backend.ProgressMarker)
	if sm, ok := r.b.(backend.SMStamper); ok && st.shared {
		st.stampsNeedSMs = sm.StampsWaitForSMs()
	}
	if r.checksOnDevice(s.c) {
		st.stats.Checker = CheckDevice
	}
	return st
}

// setup allocates the batches' buffers and readies what the schedules
// and the witness need.
func (st *stressCase) setup() error {
	r, s, k, m := st.r, st.s, st.k, st.s.c.Mode
	var err error
	if st.srcAll, err = r.b.Alloc(int64(k) * st.slot); err != nil {
		return fmt.Errorf("alloc %d stress input slots: %w", k, err)
	}
	if !(m.InPlace && !m.Registered) {
		if st.outAll, err = r.b.Alloc(int64(k) * st.slot); err != nil {
			return fmt.Errorf("alloc %d stress output slots: %w", k, err)
		}
	}
	if st.sched.Poison {
		if st.poisonBuf, err = r.b.Alloc(s.inBytes); err != nil {
			return fmt.Errorf("alloc the poison-after-return source: %w", err)
		}
		p := make([]byte, s.inBytes)
		reference.FillPoison(p, s.c.DType)
		if err := r.b.Upload(st.poisonBuf, p); err != nil {
			return fmt.Errorf("upload the poison-after-return source: %w", err)
		}
	}
	if st.sched.Straggler {
		if err := r.b.(backend.Straggler).PrepareStraggle(); err != nil {
			return fmt.Errorf("prepare the straggler's load: %w", err)
		}
	}
	st.wit, err = r.newWitness(k)
	if st.wit != nil {
		st.wit.out.Shared = st.shared
	}
	return err
}

// layout decides where iteration j of a batch writes (its launch) and
// where its result is checked.
func (st *stressCase) layout() {
	r, s, m := st.r, st.s, st.s.c.Mode
	st.launches = make([]backend.Launch, st.k)
	st.check = make([]backend.Ptr, st.k)
	for j := 0; j < st.k; j++ {
		switch {
		case m.InPlace && m.Registered: // result lands in the registered buffer, then is copied out
			st.launches[j] = r.newLaunch(s, s.outOf(s.inRegion))
			st.check[j] = st.at(st.outAll, j)
		case m.InPlace: // staged in place: the result overwrites the staged input
			st.launches[j] = r.newLaunch(s, s.outOf(st.at(st.srcAll, j)))
			st.check[j] = st.at(st.srcAll, j)
		default:
			st.launches[j] = r.newLaunch(s, s.outOf(st.at(st.outAll, j)))
			st.check[j] = st.at(st.outAll, j)
		}
	}
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
