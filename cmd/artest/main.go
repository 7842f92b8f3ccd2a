// Command artest tests, verifies and times allreduce kernels on every rank of
// an MPI job: mpirun -np N artest [flags]. See README.md.
package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/artest/artest/internal/cli"
	"github.com/artest/artest/internal/mps"
	"github.com/artest/artest/mpi"
)

func main() {
	// MPI's funneled threading and CUDA's current context are per OS
	// thread: every MPI and CUDA call happens on this one.
	runtime.LockOSThread()
	os.Exit(run())
}

func run() int {
	// Comparing two reports needs no world: no MPI, no launcher.
	if cli.IsCompare(os.Args[1:]) {
		return cli.CompareMain(os.Args[2:], os.Stdout, os.Stderr, os.Getenv)
	}
	// `artest mps -- mpirun ...` runs outside the job it wraps.
	if len(os.Args) > 1 && os.Args[1] == "mps" {
		return mps.Main(os.Args[2:], os.Stderr)
	}
	w, err := mpi.Init()
	if err != nil {
		// No usable MPI (or a launcher of another MPI): the environment.
		fmt.Fprintf(os.Stderr, "artest: %v\n", err)
		return 4
	}
	code := cli.Main(cli.Env{
		Comm: w, Args: os.Args[1:], Stdout: os.Stdout, Stderr: os.Stderr,
		MPIVersion: mpi.Version(), OpenCUDA: openCUDA,
	})
	if err := w.Finalize(); err != nil && code == 0 {
		fmt.Fprintf(os.Stderr, "artest: %v\n", err)
		code = 4
	}
	return code
}
