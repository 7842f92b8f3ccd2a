package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/repro"
)

// A rerun that fails again writes its own bundle, never over the bundle it
// was started from (rerun with --seed 8, it would lose the original seed).
func TestReproRerunKeepsTheBundleItRead(t *testing.T) {
	dir := t.TempDir()
	res := runWorld(t, 2, same("--backend", "host", "--case", "twoshot/bf16/sum/4100B/oop-reg-plain/np2",
		"--iters", "0", "--inject", "skip-last", "--repro-dir", dir))
	require.Equal(t, []int{1, 1}, res.codes, res.stderr)
	first := filepath.Join(dir, repro.FileName("twoshot/bf16/sum/4100B/oop-reg-plain/np2"))
	original, err := os.ReadFile(first)
	require.NoError(t, err, res.stderr[0])

	res = runWorld(t, 2, same("--repro", first, "--seed", "8", "--repro-dir", dir))
	require.Equal(t, []int{1, 1}, res.codes, res.stderr)
	after, err := os.ReadFile(first)
	require.NoError(t, err)
	require.Equal(t, string(original), string(after), "the bundle read is kept as it was")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "the rerun's bundle sits beside it")
	var second string
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); p != first {
			second = p
		}
	}
	b, err := repro.Read(second)
	require.NoError(t, err)
	require.Contains(t, b.Args, "8", "the new bundle has the new seed")
	require.Contains(t, res.stderr[0], second)
}

func TestReproLaunchNamesTheRunsBinaryAndMpirunOptions(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "bin", "artest")
	other := filepath.Join(dir, "other", "artest")
	for _, p := range []string{exe, other} {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("x"), 0o755))
	}
	linked := filepath.Join(dir, "linked")
	require.NoError(t, os.Symlink(exe, linked))
	for _, tc := range []struct {
		name    string
		environ []string
		exe     string
		onPath  string
		want    string
	}{
		{"artest on PATH is the binary", nil, exe, linked, "mpirun -np 2 artest --case c"},
		{"another artest on PATH", nil, exe, other, "mpirun -np 2 " + exe + " --case c"},
		{"no artest on PATH", nil, exe, "", "mpirun -np 2 " + exe + " --case c"},
		{"oversubscribed", []string{"OMPI_MCA_rmaps_base_oversubscribe=1", "OMPI_MCA_mpi_oversubscribe=0"}, exe, linked,
			"mpirun -np 2 --oversubscribe artest --case c"},
		{"not oversubscribed", []string{"OMPI_MCA_rmaps_base_oversubscribe=0"}, exe, linked, "mpirun -np 2 artest --case c"},
		{"ARTEST variables", []string{"PATH=/bin", "ARTEST_EXAMPLE_BUG=no-end-barrier", "ARTEST_A=1", "XARTEST_B=2"}, exe, linked,
			"mpirun -np 2 -x ARTEST_A=1 -x ARTEST_EXAMPLE_BUG=no-end-barrier artest --case c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, reproLaunch(tc.environ, tc.exe, tc.onPath).Command(2, []string{"--case", "c"}))
		})
	}
}
