// Package mps decides whether the ranks of a node may share its GPUs, and
// runs a private MPS control daemon for one job (daemon.go).
//
// Ranks that share a GPU must run under MPS: without it each rank's context
// gets the GPU in time slices, so a block spinning at a barrier holds the
// GPU while the peer it waits for cannot run (on one H100, --share-gpus
// --quick at 2 and 4 ranks printed nothing in 150 s). Under MPS the ranks'
// kernels run at once, provided every block of every rank fits on the GPU
// together (internal/coresident sizes the grids for that).
package mps

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/artest/artest/internal/exitcode"
)

// DefaultPipeDir is where MPS clients and nvidia-cuda-mps-control meet when
// CUDA_MPS_PIPE_DIRECTORY is unset.
const DefaultPipeDir = "/tmp/nvidia-mps"

// Scheduler names how ranks that share a GPU get it.
const (
	SchedulerMPS         = "mps"          // an MPS server runs every rank's kernels at once
	SchedulerTimeSlicing = "time-slicing" // --time-slicing: the contexts take turns
)

// Sharing is how the ranks of one node use its GPUs: rank r takes GPU
// (local rank mod GPUs), so some GPU serves PerGPU ranks.
type Sharing struct {
	LocalRanks int
	GPUs       int
	PerGPU     int
	// Scheduler is "" when no GPU serves two ranks.
	Scheduler string
	PipeDir   string
}

// Shared says whether some GPU serves more than one rank.
func (s Sharing) Shared() bool { return s.PerGPU > 1 }

// String is the report's line for it.
func (s Sharing) String() string {
	if !s.Shared() {
		return fmt.Sprintf("%d ranks on %d GPUs, one each", s.LocalRanks, s.GPUs)
	}
	return fmt.Sprintf("%d ranks on %d GPU(s), up to %d per GPU, %s", s.LocalRanks, s.GPUs, s.PerGPU, s.Scheduler)
}

// Request is what the user asked for and what the machine has.
type Request struct {
	Host       string
	LocalRanks int
	GPUs       int
	Share      bool // --share-gpus
	// TimeSlicing (--time-slicing) accepts shared GPUs without MPS.
	TimeSlicing bool
	// MPSClient asks the driver whether an MPS server serves this process;
	// it is called only when GPUs are shared.
	MPSClient func() (bool, error)
	Getenv    func(string) string
}

// PipeDir is the MPS pipe directory this process's environment names.
func PipeDir(getenv func(string) string) string {
	if d := getenv("CUDA_MPS_PIPE_DIRECTORY"); d != "" {
		return d
	}
	return DefaultPipeDir
}

// Decide returns how the node's ranks share its GPUs, or the exit-4 error
// that says why they may not and what to do.
func Decide(r Request) (Sharing, error) {
	if r.Getenv == nil {
		r.Getenv = os.Getenv
	}
	s := Sharing{LocalRanks: r.LocalRanks, GPUs: r.GPUs, PipeDir: PipeDir(r.Getenv)}
	if r.GPUs < 1 {
		return s, exitcode.Envf("no GPU on %s", r.Host)
	}
	s.PerGPU = (r.LocalRanks + r.GPUs - 1) / r.GPUs
	if !s.Shared() {
		return s, nil
	}
	if !r.Share {
		return s, exitcode.Envf("%d ranks on %s but only %d GPUs (start at most %d ranks per node, or pass --share-gpus for protocol coverage)", r.LocalRanks, r.Host, r.GPUs, r.GPUs)
	}
	client, err := r.MPSClient()
	switch {
	case err == nil && client:
		s.Scheduler = SchedulerMPS
		return s, nil
	case r.TimeSlicing:
		s.Scheduler = SchedulerTimeSlicing
		return s, nil
	case err != nil:
		return s, exitcode.Envf("%d ranks share %d GPU(s) on %s, and the driver cannot say whether an MPS server serves them (%v); pass --time-slicing to run without MPS anyway", r.LocalRanks, r.GPUs, r.Host, err)
	}
	return s, exitcode.Envf("%d ranks share %d GPU(s) on %s, but no MPS server serves them (%s): without MPS their kernels take turns on the GPU and barrier kernels crawl or hang. Run the job under a private daemon, `artest mps -- mpirun -np %d artest --share-gpus ...`, or start one (nvidia-cuda-mps-control -d), or pass --time-slicing to run anyway", r.LocalRanks, r.GPUs, r.Host, daemonState(s.PipeDir), r.LocalRanks)
}

// codeUnknown is CUDA_ERROR_UNKNOWN.
const codeUnknown = 999

// ContextError is the error for a GPU context that could not be created
// (cuInit or cuDevicePrimaryCtxRetain failed with CUresult code). An MPS
// server that served a job which ended with kernels still running (a hang
// abort, a killed rank) refuses later clients until it is restarted: seen
// on an H100 with driver 580 as CUDA_ERROR_UNKNOWN (999) and as
// CUDA_ERROR_LAUNCH_FAILED (719) at cuDevicePrimaryCtxRetain. So with an
// MPS daemon running at the pipe directory, any such failure gets that
// likely cause and the fix; without one, the driver's words.
func ContextError(err error, code int, getenv func(string) string) error {
	dir := PipeDir(getenv)
	if !daemonRunning(dir) {
		if code == codeUnknown {
			return exitcode.Envf("%v (no MPS daemon at %s: the driver or GPU is in a bad state; nvidia-smi may say more)", err, dir)
		}
		return exitcode.Envf("%v", err)
	}
	return exitcode.Envf("%v: the MPS server at %s likely still holds a job that ended while its kernels ran (a hang or a killed rank), and refuses new clients until it restarts. Restart it (echo quit | CUDA_MPS_PIPE_DIRECTORY=%s nvidia-cuda-mps-control, then start it again), or run each job under `artest mps --`, which starts a fresh daemon for the job and stops it after", err, dir, dir)
}

// daemonPID reads the control daemon's pid file in dir: 0 when there is
// none. The daemon removes the file when it quits; its control socket stays.
func daemonPID(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "nvidia-cuda-mps-control.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// daemonRunning says whether dir's pid file names a live process.
func daemonRunning(dir string) bool {
	pid := daemonPID(dir)
	if pid == 0 {
		return false
	}
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

// daemonState says what is at the pipe directory, for messages.
func daemonState(dir string) string {
	switch pid := daemonPID(dir); {
	case pid == 0:
		return "no daemon's pid file in " + dir
	case daemonRunning(dir):
		return fmt.Sprintf("a daemon (pid %d) has its pipes in %s, but this rank is not its client: check that every rank sees CUDA_MPS_PIPE_DIRECTORY=%s and runs as the daemon's user", pid, dir, dir)
	default:
		return fmt.Sprintf("%s names pid %d, which is gone", dir, pid)
	}
}
