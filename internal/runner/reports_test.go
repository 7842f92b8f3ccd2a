package runner

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/backend/host"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels/registry"
)

// worldRun is what runWorld saw: every rank's code and rank 0's output,
// every rank's stderr, and the world (who aborted it).
type worldRun struct {
	codes          []int
	stdout, stderr string
	stderrs        []string
	world          *comm.LocalWorld
}

// runWorld runs Run on n in-process ranks over the host backend with the
// cases ids; cfg fills in each rank's configuration (rank 0's writers are
// set after it).
func runWorld(t *testing.T, n int, ids []string, cfg func(rank int, c *Config)) worldRun {
	t.Helper()
	return runWorldWrapped(t, n, ids, nil, cfg)
}

// lockedBuffer is a writer the main thread and the watchdog share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runWorldWrapped is runWorld with each rank's backend wrapped (nil: as
// it is).
func runWorldWrapped(t *testing.T, n int, ids []string, wrap func(rank int, world *comm.LocalWorld, b *host.Backend) backend.Backend, cfg func(rank int, c *Config)) worldRun {
	t.Helper()
	sel := cases.Selection{IDs: ids}
	set := registry.Builtins()
	cs, err := cases.Build(set, sel, n)
	require.NoError(t, err)
	world := comm.NewLocalWorld(n)
	dir := t.TempDir()
	res := worldRun{codes: make([]int, n), world: world, stderrs: make([]string, n)}
	var out lockedBuffer
	errs := make([]*lockedBuffer, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		errs[r] = &lockedBuffer{}
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			hb := host.New(dir)
			defer hb.Close()
			var b backend.Backend = hb
			if wrap != nil {
				b = wrap(r, world, hb)
			}
			w, err := b.Setup(world.Rank(r), Capacity(cs), set)
			if err != nil {
				res.codes[r] = -1
				return
			}
			c := &Config{Variants: set, Cases: cs, Seed: 1, Iters: 1, Reps: 1, Timeout: 10 * time.Second,
				Header: report.Header{Tool: "artest", Ranks: n, Backend: "host"},
				Stdout: &bytes.Buffer{}, Stderr: errs[r], BoardDir: dir}
			if r == 0 {
				c.Stdout = &out
			}
			if cfg != nil {
				cfg(r, c)
			}
			res.codes[r] = Run(world.Rank(r), b, w, c)
		}(r)
	}
	wg.Wait()
	res.stdout, res.stderr = out.String(), errs[0].String()
	for r := range errs {
		res.stderrs[r] = errs[r].String()
	}
	return res
}

// failingStream writes the header, then fails every write as a full disk
// does.
type failingStream struct{ appended int }

func (f *failingStream) Append(report.Case) error {
	f.appended++
	return fmt.Errorf("write r.jsonl: %w", syscall.ENOSPC)
}

func (f *failingStream) Close(report.Summary) error {
	return fmt.Errorf("write r.jsonl: %w", syscall.ENOSPC)
}

// A JSON Lines file that could not be written whole is a report lost:
// the run says so once, stops streaming, runs every case, writes the
// other reports, and exits 4 with the summary saying 4.
func TestJSONLWriteErrorExitsFour(t *testing.T) {
	ids := []string{"oneshot/f32/sum/4KiB/oop-reg-plain/np2", "twoshot/f32/sum/4KiB/oop-reg-plain/np2"}
	js := filepath.Join(t.TempDir(), "r.json")
	stream := &failingStream{}
	res := runWorld(t, 2, ids, func(rank int, c *Config) {
		if rank == 0 {
			c.JSONPath, c.JSONLPath = js, "r.jsonl"
			c.createJSONL = func(string, *report.Header) (caseStream, error) { return stream, nil }
		}
	})
	require.Equal(t, []int{4, 4}, res.codes, res.stderr)
	require.Equal(t, 1, stream.appended, "streaming stops at the first error")
	require.Contains(t, res.stderr, "no space left on device (JSON Lines streaming stopped)")
	f, err := os.Open(js)
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	require.Len(t, rep.Cases, 2, "every case still ran")
	require.Equal(t, 2, rep.Summary.Pass)
	require.Equal(t, 4, rep.Summary.ExitCode)
	require.Contains(t, res.stdout, "# exit code 4")
}

// onWrite calls fn once, at the first write that contains want.
type onWrite struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	fn   func()
}

func (w *onWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.fn != nil && bytes.Contains(p, []byte(w.want)) {
		w.fn()
		w.fn = nil
	}
	return len(p), nil
}

func (w *onWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// A signal mid-run ends it at once with the reports of the cases that
// finished, marked interrupted, one line on stderr, and exit 143 for
// SIGTERM; the loop records no case after it.
func TestSignalEndsTheRunWithTheFinishedCases(t *testing.T) {
	ids := []string{"oneshot/f32/sum/256KiB/oop-reg-plain/np1", "oneshot/f32/sum/256KiB/ip-reg-plain/np1", "oneshot/f32/sum/256KiB/oop-stg-plain/np1"}
	dir := t.TempDir()
	js, jl := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.jsonl")
	sigs := make(chan os.Signal, 1)
	stderr := &onWrite{want: "# [1/3]", fn: func() { sigs <- syscall.SIGTERM }}
	var mu sync.Mutex
	var exits []int
	res := runWorld(t, 1, ids, func(rank int, c *Config) {
		c.Iters, c.Reps = 200, 3 // long enough cases that the signal lands mid-run
		c.Progress, c.Stderr, c.Signals = true, stderr, sigs
		c.JSONPath, c.JSONLPath = js, jl
		c.exit = func(code int) {
			mu.Lock()
			exits = append(exits, code)
			mu.Unlock()
		}
	})
	require.Equal(t, []int{143}, exits, stderr.String())
	require.Equal(t, []int{143}, res.codes)
	f, err := os.Open(js)
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	n := len(rep.Cases)
	require.True(t, n >= 1 && n < 3, "%d cases", n)
	require.Equal(t, "SIGTERM", rep.Summary.Interrupted)
	require.Equal(t, 143, rep.Summary.ExitCode)
	require.Equal(t, fmt.Sprintf("interrupted by SIGTERM after %d of 3 cases", n), rep.Summary.Error)
	require.Contains(t, stderr.String(), fmt.Sprintf("artest: interrupted by SIGTERM after %d of 3 cases; reports hold the finished cases\n", n))
	g, err := os.Open(jl)
	require.NoError(t, err)
	defer g.Close()
	st, complete, err := report.ReadJSONL(g)
	require.NoError(t, err)
	require.True(t, complete)
	require.Len(t, st.Cases, n)
	require.Equal(t, "SIGTERM", st.Summary.Interrupted)
}

// Evidence the run could not keep (a repro bundle not written) ends a run
// that would exit 0 or 1 with exit 4, on every rank, the reason in the
// summary; without it the same run exits 0.
func TestLostEvidenceExitsFour(t *testing.T) {
	ids := []string{"oneshot/f32/sum/4B/oop-reg-plain/np2"}
	js := filepath.Join(t.TempDir(), "r.json")
	res := runWorld(t, 2, ids, func(rank int, c *Config) {
		c.JSONPath = js
		c.LostEvidence = func() string { return "the repro bundle of X could not be written in D: no space left on device" }
	})
	require.Equal(t, []int{4, 4}, res.codes, res.stderr)
	f, err := os.Open(js)
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	require.Equal(t, 4, rep.Summary.ExitCode)
	require.Contains(t, rep.Summary.Error, "could not be written")

	res = runWorld(t, 2, ids, func(rank int, c *Config) { c.LostEvidence = func() string { return "" } })
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
}

// ARTEST_WITNESS_DUMP onto a full disk (/dev/full takes no byte): one line
// naming the variable, no more rows tried, and exit 4: the rows asked for
// are lost.
func TestWitnessDumpThatFailsIsOneLineAndExitFour(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	ids := []string{"oneshot/f32/sum/4B/oop-reg-plain/np2", "oneshot/f32/sum/4B/oop-reg-graph/np2", "oneshot/f32/sum/8B/oop-reg-plain/np2"}
	res := runWorld(t, 2, ids, func(rank int, c *Config) { c.Stress, c.Knobs.WitnessDump = 20, "/dev/full" })
	require.Equal(t, []int{4, 4}, res.codes, res.stderr)
	require.Equal(t, 1, strings.Count(res.stderr, "artest: ARTEST_WITNESS_DUMP /dev/full: "), res.stderr)
}
