// Package reproimage tests ci/repro-in-image.sh, the rerun of a repro
// bundle inside artest's image, without a container engine: a fake podman
// first on PATH answers `image exists` and `image inspect`, and its `run`
// writes the rerun's report into the /out folder it was given and exits
// with the status the test chooses; a fake artest (ARTEST_BIN) prints the
// version line whose revision names the image.
package reproimage

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const caseID = "oneshot/f32/sum/4KiB/oop-reg-plain/np2"

// fakePodman logs each call's words, one a line, then "--" (FAKE_PODMAN_LOG);
// `run` copies FAKE_RERUN_JSON to OUT/rerun.json, OUT being the folder
// mounted at /out, and exits FAKE_PODMAN_RC.
const fakePodman = `#!/bin/sh
{ for a in "$@"; do printf '%s\n' "$a"; done; echo --; } >>"$FAKE_PODMAN_LOG"
case "$1 $2" in
"image exists") exit 0 ;;
"image inspect") echo 0123456789abcdef; exit 0 ;;
esac
[ "$1" = run ] || exit 0
out= prev=
for a in "$@"; do
	if [ "$prev" = -v ]; then
		case "$a" in *:/out) out=${a%:/out} ;; esac
	fi
	prev=$a
done
[ -d "$out" ] || { echo "fake podman: no /out folder" >&2; exit 125; }
if [ -n "${FAKE_RERUN_JSON:-}" ]; then cp "$FAKE_RERUN_JSON" "$out/rerun.json"; fi
exit "${FAKE_PODMAN_RC:-0}"
`

const fakeArtest = `#!/bin/sh
echo "artest 0.1.0 (abc1234, go1.26.0)"
`

// env is one test's sandbox: the fake tools, the script's path, and a
// folder for bundles and outputs.
type env struct {
	script, dir, log string
	vars             []string
}

func setUp(t *testing.T) *env {
	t.Helper()
	for _, tool := range []string{"bash", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("ci/repro-in-image.sh needs %s, which is not on PATH", tool)
		}
	}
	script, err := filepath.Abs("../../ci/repro-in-image.sh")
	require.NoError(t, err)
	dir := t.TempDir()
	bin := filepath.Join(dir, "fakebin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(bin, "podman"), []byte(fakePodman), 0o755))
	artest := filepath.Join(dir, "artest")
	require.NoError(t, os.WriteFile(artest, []byte(fakeArtest), 0o755))
	conf := filepath.Join(dir, "containers.conf")
	require.NoError(t, os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n"), 0o644))
	e := &env{script: script, dir: dir, log: filepath.Join(dir, "podman.log")}
	e.vars = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ARTEST_BIN="+artest,
		"CONTAINERS_CONF="+conf, // the script writes none into the repository
		"FAKE_PODMAN_LOG="+e.log,
	)
	return e
}

// bundle writes a host-backend bundle of caseID that recorded verdict,
// with args and command as given ("" and nil: the usual ones), and returns
// its path.
func (e *env) bundle(t *testing.T, name, verdict string, args []string, command string) string {
	t.Helper()
	if args == nil {
		args = []string{"--backend", "host", "--case", caseID, "--seed", "1", "--inject", "skip-last"}
	}
	if command == "" {
		command = "mpirun -np 2 --oversubscribe artest " + strings.Join(args, " ")
	}
	b, err := json.MarshalIndent(map[string]any{
		"artest_repro": 1,
		"case":         caseID,
		"ranks":        2,
		"command":      command,
		"args":         args,
		"header":       map[string]any{"tool": "artest", "backend": "host", "git_revision": "abc1234", "ranks": 2},
		"result":       map[string]any{"id": caseID, "verdict": verdict, "reason": "rank 0 mismatch: 1 of 1024 elements wrong\n  index 1023"},
	}, "", "  ")
	require.NoError(t, err)
	p := filepath.Join(e.dir, name)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

// rerunReport writes the report a rerun in the image would write, its one
// case ending with verdict, and returns its path.
func (e *env) rerunReport(t *testing.T, verdict, reason string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"header": map[string]any{"tool": "artest", "backend": "host"},
		"cases":  []map[string]any{{"id": caseID, "verdict": verdict, "reason": reason}},
	})
	require.NoError(t, err)
	p := filepath.Join(e.dir, "rerun-"+verdict+".json")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the script in dir with extra environment variables.
func (e *env) run(t *testing.T, dir string, extra []string, args ...string) result {
	t.Helper()
	cmd := exec.Command("bash", append([]string{e.script}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{}, e.vars...), extra...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return r
}

// podmanRuns are the word lists of the fake podman's `run` calls.
func (e *env) podmanRuns(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(e.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var runs [][]string
	var call []string
	for _, w := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if w != "--" {
			call = append(call, w)
			continue
		}
		if len(call) > 0 && call[0] == "run" {
			runs = append(runs, call)
		}
		call = nil
	}
	return runs
}

func TestRerunVerdict(t *testing.T) {
	tests := []struct {
		name     string
		recorded string // the bundle's verdict
		rc       int    // the container's exit status
		rerun    string // the rerun report's verdict, "" for none
		code     int
		line     string // the last line of stdout
	}{
		{"reproduced", "FAIL", 1, "FAIL", 0,
			"repro-in-image: reproduced: " + caseID + " failed again as recorded (FAIL: rank 0 mismatch: 1 of 1024 elements wrong)"},
		{"reproduced, no report", "FAIL", 1, "", 0,
			"repro-in-image: reproduced: " + caseID + " failed again as recorded (exit 1; "},
		{"a hang reproduced", "HUNG", 3, "HUNG", 0,
			"repro-in-image: reproduced: " + caseID + " hung again as recorded (HUNG: rank 0 mismatch: 1 of 1024 elements wrong)"},
		{"not reproduced", "FAIL", 0, "pass", 1,
			"repro-in-image: not reproduced: " + caseID + " passed in the image (the bundle recorded FAIL: rank 0 mismatch: 1 of 1024 elements wrong); races reproduce statistically, rerun it"},
		{"skipped in the image", "FAIL", 0, "skipped", 1,
			"repro-in-image: not reproduced: " + caseID + " was skipped in the image: rank 0 mismatch: 1 of 1024 elements wrong (the bundle recorded FAIL: "},
		{"hung where it failed", "FAIL", 3, "HUNG", 3,
			"repro-in-image: reproduced differently: " + caseID + " ended HUNG in the image where the bundle recorded FAIL: "},
		{"usage error inside", "FAIL", 2, "", 2,
			"repro-in-image: no verdict: the rerun of " + caseID + " in the image exited 2 (artest: usage error) before the case ran to a result"},
		{"environment inside", "FAIL", 4, "", 4,
			"repro-in-image: no verdict: the rerun of " + caseID + " in the image exited 4 (artest: the environment cannot run it)"},
		{"podman failed", "FAIL", 125, "", 125, "repro-in-image: no verdict: the rerun of " + caseID + " in the image exited 125 (podman: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setUp(t)
			b := e.bundle(t, "bundle.json", tt.recorded, nil, "")
			out := filepath.Join(e.dir, "out")
			extra := []string{"FAKE_PODMAN_RC=" + strconv.Itoa(tt.rc)}
			if tt.rerun != "" {
				extra = append(extra, "FAKE_RERUN_JSON="+e.rerunReport(t, tt.rerun, "rank 0 mismatch: 1 of 1024 elements wrong\nmore"))
			}
			r := e.run(t, e.dir, extra, "--run", b, out)
			require.Equal(t, tt.code, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			require.True(t, strings.HasPrefix(lines[len(lines)-1], tt.line), "last line %q, want %q", lines[len(lines)-1], tt.line)
			require.Len(t, e.podmanRuns(t), 1)
		})
	}
}

// A rerun report left in OUTDIR by an earlier rerun does not speak for
// this one.
func TestStaleRerunReportIsRemoved(t *testing.T) {
	e := setUp(t)
	b := e.bundle(t, "bundle.json", "FAIL", nil, "")
	out := filepath.Join(e.dir, "out")
	require.NoError(t, os.MkdirAll(out, 0o755))
	stale, err := os.ReadFile(e.rerunReport(t, "FAIL", "an earlier failure"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, "rerun.json"), stale, 0o644))
	r := e.run(t, e.dir, []string{"FAKE_PODMAN_RC=1"}, "--run", b, out)
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.NotContains(t, r.stdout, "an earlier failure")
	require.Contains(t, r.stdout, "no result for it")
}

// BUNDLE and OUTDIR are the caller's paths: the script used to resolve
// them after changing to the repository root ("no such bundle").
func TestRelativePathsFromAnotherDirectory(t *testing.T) {
	e := setUp(t)
	e.bundle(t, "bundle.json", "FAIL", nil, "")
	for _, run := range []bool{false, true} {
		args := []string{"bundle.json", "out"}
		if run {
			args = append([]string{"--run"}, args...)
		}
		r := e.run(t, e.dir, []string{"FAKE_PODMAN_RC=1", "FAKE_RERUN_JSON=" + e.rerunReport(t, "FAIL", "rank 0 mismatch")}, args...)
		require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
		require.Contains(t, r.stdout, "-v "+filepath.Join(e.dir, "bundle.json")+":/in/bundle.json:ro -v "+filepath.Join(e.dir, "out")+":/out ")
		require.DirExists(t, filepath.Join(e.dir, "out"))
		if run {
			require.Contains(t, r.stdout, "repro-in-image: reproduced: "+caseID)
			require.FileExists(t, filepath.Join(e.dir, "out", "rerun.json"))
		}
	}
	r := e.run(t, e.dir, nil, "missing.json", "out")
	require.Equal(t, 2, r.code)
	require.Equal(t, "repro-in-image: missing.json: no such bundle\n", r.stderr)
}

// A plugin variant cannot rerun in the image, whichever way its flag is
// written.
func TestPluginBundlesAreRefused(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"--plugin PATH", []string{"--backend", "host", "--case", caseID, "--plugin", "/x/ex.so"}},
		{"--plugin=PATH", []string{"--backend", "host", "--case", caseID, "--plugin=x.so"}},
		{"-plugin=PATH", []string{"--backend", "host", "--case", caseID, "-plugin=x.so"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := setUp(t)
			b := e.bundle(t, "bundle.json", "FAIL", tt.args, "")
			r := e.run(t, e.dir, nil, "--run", b, filepath.Join(e.dir, "out"))
			require.Equal(t, 2, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			require.Contains(t, r.stderr, "reruns a plugin variant")
			require.Contains(t, r.stderr, "the image holds no plugins")
			require.Empty(t, e.podmanRuns(t), "nothing ran")
		})
	}
	// A value that merely mentions a plugin is no plugin flag.
	e := setUp(t)
	b := e.bundle(t, "bundle.json", "FAIL", []string{"--backend", "host", "--case", caseID, "--note", "--plugin-free"}, "")
	r := e.run(t, e.dir, nil, b, filepath.Join(e.dir, "out"))
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
}

// The environment the bundle's run exported to its ranks (-x NAME=VALUE in
// its command, such as a planted bug) goes into the container and on to
// the ranks: without it the rerun passed with no word of what was missing.
func TestRecordedEnvironmentIsPassed(t *testing.T) {
	e := setUp(t)
	args := []string{"--backend", "host", "--case", caseID, "--seed", "1"}
	command := "mpirun -np 2 --oversubscribe -x ARTEST_EXAMPLE_BUG=no-end-barrier -x 'ARTEST_NOTE=two words' /abs/bin/artest " + strings.Join(args, " ")
	b := e.bundle(t, "bundle.json", "FAIL", args, command)
	r := e.run(t, e.dir, []string{"FAKE_PODMAN_RC=1"}, "--run", b, filepath.Join(e.dir, "out"))
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stderr, "ARTEST_EXAMPLE_BUG=no-end-barrier")
	runs := e.podmanRuns(t)
	require.Len(t, runs, 1)
	words := strings.Join(runs[0], "\n")
	require.Contains(t, words, "\n-e\nARTEST_EXAMPLE_BUG=no-end-barrier\n")
	require.Contains(t, words, "\n-e\nARTEST_NOTE=two words\n")
	require.Contains(t, words, "\n-x\nARTEST_EXAMPLE_BUG\n")
	require.Contains(t, words, "\n-x\nARTEST_NOTE\n")
	image := strings.Index(words, "\nlocalhost/artest:abc1234\n")
	require.Positive(t, image)
	require.Less(t, strings.Index(words, "\n-e\n"), image, "-e is podman's")
	require.Greater(t, strings.Index(words, "\n-x\n"), image, "-x is mpirun's")

	// A bundle without any runs with no -e.
	e = setUp(t)
	b = e.bundle(t, "bundle.json", "FAIL", nil, "")
	r = e.run(t, e.dir, []string{"FAKE_PODMAN_RC=1"}, "--run", b, filepath.Join(e.dir, "out"))
	require.Equal(t, 0, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.NotContains(t, strings.Join(e.podmanRuns(t)[0], "\n"), "\n-e\n")
}
