package mpi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckLauncher(t *testing.T) {
	tests := []struct {
		name    string
		mpiSize int
		env     map[string]string
		msg     string // "" : no error
	}{
		{"no launcher", 1, nil, ""},
		{"open mpi, one rank", 1, map[string]string{"OMPI_COMM_WORLD_SIZE": "1"}, ""},
		{"open mpi, four ranks", 1, map[string]string{"OMPI_COMM_WORLD_SIZE": "4"}, "OMPI_COMM_WORLD_SIZE=4 (set by Open MPI mpirun) announces 4 ranks"},
		{"hydra", 1, map[string]string{"PMI_SIZE": "8"}, "PMI_SIZE=8"},
		{"mvapich", 1, map[string]string{"MV2_COMM_WORLD_SIZE": "2"}, "MV2_COMM_WORLD_SIZE=2"},
		{"srun step", 1, map[string]string{"SLURM_STEP_NUM_TASKS": "2", "SLURM_NTASKS": "2"}, "SLURM_STEP_NUM_TASKS=2 (set by Slurm srun)"},
		{"srun pmix", 1, map[string]string{"PMIX_RANK": "0", "SLURM_STEP_NUM_TASKS": "4"}, "SLURM_STEP_NUM_TASKS=4"},
		// sbatch scripts and salloc shells set SLURM_NTASKS for the whole
		// allocation; a lone process there is legitimate.
		{"sbatch script", 1, map[string]string{"SLURM_NTASKS": "8", "SLURM_PROCID": "0"}, ""},
		{"pmix without size", 1, map[string]string{"PMIX_RANK": "0"}, ""},
		// mpirun -np 1 inside an srun step: Open MPI's own variable decides.
		{"mpirun in srun step", 1, map[string]string{"OMPI_COMM_WORLD_SIZE": "1", "SLURM_STEP_NUM_TASKS": "4"}, ""},
		{"unreadable size skipped", 1, map[string]string{"OMPI_COMM_WORLD_SIZE": "four", "PMI_SIZE": "3"}, "PMI_SIZE=3"},
		{"zero size skipped", 1, map[string]string{"OMPI_COMM_WORLD_SIZE": "0"}, ""},
		{"mpi sees the ranks", 4, map[string]string{"OMPI_COMM_WORLD_SIZE": "4"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkLauncher(tt.mpiSize, func(k string) (string, bool) {
				v, ok := tt.env[k]
				return v, ok
			})
			if tt.msg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrLauncherMismatch)
			require.ErrorContains(t, err, tt.msg)
			require.ErrorContains(t, err, "MPI_Comm_size is 1")
		})
	}
}

func TestVersionNamesTheLibrary(t *testing.T) {
	v := Version()
	require.NotContains(t, v, "\n")
	require.NotContains(t, v, "unknown")
	if flavor == "ompi" {
		require.Contains(t, v, "Open MPI")
	}
}

func TestNotInitialized(t *testing.T) {
	// This test binary never calls Init; mpicheck covers the initialized side.
	require.False(t, Initialized())
}

// Only the uninitialized side can be tested here (this binary never calls
// Init): Open MPI aborts the process if MPI_Error_string runs before
// MPI_Init, which is where a failed MPI_Init_thread leaves mpiError.
func TestMPIErrorOutsideInit(t *testing.T) {
	require.NoError(t, mpiError("MPI_Bcast", 0), "MPI_SUCCESS is no error")
	require.EqualError(t, mpiError("MPI_Init_thread", 8), "MPI_Init_thread: MPI error code 8")
}
