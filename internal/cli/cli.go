// Package cli is artest's command line: flags to a plan, the agreement
// between ranks that they were all started the same way, backend selection,
// and the run. cmd/artest only initialises MPI and calls Main, so tests can
// drive the whole program in process over comm.NewLocal.
package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/plugin"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/repro"
	"github.com/artest/artest/internal/runner"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/reference"
)

// Version is artest's release.
const Version = "0.1.0"

// BuildRevision is set by the Makefile (-ldflags -X); the build info's VCS
// stamp is the fallback.
var BuildRevision = ""

// Env is everything the program takes from the outside world.
type Env struct {
	Comm           comm.Comm
	Args           []string // without the program name
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	MPIVersion     string
	// OpenCUDA opens the cuda backend for this rank; nil means the build
	// has none. It returns an error wrapping backend.ErrNoDevice when the
	// machine has no driver or GPU.
	OpenCUDA func(o *Options, c comm.Comm) (backend.Backend, error)
}

// Options are the parsed flags.
type Options struct {
	Backend  string   `json:"backend"`
	Variants []string `json:"variants,omitempty"`
	DTypes   []string `json:"dtypes,omitempty"`
	Ops      []string `json:"ops,omitempty"`
	Sizes    string   `json:"sizes,omitempty"`
	Modes    []string `json:"modes,omitempty"`
	CaseIDs  []string `json:"cases,omitempty"`
	Quick    bool     `json:"quick,omitempty"`
	List     bool     `json:"list,omitempty"`
	Input    string   `json:"input"`
	Seed     uint64   `json:"seed"`
	Warmup   int      `json:"warmup"`
	Iters    int      `json:"iters"`
	Reps     int      `json:"reps"`
	Stress   int      `json:"stress,omitempty"`
	Timeout  string   `json:"timeout"`
	Inject   []string `json:"inject,omitempty"`
	Schedule string   `json:"schedule,omitempty"`
	Check    string   `json:"check,omitempty"`
	JSON     string   `json:"json,omitempty"`
	JUnit    string   `json:"junit,omitempty"`
	JSONL    string   `json:"jsonl,omitempty"`
	GoBench  string   `json:"gobench,omitempty"`
	Progress bool     `json:"-"`
	ShmDir   string   `json:"shm_dir"`
	Blocks   int      `json:"blocks,omitempty"`
	Threads  int      `json:"threads,omitempty"`
	Fatbin   string   `json:"fatbin,omitempty"`
	ShareGPU bool     `json:"share_gpus,omitempty"`
	// TimeSlicing lets ranks share a GPU without MPS; AllowSharedTiming
	// lets bench and tune time a run whose ranks share GPUs.
	TimeSlicing       bool     `json:"time_slicing,omitempty"`
	AllowSharedTiming bool     `json:"allow_shared_timing,omitempty"`
	NCCL              string   `json:"nccl,omitempty"`
	HostMax           string   `json:"host_max_size"`
	Params            []string `json:"params,omitempty"`
	Repro             string   `json:"repro,omitempty"`
	ReproDir          string   `json:"repro_dir,omitempty"`
	Bench             bool     `json:"bench,omitempty"`
	MinBytes          string   `json:"minbytes,omitempty"`
	MaxBytes          string   `json:"maxbytes,omitempty"`
	Factor            string   `json:"stepfactor,omitempty"`
	Agg               string   `json:"agg"`
	Plot              string   `json:"plot,omitempty"`
	PDL               bool     `json:"pdl,omitempty"`
	Version           bool     `json:"-"`
	Help              bool     `json:"-"`
	// Table is --table: summary (the default) or full (every case's row).
	Table string `json:"-"`

	// Tune: artest tune's flags, and --tuned (tune.go).
	Tune TuneOptions `json:"tune"`

	// AllowMulticast: the multimem variant may create an NVLS multicast
	// object on the cuda backend (one input of the safety gate).
	AllowMulticast bool `json:"allow_multicast,omitempty"`

	// DeviceTimeout is --device-timeout: the kernels' own deadline for
	// every wait (kernels.Args.WaitTimeoutNs); "0" waits for ever.
	DeviceTimeout string `json:"device_timeout"`

	// Plugins are the --plugin libraries, PluginSHA256 their contents'
	// sums: ranks that loaded different files disagree on the hash.
	Plugins      []string `json:"plugins,omitempty"`
	PluginSHA256 []string `json:"plugin_sha256,omitempty"`
	plugins      []*plugin.Plugin

	timeout time.Duration
	set     map[string]bool // flags given on the command line
	given   []givenFlag     // every flag given, in order, with its text
	inject  runner.Inject
	sched   runner.Schedules // --schedule, parsed (all when --stress has none)
	sel     cases.Selection
	input   reference.InputKind
	params  map[string]uint32

	deviceTimeout time.Duration // --device-timeout, parsed

	// Bench mode (bench.go).
	agg               report.Agg
	benchDefaultSizes bool // the sweep is the default one, not -b/-e/-f
}

type listFlag struct{ v *[]string }

func (l listFlag) String() string { return "" }

// Set appends the comma-separated items of s. A value with no item (""
// or " , ") is an error: it would otherwise select the default, everything.
func (l listFlag) Set(s string) error {
	n := 0
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*l.v = append(*l.v, x)
			n++
		}
	}
	if n == 0 {
		return errors.New("empty list: want at least one value")
	}
	return nil
}

// Limits of the run's size and time flags. maxStress bounds --stress: ten
// million calls take minutes on a GPU and hours on the host backend; a
// larger count is a typo. minTimeout bounds --timeout and a non-zero
// --device-timeout: below it one ordinary host step already looks hung.
const (
	maxStress  = 10_000_000
	minTimeout = 100 * time.Millisecond
)

// selectionFlags narrow the matrix; --case names exact cases instead.
var selectionFlags = []string{"variant", "dtype", "op", "size", "mode", "quick"}

// nonEmptyFlags are string flags whose empty value would silently mean
// their default.
var nonEmptyFlags = []string{"size", "b", "e", "f", "minbytes", "maxbytes", "stepfactor", "host-max-size", "shm-dir"}

// givenFlag is one flag as the command line gave it.
type givenFlag struct {
	name, value string
	isBool      bool
}

// recordedValue wraps a flag's Value and notes every Set, so that the
// command line can be rebuilt from what was given (rerun lines).
type recordedValue struct {
	flag.Value
	name  string
	given *[]givenFlag
}

func (r recordedValue) Set(s string) error {
	if err := r.Value.Set(s); err != nil {
		return err
	}
	_, isBool := r.Value.(interface{ IsBoolFlag() bool })
	*r.given = append(*r.given, givenFlag{name: r.name, value: s, isBool: isBool})
	return nil
}

// recordedBool keeps a bool flag a bool flag (--pdl without a value).
type recordedBool struct{ recordedValue }

func (recordedBool) IsBoolFlag() bool { return true }

// recordFlags makes fs note every flag set into *given.
func recordFlags(fs *flag.FlagSet, given *[]givenFlag) {
	fs.VisitAll(func(f *flag.Flag) {
		rv := recordedValue{Value: f.Value, name: f.Name, given: given}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			f.Value = recordedBool{rv}
			return
		}
		f.Value = rv
	})
}

// modeFlag is a listFlag that also splits the dash-joined form case IDs
// print (oop-reg-plain-off3) into its words; an offset offN is the word
// off.
type modeFlag struct{ v *[]string }

func (m modeFlag) String() string { return "" }
func (m modeFlag) Set(s string) error {
	var words []string
	if err := (listFlag{&words}).Set(s); err != nil {
		return err
	}
	for _, w := range words {
		for _, part := range strings.Split(w, "-") {
			if part == "" {
				continue
			}
			if n := strings.TrimPrefix(part, "off"); n != part && n != "" && strings.Trim(n, "0123456789") == "" {
				part = "off"
			}
			*m.v = append(*m.v, part)
		}
	}
	return nil
}

// ncclTestsFlags are nccl-tests' flags that artest does not take, with
// what to use instead (-b, -e and -f are taken as they are).
var ncclTestsFlags = map[string]string{
	"n": "use --iters (calls per timed repetition)",
	"w": "use --warmup",
	"c": "artest has no switch for it: every case is always checked, once before timing and again after",
	"G": "use --mode graph (CUDA graph replays; bench times plain and graph side by side)",
	"d": "use --dtype f32,f16,bf16",
	"o": "use --op sum,max,min",
	"a": "use --agg max|avg|min (how ranks' times combine)",
	"J": "use --json FILE",
	"z": "artest has no blocking mode: each timed repetition ends with one stream sync",
	"g": "artest runs one GPU per rank: start one rank per GPU with mpirun -np N",
	"t": "artest runs one GPU per rank: start one rank per GPU with mpirun -np N",
}

// ncclTestsHint turns "flag provided but not defined: -n" for an nccl-tests
// flag into an error naming artest's equivalent.
func ncclTestsHint(err error) error {
	const prefix = "flag provided but not defined: -"
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) {
		return nil
	}
	name := strings.TrimLeft(strings.TrimPrefix(msg, prefix), "-")
	if hint, ok := ncclTestsFlags[name]; ok {
		return exitcode.Usagef("-%s is an nccl-tests flag: %s (see artest --help)", name, hint)
	}
	return nil
}

type repeatFlag struct{ v *[]string }

func (l repeatFlag) String() string     { return "" }
func (l repeatFlag) Set(s string) error { *l.v = append(*l.v, s); return nil }

func newFlagSet(o *Options) *flag.FlagSet {
	fs := flag.NewFlagSet("artest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.Backend, "backend", "auto", "cuda, host, or auto (cuda where a CUDA driver and a GPU exist, else host)")
	fs.Var(listFlag{&o.Variants}, "variant", "variants to run, comma-separated (default: all): "+strings.Join(kernels.Names(), ", "))
	fs.Var(listFlag{&o.DTypes}, "dtype", "element types: f32, f16, bf16 (default: all)")
	fs.Var(listFlag{&o.Ops}, "op", "reductions: sum, max, min (default: all)")
	fs.StringVar(&o.Sizes, "size", "", "message sizes in bytes: list and ranges, e.g. 4,1K:256M:x4,1M:2M:+256K (default: the matrix's)")
	fs.Var(modeFlag{&o.Modes}, "mode", "mode words, all must hold: ip|oop, reg|stg, plain|graph, off|aligned; also dash-joined as case IDs print them (oop-reg-plain)")
	fs.Var(listFlag{&o.CaseIDs}, "case", "run exactly these case IDs (variant/dtype/op/size/mode/npN)")
	fs.BoolVar(&o.Quick, "quick", false, "a small matrix that finishes in seconds")
	fs.BoolVar(&o.List, "list", false, "print the selected case IDs and exit")
	fs.StringVar(&o.Input, "input", "random", "input kind: random (full mantissa) or exact (small integers)")
	fs.Uint64Var(&o.Seed, "seed", 1, "input generator seed")
	fs.IntVar(&o.Warmup, "warmup", 5, "untimed calls before timing (host backend default: 1)")
	fs.IntVar(&o.Iters, "iters", 20, "calls per timed repetition, 0: check only (host backend default: 3)")
	fs.IntVar(&o.Reps, "reps", 5, "timed repetitions; the median is reported (host backend default: 1)")
	fs.IntVar(&o.Stress, "stress", 0, "run N back-to-back calls per case, each with its own inputs, checking every one (replaces timing); without --size, the stress matrix: 4100 B and 64 KiB, sum, every dtype, 4 modes")
	fs.StringVar(&o.Timeout, "timeout", "60s", "longest wait for one step on the stream before the job is declared hung (exit 3)")
	// 10 s: generous for first-touch warm-up (a guess until measured on
	// H200), and below --timeout's 60 s so the kernels give up first and say
	// where; with --timeout below it, the host watchdog fires first.
	fs.StringVar(&o.DeviceTimeout, "device-timeout", "10s", "longest wait of a kernel block at one barrier or ring slot; past it the block records where and exits, and the job is declared hung (exit 3); 0: wait for ever (host backend default: 30s)")
	fs.StringVar(&o.Schedule, "schedule", "", "stress only: adversarial schedules from outside the kernel, comma-separated: "+strings.Join(runner.ScheduleNames, ", ")+", all or none (default with --stress: all), seeded by --seed")
	fs.StringVar(&o.Check, "check", runner.CheckAuto, "stress only: what checks every iteration: device (the GPU's artest_check kernel, with a few iterations per batch also checked on the host against the Go reference), host (the Go reference alone), or auto (device on the cuda backend when the fatbin has the checker, else host)")
	fs.Var(repeatFlag{&o.Inject}, "inject", "plant a fault (repeatable): "+runner.FaultHelp())
	fs.BoolVar(&o.PDL, "pdl", false, "programmatic dependent launch (sm_90): each call poisons the input, a producer kernel writes it, and the allreduce is launched to overlap the producer and must wait for it; bench also times the same calls without PDL")
	fs.StringVar(&o.JSON, "json", "", "write the JSON report to FILE")
	fs.StringVar(&o.JUnit, "junit", "", "write a JUnit XML report to FILE")
	fs.StringVar(&o.GoBench, "gobench", "", "write every timed repetition in Go's benchmark format to FILE (benchstat OLD NEW compares two runs)")
	fs.StringVar(&o.JSONL, "jsonl", "", "append every finished case to FILE as JSON Lines while running (fsynced: an abort or crash keeps them)")
	fs.StringVar(&o.Repro, "repro", "", "rerun the failing case a repro bundle describes (flags given as well override the bundle's)")
	fs.StringVar(&o.ReproDir, "repro-dir", "", "where failing cases' repro bundles go (default: the --json file's directory, else the current one)")
	fs.BoolVar(&o.Progress, "progress", false, "print a line per finished case to stderr")
	fs.StringVar(&o.Table, "table", "summary", "what stdout shows at the end: summary (failures with their repro lines, counts per variant by dtype; one screen) or full (also a row per case); the JSON and JUnit reports always hold every case")
	fs.StringVar(&o.ShmDir, "shm-dir", "/dev/shm", "host backend: directory of the shared-memory segments")
	fs.StringVar(&o.HostMax, "host-max-size", "2M", "host backend: largest size of the default matrix (explicit --size is not capped)")
	fs.IntVar(&o.Blocks, "blocks", 0, "override the variant's block count (0: registry default)")
	fs.IntVar(&o.Threads, "threads", 0, "override the variant's threads per block (0: registry default)")
	fs.Var(repeatFlag{&o.Plugins}, "plugin", "load an allreduce plugin, a shared library implementing plugin/artest_plugin.h (repeatable); its variants are named PLUGIN:VARIANT and run like any other")
	fs.Var(repeatFlag{&o.Params}, "param", "set a variant launch parameter, NAME=VALUE (repeatable): "+paramHelp())
	fs.StringVar(&o.Fatbin, "fatbin", "", "cuda backend: kernel fatbin (default: artest.fatbin beside the binary, or $ARTEST_FATBIN)")
	fs.BoolVar(&o.AllowMulticast, "allow-multicast", false, "cuda backend: let the multimem variant create an NVLS multicast object; it runs only if NCCL_NVLS_ENABLE is not 0 and the GPU supports multicast, else its cases are skipped with the reason. Never on shared machines: a multicast object can take the node's GPUs out of service")
	fs.BoolVar(&o.ShareGPU, "share-gpus", false, "cuda backend: allow more local ranks than GPUs (rank r uses GPU r mod count) when an MPS server serves them (see `artest mps`); every custom launch's grid is capped so all ranks' blocks are resident at once; protocol coverage only, timings mean nothing")
	fs.BoolVar(&o.TimeSlicing, "time-slicing", false, "cuda backend: with --share-gpus, run even without MPS (the ranks' contexts take turns on the GPU: barrier kernels crawl and may hang)")
	fs.BoolVar(&o.AllowSharedTiming, "allow-shared-timing", false, "let bench and tune run while ranks share GPUs (their times mean nothing; the reports say so)")
	fs.StringVar(&o.NCCL, "nccl", "", "cuda backend: path of libnccl.so.2 (default: $ARTEST_NCCL, the loader path, well-known places)")
	fs.BoolVar(&o.Version, "version", false, "print the version and exit")
	fs.BoolVar(&o.Help, "help", false, "print this help and exit")
	addBenchFlags(fs, o)
	addTuneFlags(fs, o)
	return fs
}

// Parse reads the flags and validates everything that does not need the
// world: the errors are usage errors (exit 2).
func Parse(args []string) (*Options, error) {
	o := &Options{}
	fs := newFlagSet(o)
	recordFlags(fs, &o.given)
	var benchSub bool
	perr := parseFlags(fs, args, &benchSub)
	if perr == nil {
		perr = parseTuneWord(fs, &o.Tune.On)
	}
	if err := perr; err != nil {
		if errors.Is(err, flag.ErrHelp) {
			o.Help = true
			return o, nil
		}
		if hint := ncclTestsHint(err); hint != nil {
			return nil, hint
		}
		return nil, exitcode.Usagef("%v (see artest --help)", err)
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	o.Bench = o.Bench || benchSub
	if fs.NArg() > 0 {
		return nil, exitcode.Usagef("unexpected argument %q (see artest --help)", fs.Arg(0))
	}
	if o.Help || o.Version {
		return o, nil
	}
	if o.Repro != "" {
		return parseRepro(o.Repro, args)
	}
	for _, name := range nonEmptyFlags {
		if o.set[name] && strings.TrimSpace(fs.Lookup(name).Value.String()) == "" {
			return nil, exitcode.Usagef("%s: empty value (leave the flag out for its default)", flagName(name))
		}
	}
	switch o.Backend {
	case "auto", "cuda", "host":
	default:
		return nil, exitcode.Usagef("unknown --backend %q (valid: auto, cuda, host)", o.Backend)
	}
	if err := o.loadPlugins(); err != nil {
		return nil, err
	}
	var err error
	if o.input, err = reference.ParseInputKind(o.Input); err != nil {
		return nil, exitcode.Usagef("--input: %v", err)
	}
	if o.timeout, err = time.ParseDuration(o.Timeout); err != nil || o.timeout <= 0 {
		return nil, exitcode.Usagef("bad --timeout %q: want a duration like 60s or 500ms", o.Timeout)
	}
	if o.timeout < minTimeout {
		return nil, exitcode.Usagef("--timeout %s: at least %s (a shorter wait declares a working step hung)", o.Timeout, minTimeout)
	}
	if o.deviceTimeout, err = time.ParseDuration(o.DeviceTimeout); err != nil || o.deviceTimeout < 0 {
		return nil, exitcode.Usagef("bad --device-timeout %q: want a duration like 10s, 500ms or 0", o.DeviceTimeout)
	}
	if o.deviceTimeout != 0 && o.deviceTimeout < minTimeout {
		return nil, exitcode.Usagef("--device-timeout %s: 0 or at least %s (a shorter wait gives up on a working peer)", o.DeviceTimeout, minTimeout)
	}
	if o.Table != "summary" && o.Table != "full" {
		return nil, exitcode.Usagef("unknown --table %q (valid: summary, full)", o.Table)
	}
	for _, spec := range o.Inject {
		if err := o.inject.Parse(spec); err != nil {
			return nil, exitcode.Usagef("%v", err)
		}
	}
	if o.inject.Bits&kernels.InjectPdlNoWait != 0 && !o.PDL {
		return nil, exitcode.Usagef("--inject pdl-no-wait needs --pdl: without a producer kernel there is nothing to wait for")
	}
	for name, v := range map[string]int{"--warmup": o.Warmup, "--iters": o.Iters, "--reps": o.Reps, "--stress": o.Stress, "--blocks": o.Blocks, "--threads": o.Threads} {
		if v < 0 {
			return nil, exitcode.Usagef("%s %d: must not be negative", name, v)
		}
	}
	if o.Stress > maxStress {
		return nil, exitcode.Usagef("--stress %d: at most %d", o.Stress, maxStress)
	}
	if o.set["schedule"] {
		if o.Stress == 0 {
			return nil, exitcode.Usagef("--schedule %s needs --stress N: schedules perturb stress runs only", o.Schedule)
		}
		if o.sched, err = runner.ParseSchedules(o.Schedule); err != nil {
			return nil, exitcode.Usagef("%v", err)
		}
	} else if o.Stress > 0 {
		o.sched = runner.AllSchedules()
	}
	if _, err := runner.ParseCheck(o.Check); err != nil {
		return nil, exitcode.Usagef("%v", err)
	}
	if o.set["check"] && o.Stress == 0 {
		return nil, exitcode.Usagef("--check %s needs --stress N: other runs check on the host", o.Check)
	}
	if o.Blocks > 256 {
		return nil, exitcode.Usagef("--blocks %d: at most 256 (signal.MaxBlocks)", o.Blocks)
	}
	if o.Threads != 0 && (o.Threads%32 != 0 || o.Threads > kernels.MaxThreads) {
		return nil, exitcode.Usagef("--threads %d: want a multiple of 32 up to %d", o.Threads, kernels.MaxThreads)
	}
	if o.params, err = parseParams(o.Params); err != nil {
		return nil, err
	}
	if len(o.CaseIDs) > 0 {
		for _, name := range selectionFlags {
			if o.set[name] {
				return nil, exitcode.Usagef("--case selects exact cases: drop --%s (or drop --case and select with --%s)", name, name)
			}
		}
		o.CaseIDs = dedup(o.CaseIDs)
	}
	if err := checkParamsApply(o.params, o.selectedVariants()); err != nil {
		return nil, err
	}
	sel := cases.Selection{Variants: o.Variants, ModeWords: o.Modes, IDs: o.CaseIDs, Quick: o.Quick, Stress: o.Stress > 0}
	for _, d := range o.DTypes {
		dt, err := reference.ParseDType(d)
		if err != nil {
			return nil, exitcode.Usagef("--dtype: %v", err)
		}
		sel.DTypes = append(sel.DTypes, dt)
	}
	for _, s := range o.Ops {
		op, err := reference.ParseOp(s)
		if err != nil {
			return nil, exitcode.Usagef("--op: %v", err)
		}
		sel.Ops = append(sel.Ops, op)
	}
	if o.Sizes != "" {
		if sel.Sizes, err = cases.ParseSizes(o.Sizes); err != nil {
			return nil, exitcode.Usagef("--size: %v", err)
		}
	}
	if _, err := cases.ParseSize(o.HostMax); err != nil {
		return nil, exitcode.Usagef("--host-max-size: %v", err)
	}
	o.sel = sel
	if err := o.applyTune(); err != nil {
		return nil, err
	}
	return o, nil
}

// hash identifies a configuration: ranks started with different flags
// would run different cases and wait for each other for ever.
func (o *Options) hash() string {
	b, _ := json.Marshal(o)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// hello is what each rank tells rank 0 before anything collective happens.
type hello struct {
	Err  string `json:"err,omitempty"`
	Code int    `json:"code,omitempty"`
	Hash string `json:"hash,omitempty"`
	Host string `json:"host"`
	// Flags are the flags given, as "--name value", so that ranks started
	// differently can be told which flag differs.
	Flags   []string `json:"flags,omitempty"`
	Backend string   `json:"backend,omitempty"`
}

// Main runs artest on this rank and returns the exit code (the same on every
// rank, except when a rank could not even agree, in which case each returns
// what rank 0 decided).
func Main(e Env) int {
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
	c := e.Comm
	say := func(format string, args ...any) {
		if c.Rank() == 0 {
			fmt.Fprintf(e.Stderr, "artest: "+format+"\n", args...)
		}
	}

	o, perr := Parse(e.Args)
	if perr == nil {
		if err := o.inject.CheckRanks(c.Size()); err != nil {
			perr = exitcode.Usagef("%v", err)
		}
	}
	me := hello{Host: c.Hostname()}
	if perr != nil {
		me.Err, me.Code = perr.Error(), exitcode.Of(perr)
	} else {
		me.Hash = o.hash()
		me.Flags = o.givenText()
		if c.Rank() == 0 && !o.Help && !o.Version && !o.List {
			// Rank 0 writes the reports: a path it cannot write is found
			// now, not after the whole run.
			if err := o.checkReportPaths(); err != nil {
				me.Err, me.Code = err.Error(), exitcode.Of(err)
			}
		}
	}
	// Choose the backend before agreeing, so ranks that disagree say so.
	var be backend.Backend
	// --list opens the backend too: what the run drops on a backend (the
	// host's size cap) --list drops as well.
	if perr == nil && !o.Help && !o.Version {
		var berr error
		be, me.Backend, berr = openBackend(e, o)
		if berr != nil {
			me.Err, me.Code = berr.Error(), exitcode.Of(berr)
			if me.Code == exitcode.Wrong {
				me.Code = exitcode.Env
			}
		}
	}
	hellos, code, msg, err := agree(c, me)
	if err != nil {
		say("%v", err)
		return exitcode.Env
	}
	if code != exitcode.OK {
		say("%s", msg)
		closeBackend(be, e.Stderr)
		return code
	}
	if o.Help {
		if c.Rank() == 0 {
			printHelp(e.Stdout)
		}
		return exitcode.OK
	}
	if o.Version {
		if c.Rank() == 0 {
			fmt.Fprintf(e.Stdout, "artest %s (%s, %s)\n", Version, gitRevision(), runtime.Version())
		}
		return exitcode.OK
	}
	if be.Name() == "host" {
		if len(o.sel.Sizes) == 0 && len(o.sel.IDs) == 0 {
			o.sel.MaxBytes, _ = cases.ParseSize(o.HostMax)
		}
		o.fewTimedCalls()
		// Host "kernels" are goroutines the OS may starve: on 2 loaded
		// cores a barrier wait took 17.8 s once. The host watchdog
		// (--timeout) still ends a real hang; the device deadline only
		// adds the give-up record, so it is generous here.
		if !o.set["device-timeout"] {
			o.DeviceTimeout, o.deviceTimeout = "30s", 30*time.Second
		}
		o.benchOnHost()
		o.tuneOnHost()
	}
	cs, err := cases.Build(o.sel, c.Size())
	if err != nil {
		say("%v", err)
		closeBackend(be, e.Stderr)
		return exitcode.Usage
	}
	if o.List && o.Tune.On {
		closeBackend(be, e.Stderr)
		return listTune(e, o)
	}
	if o.List {
		if c.Rank() == 0 {
			for _, cc := range cs {
				fmt.Fprintln(e.Stdout, cc.ID())
			}
		}
		closeBackend(be, e.Stderr)
		return exitcode.OK
	}
	defer closeBackend(be, e.Stderr)

	w, err := be.Setup(c, runner.Capacity(cs))
	// Setup is collective; its failure on any rank must stop every rank.
	me2 := hello{Host: me.Host}
	if err != nil {
		me2.Err, me2.Code = fmt.Sprintf("rank %d: %v", c.Rank(), err), exitcode.Of(err)
		if me2.Code == exitcode.Wrong {
			me2.Code = exitcode.Env
		}
	}
	if _, code, msg, aerr := agree(c, me2); aerr != nil || code != exitcode.OK {
		if aerr != nil {
			msg, code = aerr.Error(), exitcode.Env
		}
		say("%s", msg)
		return code
	}

	info := be.Info()
	if info.Sharing != "" && (o.Bench || o.Tune.On) && !o.AllowSharedTiming {
		// Every rank sees the same sharing, so every rank stops here.
		what := "bench"
		if o.Tune.On {
			what = "tune"
		}
		say("%s times nothing useful while ranks share GPUs (%s): run one rank per GPU, or pass --allow-shared-timing to run anyway", what, info.Sharing)
		return exitcode.Usage
	}
	if info.Sharing != "" && !o.Bench && !o.Tune.On {
		// Shared GPUs are for protocol coverage (the default matrix at 8
		// ranks on one H100 did 1961 of its 6594 cases in 270 s with the
		// full timing of 5 + 5 x 20 calls per case).
		o.fewTimedCalls()
	}

	hosts := make([]string, len(hellos))
	for i, h := range hellos {
		hosts[i] = h.Host
	}
	versions := map[string]string{"artest": Version, "go": runtime.Version()}
	if e.MPIVersion != "" {
		versions["mpi"] = e.MPIVersion
	}
	for k, v := range info.Versions {
		versions[k] = v
	}
	cfg := &runner.Config{
		Cases: cs, Seed: o.Seed, Input: o.input,
		Warmup: o.Warmup, Iters: o.Iters, Reps: o.Reps, Stress: o.Stress,
		Timeout: o.timeout, DeviceTimeout: o.deviceTimeout, Inject: o.inject, Schedules: o.sched, Check: o.Check,
		Blocks: o.Blocks, Threads: o.Threads, Params: o.params,
		Stdout: e.Stdout, Stderr: e.Stderr, JSONPath: o.JSON, JUnitPath: o.JUnit,
		JSONLPath: o.JSONL, GoBenchPath: o.GoBench, Progress: o.Progress, FullTable: o.Table == "full",
		Agg: o.agg, Bench: o.Bench, AfterReports: o.afterReports(e.Stderr), PDL: o.PDL,
		Header: report.Header{
			Tool: "artest", Version: Version, GitRevision: gitRevision(),
			Command: append([]string{"artest"}, e.Args...), Start: time.Now().UTC(),
			Hosts: hosts, Ranks: c.Size(), Backend: be.Name(), Seed: o.Seed, Input: o.input.String(),
			Iters: o.Iters, Warmup: o.Warmup, Stress: o.Stress, Inject: o.inject.Specs(),
			Reps: o.Reps, Agg: string(o.agg), Bench: o.Bench, PDL: o.PDL,
			Versions: versions, Devices: info.Devices, Topology: info.Topology,
			SharedGPUs: info.Sharing, Plugins: o.pluginInfo(),
		},
	}
	defer o.teardownPlugins()
	cfg.OnFail = o.onFail(e.Stderr, c.Size(), be.Name(), &cfg.Header)
	o.applyTuned(cfg, be.Name())
	if o.Tune.On {
		return runTune(e, o, c, be, w, cfg)
	}
	return runner.Run(c, be, w, cfg)
}

// fewTimedCalls sets the timing flags the user left alone to a few calls:
// on the host backend and on shared GPUs times mean nothing, and a few
// timed calls still exercise the timing path and back-to-back launches.
func (o *Options) fewTimedCalls() {
	if !o.set["warmup"] {
		o.Warmup = 1
	}
	if !o.set["iters"] {
		o.Iters = 3
	}
	if !o.set["reps"] {
		o.Reps = 1
	}
}

// givenText is the flags given, one "--name value" (or "--name" for a
// true bool) per flag occurrence.
func (o *Options) givenText() []string {
	out := make([]string, 0, len(o.given))
	for _, g := range o.given {
		switch {
		case g.isBool && g.value == "true":
			out = append(out, flagName(g.name))
		case g.isBool:
			out = append(out, flagName(g.name)+"="+g.value)
		default:
			out = append(out, flagName(g.name)+" "+g.value)
		}
	}
	return out
}

// flagDiff lists the flags of mine that theirs lacks, or "none" when the
// difference is only in what theirs has; "" when both are the same.
func flagDiff(mine, theirs []string) string {
	only := missingFrom(mine, theirs)
	if len(only) == 0 && len(missingFrom(theirs, mine)) == 0 {
		return ""
	}
	if len(only) == 0 {
		return "none of them"
	}
	return strings.Join(only, ", ")
}

// flagDiffOther is flagDiff seen from the other side.
func flagDiffOther(mine, theirs []string) string {
	only := missingFrom(theirs, mine)
	if len(only) == 0 {
		return "none of them"
	}
	return strings.Join(only, ", ")
}

// missingFrom lists the items of a that b does not hold.
func missingFrom(a, b []string) []string {
	has := map[string]int{}
	for _, x := range b {
		has[x]++
	}
	var out []string
	for _, x := range a {
		if has[x] > 0 {
			has[x]--
			continue
		}
		out = append(out, x)
	}
	return out
}

// agree gathers every rank's hello on rank 0, which decides; the decision is
// broadcast so that every rank returns the same code.
func agree(c comm.Comm, me hello) ([]hello, int, string, error) {
	blob, _ := json.Marshal(me)
	all, err := c.Gather(blob, 0)
	if err != nil {
		return nil, 0, "", fmt.Errorf("gather configuration: %w", err)
	}
	var hellos []hello
	decision := struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	}{}
	if c.Rank() == 0 {
		hellos = make([]hello, len(all))
		for i, b := range all {
			if err := json.Unmarshal(b, &hellos[i]); err != nil {
				return nil, 0, "", fmt.Errorf("rank %d configuration: %w", i, err)
			}
		}
		for i, h := range hellos {
			if h.Err != "" {
				decision.Code, decision.Msg = h.Code, h.Err
				if i != 0 && !strings.HasPrefix(h.Err, "rank ") {
					decision.Msg = fmt.Sprintf("rank %d: %s", i, h.Err)
				}
				break
			}
		}
		if decision.Code == exitcode.OK {
			for i, h := range hellos {
				if h.Hash != hellos[0].Hash {
					decision.Code = exitcode.Usage
					decision.Msg = fmt.Sprintf("ranks were started with different flags: rank %d's configuration differs from rank 0's (hash %s vs %s)", i, h.Hash, hellos[0].Hash)
					if d := flagDiff(h.Flags, hellos[0].Flags); d != "" {
						decision.Msg = fmt.Sprintf("ranks were started with different flags: rank %d has %s, rank 0 %s", i, d, flagDiffOther(h.Flags, hellos[0].Flags))
					}
					break
				}
				if h.Backend != hellos[0].Backend {
					decision.Code = exitcode.Env
					decision.Msg = fmt.Sprintf("ranks chose different backends: rank 0 %s, rank %d %s (pass --backend)", hellos[0].Backend, i, h.Backend)
					break
				}
			}
		}
	}
	// Broadcast the decision as a fixed-size block.
	buf := make([]byte, 4096)
	if c.Rank() == 0 {
		d, _ := json.Marshal(decision)
		if len(d) > len(buf) {
			decision.Msg = decision.Msg[:2048]
			d, _ = json.Marshal(decision)
		}
		copy(buf, d)
	}
	if err := c.Bcast(buf, 0); err != nil {
		return nil, 0, "", fmt.Errorf("broadcast decision: %w", err)
	}
	if err := json.Unmarshal([]byte(strings.TrimRight(string(buf), "\x00")), &decision); err != nil {
		return nil, 0, "", fmt.Errorf("decision: %w", err)
	}
	return hellos, decision.Code, decision.Msg, nil
}

func openBackend(e Env, o *Options) (backend.Backend, string, error) {
	switch o.Backend {
	case "host":
		return host.New(o.ShmDir), "host", nil
	case "cuda":
		if e.OpenCUDA == nil {
			return nil, "cuda", exitcode.Envf("the cuda backend is not available in this build")
		}
		b, err := e.OpenCUDA(o, e.Comm)
		return b, "cuda", err
	}
	// auto: cuda where there is a GPU; a GPU that fails to open is an
	// error, not a reason to test the host instead.
	if e.OpenCUDA != nil {
		b, err := e.OpenCUDA(o, e.Comm)
		if err == nil {
			return b, "cuda", nil
		}
		if !errors.Is(err, backend.ErrNoDevice) {
			return nil, "cuda", err
		}
	}
	return host.New(o.ShmDir), "host", nil
}

func closeBackend(b backend.Backend, stderr io.Writer) {
	if b == nil {
		return
	}
	if err := b.Close(); err != nil {
		fmt.Fprintf(stderr, "artest: close %s backend: %v\n", b.Name(), err)
	}
}

func gitRevision() string {
	if BuildRevision != "" {
		return BuildRevision
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	rev, dirty := "unknown", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

func printHelp(w io.Writer) {
	fmt.Fprintf(w, `artest %s: test, reference and benchmark suite for GPU allreduce kernels

usage: mpirun -np N artest [flags]
       mpirun -np N artest bench [flags]      benchmark: a size sweep (-b, -e, -f), timed
       mpirun -np N artest tune [flags]       tuning: sweep launch parameters, write the table (--json, --header, --go)
       artest compare OLD.json NEW.json [flags]   gate on performance (artest compare --help)
       artest mps [--dir DIR] -- mpirun -np N artest --share-gpus ...   run a job under its own MPS daemon

`, Version)
	fs := newFlagSet(&Options{})
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, `
exit codes: 0 all passed (or skipped with a reason), 1 a case failed,
            2 usage or configuration error, 3 hang (watchdog), 4 environment
`)
}

// paramHelp lists every variant's launch parameters for --help.
func paramHelp() string {
	var parts []string
	for i := range kernels.Registry {
		v := &kernels.Registry[i]
		for _, p := range v.Params {
			parts = append(parts, fmt.Sprintf("%s (%s: %s; default %d)", p.Name, v.Name, p.Help, p.Default))
		}
	}
	if len(parts) == 0 {
		return "none defined"
	}
	return strings.Join(parts, "; ")
}

// parseParams reads --param NAME=VALUE flags. A name applies to every
// variant that has a parameter of that name; each such variant's range is
// checked.
func parseParams(specs []string) (map[string]uint32, error) {
	out := map[string]uint32{}
	for _, spec := range specs {
		name, val, ok := strings.Cut(spec, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, exitcode.Usagef("--param %q: want NAME=VALUE", spec)
		}
		n, err := strconv.ParseUint(strings.TrimSpace(val), 0, 32)
		if err != nil {
			return nil, exitcode.Usagef("--param %s: value %q is not a whole number", name, val)
		}
		found := false
		for i := range kernels.Registry {
			v := &kernels.Registry[i]
			p, has := v.Param(name)
			if !has {
				continue
			}
			found = true
			auto := n == 0 && p.Default == 0
			if !auto && (uint32(n) < p.Min || uint32(n) > p.Max) {
				return nil, exitcode.Usagef("--param %s=%d: %s allows %d to %d", name, n, v.Name, p.Min, p.Max)
			}
		}
		if !found {
			return nil, exitcode.Usagef("--param %s: no variant has this parameter (%s)", name, paramHelp())
		}
		out[name] = uint32(n)
	}
	return out, nil
}

// flagName is how a flag is written: -b for one letter (as nccl-tests
// does), --name otherwise.
func flagName(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// dedup drops repeated items, keeping the first of each.
func dedup(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// selectedVariants names the variants the selection can reach: --variant's,
// or those of the --case IDs; nil when every variant can run.
func (o *Options) selectedVariants() []string {
	if len(o.Variants) > 0 {
		return dedup(o.Variants)
	}
	var names []string
	for _, id := range o.CaseIDs {
		v, _, _ := strings.Cut(id, "/")
		names = append(names, v)
	}
	return dedup(names)
}

// checkParamsApply makes a --param that none of the selected variants has
// a usage error: it would be ignored, and the run would not be what was
// asked for. Unknown variant names are left to the matrix's own error.
func checkParamsApply(params map[string]uint32, variants []string) error {
	if len(variants) == 0 {
		return nil
	}
	var vs []*kernels.Variant
	for _, name := range variants {
		v, err := kernels.Lookup(name)
		if err != nil {
			return nil
		}
		vs = append(vs, v)
	}
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		applies := false
		var theirs []string
		for _, v := range vs {
			_, has := v.Param(name)
			applies = applies || has
			theirs = append(theirs, v.Name+": "+paramNames(v))
		}
		switch {
		case applies:
		case len(vs) == 1:
			return exitcode.Usagef("--param %s: %s has no such parameter (its parameters: %s)", name, vs[0].Name, paramNames(vs[0]))
		default:
			return exitcode.Usagef("--param %s: none of the selected variants has it (their parameters: %s)", name, strings.Join(theirs, "; "))
		}
	}
	return nil
}

// paramNames lists a variant's --param names, or "none".
func paramNames(v *kernels.Variant) string {
	var ps []string
	for _, p := range v.Params {
		ps = append(ps, p.Name)
	}
	if len(ps) == 0 {
		return "none"
	}
	return strings.Join(ps, ", ")
}

// parseRepro parses a bundle's flags followed by the command line's own
// (without --repro), so that flags given on the command line win.
func parseRepro(path string, args []string) (*Options, error) {
	b, err := repro.Read(path)
	if err != nil {
		return nil, exitcode.Usagef("--repro: %v", err)
	}
	merged := append([]string(nil), b.Args...)
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--repro" || a == "-repro":
			i++ // and its value
		case strings.HasPrefix(a, "--repro=") || strings.HasPrefix(a, "-repro="):
		default:
			merged = append(merged, a)
		}
	}
	o, err := Parse(merged)
	if err != nil {
		return nil, err
	}
	o.Repro = path
	return o, nil
}

// rerunEffective are the flags a rerun line always writes, with the value
// this run used (which the backend may have changed from the default), so
// that the line reruns the case the same way on any backend's defaults.
var rerunEffective = map[string]func(o *Options, backendName string) string{
	"backend":        func(_ *Options, b string) string { return b },
	"seed":           func(o *Options, _ string) string { return fmt.Sprint(o.Seed) },
	"input":          func(o *Options, _ string) string { return o.Input },
	"warmup":         func(o *Options, _ string) string { return fmt.Sprint(o.Warmup) },
	"iters":          func(o *Options, _ string) string { return fmt.Sprint(o.Iters) },
	"reps":           func(o *Options, _ string) string { return fmt.Sprint(o.Reps) },
	"timeout":        func(o *Options, _ string) string { return o.Timeout },
	"device-timeout": func(o *Options, _ string) string { return o.DeviceTimeout },
	"stress":         func(o *Options, _ string) string { return fmt.Sprint(o.Stress) },
	"schedule":       func(o *Options, _ string) string { return o.sched.String() },
}

// rerunEffectiveOrder is the order rerunEffective's flags are written in.
var rerunEffectiveOrder = []string{"backend", "seed", "input", "warmup", "iters", "reps", "timeout", "device-timeout", "stress", "schedule"}

// rerunLeftOut are the flags a rerun line drops: where reports go, what is
// printed, and the case selection, which --case ID replaces (the size sweep
// and the host size cap included), and artest tune's own flags (a failing
// tune candidate reruns as an ordinary case with its launch pinned).
var rerunLeftOut = map[string]bool{
	"json": true, "junit": true, "jsonl": true, "plot": true, "progress": true, "list": true, "table": true, "gobench": true,
	"repro": true, "repro-dir": true, "help": true, "version": true,
	"case": true, "variant": true, "dtype": true, "op": true, "size": true, "mode": true, "quick": true,
	"b": true, "e": true, "f": true, "minbytes": true, "maxbytes": true, "stepfactor": true, "host-max-size": true,
	"tune-blocks": true, "tune-threads": true, "tune-param": true, "launch": true, "budget": true,
	"header": true, "go": true, "merge": true,
}

// rerunArgs are the flags that rerun case id exactly as this run ran it, on
// the backend it ran on: the effective values of rerunEffective, then every
// other flag given on the command line (or in the bundle being rerun) that
// rerunLeftOut does not drop, in the order given.
func (o *Options) rerunArgs(id, backendName string) []string {
	args := []string{"--backend", backendName, "--case", id}
	for _, name := range rerunEffectiveOrder[1:] {
		if (name == "stress" || name == "schedule") && o.Stress == 0 {
			continue
		}
		args = append(args, "--"+name, rerunEffective[name](o, backendName))
	}
	if o.Bench && !o.set["bench"] {
		args = append(args, "--bench") // given as the word bench
	}
	for _, g := range o.given {
		if _, ok := rerunEffective[g.name]; ok || rerunLeftOut[g.name] {
			continue
		}
		switch {
		case g.isBool && g.value == "true":
			args = append(args, "--"+g.name)
		case g.isBool:
			args = append(args, "--"+g.name+"="+g.value)
		case g.name == "plugin":
			// The bundle may be rerun from another directory.
			path := g.value
			if abs, err := filepath.Abs(path); err == nil {
				path = abs
			}
			args = append(args, "--plugin", path)
		default:
			args = append(args, "--"+g.name, g.value)
		}
	}
	return args
}

// checkReportPaths checks that every report file asked for can be written:
// a directory is a usage error (exit 2), a path that cannot be created (no
// such directory, no permission, a read-only file system) an environment
// error (exit 4).
func (o *Options) checkReportPaths() error {
	for _, p := range []struct{ flag, path string }{
		{"--json", o.JSON}, {"--junit", o.JUnit}, {"--jsonl", o.JSONL}, {"--plot", o.Plot}, {"--gobench", o.GoBench},
	} {
		if p.path == "" {
			continue
		}
		err := report.CheckWritable(p.path)
		switch {
		case errors.Is(err, report.ErrIsDirectory):
			return exitcode.Usagef("%s %s: %v", p.flag, p.path, report.ErrIsDirectory)
		case err != nil:
			return exitcode.Envf("%s: %v", p.flag, err)
		}
	}
	return nil
}

// reproDir is where repro bundles go.
func (o *Options) reproDir() string {
	switch {
	case o.ReproDir != "":
		return o.ReproDir
	case o.JSON != "":
		return filepath.Dir(o.JSON)
	}
	return "."
}

// maxReproBundles bounds the repro lines and bundles of one run.
const maxReproBundles = 20

// onFail (rank 0) prints the one-line rerun command of a failing case and
// writes its repro bundle.
func (o *Options) onFail(stderr io.Writer, ranks int, backendName string, header *report.Header) func(report.Case) string {
	written := 0
	return func(c report.Case) string {
		args := o.withCaseLaunch(o.rerunArgs(c.ID, backendName), c)
		command := repro.Command(ranks, args)
		// A broken kernel fails every case: the first bundles say it all,
		// and a thousand files would bury them.
		if written == maxReproBundles {
			fmt.Fprintf(stderr, "artest: more failing cases: no more repro lines or bundles after %d (the JSON report lists them all)\n", maxReproBundles)
		}
		if written++; written > maxReproBundles {
			return command
		}
		b := &repro.Bundle{Case: c.ID, Ranks: ranks, Command: command, Args: args, Header: *header, Result: c}
		const keep = 8 // mismatches per rank failure: the first ones are what a reader looks at
		for i := range b.Result.Failures {
			if f := &b.Result.Failures[i]; len(f.Mismatches) > keep {
				f.Mismatches = f.Mismatches[:keep]
			}
		}
		path, err := repro.Write(o.reproDir(), b, o.Repro)
		if err != nil {
			fmt.Fprintf(stderr, "artest: repro %s: %s (%v)\n", c.ID, b.Command, err)
			return command
		}
		fmt.Fprintf(stderr, "artest: repro %s: %s (bundle: %s; rerun: %s)\n", c.ID, b.Command, path,
			report.ShellCommand([]string{"mpirun", "-np", fmt.Sprint(ranks), "artest", "--repro", path}))
		return command
	}
}
