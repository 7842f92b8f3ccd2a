package report

import (
	"bytes"
	"fmt"
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
	require.Contains(t, out, "# ... and 30 more failing cases (--table full, or the JSON report, lists them)")
	require.Contains(t, out, "# pass 4520, FAIL 40, skipped 912")
	require.Contains(t, out, "#   bf16: pass 264, FAIL 40, skipped 0")
}
