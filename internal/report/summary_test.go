package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteSummaryGolden(t *testing.T) {
	r := fixtureReport()
	for i := range r.Cases {
		if r.Cases[i].Verdict == Fail {
			r.Cases[i].Repro = "mpirun -np 4 artest --case " + r.Cases[i].ID + " --seed 42"
		}
	}
	got := render(t, func(b *bytes.Buffer) error { return WriteSummary(b, r) })
	checkGolden(t, "summary.golden", got)
}

// A default-sized matrix (6 variants, 3 dtypes, 16 modes, a thousand cases
// each) with 40 failing cases: the summary stays on one screen, failures
// first, and no case row is printed.
func TestWriteSummaryFitsOneScreen(t *testing.T) {
	r := &Report{Header: Header{Tool: "artest", Ranks: 4, Backend: "host"}}
	modes := []string{"oop-reg-plain", "ip-reg-plain", "oop-stg-plain", "ip-stg-plain", "oop-reg-graph", "ip-reg-graph", "oop-stg-graph", "ip-stg-graph",
		"oop-reg-plain-off1", "ip-reg-plain-off1", "oop-stg-plain-off1", "ip-stg-plain-off1", "oop-reg-graph-off3", "ip-reg-graph-off3", "oop-stg-graph-off3", "ip-stg-graph-off3"}
	failed := 0
	for _, v := range []string{"oneshot", "twoshot", "oneshot-cpasync", "ring", "multimem", "nccl"} {
		for _, d := range []string{"f32", "f16", "bf16"} {
			for mi, m := range modes {
				for size := int64(4); size <= 1<<20; size *= 2 {
					c := Case{ID: fmt.Sprintf("%s/%s/sum/%dB/%s/np4", v, d, size, m), Variant: v, DType: d, Op: "sum", Mode: m, Bytes: size, Ranks: 4, Verdict: Pass}
					switch {
					case v == "nccl":
						c.Verdict, c.Reason = Skipped, "NCCL needs the cuda backend"
					case v == "ring" && d == "bf16" && mi < 10 && size < 64:
						c.Verdict, c.Reason = Fail, "rank 1 mismatch: 3 wrong"
						c.Repro = "mpirun -np 4 artest --case " + c.ID
						failed++
					}
					r.Cases = append(r.Cases, c)
				}
			}
		}
	}
	require.Equal(t, 40, failed)
	out := string(render(t, func(b *bytes.Buffer) error { return WriteSummary(b, r) }))
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.LessOrEqual(t, len(lines), 60, "one screen:\n%s", out)
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, "#"), "no case rows: %q", l)
	}
	firstFail := strings.Index(out, "# FAIL ring/bf16/sum/4B/oop-reg-plain/np4")
	firstVariant := strings.Index(out, "# variant oneshot:")
	require.Positive(t, firstFail)
	require.Less(t, firstFail, firstVariant, "failures first")
	require.Contains(t, out, "#   repro: mpirun -np 4 artest --case ring/bf16/sum/4B/oop-reg-plain/np4\n")
	require.Contains(t, out, "# ... and 30 more failing cases (--table full lists them)")
	require.Contains(t, out, "# pass 4520, FAIL 40, skipped 912")
	require.Contains(t, out, "#   bf16: pass 264, FAIL 40, skipped 0")
}

// The summary points at the JSON report only when the run writes one.
func TestWriteSummaryNamesTheJSONReportOnlyWithJSON(t *testing.T) {
	for _, tc := range []struct {
		name     string
		jsonPath string
		want     []string
		not      []string
	}{
		{"without --json", "", []string{"(every case: --table full)\n", "(--table full lists them)\n"}, []string{"JSON report"}},
		{"with --json", "out/run.json", []string{"(every case: --table full, or the JSON report (out/run.json))\n",
			"(--table full, or the JSON report (out/run.json), lists them)\n"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Header: Header{Tool: "artest", Ranks: 2, Backend: "host"}, JSONPath: tc.jsonPath}
			for i := 0; i < maxSummaryFailures+2; i++ {
				r.Cases = append(r.Cases, Case{ID: fmt.Sprintf("v/f32/sum/%dB/oop-reg-plain/np2", 4*(i+1)), Variant: "v", DType: "f32",
					Mode: "oop-reg-plain", Verdict: Fail, Reason: "rank 0 mismatch: 1 wrong"})
			}
			out := string(render(t, func(b *bytes.Buffer) error { return WriteSummary(b, r) }))
			for _, w := range tc.want {
				require.Contains(t, out, w)
			}
			for _, w := range tc.not {
				require.NotContains(t, out, w)
			}
		})
	}
}

// A failing stress case's summary says where it first went wrong and, when
// the bits show it, what they show.
func TestWriteSummaryExplainsStressFailures(t *testing.T) {
	const sched = "poison-after-return,skew,straggler"
	stress := func(dtype, schedule string, got, want uint32) Case {
		return Case{ID: "p:v/" + dtype + "/sum/4100B/oop-reg-plain/np2", Variant: "p:v", DType: dtype, Mode: "oop-reg-plain",
			Verdict: Fail, Schedule: schedule, Failures: []RankFailure{
				{Rank: 0, Kind: "mismatch", Detail: "3 of 50 stress iterations wrong"},
				{Rank: 0, Kind: "mismatch", Detail: "iteration 7: 1 of 2050 wrong", Mismatches: []Mismatch{{Index: 9, GotBits: got, WantBits: want, Iter: 7}}},
				{Rank: 1, Kind: "mismatch", Detail: "iteration 3: 2 of 2050 wrong", Mismatches: []Mismatch{{Index: 5, GotBits: got, WantBits: want, Iter: 3}}},
			}}
	}
	for _, tc := range []struct {
		name    string
		c       Case
		first   string
		reading string
	}{
		{"quiet poison, poison-after-return on", stress("bf16", sched, 0x7fed, 0x3fbc),
			"#   first wrong: iteration 3, rank 1, element [5]: got 0 (0x7fed) want 0 (0x3fbc); schedules on: poison-after-return, skew, straggler\n",
			"#   reading: got is the poison pattern made quiet, as arithmetic on it gives: it was computed from poison, either a peer's input read after that peer's call had returned (poison-after-return writes the poison there then: a missing or early end barrier) or this output's own poison read before it was written\n"},
		{"f16 quiet poison", stress("f16", sched, 0x7fad, 0x3c00), "got 0 (0x7fad)", "a peer's input read after that peer's call had returned"},
		{"f32 quiet poison", stress("f32", sched, 0x7ffadbad, 0x3f800000), "got 0 (0x7ffadbad)", "a missing or early end barrier"},
		{"quiet poison, no schedule", stress("bf16", "", 0x7fed, 0x3fbc), "schedules on: none", "it was computed from poison, such as this output's own read before it was written\n"},
		{"the output poison", stress("bf16", "skew", 0x7fad, 0x3fbc), "schedules on: skew", "got is the output's poison pattern, which no arithmetic yields: the output was never written\n"},
		{"the poison, poison-after-return on", stress("bf16", sched, 0x7fad, 0x3fbc), "got 0 (0x7fad)",
			"the output was never written, or a poisoned input (poison-after-return writes it into a rank's input when its call returns) was copied into it unchanged\n"},
		{"another value: no reading", stress("bf16", sched, 0x4000, 0x3fbc), "got 0 (0x4000)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Header: Header{Tool: "artest", Ranks: 2, Backend: "host"}, Cases: []Case{tc.c}}
			out := string(render(t, func(b *bytes.Buffer) error { return WriteSummary(b, r) }))
			require.Contains(t, out, "#   first wrong: ")
			require.Contains(t, out, tc.first)
			if tc.reading == "" {
				require.NotContains(t, out, "#   reading: ")
			} else {
				require.Contains(t, out, tc.reading)
			}
		})
	}
	// A case that is not a stress failure has neither line.
	r := &Report{Header: Header{Tool: "artest"}, Cases: []Case{{ID: "v/f32/sum/4B/oop-reg-plain/np2", DType: "f32", Verdict: Fail,
		Failures: []RankFailure{{Kind: "mismatch", Detail: "1 of 1 wrong", Mismatches: []Mismatch{{GotBits: 0x7fbadbad}}}}}}}
	out := string(render(t, func(b *bytes.Buffer) error { return WriteSummary(b, r) }))
	require.NotContains(t, out, "first wrong")
}

// A special case's mismatch reads with signed zeros, what else was right
// and the element's inputs, in the stress summary, the table and JUnit.
func TestSpecialMismatchNamesItsInputs(t *testing.T) {
	m := Mismatch{Index: 16, GotBits: 0x0000, WantBits: 0x8000, Got: 0, Want: math.Copysign(0, -1), Iter: 4, Inputs: []uint32{0x8000, 0x8000}}
	line := "got +0 (0x0000) want -0 (0x8000); inputs: rank 0 -0 (0x8000), rank 1 -0 (0x8000)"
	require.Equal(t, "index 16: "+line+", stress iteration 4", mismatchLine(&m, "bf16"))
	c := Case{ID: "p:v/bf16/sum/4100B/oop-reg-plain/special/np2", Variant: "p:v", DType: "bf16", Mode: "oop-reg-plain", Input: "special",
		Verdict: Fail, Failures: []RankFailure{
			{Rank: 0, Kind: "mismatch", Detail: "3 of 50 stress iterations wrong"},
			{Rank: 0, Kind: "mismatch", Detail: "iteration 4: 1 of 2050 wrong", Mismatches: []Mismatch{m}},
		}}
	r := &Report{Header: Header{Tool: "artest", Ranks: 2, Backend: "host"}, Cases: []Case{c}}
	out := string(render(t, func(b *bytes.Buffer) error { return WriteSummary(b, r) }))
	require.Contains(t, out, "#   first wrong: iteration 4, rank 0, element [16]: "+line+"; schedules on: none\n")

	// Special inputs hold NaNs whose bits may combine into the quiet
	// poison: only the poison itself is read.
	c.Failures[1].Mismatches[0].GotBits = 0x7fed
	out = string(render(t, func(b *bytes.Buffer) error { return WriteSummary(b, r) }))
	require.NotContains(t, out, "#   reading: ")
	c.Failures[1].Mismatches[0].GotBits = 0x7fad
	out = string(render(t, func(b *bytes.Buffer) error { return WriteSummary(b, r) }))
	require.Contains(t, out, "#   reading: got is the output's poison pattern")

	nan := Mismatch{Index: 2, GotBits: 0x7fad, WantBits: 0x7fc0, Got: math.NaN(), Want: math.NaN(), Accept: "a NaN (any sign and payload)",
		Inputs: []uint32{0x7f80, 0xff80}}
	require.Equal(t, "index 2: got sNaN (0x7fad) want a NaN (any sign and payload); inputs: rank 0 +Inf (0x7f80), rank 1 -Inf (0xff80)",
		mismatchLine(&nan, "bf16"))
	// Without inputs (the other kinds), the line is as it was.
	plain := Mismatch{Index: 2, GotBits: 0x3fc0, WantBits: 0x3fa0, Got: 1.5, Want: 1.25}
	require.Equal(t, "index 2: got 1.5 (0x3fc0) want 1.25 (0x3fa0)", mismatchLine(&plain, "bf16"))
}

// When every failing case of a variant is in an in-place registered mode
// and an out-of-place case of it passed, its block says what that points
// at: the output is the registered input peers read, written too early.
func TestWriteSummaryPointsAtTheInPlaceHazard(t *testing.T) {
	type c struct {
		mode    string
		verdict Verdict
	}
	for _, tc := range []struct {
		name  string
		cases []c
		hint  bool
	}{
		{"only ip-reg fails, oop passes", []c{{"oop-reg-plain", Pass}, {"oop-stg-graph", Pass}, {"ip-reg-plain", Fail}, {"ip-reg-graph", Fail}, {"ip-stg-plain", Pass}}, true},
		{"offsets count as their mode", []c{{"oop-reg-plain-off1", Pass}, {"ip-reg-graph-off3", Fail}}, true},
		{"a hang in ip-reg is a failure there too", []c{{"oop-reg-plain", Pass}, {"ip-reg-plain", Hung}, {"ip-reg-graph", Fail}}, true},
		{"ip-stg fails too", []c{{"oop-reg-plain", Pass}, {"ip-reg-plain", Fail}, {"ip-stg-plain", Fail}}, false},
		{"oop fails too", []c{{"oop-reg-plain", Pass}, {"oop-stg-plain", Fail}, {"ip-reg-plain", Fail}}, false},
		{"no oop case passed", []c{{"oop-reg-plain", Skipped}, {"ip-reg-plain", Fail}, {"ip-stg-plain", Pass}}, false},
		{"no oop case at all", []c{{"ip-reg-plain", Fail}, {"ip-stg-plain", Pass}}, false},
		{"nothing fails", []c{{"oop-reg-plain", Pass}, {"ip-reg-plain", Pass}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Header: Header{Tool: "artest", Ranks: 2, Backend: "host"}}
			for i, x := range tc.cases {
				r.Cases = append(r.Cases, Case{ID: fmt.Sprintf("v/f32/sum/%dB/%s/np2", 4*(i+1), x.mode), Variant: "v", DType: "f32",
					Op: "sum", Mode: x.mode, Verdict: x.verdict})
			}
			// Another variant whose failures are all ip-reg but with no oop
			// pass: its block gets no line, whatever v's gets.
			r.Cases = append(r.Cases, Case{ID: "w/f32/sum/4B/ip-reg-plain/np2", Variant: "w", DType: "f32", Op: "sum", Mode: "ip-reg-plain", Verdict: Fail})
			out := string(render(t, func(b *bytes.Buffer) error { return WriteSummary(b, r) }))
			first := "#   " + inPlaceRegisteredHint[0] + "\n#   " + inPlaceRegisteredHint[1] + "\n"
			if !tc.hint {
				require.NotContains(t, out, inPlaceRegisteredHint[0])
				return
			}
			require.Equal(t, 1, strings.Count(out, first), out)
			v, w := strings.Index(out, "# variant v:"), strings.Index(out, "# variant w:")
			at := strings.Index(out, first)
			require.True(t, v < at && at < w, "in v's block:\n%s", out)
			require.Contains(t, out, "#   FAIL by mode: ")
		})
	}
	require.Contains(t, inPlaceRegisteredHint[0], "out-of-place ones pass")
	require.Contains(t, inPlaceRegisteredHint[1], "before every peer has read that input")
}
