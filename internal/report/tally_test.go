package report

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTally(t *testing.T) {
	tests := []struct {
		name     string
		verdicts []Verdict
		want     Summary
	}{
		{"empty", nil, Summary{ExitCode: 7, Error: "kept"}},
		{"mixed", []Verdict{Pass, Fail, Skipped, Pass, Skipped, Skipped}, Summary{Pass: 2, Fail: 1, Skipped: 3, ExitCode: 7, Error: "kept"}},
		{"unclassified verdicts fail", []Verdict{"", "PASS", Pass}, Summary{Pass: 1, Fail: 2, ExitCode: 7, Error: "kept"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Summary: Summary{Pass: 99, Fail: 99, Skipped: 99, ExitCode: 7, Error: "kept"}}
			for _, v := range tt.verdicts {
				r.Cases = append(r.Cases, Case{Verdict: v})
			}
			r.Tally()
			require.Equal(t, tt.want, r.Summary)
		})
	}
}

func TestVariantBlocks(t *testing.T) {
	cases := []Case{{ID: "a1", Variant: "a"}, {ID: "b1", Variant: "b"}, {ID: "a2", Variant: "a"}, {ID: "c1", Variant: "c"}, {ID: "b2", Variant: "b"}}
	var got [][]string
	for _, block := range variantBlocks(cases) {
		var ids []string
		for _, c := range block {
			ids = append(ids, c.ID)
		}
		got = append(got, ids)
	}
	require.Equal(t, [][]string{{"a1", "a2"}, {"b1", "b2"}, {"c1"}}, got)
}
