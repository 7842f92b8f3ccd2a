package cli

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/cuda"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/runner"
)

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

// hostStressMax caps the host backend's stress matrix unless
// --host-max-size is given: its two small sizes stay, the slow path goes.
const hostStressMax = 64 << 10

// onHost fits the run to the host backend: the default matrix capped at
// --host-max-size, a few timed calls, a generous device deadline, and
// bench's and tune's host defaults.
func (o *Options) onHost() {
	if len(o.sel.Sizes) == 0 && len(o.sel.IDs) == 0 {
		o.sel.MaxBytes, _ = cases.ParseSize(o.HostMax)
		if o.Stress > 0 && !o.set["host-max-size"] {
			// The stress matrix's slow path (1 MiB, misaligned) is there
			// for a GPU's long read window; the host's models read for
			// milliseconds at any size, and 10,000 iterations of it took
			// minutes per case on 2 cores.
			o.sel.MaxBytes = min(o.sel.MaxBytes, hostStressMax)
		}
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

// sharing fits the run to ranks that share GPUs (info.Sharing set): bench
// and tune refuse to time them unless --allow-shared-timing (a usage
// error), and a test run does a few timed calls.
func (o *Options) sharing(info backend.Info) error {
	if info.Sharing == "" {
		return nil
	}
	if (o.Bench || o.Tune.On) && !o.AllowSharedTiming {
		what := "bench"
		if o.Tune.On {
			what = "tune"
		}
		return exitcode.Usagef("%s times nothing useful while ranks share GPUs (%s): run one rank per GPU, or pass --allow-shared-timing to run anyway", what, info.Sharing)
	}
	if !o.Bench && !o.Tune.On {
		// Shared GPUs are for protocol coverage (the default matrix at 8
		// ranks on one H100 did 1961 of its 6594 cases in 270 s with the
		// full timing of 5 + 5 x 20 calls per case).
		o.fewTimedCalls()
	}
	return nil
}

// runConfig is the runner's configuration for cases cs on backend
// backendName: the options, the report header (hellos, rank 0's only,
// name the ranks' hosts), the repro lines and bundles of failing cases,
// and a --tuned table's launches.
func (o *Options) runConfig(e Env, backendName string, info backend.Info, cs []cases.Case, hellos []hello) *runner.Config {
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
	ranks := e.Comm.Size()
	cfg := &runner.Config{
		Variants: o.variantSet, Cases: cs, Seed: o.Seed,
		Warmup: o.Warmup, Iters: o.Iters, Reps: o.Reps, Stress: o.Stress,
		Timeout: o.timeout, DeviceTimeout: o.deviceTimeout, Inject: o.inject, Schedules: o.sched, Check: o.Check,
		Blocks: o.Blocks, Threads: o.Threads, Params: o.params, RunKnownDefects: o.RunKnownDefects,
		Stdout: e.Stdout, Stderr: e.Stderr, Progress: o.Progress, Quiet: o.Quiet, FullTable: o.Table == "full",
		Agg: o.agg, Bench: o.Bench,
		Knobs: o.Knobs,
		Header: report.Header{
			Tool: "artest", Version: Version, GitRevision: gitRevision(),
			Command: append([]string{"artest"}, e.Args...), Start: time.Now().UTC(),
			Hosts: hosts, Ranks: ranks, Backend: backendName, Seed: o.Seed, Input: o.input.String(),
			Iters: o.Iters, Warmup: o.Warmup, Stress: o.Stress, Inject: o.inject.Specs(),
			Reps: o.Reps, Agg: string(o.agg), Bench: o.Bench,
			Versions: versions, Devices: info.Devices, Topology: info.Topology,
			SharedGPUs: info.Sharing, Plugins: o.pluginInfo(),
		},
	}
	cfg.SetModeFlags(o.ModeArgs) // each mode says itself in the header (its prepareRun)
	cfg.AfterReports = o.planReports(cfg, e.Stderr)
	var lost string
	cfg.OnFail = o.onFail(e.Stderr, ranks, backendName, &cfg.Header, &lost)
	cfg.LostEvidence = func() string { return lost }
	o.applyTuned(cfg, backendName)
	return cfg
}

// openCUDA opens the cuda backend with the options' settings (Env.OpenCUDA
// of the binary).
func openCUDA(o *Options, c comm.Comm) (backend.Backend, error) {
	b, err := cuda.Open(cuda.Options{Fatbin: o.Fatbin, NCCL: o.NCCL, ShareGPUs: o.ShareGPU, TimeSlicing: o.TimeSlicing, AllowMulticast: o.AllowMulticast, NCCLMaxCTAs: o.smBudget, Knobs: o.Knobs}, c)
	if err != nil {
		return nil, err
	}
	return b, nil
}
