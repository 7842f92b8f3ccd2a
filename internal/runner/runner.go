// Package runner executes the case matrix on every rank: it prepares inputs,
// poisons outputs and fences them with guard bytes, launches the variant
// through a backend, checks every rank's output against the reference,
// checks the trace word, times the calls, gathers every rank's findings on
// rank 0 and has the reports written there. The same code drives the cuda
// and host backends.
package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/knobs"
	"github.com/artest/artest/internal/liveness"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/witness"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// Config is one run.
type Config struct {
	// Variants is the run's set (the built-ins and the plugins'): the
	// variant a trace word names, the wrong kernel a broken dispatcher
	// would pick. Cases carry their own variant.
	Variants *registry.Set
	Cases    []cases.Case
	Seed     uint64
	Warmup   int
	Iters    int
	Reps     int
	Stress   int // back-to-back iterations per case instead of check+time; 0: off
	Timeout  time.Duration
	Inject   Inject
	// Schedules are the adversarial schedules of stress runs (schedule.go);
	// Run drops those the backend cannot do and names the rest in the
	// header and in every case.
	Schedules Schedules
	// Check is --check: what checks stress iterations (CheckAuto,
	// CheckHost or CheckDevice; "" is CheckAuto).
	Check string
	// Blocks and Threads override the registry's launch defaults when > 0.
	Blocks, Threads int
	// Params are --param values by name; a variant without a parameter of
	// that name ignores it.
	Params map[string]uint32
	// Tuned, when set, gives a custom variant its launch parameters where
	// Blocks, Threads and Params say nothing about it (launch.go).
	Tuned *kernels.TunedTable

	Header report.Header
	// Rank 0 writes the table to Stdout and the files named here.
	Stdout, Stderr io.Writer
	JSONPath       string
	JUnitPath      string
	// JSONLPath, when set, is appended case by case while the run goes on
	// (fsynced), so an abort or a crash keeps every finished case.
	JSONLPath string
	// GoBenchPath, when set, gets every timed repetition in Go's benchmark
	// format (report.WriteGoBench) at the end.
	GoBenchPath string
	// Progress: rank 0 prints one line per finished case to Stderr (stress
	// runs always do). Every run that is not Quiet prints a progress line
	// at least every heartbeat (progress.go).
	Progress bool
	// Quiet: no progress lines at all.
	Quiet bool
	// OnFail, when set, is called on rank 0 for every failing case and for
	// the case that hung (the CLI prints the rerun command and writes the
	// repro bundle); it returns the rerun command, kept in the case.
	OnFail func(report.Case) string
	// LostEvidence, when set, is asked on rank 0 at the end of a run that
	// was not interrupted: what the run could not keep (a repro bundle
	// OnFail could not write). Non-empty turns exit 0 or 1 into 4 and goes
	// into the summary's error.
	LostEvidence func() string
	// witnessDumpErr: the first failed write of ARTEST_WITNESS_DUMP (rank
	// 0); the dump stops there and the run exits 4.
	witnessDumpErr error
	// FullTable: rank 0 prints every case's row (report.WriteTable), not
	// only the summary (report.WriteSummary). Bench runs print their own
	// table either way.
	FullTable bool

	// Agg combines the ranks' per-call times of each repetition (default:
	// the max); the case's time is the median over repetitions.
	Agg report.Agg
	// Bench keeps every repetition's time in the case's Timing, times one
	// more repetition of plain launches call by call, and has rank 0 write
	// the benchmark table instead of the test table.
	Bench bool
	// AfterReports, when set, runs on rank 0 after the reports were written
	// (the CLI draws the --plot file there); its error counts as theirs.
	AfterReports func(*report.Report) error

	// The timing modes' settings, given by their flags (ModeFlags,
	// SetModeFlags). ModeArgs are the values, by flag name, of the mode
	// flags that have no field of their own below ("true" for a switch).
	ModeArgs map[string]string

	// PDL runs every call as the input poisoned, a producer kernel that
	// writes it, and the allreduce launched with programmatic dependent
	// launch (mode_pdl.go); in bench runs the same calls are also timed
	// with a normal launch.
	PDL bool

	// RunKnownDefects runs the cases a backend knows a baseline gets
	// wrong (backend.DefectKnower), which are skipped otherwise.
	RunKnownDefects bool

	// PDLChain, in bench runs, times every registered case's calls a
	// second time with each allreduce launched with PDL after the
	// previous one (mode_chain.go).
	PDLChain bool

	// Overlap, in bench runs, is the blocks of a compute load
	// (backend.Overlapper) run beside a second timing of every case's
	// calls (mode_overlap.go); 0: none.
	Overlap int

	// SMBudget, in bench runs, is --sm-budget: every collective's grid is
	// capped at this many blocks (NCCL's by NCCL_MAX_CTAS, which the cuda
	// backend sets) and timed a second time beside a compute load of fixed
	// work on the GPU's other multiprocessors (mode_overlap.go); 0: none.
	SMBudget int

	// DeviceTimeout is the kernels' deadline for each wait
	// (kernels.Args.WaitTimeoutNs); 0: unbounded. Below Timeout, a lost
	// peer makes the kernels give up first and record where (exit 3 with
	// their diagnosis); above it, the host watchdog fires first.
	DeviceTimeout time.Duration

	// AbortGrace is how long a rank other than 0 waits after a signal
	// before it exits, leaving rank 0 the chance to write the reports
	// first.
	AbortGrace time.Duration

	// HangGrace is how long a rank other than 0 waits after its own
	// timeout for rank 0 to abort the job (rank 0 writes the reports and
	// the diagnosis first) before aborting it itself: only a rank 0 that
	// never comes to its own timeout (stuck outside the stream) leaves the
	// job to the others. Rank 0 can come to its timeout seconds after the
	// others when it started its wait later (host work of its own: reports,
	// checks); a grace shorter than that lost its reports. Default 30 s.
	HangGrace time.Duration

	// Signals, when set, ends the run on the first signal that arrives on
	// it (the CLI's signal.Notify of SIGINT and SIGTERM), whatever the
	// cases are doing: rank 0 writes the reports of the finished cases,
	// marked interrupted, and says so on stderr; every rank exits 128 plus
	// the signal's number (interrupt.go).
	Signals <-chan os.Signal

	// Knobs are the ARTEST_* settings the command line read: the witness's
	// and the SignalBlocks' dumps, the stress trace.
	Knobs knobs.Settings

	// WatchdogGrace is how much longer than Timeout the watchdog lets the
	// job go without any rank's progress before it ends it (watchdog.go);
	// 0: watchdogGrace.
	WatchdogGrace time.Duration
	// BoardDir is the folder of the liveness board's file (removed once
	// every rank mapped it); "": /dev/shm, or the temporary folder.
	BoardDir string

	// keepStaging leaves staging as it is before a ZeroStaging variant's
	// case (tests: what the zeroing protects against).
	keepStaging bool
	// createJSONL opens the JSON Lines stream; nil is report.CreateJSONL.
	// Tests put a stream whose writes fail in its place.
	createJSONL func(path string, h *report.Header) (caseStream, error)
	// exit ends the process after a signal; nil is os.Exit. Tests put one
	// that returns in its place (interrupt.go).
	exit func(code int)
}

// caseStream is where rank 0 streams finished cases (--jsonl).
type caseStream interface {
	Append(report.Case) error
	Close(report.Summary) error
}

// Guard bytes before and after every output region; the pattern is one no
// kernel writes by accident.
const (
	guardBytes = 256
	guardByte  = 0xA5
)

// stressBudget bounds the memory of one stress batch's input and output
// slots on each rank; stressMaxBatch bounds its iterations.
const (
	stressBudget   = 256 << 20
	stressMaxBatch = 1024
)

// Capacity is the size each shared buffer needs for these cases.
func Capacity(cs []cases.Case) int64 {
	var most int64
	for _, c := range cs {
		need := c.Bytes + int64(c.Mode.Offset*c.DType.Size())
		if v := c.Variant; v.StageNeed != nil && cases.SkipReason(v, c) == "" {
			need = max(need, v.StageNeed(c.Bytes, c.Ranks)+int64(c.Mode.Offset*c.DType.Size()))
		}
		most = max(most, need)
	}
	return most + 2*guardBytes
}

// Run executes cfg's cases on this rank and returns the job's exit code,
// the same on every rank. A hang does not return: the job is aborted with
// exit code 3 after the diagnosis (and, on rank 0, the reports) are written.
func Run(c comm.Comm, b backend.Backend, w *backend.World, cfg *Config) int {
	r := &run{c: c, raw: c, b: b, w: w, cfg: cfg, modes: modesFor(cfg)}
	r.call = callShaperOf(r.modes)
	if cfg.AbortGrace == 0 {
		cfg.AbortGrace = 3 * time.Second
	}
	if cfg.HangGrace == 0 {
		cfg.HangGrace = 30 * time.Second
	}
	if cfg.Stress > 0 {
		var note string
		r.sched, note = cfg.Schedules.Supported(b)
		cfg.Header.Schedules, cfg.Header.ScheduleNote = r.sched.String(), note
		dc, why, err := r.resolveChecker()
		if err != nil {
			if c.Rank() == 0 {
				fmt.Fprintf(cfg.Stderr, "artest: %v\n", err)
			}
			return exitcode.Env
		}
		r.devCheck = dc
		cfg.Header.Checker, cfg.Header.CheckerNote = CheckHost, why
		if dc != nil {
			cfg.Header.Checker = CheckDevice
		}
	}
	if err := r.prepareModes(&cfg.Header); err != nil {
		if c.Rank() == 0 {
			fmt.Fprintf(cfg.Stderr, "artest: %v\n", err)
		}
		return exitcode.Env
	}
	if err := r.startWatchdog(); err != nil {
		if c.Rank() == 0 {
			fmt.Fprintf(cfg.Stderr, "artest: %v\n", err)
		}
		return exitcode.Env
	}
	defer r.stopWatchdog()
	r.rep = &report.Report{Header: cfg.Header, JSONPath: cfg.JSONPath}
	if c.Rank() == 0 && cfg.JSONLPath != "" {
		create := cfg.createJSONL
		if create == nil {
			create = func(path string, h *report.Header) (caseStream, error) { return report.CreateJSONL(path, h) }
		}
		jl, err := create(cfg.JSONLPath, &r.rep.Header)
		if err != nil {
			// Every rank must learn this, or the others would start
			// cases rank 0 never joins.
			fmt.Fprintf(cfg.Stderr, "artest: %v\n", err)
			return r.bcastCode(exitcode.Env)
		}
		r.jsonl = jl
	}
	if code := r.bcastCode(exitcode.OK); code != exitcode.OK {
		return code
	}
	if c.Rank() == 0 {
		// A stress run says what it will do, and every case as it ends,
		// whether or not --progress was given: it can run for minutes.
		if cfg.Stress > 0 {
			r.announceStress()
		}
		if !cfg.Quiet {
			r.prog = newProgress(cfg.Stderr, len(cfg.Cases), cfg.Progress || cfg.Stress > 0, heartbeat)
			defer r.prog.close()
		}
	}
	if cfg.Signals != nil {
		done := make(chan struct{})
		defer close(done)
		go r.watchSignals(cfg.Signals, done)
	}
	code, stopErr := r.loop()
	r.dog.atCase(0)
	r.haltWatchdog()
	if c.Rank() == 0 {
		r.mu.Lock()
		if r.interrupted || r.reported {
			// A signal's or a hang's reports are written (only where
			// the process outlives them: in-process tests).
			code = r.rep.Summary.ExitCode
		} else {
			if stopErr != nil {
				r.rep.Summary.Error = stopErr.Error()
			}
			lost := ""
			if cfg.witnessDumpErr != nil {
				lost = cfg.witnessDumpErr.Error()
			} else if cfg.LostEvidence != nil {
				lost = cfg.LostEvidence()
			}
			if code == exitcode.OK || code == exitcode.Wrong {
				if lost != "" {
					code = exitcode.Env
					if r.rep.Summary.Error == "" {
						r.rep.Summary.Error = lost
					}
				}
			}
			r.rep.Summary.ExitCode = code
			if err := r.writeReports(); err != nil && code == exitcode.OK {
				code = exitcode.Env
			}
			r.reported = true
		}
		r.mu.Unlock()
	}
	buf := []byte{byte(code)}
	if err := c.Bcast(buf, 0); err != nil {
		return exitcode.Env
	}
	return int(buf[0])
}

type run struct {
	// c is the world as the runner speaks to it (each collective a phase
	// the watchdog sees); raw is the world itself.
	c, raw comm.Comm
	// dog is this rank's watchdog (watchdog.go); nil without a timeout.
	dog   *watchdog
	b     backend.Backend
	w     *backend.World
	cfg   *Config
	sched Schedules // cfg.Schedules as this backend runs them; stress only
	// devCheck checks stress iterations on the device (nil: on the host).
	devCheck backend.DeviceChecker
	// modes time every case (mode.go); call makes its calls, the last
	// of them that shapes calls.
	modes []timingMode
	call  callShaper
	// prog prints the progress lines (rank 0, with --progress or
	// --stress; nil otherwise).
	prog *progress
	// mu guards rep, jsonl, jsonlErr, reported and interrupted between
	// the loop and the signal watcher (interrupt.go).
	mu    sync.Mutex
	rep   *report.Report // rank 0 only
	jsonl caseStream     // rank 0 only, when --jsonl is set
	// jsonlErr is the write error that stopped the JSON Lines stream: the
	// file lacks the later cases, so the run exits 4 (rank 0 only).
	jsonlErr error
	// reported: the run's final reports (or a hang's) are written; a
	// signal after them changes nothing. interrupted: a signal's reports
	// are written; the loop records no further case.
	reported, interrupted bool
}

// bcastCode makes every rank return rank 0's code.
func (r *run) bcastCode(code int) int {
	buf := []byte{byte(code)}
	if err := r.c.Bcast(buf, 0); err != nil {
		return exitcode.Env
	}
	return int(buf[0])
}

// rankResult is what one rank found in one case; rank 0 merges them.
type rankResult struct {
	Skip     string               `json:"skip,omitempty"`
	Failures []report.RankFailure `json:"failures,omitempty"`
	Wrong    uint64               `json:"wrong"`
	TimeUS   float64              `json:"time_us"`
	// RepUS is the per-call time of every timed repetition; CallUS the
	// single calls of the bench sample (plain launches only).
	RepUS  []float64 `json:"rep_us,omitempty"`
	CallUS []float64 `json:"call_us,omitempty"`
	// Modes: what the timing modes measured beyond the plain timing, by
	// the mode's name (mode.go).
	Modes map[string]modeResult `json:"modes,omitempty"`
	// Fatal: the backend is unusable (a sticky CUDA error); stop the run.
	Fatal string `json:"fatal,omitempty"`
	// Launch: what a custom kernel was launched with (launch.go).
	Launch *caseLaunch `json:"launch,omitempty"`
	// Check: how a stress case's iterations were checked (check.go).
	Check *checkStats `json:"check,omitempty"`
	// Witness: when each stress call returned on this rank (witness.go).
	Witness *witnessStamps `json:"witness,omitempty"`
}

// streamCase appends a finished case to the JSON Lines file and prints the
// progress line (rank 0). A JSON Lines write error is reported once and
// stops the streaming, not the run: the cases still run and the final
// reports still get written, and the run exits 4 (writeReports).
func (r *run) streamCase(c report.Case, n int) {
	if r.jsonl != nil {
		if err := r.jsonl.Append(c); err != nil {
			fmt.Fprintf(r.cfg.Stderr, "artest: %v (JSON Lines streaming stopped)\n", err)
			r.jsonl, r.jsonlErr = nil, err
		}
	}
	if r.prog != nil {
		line := fmt.Sprintf("# [%d/%d] %s %s %.2fs", n, len(r.cfg.Cases), c.ID, c.Verdict, c.Seconds)
		if c.Reason != "" && c.Verdict == report.Fail {
			line += ": " + firstLine(c.Reason)
		}
		if c.Witness != nil && c.Witness.Warning != "" {
			line += "; WARNING " + c.Witness.Warning
		}
		r.prog.finished(n, line, r.cfg.Stress > 0)
	}
}

func (r *run) loop() (int, error) {
	code := exitcode.OK
	for i, c := range r.cfg.Cases {
		r.dog.atCase(i + 1)
		start := time.Now()
		if r.prog != nil {
			r.prog.begin(i+1, c.ID())
		}
		res := r.runCase(c)
		merged, fatal, err := r.gather(c, res)
		if err != nil {
			return exitcode.Env, fmt.Errorf("gather results of %s: %w", c.ID(), err)
		}
		if r.c.Rank() == 0 {
			merged.Seconds = time.Since(start).Seconds()
			if merged.Verdict == report.Fail {
				code = exitcode.Wrong
				if r.cfg.OnFail != nil {
					merged.Repro = r.cfg.OnFail(merged)
				}
			}
			r.mu.Lock()
			stop := r.interrupted || r.reported
			if !stop {
				r.rep.Cases = append(r.rep.Cases, merged)
				r.streamCase(merged, len(r.rep.Cases))
			}
			r.mu.Unlock()
			if stop {
				// Only where exit returns (tests): the process is gone
				// otherwise.
				return code, nil
			}
		}
		if fatal != "" {
			return exitcode.Wrong, fmt.Errorf("run stopped after %s: %s", c.ID(), fatal)
		}
	}
	return code, nil
}

// gather merges every rank's result on rank 0. fatal is non-empty on every
// rank when any rank's backend broke.
func (r *run) gather(c cases.Case, res rankResult) (report.Case, string, error) {
	blob, err := json.Marshal(res)
	if err != nil {
		return report.Case{}, "", err
	}
	all, err := r.c.Gather(blob, 0)
	if err != nil {
		return report.Case{}, "", err
	}
	var merged report.Case
	fatal := ""
	if r.c.Rank() == 0 {
		results := make([]rankResult, len(all))
		for i, b := range all {
			if err := json.Unmarshal(b, &results[i]); err != nil {
				return report.Case{}, "", fmt.Errorf("rank %d result: %w", i, err)
			}
			if results[i].Fatal != "" && fatal == "" {
				fatal = fmt.Sprintf("rank %d: %s", i, results[i].Fatal)
			}
		}
		merged = merge(c, results, r.cfg, r.modes)
	}
	// Everyone learns whether to stop.
	fb := make([]byte, 1)
	if fatal != "" {
		fb[0] = 1
	}
	if err := r.c.Bcast(fb, 0); err != nil {
		return report.Case{}, "", err
	}
	if fb[0] == 1 && fatal == "" {
		fatal = "a rank's backend failed"
	}
	return merged, fatal, nil
}

// specialHang is what a hang of a case of special inputs adds: what such
// inputs do to a kernel that waits on its data.
const specialHang = "the case's inputs are special values (signed zeros, subnormals, Inf, NaN): a kernel that polls its data " +
	"for a sentinel (-0.0 or +0.0 taken for \"not yet written\") waits forever where a real input equals it"

// caseInput is report.Case.Input: "special" for a case of special inputs,
// "" for one of the run's --input (the header's Input).
func caseInput(c cases.Case) string {
	if c.Input == reference.Special {
		return c.Input.String()
	}
	return ""
}

func merge(c cases.Case, rs []rankResult, cfg *Config, modes []timingMode) report.Case {
	out := report.Case{
		ID: c.ID(), Variant: c.Label(), Coll: c.CollName(), DType: c.DType.String(), Op: c.OpName(),
		Bytes: c.Bytes, Count: c.Count(), Mode: c.Mode.String(), Ranks: c.Ranks, Input: caseInput(c),
		Verdict: report.Pass, Iters: cfg.Iters, Stress: cfg.Stress, Schedule: cfg.Header.Schedules,
	}
	for i, res := range rs {
		if res.Skip != "" {
			out.Verdict = report.Skipped
			out.Reason = res.Skip
			out.Failures = nil
			out.Wrong = 0
			out.TimeUS = 0
			return out
		}
		for _, f := range res.Failures {
			f.Rank = i
			out.Failures = append(out.Failures, f)
		}
		out.Wrong += res.Wrong
	}
	setLaunch(&out, rs)
	mergeModes(&out, rs, cfg, modes)
	out.Check = mergeChecks(rs)
	var rows []witnessRow
	var keep func(witnessRow)
	dump := cfg.Knobs.WitnessDump
	if dump != "" && cfg.witnessDumpErr == nil {
		keep = func(r witnessRow) { rows = append(rows, r) }
	}
	out.Witness = witness.MergeRows(stampsOf(rs), cfg.Header.Backend, earlyReturn(c.Variant), c.Mode.Graph, keep)
	if len(rows) > 0 {
		// Said once; the dump stops, and the run ends with exit 4 (Run).
		if err := witness.WriteRows(dump, c.ID(), rows); err != nil {
			cfg.witnessDumpErr = err
			fmt.Fprintf(cfg.Stderr, "artest: %v (no more rows are dumped)\n", err)
		}
	}
	if len(out.Failures) > 0 {
		out.Verdict = report.Fail
		f := out.Failures[0]
		more := ""
		if n := ranksFailing(out.Failures); n > 1 {
			more = fmt.Sprintf(" (and %d more ranks)", n-1)
		}
		out.Reason = fmt.Sprintf("rank %d %s: %s%s", f.Rank, f.Kind, f.Detail, more)
	}
	if out.TimeUS > 0 {
		out.AlgBW = report.AlgbwGBps(out.Bytes, out.TimeUS)
		out.BusBW = report.BusbwColl(out.Coll, out.AlgBW, out.Ranks)
	}
	return out
}

func ranksFailing(fs []report.RankFailure) int {
	set := map[int]bool{}
	for _, f := range fs {
		set[f.Rank] = true
	}
	return len(set)
}

// writeReports writes the table, draws the plot (AfterReports), writes the
// Go benchmark file, then closes the JSON Lines stream and writes the JSON
// and JUnit files, in that
// order: a failure of an earlier step turns an exit code of 0 into 4 before
// the later files record it, so the reports say the code the process exits
// with. A JSON Lines stream that stopped on a write error during the run
// counts as such a failure (its error was printed then).
func (r *run) writeReports() error {
	rep := r.rep
	attachNCCL(rep.Cases)
	report.AttachFieldBest(rep)
	rep.Tally()
	var firstErr error
	if r.jsonlErr != nil {
		firstErr = r.jsonlErr
		if rep.Summary.ExitCode == exitcode.OK {
			rep.Summary.ExitCode = exitcode.Env
		}
	}
	note := func(err error) {
		if err != nil {
			fmt.Fprintf(r.cfg.Stderr, "artest: %v\n", err)
			if firstErr == nil {
				firstErr = err
			}
			if rep.Summary.ExitCode == exitcode.OK {
				rep.Summary.ExitCode = exitcode.Env
			}
		}
	}
	if r.cfg.Bench {
		note(report.WriteBenchTable(r.cfg.Stdout, rep))
	} else if r.cfg.FullTable {
		note(report.WriteTable(r.cfg.Stdout, rep))
	} else {
		note(report.WriteSummary(r.cfg.Stdout, rep))
	}
	if r.cfg.AfterReports != nil {
		note(r.cfg.AfterReports(rep))
	}
	if r.cfg.GoBenchPath != "" {
		note(report.WriteFileAtomic(r.cfg.GoBenchPath, func(w io.Writer) error { return report.WriteGoBench(w, rep) }))
	}
	if r.jsonl != nil {
		note(r.jsonl.Close(rep.Summary))
		r.jsonl = nil
	}
	if r.cfg.JSONPath != "" {
		note(report.WriteFileAtomic(r.cfg.JSONPath, func(w io.Writer) error { return report.WriteJSON(w, rep) }))
	}
	if r.cfg.JUnitPath != "" {
		note(report.WriteFileAtomic(r.cfg.JUnitPath, func(w io.Writer) error { return report.WriteJUnit(w, rep) }))
	}
	return firstErr
}

// attachNCCL puts the nccl variant's time beside every other variant's case
// with the same dtype, op, size, mode and input, with the speed-up; and beside
// every case of a variant that is no NCCL baseline, NCCL's best mode there
// (the fastest of report.NCCLBaselines that passed), its time and the
// speed-up over it.
func attachNCCL(cs []report.Case) {
	type key struct {
		coll, dtype, op, mode, input string
		bytes                        int64
	}
	// A case's variant without its collective's head: the baselines of a
	// collective are NCCL's of the same collective.
	name := func(c *report.Case) string {
		if c.Coll == "" {
			return c.Variant
		}
		return strings.TrimPrefix(c.Variant, c.Coll+":")
	}
	baselines := map[key]map[string]float64{}
	for i := range cs {
		c := &cs[i]
		if report.IsNCCLBaseline(name(c)) && c.Verdict == report.Pass && c.TimeUS > 0 {
			k := key{c.Coll, c.DType, c.Op, c.Mode, c.Input, c.Bytes}
			if baselines[k] == nil {
				baselines[k] = map[string]float64{}
			}
			baselines[k][name(c)] = c.TimeUS
		}
	}
	for i := range cs {
		c := &cs[i]
		if name(c) == "nccl" || c.TimeUS <= 0 {
			continue
		}
		times := baselines[key{c.Coll, c.DType, c.Op, c.Mode, c.Input, c.Bytes}]
		if t := times["nccl"]; t > 0 {
			c.NCCLTimeUS = t
			c.Speedup = t / c.TimeUS
		}
		if report.IsNCCLBaseline(name(c)) {
			continue
		}
		if best, t := report.BestNCCL(times); best != "" {
			c.NCCLBestVariant, c.NCCLBestTimeUS = best, t
			c.SpeedupVsBest = t / c.TimeUS
		}
	}
}

// hang handles a stream that did not finish within the timeout (or whose
// kernel gave up waiting: gaveUp): it reads every rank's SignalBlock, says
// which blocks gave up where and who waits for whom, and aborts the job with
// exit code 3. Rank 0 writes the reports of every finished case first.
func (r *run) hang(c cases.Case, what string, blocks int, gaveUp bool) {
	r.dog.enter(phaseHang, "")
	var snaps []sigblock.Snapshot
	for p := 0; p < r.w.Size; p++ {
		s, err := r.b.ReadSignal(p)
		if err != nil {
			fmt.Fprintf(r.cfg.Stderr, "artest: rank %d: read rank %d SignalBlock: %v\n", r.c.Rank(), p, err)
			continue
		}
		snaps = append(snaps, sigblock.Snapshot(s))
		dumpSignal(r.cfg.Stderr, r.cfg.Knobs.SignalDump, r.c.Rank(), p, s)
	}
	diag := ""
	if len(snaps) == r.w.Size {
		diag = sigblock.Summarize(sigblock.Diagnose(snaps, blocks))
		// The kernels' own account comes first: which block gave up at
		// which barrier or slot, waiting for whom.
		if g := sigblock.SummarizeGiveUps(nameGiveUps(r.cfg.Variants, sigblock.GiveUps(snaps))); g != "" {
			diag = strings.TrimSuffix(g+"\n"+diag, "\n")
		}
		// A ring launch waits on slot sequences and credits, not barriers.
		if ring := sigblock.SummarizeRing(sigblock.DiagnoseRing(snaps)); ring != "" {
			diag = strings.TrimPrefix(diag+"\n"+ring, "\n")
		}
	}
	// A call of an External variant that never returned says so first:
	// its barriers are its own, not in any SignalBlock. (After a give-up
	// the stream finished: nothing is still running to name.)
	if wt, ok := r.b.(backend.Waiter); ok && !gaveUp {
		if in := wt.Waiting(); in != "" {
			diag = strings.TrimSuffix(in+"\n"+diag, "\n")
		}
	}
	if diag == "" {
		diag = "no rank waits at a barrier (a rank may never have launched, or the call is not a custom kernel)"
	}
	msg := fmt.Sprintf("hang in case %s: rank %d saw no completion of %s within %s\n%s",
		c.ID(), r.c.Rank(), what, r.cfg.Timeout, indent(diag))
	if gaveUp {
		msg = r.gaveUpMessage(c, what, diag)
	}
	if c.Input == reference.Special {
		msg += "\n" + indent(specialHang)
	}
	if r.dog != nil {
		r.dog.board.Say(liveness.Hung, fmt.Sprintf("rank %d: no completion of %s within %s in case %s", r.c.Rank(), what, r.cfg.Timeout, c.ID()))
	}
	if r.c.Rank() != 0 {
		// Give rank 0 the first word: it writes the reports and the same
		// diagnosis, then aborts everyone.
		r.awaitAbort(r.cfg.HangGrace)
	}
	fmt.Fprintf(r.cfg.Stderr, "artest: %s\n", msg)
	if r.c.Rank() == 0 {
		// The hung case goes into every report under its own ID, beside
		// the run-level error.
		// The peers whose main threads are blocked outside their stream
		// (their watchdogs say what in): their lines go in too.
		if r.dog != nil {
			if peers := r.peerLines(3 * watchdogTick); peers != "" {
				msg += "\n" + indent(peers)
			}
		}
		hung := r.hungCase(c, msg, diag)
		if r.cfg.OnFail != nil {
			hung.Repro = r.cfg.OnFail(hung)
		}
		r.mu.Lock()
		if !r.interrupted && !r.reported {
			r.reportHang(&hung, msg)
		}
		r.mu.Unlock()
		if r.dog != nil {
			r.dog.board.SetState(liveness.Reported)
		}
	}
	if f, ok := r.cfg.Stdout.(*os.File); ok {
		_ = f.Sync()
	}
	r.c.Abort(exitcode.Hang)
}

// reportHang writes every report of a hung job (rank 0, r.mu held): the
// finished cases, hung (when a case hung), the run's error msg, exit 3.
func (r *run) reportHang(hung *report.Case, msg string) {
	if hung != nil {
		r.rep.Cases = append(r.rep.Cases, *hung)
		r.streamCase(*hung, len(r.rep.Cases))
	}
	r.rep.Summary.ExitCode = exitcode.Hang
	r.rep.Summary.Error = msg
	_ = r.writeReports()
	r.reported = true
}

// awaitAbort waits up to grace for another rank to abort the job. Under MPI
// that abort ends this process; in an in-process world (comm.AbortWatcher)
// this rank ends here as a killed process would, saying nothing more.
func (r *run) awaitAbort(grace time.Duration) {
	w, ok := r.raw.(comm.AbortWatcher)
	if !ok {
		time.Sleep(grace)
		return
	}
	select {
	case <-time.After(grace):
	case <-w.AbortedNotify():
		r.c.Abort(exitcode.Hang) // the first abort's code stands
	}
}

// nameGiveUps fills in the variant of vs and wait point of plugin give-ups
// (their words hold the trace id and the point's index) from the
// variant's declaration.
func nameGiveUps(vs *registry.Set, gs []sigblock.GiveUp) []sigblock.GiveUp {
	for i := range gs {
		g := &gs[i]
		if g.Kind != sigblock.DiagKindPluginWait {
			continue
		}
		if v := vs.ByID(g.Variant); v != nil && v.External != nil {
			g.Name = v.Name
			if g.Where >= 0 && g.Where < len(v.WaitPoints) {
				g.Point = v.WaitPoints[g.Where]
			}
		}
	}
	return gs
}

func indent(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}

// sync waits for the stream; on a timeout, or when a kernel block of this
// rank gave up waiting (its diag words say so), it does not return. A
// give-up wins over an error the stream reported with it (a plugin's call
// that returned an error status after its wait gave up): the error is the
// give-up's consequence, and the record says where it started.
func (r *run) sync(c cases.Case, what string, blocks int) error {
	leave := r.dog.enter(phaseSync, "the wait for "+what)
	err := r.b.Sync(r.cfg.Timeout)
	leave()
	if err == nil {
		r.dog.drained()
	}
	if errors.Is(err, backend.ErrTimeout) {
		r.hang(c, what, blocks, false)
	}
	if r.gaveUp() {
		r.hang(c, what, blocks, true)
	}
	return err
}

// gaveUp reports whether a kernel block of this rank gave up waiting: its
// SignalBlock's diag words hold a give-up record. Read after every sync
// (the stream is idle, so the copy is consistent); a read error (a context
// a failed launch left unusable) is left to the next step that touches the
// backend.
func (r *run) gaveUp() bool {
	s, err := r.b.ReadSignal(r.c.Rank())
	if err != nil {
		return false
	}
	_, ok := sigblock.Snapshot(s).GiveUp()
	return ok
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// dumpSignal writes the raw SignalBlock of rank p, as rank me read it at a
// hang, to dir/rank<me>-reads-<p>.bin when ARTEST_SIGNAL_DUMP names a
// folder (dir): the summary above is built from these bytes, and a
// puzzling one can be read again offline (sigblock.Snapshot).
func dumpSignal(stderr io.Writer, dir string, me, p int, b []byte) {
	if dir == "" {
		return
	}
	path := fmt.Sprintf("%s/rank%d-reads-%d.bin", dir, me, p)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		fmt.Fprintf(stderr, "artest: rank %d: dump rank %d SignalBlock: %v\n", me, p, err)
	}
}
