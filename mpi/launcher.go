package mpi

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrLauncherMismatch means a launcher announced several ranks in the
// environment while MPI sees a world of one: the binary is linked against
// another MPI than the launcher's (Open MPI's mpirun starting an MPICH
// binary, or the reverse), so every process would run as a lone rank 0.
var ErrLauncherMismatch = errors.New("launcher started several ranks but MPI sees a world of one")

// launcherVars are the environment variables in which launchers announce the
// world size, most specific first: the first one set decides.
var launcherVars = []struct {
	name, launcher string
}{
	{"OMPI_COMM_WORLD_SIZE", "Open MPI mpirun"},
	{"PMI_SIZE", "MPICH/Intel MPI mpiexec (Hydra) or srun --mpi=pmi2"},
	{"MV2_COMM_WORLD_SIZE", "MVAPICH mpirun_rsh"},
	// Only srun sets the step variables: SLURM_NTASKS is also set inside
	// sbatch scripts and salloc shells, where a lone rank is legitimate.
	// This also covers srun --mpi=pmix, whose PMIX_RANK comes with no size.
	{"SLURM_STEP_NUM_TASKS", "Slurm srun"},
}

// checkLauncher returns an error wrapping ErrLauncherMismatch when MPI sees
// one rank but the environment says a launcher started more.
func checkLauncher(mpiSize int, lookupEnv func(string) (string, bool)) error {
	if mpiSize != 1 {
		return nil
	}
	for _, v := range launcherVars {
		val, ok := lookupEnv(v.name)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 1 {
			continue // not a size we can read; a later variable may be
		}
		if n == 1 {
			return nil
		}
		return fmt.Errorf("%w: %s=%s (set by %s) announces %d ranks, but MPI_Comm_size is 1; "+
			"this binary is linked against %q: launch it with that MPI's mpirun", ErrLauncherMismatch, v.name, val, v.launcher, n, Version())
	}
	return nil
}
