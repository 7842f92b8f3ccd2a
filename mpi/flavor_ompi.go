//go:build !mpich

package mpi

// #cgo pkg-config: ompi
import "C"

// flavor names the MPI this package was built against.
const flavor = "ompi"
