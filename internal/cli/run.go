// Package cli is artest's command line: flags to a plan, the agreement
// between ranks that they were all started the same way, backend selection,
// and the run. cmd/artest only initialises MPI and calls Main, so tests can
// drive the whole program in process over comm.NewLocal.
package cli

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/runner"
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
	startErr := perr
	if perr == nil {
		me.Hash = o.hash()
		me.Flags = o.givenText()
		if c.Rank() == 0 && !o.Help && !o.Version && !o.List {
			// Rank 0 writes the reports: a path it cannot write is found
			// now, not after the whole run.
			startErr = o.checkReportPaths()
		}
	}
	// Choose the backend before agreeing, so ranks that disagree say so.
	var be backend.Backend
	// --list opens the backend too: what the run drops on a backend (the
	// host's size cap) --list drops as well.
	if perr == nil && !o.Help && !o.Version {
		var berr error
		be, me.Backend, berr = openBackend(e, o)
		if berr != nil && startErr == nil {
			startErr = envError(berr)
		}
	}
	hellos, err := agree(c, me, startErr)
	if err != nil {
		say("%v", err)
		closeBackend(be, e.Stderr)
		return agreedCode(err)
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
	if err != nil {
		err = envError(fmt.Errorf("rank %d: %w", c.Rank(), err))
	}
	if err := comm.Agree(c, err); err != nil {
		say("%v", err)
		return agreedCode(err)
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
		Timeout: o.timeout, DeviceTimeout: o.deviceTimeout, Inject: o.inject, Schedules: o.sched,
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
