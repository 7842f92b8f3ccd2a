//go:build mpich

package mpi

// #cgo pkg-config: mpich
import "C"

// flavor names the MPI this package was built against.
const flavor = "mpich"
