package report

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteModeTables(t *testing.T) {
	table := ModeTable{Name: "demo", Title: "the calls again, some other way", Columns: []ModeColumn{
		{Key: "other_us", Head: "other", Unit: "us"}, {Key: "ratio", Head: "a long heading"}}}
	timed := Case{Variant: "oneshot", Bytes: 4096, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", TimeUS: 6.5,
		Modes: map[string]ModeFigures{"demo": {Values: map[string]float64{"other_us": 4.25, "ratio": 0.65}}}}
	partial := Case{Variant: "twoshot", Bytes: 4096, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", TimeUS: 9,
		Modes: map[string]ModeFigures{"demo": {Values: map[string]float64{"other_us": 3}}}}
	noted := func(bytes int64) Case {
		return Case{Variant: "oneshot", Bytes: bytes, Mode: "oop-stg-plain", TimeUS: 7,
			Modes: map[string]ModeFigures{"demo": {Note: "staged"}}}
	}
	for _, tc := range []struct {
		name   string
		tables []ModeTable
		cases  []Case
		want   []string
	}{
		{"no table declared: nothing", nil, []Case{timed}, nil},
		{"a table without figures: nothing", []ModeTable{table}, []Case{{Variant: "oneshot", TimeUS: 5}}, nil},
		{"a row per timed case, a dash for a missing figure, one line per note", []ModeTable{table},
			[]Case{timed, partial, noted(4096), noted(8192)}, []string{
				"# demo: the calls again, some other way; maximum over ranks",
				"# variant                size   type  redop mode                     time      other a long heading",
				"#                         (B)                                        (us)       (us)",
				"# oneshot                4096   bf16    sum oop-reg-plain            6.50       4.25           0.65",
				"# twoshot                4096   bf16    sum oop-reg-plain            9.00       3.00              -",
				"# not timed by demo: oneshot: staged",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sb strings.Builder
			w := bufio.NewWriter(&sb)
			writeModeTables(w, &Report{Header: Header{ModeTables: tc.tables}, Cases: tc.cases})
			require.NoError(t, w.Flush())
			out := sb.String()
			if tc.want == nil {
				require.Empty(t, out)
				return
			}
			for _, line := range tc.want {
				require.Contains(t, out, line+"\n")
			}
			require.Equal(t, 1, strings.Count(out, "# not timed by demo:"), "one line per variant and reason")
		})
	}
}

// A mode's figures and table survive the JSON report; a case and a header
// without them have no key for them.
func TestModeFiguresJSON(t *testing.T) {
	r := Report{Header: Header{ModeTables: []ModeTable{{Name: "demo", Title: "t", Columns: []ModeColumn{{Key: "k", Head: "h"}}}}},
		Cases: []Case{{ID: "a", Modes: map[string]ModeFigures{"demo": {Values: map[string]float64{"k": 1.5}}}}, {ID: "b"}}}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	var back Report
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, r.Header.ModeTables, back.Header.ModeTables)
	require.Equal(t, r.Cases[0].Modes, back.Cases[0].Modes)
	plain, err := json.Marshal(Report{Cases: []Case{{ID: "b"}}})
	require.NoError(t, err)
	require.NotContains(t, string(plain), "mode_tables")
	require.NotContains(t, string(plain), `"modes"`)
}
