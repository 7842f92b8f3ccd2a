//go:build race

package mpi

// raceEnabled makes the tests build mpicheck with -race as well.
const raceEnabled = true
