package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/repro"
)

// compareRun is one in-process `artest compare`: its exit code, stdout and
// stderr.
func compareRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Compare(args, &out, &errb)
	return code, out.String(), errb.String()
}

// requireOneLine checks the usage-error shape: one line on stderr, from
// artest compare, nothing on stdout.
func requireOneLine(t *testing.T, stdout, stderr string) {
	t.Helper()
	require.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
	require.True(t, strings.HasPrefix(stderr, "artest compare: "), stderr)
	require.Empty(t, stdout)
}

// A threshold that is NaN or infinite compares false with everything, so
// it would turn the gate off: a 10x slowdown would pass. Each is refused.
func TestCompareRefusesNonFiniteThresholds(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	slow := filepath.Join(dir, "slow.json")
	for path, us := range map[string]float64{base: 10, slow: 100} {
		alg := report.AlgbwGBps(4<<10, us)
		writeReport(t, path, &report.Report{Header: report.Header{Tool: "artest", Ranks: 2, Backend: "cuda"}, Cases: []report.Case{{
			ID: "oneshot/bf16/sum/4KiB/oop-reg-plain/np2", Variant: "oneshot", Bytes: 4 << 10, Ranks: 2, Verdict: report.Pass,
			TimeUS: us, AlgBW: alg, BusBW: report.Busbw(alg, 2)}}})
	}
	code, out, _ := compareRun(t, base, slow)
	require.Equal(t, 1, code, "10x slower fails the gate:\n%s", out)

	tests := []struct{ flag, value, stderr string }{
		{"--max-slowdown-small", "nan", "--max-slowdown-small NaN: want a finite number"},
		{"--max-slowdown-small", "NaN", "--max-slowdown-small NaN: want a finite number"},
		{"--max-slowdown-small", "inf", "--max-slowdown-small +Inf: want a finite number"},
		{"--max-slowdown-small", "+Inf", "--max-slowdown-small +Inf: want a finite number"},
		{"--max-slowdown-small", "-Inf", "--max-slowdown-small -Inf: want a finite number"},
		{"--max-bw-drop", "nan", "--max-bw-drop NaN: want a finite number"},
		{"--max-bw-drop", "Infinity", "--max-bw-drop +Inf: want a finite number"},
		{"--max-bw-drop", "-inf", "--max-bw-drop -Inf: want a finite number"},
		{"--alpha", "nan", "--alpha NaN: want a finite number"},
		{"--alpha", "+inf", "--alpha +Inf: want a finite number"},
		{"--alpha", "-Inf", "--alpha -Inf: want a finite number"},
	}
	for _, tt := range tests {
		t.Run(tt.flag+"="+tt.value, func(t *testing.T) {
			code, out, errs := compareRun(t, base, slow, tt.flag, tt.value)
			require.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", out, errs)
			requireOneLine(t, out, errs)
			require.Contains(t, errs, tt.stderr)
		})
	}
}

// Inputs that are not a report of reasonable size are refused with one
// line before anything is read: /dev/zero used to be read until memory ran
// out, a FIFO waited for a writer forever, and a repro bundle (whose
// "header" looks like a report's) read as a report without cases.
func TestCompareRefusesWhatIsNotAReport(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.json")
	writeReport(t, base, &report.Report{Header: report.Header{Tool: "artest", Ranks: 2, Backend: "host"},
		Cases: []report.Case{{ID: "oneshot/bf16/sum/4KiB/oop-reg-plain/np2", Bytes: 4 << 10, Verdict: report.Pass, TimeUS: 10}}})

	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(report.MaxReportBytes+1)) // sparse: no disk, no time
	require.NoError(t, f.Close())

	bundle := filepath.Join(dir, "bundle.json")
	b, err := json.MarshalIndent(&repro.Bundle{Format: repro.FormatVersion, Case: "oneshot/bf16/sum/4KiB/oop-reg-plain/np2", Ranks: 2,
		Args: []string{"--case", "oneshot/bf16/sum/4KiB/oop-reg-plain/np2"}, Header: report.Header{Tool: "artest", Ranks: 2},
		Result: report.Case{ID: "oneshot/bf16/sum/4KiB/oop-reg-plain/np2", Verdict: report.Fail}}, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bundle, b, 0o644))
	compactBundle := filepath.Join(dir, "compact-bundle.json")
	b, err = json.Marshal(&repro.Bundle{Format: repro.FormatVersion, Case: "x", Args: []string{"--case", "x"}, Header: report.Header{Tool: "artest"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(compactBundle, b, 0o644))
	// A header and no cases or summary: another tool's file that happens
	// to hold an artest header. (On one line and alone, a header is the
	// JSON Lines stream of a run that stopped before its first case.)
	headerOnly := filepath.Join(dir, "header-only.json")
	require.NoError(t, os.WriteFile(headerOnly, []byte("{\n  \"header\": {\"tool\": \"artest\", \"ranks\": 2},\n  \"note\": 1\n}\n"), 0o644))
	headerOnlyLine := filepath.Join(dir, "header-only-line.json")
	require.NoError(t, os.WriteFile(headerOnlyLine, []byte(`{"header": {"tool": "artest", "ranks": 2}, "note": 1}`), 0o644))

	tests := []struct {
		name     string
		old, new string
		stderr   string
	}{
		{"/dev/zero", "/dev/zero", "/dev/zero", "artest compare: /dev/zero: not a regular file (a character device); want the --json or --jsonl file of an artest run\n"},
		{"a directory", base, dir, ": not a regular file (a directory)"},
		{"a FIFO", fifo, base, "fifo: not a regular file (a FIFO)"},
		{"too large", base, huge, "huge.json: 536870913 bytes, larger than such a file can be (at most 536870912)"},
		{"a repro bundle as OLD", bundle, base, "artest compare: " + bundle + " is a repro bundle, not a report; rerun it with mpirun -np 2 artest --repro " + bundle + "\n"},
		{"a repro bundle as NEW", base, bundle, bundle + " is a repro bundle, not a report"},
		{"a repro bundle twice", bundle, bundle, bundle + " is a repro bundle, not a report"},
		{"a repro bundle on one line", compactBundle, base, compactBundle + " is a repro bundle, not a report; rerun it with artest --repro " + compactBundle + "\n"},
		{"a header without cases or summary", headerOnly, base, "header-only.json: not an artest report"},
		{"a header without cases or summary, on one line", base, headerOnlyLine, "header-only-line.json: not an artest report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := compareRun(t, tt.old, tt.new)
			require.Equal(t, 2, code, "stdout:\n%s\nstderr:\n%s", out, errs)
			requireOneLine(t, out, errs)
			require.Contains(t, errs, tt.stderr)
		})
	}
}

// NEW must be a finished run of every case OLD has: a run that crashed
// after a few cases used to pass the gate with "N only in old". A stream
// without its summary line, a summary that says the run stopped early or
// exited with a code other than 0 and 1, and cases of OLD missing from NEW
// each fail it (exit 1, one line on stderr) unless a flag accepts them.
// OLD being incomplete is a warning only.
func TestCompareGatesOnAnIncompleteNew(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"a/4KiB", "b/4KiB", "c/4KiB", "d/4KiB", "e/4KiB"}
	passing := func(ids ...string) []report.Case {
		var cs []report.Case
		for _, id := range ids {
			cs = append(cs, report.Case{ID: id, Variant: "a", Bytes: 4 << 10, Ranks: 2, Verdict: report.Pass, TimeUS: 10})
		}
		return cs
	}
	header := report.Header{Tool: "artest", Ranks: 2, Backend: "cuda"}
	// jsonl writes a stream of cs; finished adds the summary line.
	jsonl := func(name string, finished bool, cs ...report.Case) string {
		p := filepath.Join(dir, name)
		h := header
		w, err := report.CreateJSONL(p, &h)
		require.NoError(t, err)
		for _, c := range cs {
			require.NoError(t, w.Append(c))
		}
		if finished {
			require.NoError(t, w.Close(report.Summary{Pass: len(cs)}))
		}
		return p
	}
	js := func(name string, s report.Summary, cs ...report.Case) string {
		p := filepath.Join(dir, name)
		writeReport(t, p, &report.Report{Header: header, Cases: cs, Summary: s})
		return p
	}
	old := js("old.json", report.Summary{Pass: 5}, passing(ids...)...)
	oldStream := jsonl("old.jsonl", true, passing(ids...)...)
	oldCrashed := jsonl("old-crashed.jsonl", false, passing(ids[:3]...)...)
	full := jsonl("new-full.jsonl", true, passing(ids...)...)
	crashed := jsonl("new-crashed.jsonl", false, passing(ids[:2]...)...)
	crashedLate := jsonl("new-crashed-late.jsonl", false, passing(ids...)...)
	crashedFirst := jsonl("new-crashed-first.jsonl", false)
	subset := js("new-subset.json", report.Summary{Pass: 2}, passing(ids[:2]...)...)
	hung := append(passing(ids[:2]...), report.Case{ID: ids[2], Variant: "a", Bytes: 4 << 10, Ranks: 2, Verdict: report.Hung, Reason: "hang in case c/4KiB"})
	hang := js("new-hang.json", report.Summary{Pass: 2, Fail: 1, ExitCode: 3, Error: "hang in case c/4KiB: rank 1 waited 60s\n  rank 1: ring slot 3"}, hung...)
	env := js("new-env.json", report.Summary{Pass: 5, ExitCode: 4}, passing(ids...)...)
	stopped := js("new-stopped.json", report.Summary{Pass: 2, ExitCode: 1, Error: "run stopped after b/4KiB: sticky CUDA error"}, passing(ids[:2]...)...)
	failing := append(passing(ids[:4]...), report.Case{ID: ids[4], Variant: "a", Bytes: 4 << 10, Ranks: 2, Verdict: report.Fail, Reason: "rank 1 mismatch"})
	wrong := js("new-wrong.json", report.Summary{Pass: 4, Fail: 1, ExitCode: 1}, failing...)

	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string // the whole of it
		stdout []string
	}{
		{"finished, every case", []string{oldStream, full}, 0, "", []string{"# 5 compared: 0 SLOWER"}},
		{"crashed after 2 cases", []string{old, crashed}, 1,
			"NEW " + crashed + " is incomplete: no summary line (the run did not finish); 3 cases of OLD are missing from it, first: c/4KiB; to judge only the cases it has, pass --allow-incomplete and --allow-subset",
			[]string{"# warning: NEW is incomplete: no summary line (the run did not finish)\n", "c/4KiB ", "only-old", "# 2 compared: 0 SLOWER, 0 FAILS, 0 faster, 0 NOISE, 0 untimed; 3 only in old, 0 only in new\n", "# exit code 1\n"}},
		{"crashed, --allow-subset", []string{old, crashed, "--allow-subset"}, 1,
			"NEW " + crashed + " is incomplete: no summary line (the run did not finish); 3 cases of OLD are missing from it, first: c/4KiB; to judge only the cases it has, pass --allow-incomplete", nil},
		{"crashed, --allow-incomplete", []string{old, crashed, "--allow-incomplete"}, 1,
			"NEW " + crashed + " lacks 3 cases of OLD, first: c/4KiB; to judge only the cases it has, pass --allow-subset", nil},
		{"crashed, both", []string{old, crashed, "--allow-incomplete", "--allow-subset"}, 0, "",
			[]string{"# warning: NEW is incomplete: no summary line (the run did not finish)\n", "3 only in old"}},
		{"crashed after its last case", []string{old, crashedLate}, 1,
			"NEW " + crashedLate + " is incomplete: no summary line (the run did not finish); to judge only the cases it has, pass --allow-incomplete", nil},
		{"crashed after its last case, --allow-incomplete", []string{old, crashedLate, "--allow-incomplete"}, 0, "", nil},
		{"crashed before its first case", []string{old, crashedFirst}, 1,
			"NEW " + crashedFirst + " is incomplete: no summary line (the run did not finish); 5 cases of OLD are missing from it, first: a/4KiB; to judge only the cases it has, pass --allow-incomplete and --allow-subset", nil},
		{"finished, fewer cases", []string{old, subset}, 1,
			"NEW " + subset + " lacks 3 cases of OLD, first: c/4KiB; to judge only the cases it has, pass --allow-subset", []string{"# exit code 1\n"}},
		{"finished, fewer cases, --allow-subset", []string{old, subset, "--allow-subset"}, 0, "", []string{"3 only in old"}},
		{"hung", []string{old, hang, "--allow-subset"}, 1,
			"NEW " + hang + " is incomplete: the run stopped early (exit code 3): hang in case c/4KiB: rank 1 waited 60s; 2 cases of OLD are missing from it, first: d/4KiB; to judge only the cases it has, pass --allow-incomplete", []string{"FAILS: fails in NEW: hang in case c/4KiB"}},
		{"exited with code 4", []string{old, env}, 1,
			"NEW " + env + " is incomplete: the run exited with code 4 (environment); to judge only the cases it has, pass --allow-incomplete", nil},
		{"stopped early with code 1", []string{old, stopped, "--allow-subset"}, 1,
			"NEW " + stopped + " is incomplete: the run stopped early (exit code 1): run stopped after b/4KiB: sticky CUDA error; 3 cases of OLD are missing from it, first: c/4KiB; to judge only the cases it has, pass --allow-incomplete", nil},
		{"a case failed (exit code 1): complete", []string{old, wrong}, 1, "", []string{"FAILS: fails in NEW: rank 1 mismatch"}},
		{"OLD crashed: a warning", []string{oldCrashed, full}, 0, "",
			[]string{"# warning: OLD is incomplete: no summary line (the run did not finish)\n", "# 3 compared: 0 SLOWER, 0 FAILS, 0 faster, 0 NOISE, 0 untimed; 0 only in old, 2 only in new\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := compareRun(t, tt.args...)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errs)
			if tt.stderr == "" {
				require.Empty(t, errs)
			} else {
				require.Equal(t, "artest compare: "+tt.stderr+"\n", errs)
				require.Contains(t, out, "# "+tt.stderr+"\n", "the comparison ends with the same line")
			}
			for _, s := range tt.stdout {
				require.Contains(t, out, s)
			}
		})
	}
}

// Host-backend times are CPU models, and times of ranks that shared GPUs
// mean nothing either: two identical host --quick runs used to compare as
// 15 cases SLOWER, exit 1. When either report is such a run, compare says
// so in one line and judges verdicts alone; --verdicts-only does the same
// for any backend. A case then fails the gate when it newly fails, passed
// in OLD and is skipped in NEW, or is missing from NEW; never for a time.
func TestCompareJudgesVerdictsOnly(t *testing.T) {
	dir := t.TempDir()
	ids := []string{"oneshot/bf16/sum/4KiB/oop-reg-plain/np2", "oneshot/bf16/sum/4MiB/oop-reg-plain/np2", "twoshot/bf16/sum/4KiB/oop-reg-plain/np2"}
	timed := func(id string, us float64) report.Case {
		bytes := int64(4 << 10)
		if strings.Contains(id, "MiB") {
			bytes = 4 << 20
		}
		alg := report.AlgbwGBps(bytes, us)
		return report.Case{ID: id, Variant: strings.Split(id, "/")[0], Bytes: bytes, Ranks: 2, Verdict: report.Pass,
			TimeUS: us, AlgBW: alg, BusBW: report.Busbw(alg, 2)}
	}
	// mk writes a finished report of ids (times scaled by scale) with edit
	// applied to its cases.
	mk := func(name, backend, shared string, scale float64, edit func([]report.Case) []report.Case) string {
		var cs []report.Case
		for i, id := range ids {
			cs = append(cs, timed(id, scale*float64(10*(i+1))))
		}
		if edit != nil {
			cs = edit(cs)
		}
		s := report.Summary{Pass: len(cs)}
		for _, c := range cs {
			if c.Verdict == report.Fail {
				s.ExitCode = 1
			}
		}
		p := filepath.Join(dir, name)
		writeReport(t, p, &report.Report{Header: report.Header{Tool: "artest", Ranks: 2, Backend: backend, SharedGPUs: shared}, Cases: cs, Summary: s})
		return p
	}
	failing := func(cs []report.Case) []report.Case {
		cs[2] = report.Case{ID: cs[2].ID, Variant: cs[2].Variant, Bytes: cs[2].Bytes, Ranks: 2, Verdict: report.Fail, Reason: "rank 1 mismatch: 3 wrong\nmore"}
		return cs
	}
	skipped := func(cs []report.Case) []report.Case {
		cs[1] = report.Case{ID: cs[1].ID, Variant: cs[1].Variant, Bytes: cs[1].Bytes, Ranks: 2, Verdict: report.Skipped, Reason: "no peer access"}
		return cs
	}
	missing := func(cs []report.Case) []report.Case { return cs[:2] }

	hostOld := mk("host-old.json", "host", "", 1, nil)
	hostSame := mk("host-same.json", "host", "", 1, nil)
	hostSlow := mk("host-slow.json", "host", "", 10, nil)
	hostFast := mk("host-fast.json", "host", "", 0.1, nil)
	hostFailing := mk("host-failing.json", "host", "", 10, failing)
	hostSkipped := mk("host-skipped.json", "host", "", 1, skipped)
	cudaOld := mk("cuda-old.json", "cuda", "", 1, nil)
	cudaSlow := mk("cuda-slow.json", "cuda", "", 10, nil)
	cudaFailing := mk("cuda-failing.json", "cuda", "", 1, failing)
	cudaSkipped := mk("cuda-skipped.json", "cuda", "", 1, skipped)
	cudaMissing := mk("cuda-missing.json", "cuda", "", 1, missing)
	cudaFixed := mk("cuda-fixed.json", "cuda", "", 10, nil)
	cudaWasFailing := mk("cuda-was-failing.json", "cuda", "", 1, failing)
	sharedOld := mk("shared-old.json", "cuda", "2 ranks on 1 GPU (MPS)", 1, nil)
	sharedSlow := mk("shared-slow.json", "cuda", "2 ranks on 1 GPU (MPS)", 10, nil)

	hostLine := "# host backend (OLD and NEW): host times are not speed and are not judged (shown as information only); the exit code depends on verdicts alone\n"
	flagLine := "# --verdicts-only: times are not judged (shown as information only); the exit code depends on verdicts alone\n"
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string // the whole of it
	}{
		{"host, identical runs", []string{hostOld, hostSame}, 0,
			[]string{hostLine, "# 3 compared by verdict: 0 FAILS, 0 SKIPPED, 0 missing (only in old); 0 still failing, 0 only in new\n"}, ""},
		{"host, 10x slower", []string{hostOld, hostSlow}, 0, []string{hostLine, "+900.0%", "-90.0%  ok\n"}, ""},
		{"host, 10x faster", []string{hostOld, hostFast}, 0, []string{hostLine}, ""},
		{"host, a case newly fails", []string{hostOld, hostFailing}, 1,
			[]string{hostLine, "FAILS: fails in NEW: rank 1 mismatch: 3 wrong\n", "# 3 compared by verdict: 1 FAILS, 0 SKIPPED, 0 missing (only in old); 0 still failing, 0 only in new\n", "# exit code 1\n"}, ""},
		{"host, a case newly skipped", []string{hostOld, hostSkipped}, 1,
			[]string{hostLine, "SKIPPED: passed in OLD, skipped in NEW: no peer access\n", "0 FAILS, 1 SKIPPED"}, ""},
		{"cuda OLD, host NEW, 10x slower", []string{cudaOld, hostSlow}, 0,
			[]string{"# host backend (NEW): host times are not speed and are not judged", "# warning: the runs differ: backend cuda vs host"}, ""},
		{"host OLD, cuda NEW, 10x slower", []string{hostOld, cudaSlow}, 0, []string{"# host backend (OLD): host times are not speed and are not judged"}, ""},
		{"shared GPUs, 10x slower", []string{sharedOld, sharedSlow}, 0,
			[]string{"# shared GPUs (OLD and NEW: 2 ranks on 1 GPU (MPS)): times of ranks that share a GPU are not speed and are not judged"}, ""},
		{"shared GPUs in NEW only, 10x slower", []string{cudaOld, sharedSlow}, 0, []string{"# shared GPUs (NEW: 2 ranks on 1 GPU (MPS))"}, ""},
		{"cuda, 10x slower: SLOWER as before", []string{cudaOld, cudaSlow}, 1, []string{"SLOWER: time +900.0%", "# 3 compared: 3 SLOWER"}, ""},
		{"cuda, --verdicts-only, 10x slower", []string{cudaOld, cudaSlow, "--verdicts-only"}, 0,
			[]string{flagLine, "+900.0%", "# 3 compared by verdict: 0 FAILS, 0 SKIPPED, 0 missing"}, ""},
		{"cuda, --verdicts-only first, 10x slower", []string{"--verdicts-only", cudaOld, cudaSlow}, 0, []string{flagLine}, ""},
		{"cuda, --verdicts-only, a case newly fails", []string{cudaOld, cudaFailing, "--verdicts-only"}, 1,
			[]string{"FAILS: fails in NEW: rank 1 mismatch: 3 wrong\n", "1 FAILS, 0 SKIPPED, 0 missing"}, ""},
		{"cuda, --verdicts-only, a case newly skipped", []string{cudaOld, cudaSkipped, "--verdicts-only"}, 1,
			[]string{"SKIPPED: passed in OLD, skipped in NEW: no peer access\n", "# 3 compared by verdict: 0 FAILS, 1 SKIPPED, 0 missing (only in old)", "# exit code 1\n"}, ""},
		{"cuda, --verdicts-only, a case missing", []string{cudaOld, cudaMissing, "--verdicts-only"}, 1,
			[]string{"# 2 compared by verdict: 0 FAILS, 0 SKIPPED, 1 missing (only in old)", "only-old"},
			"NEW " + cudaMissing + " lacks 1 case of OLD, first: " + ids[2] + "; to judge only the cases it has, pass --allow-subset"},
		{"cuda, --verdicts-only, a case missing, --allow-subset", []string{cudaOld, cudaMissing, "--verdicts-only", "--allow-subset"}, 0,
			[]string{"1 missing (only in old)"}, ""},
		{"cuda, --verdicts-only, a failing case fixed, 10x slower", []string{cudaWasFailing, cudaFixed, "--verdicts-only"}, 0, []string{"0 FAILS, 0 SKIPPED"}, ""},
		{"cuda, --verdicts-only, still failing", []string{cudaWasFailing, cudaWasFailing, "--verdicts-only"}, 0, []string{"still-fails", "0 FAILS, 0 SKIPPED, 0 missing (only in old); 1 still failing"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := compareRun(t, tt.args...)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errs)
			for _, s := range tt.stdout {
				require.Contains(t, out, s)
			}
			if tt.stderr == "" {
				require.Empty(t, errs)
			} else {
				require.Equal(t, "artest compare: "+tt.stderr+"\n", errs)
			}
			if tt.code == 0 {
				require.NotContains(t, out, "# exit code 1")
			}
			judgedByVerdicts := strings.Contains(out, "are not judged")
			if judgedByVerdicts {
				require.NotContains(t, out, "SLOWER", "times are never judged here")
				require.NotContains(t, out, "a case is SLOWER when")
			}
		})
	}
}

// The help says how each mode decides the exit code.
func TestCompareHelpSaysExitCodes(t *testing.T) {
	code, out, errs := compareRun(t, "--help")
	require.Equal(t, 0, code, errs)
	for _, want := range []string{
		"-verdicts-only",
		"judged by\n              verdicts alone (--verdicts-only, the host backend, shared\n              GPUs)",
		"exit codes: 0 ",
		"            1 ",
		"            2 ",
	} {
		require.Contains(t, out, want)
	}
}

// A report file with anything after its report is refused (exit 2), not
// judged by its first document alone.
func TestCompareRefusesTrailingData(t *testing.T) {
	dir := t.TempDir()
	rep := `{"header":{"tool":"artest","backend":"cuda"},"cases":[],"summary":{}}`
	good := filepath.Join(dir, "good.json")
	require.NoError(t, os.WriteFile(good, []byte(rep+"\n"), 0o644))
	for name, content := range map[string]string{"two.json": rep + "\n" + rep, "garbage.json": rep + "}}garbage"} {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		var stdout, stderr bytes.Buffer
		require.Equal(t, exitcode.Usage, Compare([]string{good, p}, &stdout, &stderr), stdout.String())
		require.Contains(t, stderr.String(), "data after the report")
	}
}
