package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
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

// Past the bound on repro bundles, the note points at the JSON report only
// when the run writes one.
func TestReproBoundNamesTheJSONReportOnlyWithJSON(t *testing.T) {
	for _, tc := range []struct {
		name, json, want string
	}{
		{"without --json", "", "(--table full lists them all)\n"},
		{"with --json", "run.json", "(--table full, or the JSON report, lists them all)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{ReproDir: t.TempDir(), JSON: tc.json}
			var stderr strings.Builder
			var lost string
			fail := o.onFail(&stderr, 2, "host", &report.Header{}, &lost)
			for i := 0; i <= maxReproBundles; i++ {
				fail(report.Case{ID: fmt.Sprintf("oneshot/f32/sum/%dB/oop-reg-plain/np2", 4*(i+1)), Verdict: report.Fail})
			}
			require.Contains(t, stderr.String(), "artest: more failing cases: no more repro lines or bundles after 20 "+tc.want)
		})
	}
}

// Without --repro-dir and --json the bundles go to the run's own folder,
// artest-repro/<start time>, created at the first failure; the output plan
// checks the nearest folder that exists and only notes one it cannot use.
func TestReproBundlesGoToTheRunFolder(t *testing.T) {
	for _, tc := range []struct {
		name      string
		o         Options
		prepare   func(t *testing.T)
		wantDir   string // "" : the run folder
		wantCheck string
		wantNote  bool
	}{
		{"--repro-dir", Options{ReproDir: "given"}, func(t *testing.T) { require.NoError(t, os.Mkdir("given", 0o755)) }, "given", "given", false},
		{"--json", Options{JSON: "out/run.json"}, func(t *testing.T) { require.NoError(t, os.Mkdir("out", 0o755)) }, "out", "out", false},
		{"neither", Options{}, func(*testing.T) {}, "", ".", false},
		{"neither, artest-repro exists", Options{}, func(t *testing.T) { require.NoError(t, os.Mkdir(reproRoot, 0o755)) }, "", reproRoot, false},
		{"neither, artest-repro is a file", Options{}, func(t *testing.T) { require.NoError(t, os.WriteFile(reproRoot, nil, 0o644)) }, "", reproRoot, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			tc.prepare(t)
			o := tc.o
			dir := o.reproDir()
			if tc.wantDir == "" {
				require.Regexp(t, `^artest-repro/\d{8}T\d{6}Z$`, dir)
			} else {
				require.Equal(t, tc.wantDir, dir)
			}
			require.Equal(t, dir, o.reproDir(), "fixed at its first use")
			require.Equal(t, tc.wantCheck, o.reproDirCheckable())
			require.NoError(t, o.checkOutputPlan(), "a default folder that cannot be made is a note")
			require.Equal(t, tc.wantNote, len(o.notes) > 0, "%q", o.notes)
			var stderr strings.Builder
			var lost string
			o.onFail(&stderr, 2, "host", &report.Header{}, &lost)(report.Case{ID: "oneshot/f32/sum/4B/oop-reg-plain/np2", Verdict: report.Fail})
			bundle := filepath.Join(dir, repro.FileName("oneshot/f32/sum/4B/oop-reg-plain/np2"))
			if tc.wantNote {
				require.NoFileExists(t, bundle)
				require.Contains(t, lost, "could not be written", "a bundle not written is lost evidence")
				require.Contains(t, stderr.String(), "artest: the repro bundle of oneshot/f32/sum/4B/oop-reg-plain/np2 could not be written in ")
				return
			}
			require.Empty(t, lost)
			require.FileExists(t, bundle)
			require.Contains(t, stderr.String(), "(bundle: "+bundle+";")
			here, err := filepath.Glob("artest-repro-*.json")
			require.NoError(t, err)
			require.Empty(t, here, "no bundle in the working directory")
		})
	}
}

// A bundle that cannot be written (a full disk, a folder gone) is its own
// line, not a parenthesis in the repro line, and is recorded as lost
// evidence, which ends the run with exit 4 (the runner's LostEvidence).
func TestReproBundleThatCannotBeWrittenIsLost(t *testing.T) {
	// A --repro-dir that became a file after the output plan checked it:
	// the write fails with an error from the file system, as on a full
	// disk, whoever runs the test.
	dir := filepath.Join(t.TempDir(), "bundles")
	require.NoError(t, os.WriteFile(dir, nil, 0o644))
	o := &Options{ReproDir: dir}
	var stderr strings.Builder
	var lost string
	o.onFail(&stderr, 2, "host", &report.Header{}, &lost)(report.Case{ID: "oneshot/f32/sum/4B/oop-reg-plain/np2", Verdict: report.Fail})
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	require.Len(t, lines, 2, stderr.String())
	require.NotContains(t, lines[0], "(", "the repro line carries no error in a parenthesis")
	require.Contains(t, lines[1], "could not be written in "+dir)
	require.Contains(t, lost, "oneshot/f32/sum/4B/oop-reg-plain/np2")
}

// A run whose ranks shared a GPU prints its repro line under `artest mps
// --`, as it ran: without an MPS server the rerun would stop at exit 4.
// With --time-slicing it needed none.
func TestReproLineOfSharedGPUsStartsMPS(t *testing.T) {
	for _, tc := range []struct {
		name        string
		timeSlicing bool
		want        bool
	}{{"under MPS", false, true}, {"time-slicing", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			o := &Options{ReproDir: t.TempDir(), TimeSlicing: tc.timeSlicing}
			var stderr strings.Builder
			var lost string
			h := &report.Header{SharedGPUs: "2 ranks on 1 GPU under MPS"}
			line := o.onFail(&stderr, 2, "cuda", h, &lost)(report.Case{ID: "oneshot/f32/sum/4B/oop-reg-plain/np2", Verdict: report.Fail})
			require.Equal(t, tc.want, strings.Contains(line, " mps -- mpirun -np 2 "), line)
		})
	}
}
