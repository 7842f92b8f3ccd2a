//go:build integration

package integration

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

// A CI timeout or a Ctrl-C mid-run: the reports hold the cases that
// finished, marked interrupted, and one line says so. Under mpirun the
// ranks get SIGTERM from mpirun whichever signal it got, and Open MPI
// 4.1's mpirun then exits 1 whatever its ranks return (docs/reports.md, Exit
// codes); run without mpirun, artest exits 128 plus the signal's number.
func TestSignalWritesTheFinishedCases(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		mpirun   bool
		sig      syscall.Signal
		sigName  string // what the ranks saw
		wantCode int    // the exit status of what was started
	}{
		{"mpirun SIGTERM", true, syscall.SIGTERM, "SIGTERM", 1},
		{"mpirun SIGINT", true, syscall.SIGINT, "SIGTERM", 1},
		{"singleton SIGINT", false, syscall.SIGINT, "SIGINT", 130},
		{"singleton SIGTERM", false, syscall.SIGTERM, "SIGTERM", 143},
		// A closed terminal or ssh connection: handled as SIGTERM is.
		{"singleton SIGHUP", false, syscall.SIGHUP, "SIGHUP", 129},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			js, ju, jl := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.jsonl")
			// 11 cases of about 1.5 s each on 2 cores: the run is far
			// from its end when the first case is in the stream.
			args := []string{"--backend", "host", "--repro-dir", dir, "--variant", "oneshot", "--dtype", "f32", "--op", "sum",
				"--size", "2M", "--iters", "200", "--json", js, "--junit", ju, "--jsonl", jl}
			var cmd *exec.Cmd
			if tc.mpirun {
				cmd = exec.Command("mpirun", append([]string{"-np", "2", "--oversubscribe", binary(t)}, args...)...)
			} else {
				cmd = exec.Command(binary(t), args...)
			}
			cmd.Env = append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()

			streamed := func() int {
				b, _ := os.ReadFile(jl)
				return len(caseLines(string(b)))
			}
			deadline := time.Now().Add(90 * time.Second)
			for streamed() < 1 {
				select {
				case <-done:
					t.Fatalf("the run ended before any case finished\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
				case <-time.After(50 * time.Millisecond):
				}
				require.True(t, time.Now().Before(deadline), "no case finished within 90s")
			}
			sent := time.Now()
			require.NoError(t, cmd.Process.Signal(tc.sig))
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("still running 30s after the signal\nstdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			}
			took := time.Since(sent)
			msg := "stdout:\n" + out.String() + "\nstderr:\n" + errb.String()
			require.Equal(t, tc.wantCode, cmd.ProcessState.ExitCode(), msg)
			// mpirun kills its ranks 1 s after it passed the signal on;
			// the ranks' reports are written well before.
			require.Less(t, took, 10*time.Second, msg)

			lines := artestLines(errb.String())
			require.Len(t, lines, 1, msg)
			m := regexp.MustCompile(`^artest: interrupted by ` + tc.sigName + ` after (\d+) of 11 cases; reports hold the finished cases$`).FindStringSubmatch(lines[0])
			require.NotNil(t, m, msg)
			n, err := strconv.Atoi(m[1])
			require.NoError(t, err)
			require.GreaterOrEqual(t, n, 1)
			require.Contains(t, out.String(), "# run stopped early: interrupted by "+tc.sigName)

			code := 128 + int(syscall.SIGTERM)
			switch tc.sigName {
			case "SIGINT":
				code = 128 + int(syscall.SIGINT)
			case "SIGHUP":
				code = 128 + int(syscall.SIGHUP)
			}
			rep := readReport(t, js)
			require.Equal(t, tc.sigName, rep.Summary.Interrupted)
			require.Equal(t, code, rep.Summary.ExitCode)
			require.Len(t, rep.Cases, n)
			require.Equal(t, n, rep.Summary.Pass)
			for _, c := range rep.Cases {
				require.Equal(t, report.Pass, c.Verdict, c.ID)
			}

			f, err := os.Open(jl)
			require.NoError(t, err)
			defer f.Close()
			st, complete, err := report.ReadJSONL(f)
			require.NoError(t, err)
			require.True(t, complete, "the summary line closes the stream")
			require.Len(t, st.Cases, n)
			require.Equal(t, tc.sigName, st.Summary.Interrupted)

			x, err := os.ReadFile(ju)
			require.NoError(t, err)
			var doc struct {
				Suites []struct {
					Name  string `xml:"name,attr"`
					Cases []struct {
						Name    string `xml:"name,attr"`
						Failure *struct {
							Type    string `xml:"type,attr"`
							Message string `xml:"message,attr"`
						} `xml:"failure"`
					} `xml:"testcase"`
				} `xml:"testsuite"`
			}
			require.NoError(t, xml.Unmarshal(x, &doc))
			last := doc.Suites[len(doc.Suites)-1]
			require.Equal(t, "artest.run", last.Name)
			require.NotNil(t, last.Cases[0].Failure)
			require.Equal(t, "interrupted", last.Cases[0].Failure.Type)
			require.Contains(t, last.Cases[0].Failure.Message, "interrupted by "+tc.sigName)
			require.Len(t, doc.Suites[0].Cases, n)
		})
	}
}
