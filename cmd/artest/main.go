// Command artest tests, verifies and times allreduce kernels on every rank of
// an MPI job: mpirun -np N artest [flags]. See README.md.
package main

import (
	"os"

	"github.com/artest/artest/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Stdout, os.Stderr, os.Args[1:]))
}
