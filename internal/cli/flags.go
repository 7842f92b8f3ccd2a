package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/knobs"
	"github.com/artest/artest/internal/plugin"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/runner"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
)

// Options are the parsed flags.
type Options struct {
	// Knobs are the ARTEST_* settings, read once (knobs.Read).
	Knobs    knobs.Settings
	Backend  string   `json:"backend"`
	Variants []string `json:"variants,omitempty"`
	Colls    []string `json:"colls,omitempty"`
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
	// StressSet is --stress-set: the stress matrix's cases, default or
	// full.
	StressSet string   `json:"stress_set,omitempty"`
	Timeout   string   `json:"timeout"`
	Inject    []string `json:"inject,omitempty"`
	Schedule  string   `json:"schedule,omitempty"`
	Check     string   `json:"check,omitempty"`
	JSON      string   `json:"json,omitempty"`
	JUnit     string   `json:"junit,omitempty"`
	JSONL     string   `json:"jsonl,omitempty"`
	GoBench   string   `json:"gobench,omitempty"`
	Progress  bool     `json:"-"`
	Quiet     bool     `json:"-"`
	ShmDir    string   `json:"shm_dir"`
	Blocks    int      `json:"blocks,omitempty"`
	Threads   int      `json:"threads,omitempty"`
	Fatbin    string   `json:"fatbin,omitempty"`
	ShareGPU  bool     `json:"share_gpus,omitempty"`
	// TimeSlicing lets ranks share a GPU without MPS; AllowSharedTiming
	// lets bench and tune time a run whose ranks share GPUs.
	TimeSlicing       bool `json:"time_slicing,omitempty"`
	AllowSharedTiming bool `json:"allow_shared_timing,omitempty"`
	// RunKnownDefects runs the cases a baseline is known to get wrong.
	RunKnownDefects bool     `json:"run_known_defects,omitempty"`
	NCCL            string   `json:"nccl,omitempty"`
	HostMax         string   `json:"host_max_size"`
	Params          []string `json:"params,omitempty"`
	Repro           string   `json:"repro,omitempty"`
	ReproDir        string   `json:"repro_dir,omitempty"`
	Bench           bool     `json:"bench,omitempty"`
	MinBytes        string   `json:"minbytes,omitempty"`
	MaxBytes        string   `json:"maxbytes,omitempty"`
	Factor          string   `json:"stepfactor,omitempty"`
	Agg             string   `json:"agg"`
	Plot            string   `json:"plot,omitempty"`
	// ModeArgs are the timing modes' flags given (runner.ModeFlags), by
	// name, as given (modes.go). PDL (--pdl), PDLChain (bench's
	// --pdl-chain), overlap (bench's --overlap BLOCKS; 0: off) and
	// smBudget (bench's --sm-budget N; 0: none) are the first modes'
	// settings read from them.
	ModeArgs map[string]string `json:"mode_args,omitempty"`
	PDL      bool              `json:"-"`
	PDLChain bool              `json:"-"`
	overlap  int
	smBudget int
	Version  bool `json:"-"`
	Help     bool `json:"-"`
	// ListVariants is --list-variants: print the variant names and exit.
	ListVariants bool `json:"-"`
	// Table is --table: summary (the default) or full (every case's row).
	Table string `json:"-"`

	// Reports keeps the value of each report format's flag that has no
	// field of its own (fileFormat, formats.go), by flag name.
	Reports map[string]*string `json:"reports,omitempty"`

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
	// variantSet is the run's variants: the built-ins and the plugins'
	// (loadPlugins), the one set every later step is given.
	variantSet *registry.Set

	timeout time.Duration
	// notes are lines rank 0 prints before the run (what a --repro rerun
	// took from its bundle and what it did not).
	notes []string
	// runFolder is the default repro folder of this run,
	// artest-repro/<start time>, fixed at its first use.
	runFolder string
	set       map[string]bool // flags given on the command line
	given     []givenFlag     // every flag given, in order, with its text
	inject    runner.Inject
	sched     runner.Schedules // --schedule, parsed (all when --stress has none)
	sel       cases.Selection
	input     reference.InputKind
	params    map[string]uint32

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
//
// maxIters, maxWarmup and maxReps bound the timing flags: every timed call
// of a repetition is kept (captured into one graph, or launched and
// recorded), so --iters 100000000 grew a host rank past 900 MB in 5 s and
// never ended. nccl-tests' usual counts are 20 to a few thousand; the caps
// sit far above anything useful.
const (
	maxStress  = 10_000_000
	maxIters   = 100_000
	maxWarmup  = 100_000
	maxReps    = 10_000
	minTimeout = 100 * time.Millisecond
)

// selectionFlags narrow the matrix; --case names exact cases instead.
var selectionFlags = []string{"variant", "coll", "dtype", "op", "size", "mode", "quick", "stress-set"}

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
	fs.Var(listFlag{&o.Variants}, "variant", "variants to run, comma-separated (default: all): "+strings.Join(registry.Builtins().Names(), ", "))
	fs.Var(listFlag{&o.Colls}, "coll", "collectives: allreduce, reduce-scatter, all-gather (default: allreduce); each variant runs those it implements, and a size is the full buffer (the reduce-scatter's input, the all-gather's output), rounded down to a whole chunk per rank")
	fs.Var(listFlag{&o.DTypes}, "dtype", "element types: f32, f16, bf16 (default: all)")
	fs.Var(listFlag{&o.Ops}, "op", "reductions: sum, max, min (default: all)")
	fs.StringVar(&o.Sizes, "size", "", "message sizes in bytes: list and ranges, e.g. 4,1K:256M:x4,1M:2M:+256K (default: the matrix's)")
	fs.Var(modeFlag{&o.Modes}, "mode", "mode words: words of one axis are alternatives (oop,ip: both), words of different axes must all hold (oop,reg: out of place and registered); axes ip|oop, reg|stg, plain|graph, off|aligned; also dash-joined as case IDs print them (oop-reg-plain)")
	fs.Var(listFlag{&o.CaseIDs}, "case", "run exactly these case IDs ([collective:]variant/dtype/op/size/mode/npN)")
	fs.BoolVar(&o.Quick, "quick", false, "a small matrix that finishes in seconds")
	fs.BoolVar(&o.List, "list", false, "print the selected case IDs and exit")
	fs.BoolVar(&o.ListVariants, "list-variants", false, "print the name of every variant, one per line (the built-in ones, then each --plugin's), and exit")
	fs.StringVar(&o.Input, "input", "random", "input kind of every case: random (full mantissa), exact (small integers) or special (signed zeros, subnormals, Inf, NaN, the largest values); the default matrix adds special cases whatever it says")
	fs.Uint64Var(&o.Seed, "seed", 1, "input generator seed")
	fs.IntVar(&o.Warmup, "warmup", 5, "untimed calls before timing (host backend default: 1)")
	fs.IntVar(&o.Iters, "iters", 20, "calls per timed repetition, 0: check only (host backend default: 3)")
	fs.IntVar(&o.Reps, "reps", 5, "timed repetitions; the median is reported (host backend default: 1)")
	fs.IntVar(&o.Stress, "stress", 0, "run N back-to-back calls per case, each with its own inputs, checking every one (replaces timing); without --size, the stress matrix: 4100 B and 64 KiB, sum, every dtype, 4 modes")
	fs.StringVar(&o.StressSet, "stress-set", "default", "stress only, without --size: the stress matrix's cases: default (per variant, bf16 at 4100 B and 64 KiB in the modes oop-reg-plain, ip-reg-plain, oop-stg-graph and ip-stg-graph, and the misaligned 1 MiB slow path: 9 cases) or full (the same in every dtype: 27 cases)")
	fs.StringVar(&o.Timeout, "timeout", "60s", "longest wait for one step on the stream before the job is declared hung (exit 3)")
	// 10 s: generous for first-touch warm-up (how long that takes is
	// unmeasured), and below --timeout's 60 s so the kernels give up first and say
	// where; with --timeout below it, the host watchdog fires first.
	fs.StringVar(&o.DeviceTimeout, "device-timeout", "10s", "longest wait of a kernel block at one barrier or ring slot; past it the block records where and exits, and the job is declared hung (exit 3); 0: wait for ever (host backend default: 30s)")
	fs.StringVar(&o.Schedule, "schedule", "", "stress only: adversarial schedules from outside the kernel, comma-separated: "+strings.Join(runner.ScheduleNames, ", ")+", all or none (default with --stress: all; link, the straggler's load reading its peers over the links, is off where ranks share a GPU), seeded by --seed")
	fs.StringVar(&o.Check, "check", runner.CheckAuto, "stress only: what checks every iteration: device (the GPU's artest_check kernel, with a few iterations per batch also checked on the host against the Go reference), host (the Go reference alone), or auto (device on the cuda backend when the fatbin has the checker, else host)")
	fs.Var(repeatFlag{&o.Inject}, "inject", "plant a fault (repeatable): "+runner.FaultHelp())
	addReportFlags(fs, o)
	fs.StringVar(&o.Repro, "repro", "", "rerun the failing case a repro bundle describes (flags given as well override the bundle's)")
	fs.StringVar(&o.ReproDir, "repro-dir", "", "where failing cases' repro bundles go (default: the --json file's directory, else artest-repro/<start time>, made at the first failure)")
	fs.BoolVar(&o.Progress, "progress", false, "print a line per finished case to stderr")
	fs.BoolVar(&o.Quiet, "quiet", false, "no progress lines on stderr (without it, a line at least every 10 s says how many cases are done of how many and the time left)")
	fs.StringVar(&o.Table, "table", "summary", "what stdout shows at the end: summary (failures with their repro lines, counts per variant by dtype; one screen) or full (also a row per case); the JSON and JUnit reports always hold every case")
	fs.StringVar(&o.ShmDir, "shm-dir", "/dev/shm", "host backend: directory of the shared-memory segments")
	fs.StringVar(&o.HostMax, "host-max-size", "2M", "host backend: largest size of the default matrix (explicit --size is not capped)")
	fs.IntVar(&o.Blocks, "blocks", 0, "override the variant's block count (0: registry default)")
	fs.IntVar(&o.Threads, "threads", 0, "override the variant's threads per block (0: registry default)")
	fs.Var(repeatFlag{&o.Plugins}, "plugin", "load an allreduce plugin, a shared library implementing plugin/artest_plugin.h (repeatable); its variants are named PLUGIN:VARIANT and run like any other")
	fs.Var(repeatFlag{&o.Params}, "param", "set a variant launch parameter, NAME=VALUE (repeatable): "+paramHelp(registry.Builtins()))
	fs.StringVar(&o.Fatbin, "fatbin", "", "cuda backend: kernel fatbin (default: artest.fatbin beside the binary, or $ARTEST_FATBIN)")
	fs.BoolVar(&o.AllowMulticast, "allow-multicast", false, "cuda backend: let the multimem variant create an NVLS multicast object; it runs only if NCCL_NVLS_ENABLE is not 0 and the GPU supports multicast, else its cases are skipped with the reason. Never on shared machines: a multicast object can take the node's GPUs out of service")
	fs.BoolVar(&o.ShareGPU, "share-gpus", false, "cuda backend: allow more local ranks than GPUs (rank r uses GPU r mod count) when an MPS server serves them (see `artest mps`); every custom launch's grid is capped so all ranks' blocks are resident at once; protocol coverage only, timings mean nothing")
	fs.BoolVar(&o.TimeSlicing, "time-slicing", false, "cuda backend: with --share-gpus, run even without MPS (the ranks' contexts take turns on the GPU: barrier kernels crawl and may hang)")
	fs.BoolVar(&o.RunKnownDefects, "run-known-defects", false, "run the cases a baseline is known to get wrong (a library's bug with a findings page, e.g. nccl-win's 16-bit cases at odd offsets with NCCL 2.28.9); skipped otherwise, saying why")
	fs.BoolVar(&o.AllowSharedTiming, "allow-shared-timing", false, "let bench and tune run while ranks share GPUs (their times mean nothing; the reports say so)")
	fs.StringVar(&o.NCCL, "nccl", "", "cuda backend: path of libnccl.so.2 (default: $ARTEST_NCCL, the loader path, well-known places)")
	fs.BoolVar(&o.Version, "version", false, "print the version and exit")
	fs.BoolVar(&o.Help, "help", false, "print this help and exit")
	addBenchFlags(fs, o)
	addModeFlags(fs)
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
	o.readModeFlags(fs)
	if fs.NArg() > 0 {
		return nil, exitcode.Usagef("unexpected argument %q (see artest --help)", fs.Arg(0))
	}
	if o.Help || o.Version {
		return o, nil
	}
	// The environment's knobs, once, on every backend; their values go
	// down from here.
	k, kerr := knobs.Read(os.LookupEnv)
	if kerr != nil {
		return nil, kerr
	}
	o.Knobs = k
	if o.Repro != "" {
		// One bundle a run: a second would silently replace the first.
		var bundles []string
		for _, g := range o.given {
			if g.name == "repro" {
				bundles = append(bundles, g.value)
			}
		}
		if len(bundles) > 1 {
			return nil, exitcode.Usagef("--repro given %d times (%s): a run reruns one bundle; run one artest per bundle", len(bundles), strings.Join(bundles, ", "))
		}
		// A rerun is a test run of the bundle's case; bench and tune
		// would silently become one.
		if o.Bench || o.Tune.On {
			word := "bench"
			if o.Tune.On {
				word = "tune"
			}
			return nil, exitcode.Usagef("%s --repro: a bundle reruns as a test run (artest --repro %s); to %s its case, give its ID: artest %s --case ID (the bundle's \"case\")", word, o.Repro, word, word)
		}
		return parseRepro(o.Repro, o.given)
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
	if o.ListVariants {
		// It lists every variant: a selection (or a size to check) would
		// be silently ignored.
		for _, name := range slices.Concat([]string{"list"}, reportFlagNames(), []string{"case"}, selectionFlags) {
			if o.set[name] {
				return nil, exitcode.Usagef("--list-variants prints the variant names and runs nothing: --%s would do nothing; drop one of them", name)
			}
		}
		return o, nil
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
		if err := o.inject.Parse(spec, o.variantSet.ExternalFaults()); err != nil {
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
	if o.set["reps"] && o.Reps == 0 && o.Iters > 0 && o.Stress == 0 && !o.Bench && !o.Tune.On {
		// Unset, --iters is the backend's default, not known yet here.
		iters := fmt.Sprintf("--iters %d", o.Iters)
		if !o.set["iters"] {
			iters = "the default --iters (20; 3 on the host backend)"
		}
		return nil, exitcode.Usagef("--reps 0 would time nothing while %s says to time calls: give --iters 0 to check only, or --reps 1 or more", iters)
	}
	if o.List {
		for _, name := range reportFlagNames() {
			if o.set[name] {
				return nil, exitcode.Usagef("--list prints the selected case IDs and runs nothing: --%s would write nothing; drop one of them", name)
			}
		}
	}
	if strings.ContainsAny(o.ReproDir, "\n\r") {
		return nil, exitcode.Usagef("--repro-dir %q: a directory name with a line break would break the one-line repro messages; choose another", o.ReproDir)
	}
	if o.Stress > maxStress {
		return nil, exitcode.Usagef("--stress %d: at most %d", o.Stress, maxStress)
	}
	for _, c := range []struct {
		name   string
		v, max int
	}{{"--iters", o.Iters, maxIters}, {"--warmup", o.Warmup, maxWarmup}, {"--reps", o.Reps, maxReps}} {
		if c.v > c.max {
			return nil, exitcode.Usagef("%s %d: at most %d", c.name, c.v, c.max)
		}
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
		return nil, exitcode.Usagef("--blocks %d: at most 256 (sigblock.MaxBlocks)", o.Blocks)
	}
	if o.Threads != 0 && (o.Threads%32 != 0 || o.Threads > kernels.MaxThreads) {
		return nil, exitcode.Usagef("--threads %d: want a multiple of 32 up to %d", o.Threads, kernels.MaxThreads)
	}
	if o.params, err = parseParams(o.variantSet, o.Params); err != nil {
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
	if err := checkParamsApply(o.variantSet, o.params, o.selectedVariants()); err != nil {
		return nil, err
	}
	switch {
	case o.StressSet != "default" && o.StressSet != "full":
		return nil, exitcode.Usagef("unknown --stress-set %q (valid: default, full)", o.StressSet)
	case o.set["stress-set"] && o.Stress == 0:
		return nil, exitcode.Usagef("--stress-set %s needs --stress N: it picks the stress matrix's cases", o.StressSet)
	}
	sel := cases.Selection{Variants: o.Variants, ModeWords: o.Modes, IDs: o.CaseIDs, Quick: o.Quick, Stress: o.Stress > 0, StressFull: o.StressSet == "full",
		Input: o.input}
	for _, name := range dedup(o.Colls) {
		c, err := reference.ParseColl(name)
		if err != nil {
			return nil, exitcode.Usagef("--coll: %v", err)
		}
		if !slices.Contains(sel.Colls, c) {
			sel.Colls = append(sel.Colls, c)
		}
	}
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

func printHelp(w io.Writer) {
	fmt.Fprintf(w, `artest %s: test, reference and benchmark suite for GPU allreduce kernels

usage: mpirun -np N artest [flags]
       mpirun -np N artest bench [flags]      benchmark: a size sweep (-b, -e, -f), timed
       mpirun -np N artest tune [flags]       tuning: sweep launch parameters, write the table (--json, --header, --go)
       artest compare OLD.json NEW.json [flags]   gate on performance (artest compare --help)
       artest plot REPORT.json OUT.svg|OUT.png    bench's figure from a saved report (artest plot --help)
       artest mps [--dir DIR] -- mpirun -np N artest --share-gpus ...   run a job under its own MPS daemon

`, Version)
	fs := newFlagSet(&Options{})
	fs.SetOutput(w)
	fs.PrintDefaults()
	fmt.Fprint(w, `
exit codes: 0 all passed (or skipped with a reason), 1 a case failed,
            2 usage or configuration error, 3 hang (watchdog), 4 environment
            (or a report not written whole), 130 SIGINT, 143 SIGTERM (the
            reports hold the cases that finished; under Open MPI's mpirun the
            ranks get SIGTERM and mpirun itself exits 1)
`)
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
