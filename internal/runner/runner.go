// Package runner executes the case matrix on every rank: it prepares inputs,
// poisons outputs and fences them with guard bytes, launches the variant
// through a backend, checks every rank's output against the reference,
// checks the trace word, times the calls, gathers every rank's findings on
// rank 0 and has the reports written there. The same code drives the cuda
// and host backends.
package runner

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/knobs"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
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
