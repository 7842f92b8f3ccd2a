package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

// timedCase is a passing case of 4 ranks with busbw derived from its time.
func timedCase(id string, bytes int64, us float64) report.Case {
	alg := report.AlgbwGBps(bytes, us)
	return report.Case{ID: id, Variant: strings.Split(id, "/")[0], Bytes: bytes, Ranks: 4, Verdict: report.Pass,
		TimeUS: us, AlgBW: alg, BusBW: report.Busbw(alg, 4)}
}

func TestJudge(t *testing.T) {
	const small, large = 64 << 10, 4 << 20
	failed := report.Case{ID: "x", Bytes: small, Verdict: report.Fail, Reason: "rank 1 mismatch: 3 wrong\nmore"}
	skipped := report.Case{ID: "x", Bytes: small, Verdict: report.Skipped, Reason: "no nccl"}
	hung := report.Case{ID: "x", Bytes: small, Verdict: report.Hung, Reason: "hang in case x\n  ranks 0,1 wait"}
	tests := []struct {
		name       string
		old, new   *report.Case
		want       Status
		regression bool
		why        string
	}{
		{"small, same time", ptr(timedCase("x", small, 10)), ptr(timedCase("x", small, 10)), StatusOK, false, ""},
		{"small, 14.9% slower is within 15%", ptr(timedCase("x", small, 10)), ptr(timedCase("x", small, 11.49)), StatusOK, false, ""},
		{"small, 20% slower", ptr(timedCase("x", small, 10)), ptr(timedCase("x", small, 12)), StatusRegression, true, "time +20.0%, limit +15% below 1MiB"},
		{"small, 20% faster", ptr(timedCase("x", small, 10)), ptr(timedCase("x", small, 8)), StatusFaster, false, ""},
		{"small, busbw is not the gate", ptr(timedCase("x", small, 10)), ptr(timedCase("x", small, 11)), StatusOK, false, ""},
		{"large, 4% less busbw", ptr(timedCase("x", large, 100)), ptr(timedCase("x", large, 104)), StatusOK, false, ""},
		{"large, 10% more time is 9.1% less busbw", ptr(timedCase("x", large, 100)), ptr(timedCase("x", large, 110)), StatusRegression, true, "busbw -9.1%, limit -5% from 1MiB"},
		{"large, 10% more busbw", ptr(timedCase("x", large, 100)), ptr(timedCase("x", large, 90)), StatusFaster, false, ""},
		{"1 MiB exactly is large", ptr(timedCase("x", 1<<20, 100)), ptr(timedCase("x", 1<<20, 110)), StatusRegression, true, "busbw -9.1%, limit -5% from 1MiB"},
		{"fails in new", ptr(timedCase("x", small, 10)), &failed, StatusFails, true, "fails in NEW: rank 1 mismatch: 3 wrong"},
		{"failed in both", &failed, &failed, StatusStillFails, false, ""},
		{"fixed in new", &failed, ptr(timedCase("x", small, 10)), StatusUntimed, false, ""},
		{"skipped in new", ptr(timedCase("x", small, 10)), &skipped, StatusUntimed, false, ""},
		{"new case", nil, ptr(timedCase("x", small, 10)), StatusOnlyNew, false, ""},
		{"new failing case", nil, &failed, StatusFails, true, "fails in NEW: rank 1 mismatch: 3 wrong"},
		{"hangs in new", ptr(timedCase("x", small, 10)), &hung, StatusFails, true, "fails in NEW: hang in case x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := judge(tt.old, tt.new, DefaultThresholds)
			require.Equal(t, tt.want, row.Status)
			require.Equal(t, tt.regression, row.Regression())
			require.Equal(t, tt.why, row.Why)
		})
	}
}

func ptr(c report.Case) *report.Case { return &c }

func TestJudgeWithoutBusbwUsesTimes(t *testing.T) {
	// One rank has no busbw; the bandwidth change comes from the times.
	o := report.Case{ID: "x", Bytes: 4 << 20, Ranks: 1, Verdict: report.Pass, TimeUS: 100}
	n := o
	n.TimeUS = 120
	row := judge(&o, &n, DefaultThresholds)
	require.Equal(t, StatusRegression, row.Status)
	require.InDelta(t, 100.0/120-1, row.BWChange, 1e-12)
}

func TestThresholdsOverride(t *testing.T) {
	th := Thresholds{SmallBelow: 8 << 20, MaxSlowdown: 0.5, MaxBWDrop: 0.01}
	// 4 MiB is small now: judged by time with a 50 % margin.
	row := judge(ptr(timedCase("x", 4<<20, 100)), ptr(timedCase("x", 4<<20, 140)), th)
	require.Equal(t, StatusOK, row.Status)
	row = judge(ptr(timedCase("x", 16<<20, 100)), ptr(timedCase("x", 16<<20, 102)), th)
	require.Equal(t, StatusRegression, row.Status)
}

func TestCompareMatchesByIDInNewOrder(t *testing.T) {
	old := &report.Report{Cases: []report.Case{
		timedCase("a/1KiB", 1<<10, 10),
		timedCase("gone/1KiB", 1<<10, 10),
		timedCase("b/4MiB", 4<<20, 100),
	}}
	nw := &report.Report{Cases: []report.Case{
		timedCase("b/4MiB", 4<<20, 200),
		timedCase("a/1KiB", 1<<10, 10),
		timedCase("added/1KiB", 1<<10, 10),
		timedCase("a/1KiB", 1<<10, 99), // recorded twice: the worst record is judged, and named
	}}
	rows := Compare(old, nw, DefaultThresholds)
	var got []string
	for _, r := range rows {
		got = append(got, r.ID+"="+string(r.Status))
	}
	require.Equal(t, []string{"b/4MiB=SLOWER", "a/1KiB=SLOWER", "added/1KiB=only-new", "gone/1KiB=only-old"}, got)
	require.Contains(t, rows[1].Why, "recorded 2 times in NEW, the worst record judged")
	s := Summarize(rows)
	require.Equal(t, Summary{Compared: 2, Regressions: 2, OnlyOld: 1, OnlyNew: 1, Common: 2}, s)
}

func TestWriteComparison(t *testing.T) {
	old := &report.Report{Header: report.Header{Tool: "artest", Version: "0.1.0", Backend: "cuda", Ranks: 4, Agg: "max"}, Cases: []report.Case{
		timedCase("oneshot/bf16/sum/1KiB/oop-reg-plain/np4", 1<<10, 10),
		timedCase("oneshot/bf16/sum/4MiB/oop-reg-plain/np4", 4<<20, 100),
	}}
	nw := &report.Report{Header: report.Header{Tool: "artest", Version: "0.1.0", Backend: "cuda", Ranks: 4, Agg: "avg", Devices: []string{"H200"}}, Cases: []report.Case{
		timedCase("oneshot/bf16/sum/1KiB/oop-reg-plain/np4", 1<<10, 12),
		timedCase("oneshot/bf16/sum/4MiB/oop-reg-plain/np4", 4<<20, 99),
	}}
	rows := Compare(old, nw, DefaultThresholds)
	var buf bytes.Buffer
	require.NoError(t, WriteComparison(&buf, &Input{Path: "old.json", Report: old}, &Input{Path: "new.json", Report: nw}, DefaultThresholds, rows, ""))
	out := buf.String()
	for _, want := range []string{
		"# old: old.json (artest 0.1.0, backend cuda, 4 ranks)\n",
		"# warning: the runs differ: devices differ, aggregation over ranks max vs avg\n",
		"SLOWER: time +20.0%, limit +15% below 1MiB\n",
		"# 2 compared: 1 SLOWER, 0 FAILS, 0 faster, 0 NOISE, 0 untimed; 0 only in old, 0 only in new\n",
		"# exit code 1\n",
	} {
		require.Contains(t, out, want)
	}
	lines := strings.Split(out, "\n")
	var row string
	for _, l := range lines {
		if strings.HasPrefix(l, "oneshot/bf16/sum/4MiB") {
			row = l
		}
	}
	require.Equal(t, []string{"oneshot/bf16/sum/4MiB/oop-reg-plain/np4", "100.00", "99.00", "-1.0%", "62.91", "63.55", "+1.0%", "ok"}, strings.Fields(row))
}

func TestReadInput(t *testing.T) {
	dir := t.TempDir()
	rep := &report.Report{Header: report.Header{Tool: "artest", Ranks: 2}, Cases: []report.Case{timedCase("a/1KiB", 1<<10, 10)}}

	jsonPath := filepath.Join(dir, "r.json")
	require.NoError(t, report.WriteFileAtomic(jsonPath, func(w io.Writer) error { return report.WriteJSON(w, rep) }))
	got, err := ReadInput(jsonPath)
	require.NoError(t, err)
	require.Len(t, got.Report.Cases, 1)
	require.Empty(t, got.Incomplete)

	compact, err := json.Marshal(rep)
	require.NoError(t, err)
	compactPath := filepath.Join(dir, "compact.json")
	require.NoError(t, os.WriteFile(compactPath, compact, 0o644))
	got, err = ReadInput(compactPath)
	require.NoError(t, err)
	require.Len(t, got.Report.Cases, 1, "a report on one line is not a JSON Lines stream")

	jsonlPath := filepath.Join(dir, "r.jsonl")
	jw, err := report.CreateJSONL(jsonlPath, &rep.Header)
	require.NoError(t, err)
	require.NoError(t, jw.Append(rep.Cases[0]))
	require.NoError(t, jw.Close(rep.Summary))
	got, err = ReadInput(jsonlPath)
	require.NoError(t, err)
	require.Len(t, got.Report.Cases, 1, "JSON Lines streams are read too")
	require.Empty(t, got.Incomplete)

	bad := []struct{ name, content string }{
		{"not json", "hello\n"},
		{"another tool's json", `{"header": {"tool": "nccl-tests"}, "cases": []}`},
		{"empty", ""},
		{"a json array", "[1, 2]"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(b.name, " ", "_"))
			require.NoError(t, os.WriteFile(p, []byte(b.content), 0o644))
			_, err := ReadInput(p)
			require.ErrorContains(t, err, "not an artest report")
		})
	}
	_, err = ReadInput(filepath.Join(dir, "missing.json"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A run finished when its stream has the summary line and the summary
// neither holds an error nor an exit code other than 0 and 1.
func TestReadInputJudgesWhetherTheRunFinished(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name       string
		summary    report.Summary
		stream     bool // a --jsonl stream
		finished   bool // with its summary line
		incomplete string
	}{
		{"all passed", report.Summary{Pass: 1}, false, true, ""},
		{"a case failed", report.Summary{Fail: 1, ExitCode: 1}, false, true, ""},
		{"stopped early", report.Summary{ExitCode: 1, Error: "run stopped after x: sticky\nmore"}, false, true, "the run stopped early (exit code 1): run stopped after x: sticky"},
		{"hang", report.Summary{ExitCode: 3, Error: "hang in case x"}, false, true, "the run stopped early (exit code 3): hang in case x"},
		{"usage", report.Summary{ExitCode: 2}, false, true, "the run exited with code 2 (usage error)"},
		{"environment", report.Summary{ExitCode: 4}, false, true, "the run exited with code 4 (environment)"},
		{"an unknown code", report.Summary{ExitCode: 9}, false, true, "the run exited with code 9"},
		{"stream, finished", report.Summary{Pass: 1}, true, true, ""},
		{"stream, finished with a hang", report.Summary{ExitCode: 3, Error: "hang in case x"}, true, true, "the run stopped early (exit code 3): hang in case x"},
		{"stream without summary line", report.Summary{}, true, false, "no summary line (the run did not finish)"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := &report.Report{Header: report.Header{Tool: "artest"}, Cases: []report.Case{timedCase("a/1KiB", 1<<10, 10)}, Summary: tt.summary}
			p := filepath.Join(dir, fmt.Sprintf("r%d", i))
			if tt.stream {
				w, err := report.CreateJSONL(p, &rep.Header)
				require.NoError(t, err)
				require.NoError(t, w.Append(rep.Cases[0]))
				if tt.finished {
					require.NoError(t, w.Close(rep.Summary))
				}
			} else {
				require.NoError(t, report.WriteFileAtomic(p, func(w io.Writer) error { return report.WriteJSON(w, rep) }))
			}
			in, err := ReadInput(p)
			require.NoError(t, err)
			require.Equal(t, p, in.Path)
			require.Len(t, in.Report.Cases, 1)
			require.Equal(t, tt.incomplete, in.Incomplete)
		})
	}
}

// Reports written before the fieldbest fields existed and reports with
// them compare with each other in either order, with the same rows and
// statuses: compare judges times and busbw alone.
func TestCompareReportsWithAndWithoutFieldBest(t *testing.T) {
	dir := t.TempDir()
	build := func(scale float64, attach bool) string {
		h := report.Header{Tool: "artest", Ranks: 4, Backend: "cuda",
			Plugins: []report.Plugin{{Name: "ex", Variants: []string{"ex:a"}}}}
		r := &report.Report{Header: h}
		for _, v := range []string{"oneshot", "nccl", "ex:a"} {
			for _, b := range []int64{1 << 10, 4 << 20} {
				us := map[string]float64{"oneshot": 10, "nccl": 12, "ex:a": 11}[v] * scale
				c := timedCase(fmt.Sprintf("%s/bf16/sum/%d/oop-reg-plain/np4", v, b), b, us*float64(1+b>>20))
				c.Variant, c.DType, c.Op, c.Mode = v, "bf16", "sum", "oop-reg-plain"
				r.Cases = append(r.Cases, c)
			}
		}
		if attach {
			report.AttachFieldBest(r)
			require.Equal(t, "ex:a", r.Cases[0].FieldBestVariant)
		}
		p := filepath.Join(dir, fmt.Sprintf("r-%v-%v.json", scale, attach))
		require.NoError(t, report.WriteFileAtomic(p, func(w io.Writer) error { return report.WriteJSON(w, r) }))
		return p
	}
	statuses := func(oldPath, newPath string) []string {
		oldIn, err := ReadInput(oldPath)
		require.NoError(t, err)
		newIn, err := ReadInput(newPath)
		require.NoError(t, err)
		rows := Compare(oldIn.Report, newIn.Report, DefaultThresholds)
		var buf bytes.Buffer
		require.NoError(t, WriteComparison(&buf, oldIn, newIn, DefaultThresholds, rows, ""))
		var out []string
		for _, r := range rows {
			out = append(out, r.ID+"="+string(r.Status))
		}
		return out
	}
	want := statuses(build(1, false), build(1.3, false))
	require.Len(t, want, 6)
	require.Contains(t, want, "oneshot/bf16/sum/1024/oop-reg-plain/np4=SLOWER")
	for _, tc := range []struct {
		name               string
		oldField, newField bool
	}{
		{"old without, new with", false, true},
		{"old with, new without", true, false},
		{"both with", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, want, statuses(build(1, tc.oldField), build(1.3, tc.newField)))
		})
	}
}

// Judged by verdicts alone, a case fails the gate when it newly fails or
// hangs, or passed in OLD and is skipped in NEW; its times decide nothing
// but are kept to be shown.
func TestJudgeVerdicts(t *testing.T) {
	const small, large = 64 << 10, 4 << 20
	failed := report.Case{ID: "x", Bytes: small, Verdict: report.Fail, Reason: "rank 1 mismatch: 3 wrong\nmore"}
	skipped := report.Case{ID: "x", Bytes: small, Verdict: report.Skipped, Reason: "no nccl\nmore"}
	skippedNoReason := report.Case{ID: "x", Bytes: small, Verdict: report.Skipped}
	hung := report.Case{ID: "x", Bytes: small, Verdict: report.Hung, Reason: "hang in case x\n  ranks 0,1 wait"}
	tests := []struct {
		name       string
		old, new   *report.Case
		want       Status
		regression bool
		why        string
		timeChange float64
	}{
		{"small, 10x slower", ptr(timedCase("x", small, 10)), ptr(timedCase("x", small, 100)), StatusOK, false, "", 9},
		{"large, 10x slower", ptr(timedCase("x", large, 100)), ptr(timedCase("x", large, 1000)), StatusOK, false, "", 9},
		{"small, 10x faster", ptr(timedCase("x", small, 10)), ptr(timedCase("x", small, 1)), StatusOK, false, "", -0.9},
		{"fails in new", ptr(timedCase("x", small, 10)), &failed, StatusFails, true, "fails in NEW: rank 1 mismatch: 3 wrong", 0},
		{"hangs in new", ptr(timedCase("x", small, 10)), &hung, StatusFails, true, "fails in NEW: hang in case x", 0},
		{"failed in both", &failed, &failed, StatusStillFails, false, "", 0},
		{"fixed in new", &failed, ptr(timedCase("x", small, 10)), StatusOK, false, "", 0},
		{"skipped in new", ptr(timedCase("x", small, 10)), &skipped, StatusSkipped, true, "passed in OLD, skipped in NEW: no nccl", 0},
		{"skipped in new, no reason", ptr(timedCase("x", small, 10)), &skippedNoReason, StatusSkipped, true, "passed in OLD, skipped in NEW", 0},
		{"skipped in both", &skipped, &skipped, StatusOK, false, "", 0},
		{"failed in old, skipped in new", &failed, &skipped, StatusOK, false, "", 0},
		{"skipped in old, passes in new", &skipped, ptr(timedCase("x", small, 10)), StatusOK, false, "", 0},
		{"new case", nil, ptr(timedCase("x", small, 10)), StatusOnlyNew, false, "", 0},
		{"new failing case", nil, &failed, StatusFails, true, "fails in NEW: rank 1 mismatch: 3 wrong", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := judgeVerdicts(tt.old, tt.new)
			require.Equal(t, tt.want, row.Status)
			require.Equal(t, tt.regression, row.Regression())
			require.Equal(t, tt.why, row.Why)
			require.InDelta(t, tt.timeChange, row.TimeChange, 1e-12)
		})
	}
}

func TestTimesNotJudged(t *testing.T) {
	cuda := report.Header{Backend: "cuda"}
	host := report.Header{Backend: "host"}
	shared := report.Header{Backend: "cuda", SharedGPUs: "4 ranks on 1 GPU (MPS)"}
	tests := []struct {
		name     string
		old, new report.Header
		want     string
	}{
		{"cuda", cuda, cuda, ""},
		{"unknown backends", report.Header{}, report.Header{}, ""},
		{"host", host, host, "host backend (OLD and NEW): host times are not speed"},
		{"host OLD", host, cuda, "host backend (OLD): host times are not speed"},
		{"host NEW", cuda, host, "host backend (NEW): host times are not speed"},
		{"shared", shared, shared, "shared GPUs (OLD and NEW: 4 ranks on 1 GPU (MPS)): times of ranks that share a GPU are not speed"},
		{"shared OLD", shared, cuda, "shared GPUs (OLD: 4 ranks on 1 GPU (MPS)): times of ranks that share a GPU are not speed"},
		{"host beats shared", shared, host, "host backend (NEW): host times are not speed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, TimesNotJudged(&tt.old, &tt.new))
			require.Equal(t, tt.want != "", VerdictsOnly(&tt.old, &tt.new, DefaultThresholds))
			th := DefaultThresholds
			th.VerdictsOnly = true
			require.True(t, VerdictsOnly(&tt.old, &tt.new, th))
		})
	}
}

// Two host runs of the same matrix, one 10x slower with one case skipped:
// compare says in one line that host times are not speed, shows the times
// and judges only the skipped case.
func TestWriteComparisonOfHostRuns(t *testing.T) {
	ids := []string{"oneshot/bf16/sum/1KiB/oop-reg-plain/np4", "oneshot/bf16/sum/4MiB/oop-reg-plain/np4", "twoshot/bf16/sum/4MiB/oop-reg-plain/np4"}
	h := report.Header{Tool: "artest", Version: "0.1.0", Backend: "host", Ranks: 4}
	old := &report.Report{Header: h, Cases: []report.Case{timedCase(ids[0], 1<<10, 10), timedCase(ids[1], 4<<20, 100), timedCase(ids[2], 4<<20, 100)}}
	nw := &report.Report{Header: h, Cases: []report.Case{timedCase(ids[0], 1<<10, 100), timedCase(ids[1], 4<<20, 1000),
		{ID: ids[2], Bytes: 4 << 20, Verdict: report.Skipped, Reason: "not on this backend"}}}
	rows := Compare(old, nw, DefaultThresholds)
	var got []string
	for _, r := range rows {
		got = append(got, string(r.Status))
	}
	require.Equal(t, []string{"ok", "ok", "SKIPPED"}, got)
	var buf bytes.Buffer
	require.NoError(t, WriteComparison(&buf, &Input{Path: "old.json", Report: old}, &Input{Path: "new.json", Report: nw}, DefaultThresholds, rows, ""))
	out := buf.String()
	for _, want := range []string{
		"# host backend (OLD and NEW): host times are not speed and are not judged (shown as information only); the exit code depends on verdicts alone\n",
		"# a case FAILS when it fails in new only; is SKIPPED when it passed in old and is skipped in new; is only-old when new lacks it\n",
		"SKIPPED: passed in OLD, skipped in NEW: not on this backend\n",
		"# 3 compared by verdict: 0 FAILS, 1 SKIPPED, 0 missing (only in old); 0 still failing, 0 only in new\n",
		"# exit code 1\n",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "SLOWER")
	require.NotContains(t, out, "NOISE")
	require.Equal(t, 1, strings.Count(out, "not speed"), "one line says it")
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, ids[0]) {
			require.Equal(t, []string{ids[0], "10.00", "100.00", "+900.0%", "0.15", "0.02", "-90.0%", "ok"}, strings.Fields(l), "times shown")
		}
	}
}
