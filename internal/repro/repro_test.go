package repro

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

func TestFileName(t *testing.T) {
	require.Equal(t, "artest-repro-oneshot_bf16_sum_4100B_oop-reg-plain-off1_np4.json",
		FileName("oneshot/bf16/sum/4100B/oop-reg-plain-off1/np4"))
	require.Equal(t, "artest-repro-a_b_c.json", FileName("a b;c"))
}

func TestCommandQuotes(t *testing.T) {
	require.Equal(t, "mpirun -np 4 artest --case a/b --inject delay:rank=1,us=5 --shm-dir '/tmp/my dir' --x ''\\'''",
		Command(4, []string{"--case", "a/b", "--inject", "delay:rank=1,us=5", "--shm-dir", "/tmp/my dir", "--x", "'"}))
}

func TestLaunchCommand(t *testing.T) {
	args := []string{"--case", "a/b"}
	for _, tc := range []struct {
		name string
		l    Launch
		want string
	}{
		{"defaults", Launch{}, "mpirun -np 2 artest --case a/b"},
		{"binary", Launch{Binary: "/src/artest/bin/artest"}, "mpirun -np 2 /src/artest/bin/artest --case a/b"},
		{"oversubscribe", Launch{Oversubscribe: true}, "mpirun -np 2 --oversubscribe artest --case a/b"},
		{"env", Launch{Binary: "/my dir/artest", Oversubscribe: true, Env: []string{"ARTEST_EXAMPLE_BUG=no-end-barrier", "ARTEST_X=a b"}},
			"mpirun -np 2 --oversubscribe -x ARTEST_EXAMPLE_BUG=no-end-barrier -x 'ARTEST_X=a b' '/my dir/artest' --case a/b"},
		// Ranks that shared a GPU: the rerun starts its own MPS server.
		{"mps", Launch{MPS: true}, "artest mps -- mpirun -np 2 artest --case a/b"},
		{"mps, binary", Launch{MPS: true, Binary: "/src/bin/artest", Oversubscribe: true},
			"/src/bin/artest mps -- mpirun -np 2 --oversubscribe /src/bin/artest --case a/b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.l.Command(2, args))
		})
	}
}

func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	b := &Bundle{Case: "oneshot/f32/sum/4B/oop-reg-plain/np2", Ranks: 2, Args: []string{"--case", "oneshot/f32/sum/4B/oop-reg-plain/np2"},
		Result: report.Case{ID: "oneshot/f32/sum/4B/oop-reg-plain/np2", Verdict: report.Fail}}
	path, err := Write(dir, b, false)
	require.NoError(t, err)
	got, err := Read(path)
	require.NoError(t, err)
	require.Equal(t, FormatVersion, got.Format)
	require.Equal(t, b.Args, got.Args)

	for name, body := range map[string]string{
		"version":   `{"artest_repro": 99, "case": "x", "args": ["--case", "x"]}`,
		"no args":   `{"artest_repro": 1, "case": "x"}`,
		"recursive": `{"artest_repro": 1, "case": "x", "args": ["--repro", "other.json"]}`,
		"not json":  `{`,
	} {
		p := filepath.Join(dir, name+".json")
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		_, err := Read(p)
		require.Error(t, err, name)
	}
	_, err = Read(filepath.Join(dir, "missing.json"))
	require.ErrorContains(t, err, "read repro bundle")
}

// A bundle never replaces a file: a name taken, by a bundle or by anything
// else, moves the new bundle to the next free name.
func TestWriteNeverReplacesAFile(t *testing.T) {
	dir := t.TempDir()
	id := "oneshot/f32/sum/4B/oop-reg-plain/np2"
	taken := filepath.Join(dir, FileName(id))
	require.NoError(t, os.WriteFile(taken, []byte("not mine"), 0o644))
	b := &Bundle{Case: id, Ranks: 2, Args: []string{"--case", id}}
	var paths []string
	for range 3 {
		p, err := Write(dir, b, false)
		require.NoError(t, err)
		paths = append(paths, p)
	}
	require.Equal(t, []string{
		filepath.Join(dir, "artest-repro-oneshot_f32_sum_4B_oop-reg-plain_np2.2.json"),
		filepath.Join(dir, "artest-repro-oneshot_f32_sum_4B_oop-reg-plain_np2.3.json"),
		filepath.Join(dir, "artest-repro-oneshot_f32_sum_4B_oop-reg-plain_np2.4.json"),
	}, paths)
	got, err := os.ReadFile(taken)
	require.NoError(t, err)
	require.Equal(t, "not mine", string(got))
	rerun, err := Write(dir, b, true)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(dir, "artest-repro-oneshot_f32_sum_4B_oop-reg-plain_np2.rerun-1.json"), rerun)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 5, "no temporary file left")
	_, err = Read("/dev/zero")
	require.ErrorContains(t, err, "not a regular file")
}
