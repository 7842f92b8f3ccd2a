package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/backend"
	"github.com/artest/artest/internal/comm"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/repro"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
)

type result struct {
	codes          []int
	stdout, stderr []string
	abortCode      int
	aborted        bool
}

// runWorld runs Main on n in-process ranks, each with its own arguments
// (argsFor(rank)), and collects what every rank returned and printed.
func runWorld(t *testing.T, n int, argsFor func(rank int) []string) result {
	t.Helper()
	return runWorldWith(t, n, argsFor, nil)
}

// runWorldWith is runWorld with Env.OpenCUDA set to openCUDA.
func runWorldWith(t *testing.T, n int, argsFor func(rank int) []string, openCUDA func(*Options, comm.Comm) (backend.Backend, error)) result {
	t.Helper()
	world := comm.NewLocalWorld(n)
	// Failing cases write repro bundles; keep them out of the source tree.
	reproDir := t.TempDir()
	withRepro := func(r int) []string {
		args := argsFor(r)
		if slices.Contains(args, "--repro-dir") {
			return args
		}
		return append(append([]string(nil), args...), "--repro-dir", reproDir)
	}
	res := result{codes: make([]int, n), stdout: make([]string, n), stderr: make([]string, n)}
	for i := range res.codes {
		res.codes[i] = -1 // aborted ranks never return
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func(r int) {
			defer wg.Done()
			var out, errb bytes.Buffer
			defer func() {
				mu.Lock()
				res.stdout[r], res.stderr[r] = out.String(), errb.String()
				mu.Unlock()
			}()
			code := Main(Env{Comm: world.Rank(r), Args: withRepro(r), Stdout: &out, Stderr: &errb, OpenCUDA: openCUDA})
			res.codes[r] = code
		}(r)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("world did not finish within 120s")
	}
	res.abortCode, res.aborted = world.AbortCode()
	return res
}

func same(args ...string) func(int) []string { return func(int) []string { return args } }

func TestQuickHostMatrixPasses(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	ju := filepath.Join(dir, "r.xml")
	// Two custom variants and nccl, without the quick matrix's 1 MiB: the
	// in-process world shares 2 CI cores; every variant's whole quick
	// matrix runs under mpirun in test/integration.
	res := runWorld(t, 4, same("--backend", "host", "--quick", "--iters", "2", "--reps", "2", "--warmup", "1",
		"--dtype", "bf16,f32", "--variant", "oneshot,twoshot,nccl", "--size", "4,4100,64K", "--json", js, "--junit", ju))
	require.False(t, res.aborted, res.stderr)
	require.Equal(t, []int{0, 0, 0, 0}, res.codes, "stderr: %v\nstdout: %s", res.stderr, res.stdout[0])
	require.Contains(t, res.stdout[0], "oneshot")
	require.Contains(t, res.stdout[0], "twoshot")
	require.Empty(t, res.stdout[1], "only rank 0 prints")

	f, err := os.Open(js)
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	require.Equal(t, "host", rep.Header.Backend)
	require.Equal(t, 4, rep.Header.Ranks)
	require.Zero(t, rep.Summary.Fail)
	require.Positive(t, rep.Summary.Pass)
	for _, c := range rep.Cases {
		switch c.Variant {
		case "nccl":
			require.Equal(t, report.Skipped, c.Verdict, c.ID)
			require.Contains(t, c.Reason, "cuda backend")
		default:
			if c.Verdict == report.Skipped && c.Reason == c.Variant+" has no "+c.Op+" kernel" {
				continue // a variant without this op (multimem: sum only)
			}
			require.Equal(t, report.Pass, c.Verdict, "%s: %s", c.ID, c.Reason)
			require.Positive(t, c.TimeUS, c.ID)
		}
	}
	x, err := os.ReadFile(ju)
	require.NoError(t, err)
	require.Contains(t, string(x), "<testsuites")
}

// The end barrier's acceptance check, in process: without the end barrier and with
// rank 1 slow to read, a fast rank overwrites its registered input with the
// next iteration's while rank 1 still reads it.
func TestNoEndBarrierUnderStressFails(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	args := []string{"--backend", "host", "--variant", "oneshot", "--dtype", "f32", "--op", "sum",
		"--size", "4K", "--mode", "oop,reg,plain,aligned", "--stress", "30", "--json", js}
	res := runWorld(t, 4, same(append(args, "--inject", "no-end-barrier", "--inject", "delay:rank=1,us=500")...))
	require.Equal(t, []int{1, 1, 1, 1}, res.codes, res.stderr)
	require.Contains(t, res.stdout[0], "FAIL")
	require.Contains(t, res.stdout[0], "oneshot/f32/sum/4KiB/oop-reg-plain/np4")
	rep := readReport(t, js)
	require.Equal(t, 1, rep.Summary.Fail)
	require.Equal(t, 1, rep.Summary.ExitCode)
	require.Equal(t, []string{"no-end-barrier", "delay:rank=1,us=500"}, rep.Header.Inject)
	// The rank that read late is the one that saw wrong values.
	ranks := map[int]bool{}
	for _, f := range rep.Cases[0].Failures {
		ranks[f.Rank] = true
	}
	require.True(t, ranks[1], "rank 1 read its peers' next inputs: %+v", rep.Cases[0].Failures)

	// The same without the faults passes.
	res = runWorld(t, 4, same(args...))
	require.Equal(t, []int{0, 0, 0, 0}, res.codes, res.stderr)
}

func readReport(t *testing.T, path string) *report.Report {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rep, err := report.ReadJSON(f)
	require.NoError(t, err)
	return rep
}

// twoshot's planted bugs fail their case, each caught by its own check.
func TestPlantedBugsAreCaught(t *testing.T) {
	for _, tc := range []struct {
		inject, mode, kind string
		more               []string
	}{
		{"skip-last", "oop,reg,plain,aligned", "mismatch", nil}, // poison catches the unwritten element
		{"overrun", "oop,stg,plain,aligned", "guard", nil},      // guard bytes catch the write past the end
		{"wrong-kernel", "oop,reg,plain,aligned", "trace", nil}, // the trace word catches the wrong dispatch
		{"no-start-barrier", "oop,stg,plain,aligned", "", nil},  // may or may not race in one call: see stress test
		// The reduce-scatter result is read before the slow rank wrote it.
		{"no-mid-barrier", "oop,reg,plain,aligned", "mismatch", []string{"--inject", "delay:rank=1,us=2000", "--stress", "20"}},
	} {
		if tc.kind == "" {
			continue
		}
		t.Run(tc.inject, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "r.json")
			args := []string{"--backend", "host", "--variant", "twoshot", "--dtype", "bf16", "--op", "sum",
				"--size", "4100", "--mode", tc.mode, "--iters", "0", "--inject", tc.inject, "--json", js}
			res := runWorld(t, 2, same(append(args, tc.more...)...))
			require.Equal(t, []int{1, 1}, res.codes, res.stderr)
			rep := readReport(t, js)
			require.Len(t, rep.Cases, 1)
			require.Equal(t, 1, rep.Summary.Fail)
			var kinds []string
			for _, f := range rep.Cases[0].Failures {
				kinds = append(kinds, f.Kind)
			}
			require.Contains(t, kinds, tc.kind, rep.Cases[0].Reason)
		})
	}
}

func TestHangIsDiagnosedAndAborts(t *testing.T) {
	dir := t.TempDir()
	js, ju, jl := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml"), filepath.Join(dir, "r.jsonl")
	const id = "oneshot/f32/sum/4KiB/oop-reg-plain/np4"
	res := runWorld(t, 4, same("--backend", "host", "--variant", "oneshot", "--dtype", "f32", "--op", "sum",
		"--size", "4K", "--mode", "oop,reg,plain,aligned", "--inject", "delay:rank=2,us=3000000", "--timeout", "300ms",
		"--json", js, "--junit", ju, "--jsonl", jl))
	require.True(t, res.aborted)
	require.Equal(t, 3, res.abortCode)
	require.Contains(t, res.stderr[0], "hang in case "+id)
	require.Contains(t, res.stderr[0], "for rank 2")

	// The hung case is in every report under its own ID, as hung, with
	// the diagnosis.
	rep := readReport(t, js)
	require.Equal(t, 3, rep.Summary.ExitCode)
	require.Len(t, rep.Cases, 1)
	require.Equal(t, id, rep.Cases[0].ID)
	require.Equal(t, report.Hung, rep.Cases[0].Verdict)
	require.Contains(t, rep.Cases[0].Reason, "for rank 2")
	require.Equal(t, 1, rep.Summary.Fail, "a hung case counts as failed")
	x, err := os.ReadFile(ju)
	require.NoError(t, err)
	require.Contains(t, string(x), `name="`+id+`"`)
	require.Contains(t, string(x), `type="hang"`)
	f, err := os.Open(jl)
	require.NoError(t, err)
	defer f.Close()
	streamed, _, err := report.ReadJSONL(f)
	require.NoError(t, err)
	require.Len(t, streamed.Cases, 1)
	require.Equal(t, report.Hung, streamed.Cases[0].Verdict)
}

func TestUsageErrorsExit2WithOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--variant", "threeshot"}, "unknown variant"},
		{[]string{"--dtype", "f64"}, "unknown dtype"},
		{[]string{"--size", "1X"}, "bad size"},
		{[]string{"--size", "6", "--dtype", "f32"}, "not a whole number of f32"},
		{[]string{"--inject", "no-such-fault"}, "unknown --inject"},
		{[]string{"--stress", "5", "--schedule", "jitter"}, "artest: unknown --schedule \"jitter\""},
		{[]string{"--timeout", "soon"}, "bad --timeout"},
		{[]string{"--device-timeout", "-1s"}, "bad --device-timeout"},
		{[]string{"--device-timeout", "soon"}, "bad --device-timeout"},
		{[]string{"--no-such-flag"}, "flag provided but not defined"},
		{[]string{"--backend", "tpu"}, "unknown --backend"},
		{[]string{"--backend", "host", "--shm-dir", "/no/such/dir", "--quick"}, "does not exist"},
		{[]string{"--case", "oneshot/bf16/sum/1MiB/oop-reg-plain/np8"}, "is for 8 ranks"},
		{[]string{"--quick", "--inject", "delay:rank=99,us=10"}, "rank 99, but the job has 2 ranks (0 to 1)"},
		{[]string{"--quick", "--inject", "size-mismatch:rank=5"}, "rank 5, but the job has 2 ranks"},
		{[]string{"--quick", "--inject", "reregister:rank=2"}, "rank 2, but the job has 2 ranks"},
	} {
		res := runWorld(t, 2, same(append([]string{"--backend", "host"}, tc.args...)...))
		require.Equal(t, []int{2, 2}, res.codes, "%v: %v", tc.args, res.stderr)
		lines := strings.Split(strings.TrimSpace(res.stderr[0]), "\n")
		require.Len(t, lines, 1, "%v: %q", tc.args, res.stderr[0])
		require.Contains(t, lines[0], tc.want)
		require.Empty(t, res.stderr[1], "only rank 0 speaks")
	}
}

func TestRanksWithDifferentFlagsExit2(t *testing.T) {
	res := runWorld(t, 3, func(r int) []string {
		if r == 2 {
			return []string{"--backend", "host", "--quick", "--size", "8K"}
		}
		return []string{"--backend", "host", "--quick", "--size", "4K"}
	})
	require.Equal(t, []int{2, 2, 2}, res.codes)
	require.Contains(t, res.stderr[0], "different flags: rank 2")
}

func TestListPrintsIDs(t *testing.T) {
	res := runWorld(t, 2, same("--list", "--variant", "twoshot", "--dtype", "f16", "--op", "sum", "--size", "2", "--mode", "oop,reg,plain,aligned"))
	require.Equal(t, []int{0, 0}, res.codes)
	require.Equal(t, "twoshot/f16/sum/2B/oop-reg-plain/np2\n", res.stdout[0])
}

// --list-variants prints every built-in variant's name, one per line in
// registry order, on rank 0 alone, and opens no backend (an --shm-dir that
// does not exist stops a run that opens the host backend); a flag that
// would write a report is refused.
func TestListVariantsPrintsNames(t *testing.T) {
	var want strings.Builder
	for _, f := range registry.Builtin {
		want.WriteString(f().Name + "\n")
	}
	res := runWorld(t, 2, same("--list-variants", "--backend", "host", "--shm-dir", "/no/such/dir"))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	require.Equal(t, want.String(), res.stdout[0])
	require.Empty(t, res.stdout[1])

	res = runWorld(t, 2, same("--list-variants", "--json", filepath.Join(t.TempDir(), "r.json")))
	require.Equal(t, []int{2, 2}, res.codes)
	require.Contains(t, res.stderr[0], "--list-variants prints the variant names and runs nothing: --json would do nothing")
}

func TestJSONHeaderCarriesTheCommand(t *testing.T) {
	js := filepath.Join(t.TempDir(), "r.json")
	args := []string{"--backend", "host", "--case", "oneshot/f16/max/6B/ip-stg-graph/np2", "--seed", "7", "--json", js,
		"--repro-dir", t.TempDir()}
	res := runWorld(t, 2, same(args...))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	rep := readReport(t, js)
	require.Equal(t, uint64(7), rep.Header.Seed)
	require.Equal(t, append([]string{"artest"}, args...), rep.Header.Command)
	require.Equal(t, []string{"localhost", "localhost"}, rep.Header.Hosts)
	b, err := json.Marshal(rep.Header.Versions)
	require.NoError(t, err)
	require.Contains(t, string(b), "artest")
}

// Report paths are checked before the first case: a path that cannot be
// written ends the run at once with one line, not after all the work.
func TestReportPathsAreCheckedBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no", "such", "dir", "r")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"--json in a missing directory", []string{"--json", missing + ".json"}, 4, "--json"},
		{"--junit in a missing directory", []string{"--junit", missing + ".xml"}, 4, "--junit"},
		{"--plot in a missing directory", []string{"--plot", missing + ".svg"}, 4, "--plot"},
		{"--jsonl in a missing directory", []string{"--jsonl", missing + ".jsonl"}, 4, "--jsonl"},
		{"--json names a directory", []string{"--json", dir}, 2, "is a directory"},
		{"--junit names a directory", []string{"--junit", dir}, 2, "is a directory"},
		{"--jsonl names a directory", []string{"--jsonl", dir}, 2, "is a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := runWorld(t, 2, same(append([]string{"--backend", "host", "--case", "oneshot/f32/sum/4KiB/oop-reg-plain/np2"}, tt.args...)...))
			require.Equal(t, []int{tt.code, tt.code}, res.codes, res.stderr)
			lines := strings.Split(strings.TrimSpace(res.stderr[0]), "\n")
			require.Len(t, lines, 1, res.stderr[0])
			require.Contains(t, lines[0], tt.want)
			require.Empty(t, res.stdout[0], "no case ran")
		})
	}
}

// The default output is a summary that fits one screen: failures first with
// their repro lines, no case rows; --table full prints every case.
func TestOutputIsASummaryUnlessTableFull(t *testing.T) {
	args := []string{"--backend", "host", "--quick", "--variant", "twoshot,nccl", "--dtype", "bf16", "--iters", "0", "--inject", "skip-last"}
	res := runWorld(t, 2, same(args...))
	require.Equal(t, []int{1, 1}, res.codes, res.stderr)
	out := res.stdout[0]
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.LessOrEqual(t, len(lines), 60, out)
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, "#"), "no case rows by default: %q", l)
	}
	require.Contains(t, out, "# FAIL twoshot/bf16/sum/")
	require.Regexp(t, `#   repro: mpirun -np 2 \S.* --backend host --case twoshot/bf16/sum/`, out)
	require.Less(t, strings.Index(out, "# FAIL "), strings.Index(out, "# variant twoshot:"), "failures first")

	res = runWorld(t, 2, same(append(args, "--table", "full")...))
	require.Equal(t, []int{1, 1}, res.codes, res.stderr)
	rows := 0
	for _, l := range strings.Split(res.stdout[0], "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			rows++
		}
	}
	require.Positive(t, rows, "--table full prints the case rows")

	res = runWorld(t, 2, same("--backend", "host", "--quick", "--table", "wide"))
	require.Equal(t, []int{2, 2}, res.codes)
	require.Contains(t, res.stderr[0], "--table")
}

// A missing end barrier with no delay hook, where plain stress cannot see
// it: one call per case, so nothing writes a rank's input after its call
// returns while a peer may still read it. poison-after-return writes
// poison there the moment the call returns; without it the case passes.
func TestPoisonAfterReturnCatchesWhatPlainStressCannot(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	// Three dtypes: three cases of one call each, any of which may catch
	// the late reader (27 of 30 such calls did on the host backend).
	args := []string{"--backend", "host", "--variant", "oneshot", "--op", "sum", "--size", "16K",
		"--mode", "oop,reg,plain,aligned", "--stress", "1", "--inject", "no-end-barrier"}
	res := runWorld(t, 4, same(append(args, "--schedule", "poison-after-return", "--json", js, "--repro-dir", dir)...))
	require.Equal(t, []int{1, 1, 1, 1}, res.codes, res.stderr)
	rep := readReport(t, js)
	require.Equal(t, "poison-after-return", rep.Header.Schedules)
	require.Positive(t, rep.Summary.Fail)
	for _, c := range rep.Cases {
		require.Equal(t, "poison-after-return", c.Schedule, c.ID)
		if c.Verdict != report.Fail {
			continue
		}
		require.Contains(t, c.Repro, "--stress 1 --schedule poison-after-return --inject no-end-barrier")
		b, err := repro.Read(filepath.Join(dir, repro.FileName(c.ID)))
		require.NoError(t, err)
		require.Equal(t, "poison-after-return", b.Header.Schedules)
		require.Equal(t, "poison-after-return", b.Result.Schedule)
		require.Contains(t, strings.Join(b.Args, " "), "--schedule poison-after-return")
	}
	require.Contains(t, res.stdout[0], "stress 1, schedules poison-after-return")

	res = runWorld(t, 4, same(append(args, "--schedule", "none", "--json", js)...))
	require.Equal(t, []int{0, 0, 0, 0}, res.codes, "plain stress misses it: %v", res.stderr)
	rep = readReport(t, js)
	require.Equal(t, "none", rep.Header.Schedules)
	require.Equal(t, 3, rep.Summary.Pass)
}

// No false alarms: every custom variant with a host model passes stress
// under every schedule (the default), out of place registered and in place
// staged in a graph (the stress matrix's two extremes).
func TestStressSchedulesCleanVariantsPass(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "r.json")
	var ids []string
	for _, f := range registry.Builtin {
		v := f()
		if v.Host == nil {
			continue
		}
		for _, c := range v.Collectives() {
			// A reduce-scatter's and an all-gather's 4 chunks: 513 elements each.
			size := int64(4100)
			if c != reference.AllReduce {
				size = 4104
			}
			for _, m := range []string{"oop-reg-plain", "ip-stg-graph"} {
				mode, err := cases.ParseMode(m)
				require.NoError(t, err)
				ids = append(ids, cases.Case{Variant: &v, Coll: c, DType: reference.BF16, Bytes: size, Mode: mode, Ranks: 4}.ID())
			}
		}
	}
	res := runWorld(t, 4, same("--backend", "host", "--case", strings.Join(ids, ","), "--stress", "20", "--json", js))
	require.Equal(t, []int{0, 0, 0, 0}, res.codes, "%v\n%s", res.stderr, res.stdout[0])
	rep := readReport(t, js)
	require.Equal(t, "poison-after-return,skew,straggler", rep.Header.Schedules, "the default with --stress")
	require.Equal(t, "link off: the host backend's load cannot read its peers; memory off: the host backend's load cannot stream device memory", rep.Header.ScheduleNote)
	require.Equal(t, len(ids), rep.Summary.Pass, "every case ran and passed")
}
