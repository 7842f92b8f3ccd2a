// Package cli is artest's command line. cmd/artest only calls Run, which
// starts MPI and runs Main on this rank; tests drive Main in process over
// comm.NewLocal. One job per file: run.go (Run, Main), flags.go (the flags
// and their checks), params.go (--param), agree.go (the ranks agree that
// they were started alike), plan.go (the backend and the runner's
// configuration), outputs.go (the output plan), formats.go (the report
// formats, one table: each one's flag, checks and writer), repro.go (rerun
// lines and repro bundles), and the subcommands and modes bench.go,
// compare.go, plugin.go and tune: its flags
// (tune_flags.go), the tuned table of an ordinary run and the launch a
// rerun line pins (tune_table.go), and the sweep (tune.go).
package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/mps"
	"github.com/artest/artest/internal/runner"
	"github.com/artest/artest/mpi"
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
	// HandleSignals: a test run ends on SIGINT or SIGTERM with its reports
	// written and exit code 130 or 143 (runner.Config.Signals). Run sets
	// it; tests that drive Main in process leave it off, since a signal
	// there is the test binary's.
	HandleSignals bool
}

// mpsWord is the subcommand that runs a job under its own MPS daemon.
const mpsWord = "mps"

// Run is the artest program: args without the program name, its output
// and its exit code. Call it from the main goroutine: MPI's funneled
// threading and CUDA's current context are per OS thread, so Run locks the
// goroutine to its thread and makes every MPI and CUDA call from it.
func Run(stdout, stderr io.Writer, args []string) int {
	runtime.LockOSThread()
	// Comparing two reports needs no world: no MPI, no launcher.
	if IsCompare(args) {
		return CompareMain(args[1:], stdout, stderr, os.Getenv)
	}
	if IsPlot(args) {
		return PlotMain(args[1:], stdout, stderr, os.Getenv)
	}
	// `artest mps -- mpirun ...` runs outside the job it wraps.
	if len(args) > 0 && args[0] == mpsWord {
		return mps.Main(args[1:], stderr)
	}
	w, err := mpi.Init()
	if err != nil {
		// No usable MPI (or a launcher of another MPI): the environment.
		fmt.Fprintf(stderr, "artest: %v\n", err)
		return exitcode.Env
	}
	code := Main(Env{
		Comm: w, Args: args, Stdout: stdout, Stderr: stderr,
		MPIVersion: mpi.Version(), OpenCUDA: openCUDA, HandleSignals: true,
	})
	if err := w.Finalize(); err != nil && code == exitcode.OK {
		fmt.Fprintf(stderr, "artest: %v\n", err)
		code = exitcode.Env
	}
	return code
}

// Main runs artest on this rank of e.Comm and returns the exit code, the
// same on every rank: a failure on one rank before the cases run reaches
// every rank through an agreement (agree.go).
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
	startErr := perr
	if perr == nil {
		me.Hash = o.hash()
		me.Flags = o.givenText()
		if c.Rank() == 0 && !o.Help && !o.Version && !o.List && !o.ListVariants {
			// Rank 0 writes the reports: a path it cannot write is found
			// now, not after the whole run.
			startErr = o.checkOutputPlan()
		}
	}
	// Choose the backend before agreeing, so ranks that disagree say so.
	var be backend.Backend
	// --list opens the backend too: what the run drops on a backend (the
	// host's size cap) --list drops as well.
	if perr == nil && !o.Help && !o.Version && !o.ListVariants {
		var berr error
		be, me.Backend, berr = openBackend(e, o)
		if berr != nil && startErr == nil {
			startErr = envError(berr)
		}
		if startErr == nil {
			startErr = o.checkTuneBackend(me.Backend)
		}
	}
	hellos, err := agree(c, me, startErr)
	if err != nil {
		say("%v", err)
		closeBackend(be, e.Stderr)
		return agreedCode(err)
	}
	for _, n := range o.notes {
		say("%s", n)
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
	if o.ListVariants {
		if c.Rank() == 0 {
			for _, name := range o.variantNames() {
				fmt.Fprintln(e.Stdout, name)
			}
		}
		return exitcode.OK
	}
	if be.Name() == "host" {
		o.onHost()
	}
	cs, err := cases.Build(o.variantSet, o.sel, c.Size())
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
			// The IDs stay alone on stdout, for scripts; what is known to be
			// slow goes to stderr, once per variant.
			for _, n := range slowerNotes(cs) {
				fmt.Fprintln(e.Stderr, n)
			}
		}
		closeBackend(be, e.Stderr)
		return exitcode.OK
	}
	defer closeBackend(be, e.Stderr)

	w, err := be.Setup(c, runner.Capacity(cs), o.variantSet)
	// Setup is collective; its failure on any rank must stop every rank.
	if err != nil {
		err = envError(fmt.Errorf("rank %d: %w", c.Rank(), err))
	}
	if err := comm.Agree(c, err); err != nil {
		say("%v", err)
		return agreedCode(err)
	}

	info := be.Info()
	if err := o.sharing(info); err != nil {
		// Every rank sees the same sharing, so every rank stops here.
		say("%v", err)
		return exitcode.Of(err)
	}
	cfg := o.runConfig(e, be.Name(), info, cs, hellos)
	defer o.teardownPlugins()
	if o.Tune.On {
		return runTune(e, o, c, be, w, cfg)
	}
	if e.HandleSignals {
		// From here on SIGINT, SIGTERM and SIGHUP (a closed terminal or
		// ssh connection) end the run with the reports of the finished
		// cases; before, they kill the process as usual.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
		defer signal.Stop(sigs)
		cfg.Signals = sigs
	}
	return runner.Run(c, be, w, cfg)
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

// slowerNotes are the selected variants' Slower statements, one line each
// in the order the variants first appear in cs.
func slowerNotes(cs []cases.Case) []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cs {
		v := c.Variant
		if v == nil || v.Slower == "" || seen[v.Name] {
			continue
		}
		seen[v.Name] = true
		out = append(out, fmt.Sprintf("# %s: %s", v.Name, v.Slower))
	}
	return out
}
