package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
)

// --mode also takes the dash-joined form that case IDs and tables print.
func TestModeTakesTheCaseIDForm(t *testing.T) {
	tests := []struct {
		arg  string
		want []string
	}{
		{"oop-reg-plain", []string{"oop", "reg", "plain"}},
		{"ip-stg-graph,aligned", []string{"ip", "stg", "graph", "aligned"}},
		{"oop-reg-plain-off3", []string{"oop", "reg", "plain", "off"}},
		{"oop,reg", []string{"oop", "reg"}},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			o, err := Parse([]string{"--mode", tt.arg})
			require.NoError(t, err)
			require.Equal(t, tt.want, o.sel.ModeWords)
		})
	}
}

// nccl-tests' flags that artest does not take name artest's equivalent.
func TestNCCLTestsFlagsNameTheEquivalent(t *testing.T) {
	tests := []struct {
		flag, want string
	}{
		{"-n", "--iters"},
		{"-w", "--warmup"},
		{"-c", "always checked"},
		{"-G", "--mode graph"},
		{"-d", "--dtype"},
		{"-o", "--op"},
		{"-a", "--agg"},
		{"-J", "--json"},
		{"-z", "no blocking mode"},
		{"-g", "mpirun -np N"},
		{"-t", "mpirun -np N"},
	}
	for _, tt := range tests {
		t.Run(tt.flag, func(t *testing.T) {
			_, err := Parse([]string{"bench", tt.flag, "1"})
			require.ErrorContains(t, err, tt.flag+" is an nccl-tests flag")
			require.ErrorContains(t, err, tt.want)
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
		})
	}
}

func TestRanksWithDifferentFlagsNameTheFlag(t *testing.T) {
	res := runWorld(t, 3, func(r int) []string {
		if r == 2 {
			return []string{"--backend", "host", "--quick", "--size", "8K", "--seed", "3"}
		}
		return []string{"--backend", "host", "--quick", "--size", "4K", "--seed", "3"}
	})
	require.Equal(t, []int{2, 2, 2}, res.codes)
	require.Contains(t, res.stderr[0], "rank 2 has --size 8K, rank 0 --size 4K")
	require.NotContains(t, res.stderr[0], "--seed")
}

func TestShmDirOnAFileSaysItIsNotADirectory(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	res := runWorld(t, 2, same("--backend", "host", "--quick", "--shm-dir", file))
	require.Equal(t, []int{2, 2}, res.codes)
	require.Contains(t, res.stderr[0], "is not a directory")
	require.NotContains(t, res.stderr[0], "does not exist")
}

// artest compare needs no MPI; started under mpirun anyway, only rank 0
// prints.
func TestCompareUnderALauncherPrintsOnce(t *testing.T) {
	for _, env := range []struct {
		name, rank string
		prints     bool
	}{
		{"OMPI_COMM_WORLD_RANK", "0", true},
		{"OMPI_COMM_WORLD_RANK", "1", false},
		{"PMI_RANK", "3", false},
		{"", "", true},
	} {
		getenv := func(k string) string {
			if k == env.name {
				return env.rank
			}
			return ""
		}
		var out, errb bytes.Buffer
		code := CompareMain([]string{"--help"}, &out, &errb, getenv)
		require.Equal(t, exitcode.OK, code)
		require.Equal(t, env.prints, strings.Contains(out.String(), "usage: artest compare"), "%s=%s", env.name, env.rank)
	}
}
