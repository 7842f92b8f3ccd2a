package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteJSONGolden(t *testing.T) {
	got := render(t, func(b *bytes.Buffer) error { return WriteJSON(b, fixtureReport()) })
	checkGolden(t, "report.json.golden", got)
}

func TestJSONRoundTrip(t *testing.T) {
	want := fixtureReport()
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, want))
	first := buf.String()

	got, err := ReadJSON(&buf)
	require.NoError(t, err)

	// NaN never equals itself, so check the one the fixture holds by hand
	// and then compare everything else.
	gotNaN := &got.Cases[3].Failures[0].Mismatches[0].Got
	wantNaN := &want.Cases[3].Failures[0].Mismatches[0].Got
	require.True(t, math.IsNaN(*gotNaN), "NaN got value lost: %v", *gotNaN)
	require.True(t, math.IsNaN(*wantNaN))
	*gotNaN, *wantNaN = -1, -1
	require.Equal(t, want, got)

	// Writing what was read gives the same bytes.
	*gotNaN = math.NaN()
	var again bytes.Buffer
	require.NoError(t, WriteJSON(&again, got))
	require.Equal(t, first, again.String())
}

func TestWriteJSONDoesNotChangeTheReport(t *testing.T) {
	r := &Report{Cases: []Case{{ID: "a", TimeUS: 1.23456789, AlgBW: 9.87654321}}}
	require.NoError(t, WriteJSON(&bytes.Buffer{}, r))
	require.Equal(t, 1.23456789, r.Cases[0].TimeUS)
	require.Equal(t, 9.87654321, r.Cases[0].AlgBW)
}

func TestWriteJSONRounding(t *testing.T) {
	tests := []struct {
		name string
		in   Case
		want Case
	}{
		{"time to 1 ns", Case{TimeUS: 12.3456789, NCCLTimeUS: 0.0004}, Case{TimeUS: 12.346, NCCLTimeUS: 0}},
		{"seconds to 1 us", Case{Seconds: 0.123456789}, Case{Seconds: 0.123457}},
		{"bandwidth to 5 digits", Case{AlgBW: 381.774016, BusBW: 0.000123456789}, Case{AlgBW: 381.77, BusBW: 0.00012346}},
		{"speed-up to 5 digits", Case{Speedup: 1.876543}, Case{Speedup: 1.8765}},
		{"non-finite timing becomes absent", Case{TimeUS: math.Inf(1), AlgBW: math.NaN(), Speedup: math.Inf(-1)}, Case{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, WriteJSON(&buf, &Report{Cases: []Case{tt.in}}))
			got, err := ReadJSON(&buf)
			require.NoError(t, err)
			require.Equal(t, tt.want, got.Cases[0])
		})
	}
}

// A special case's input kind and its mismatches' inputs and accepted
// results survive the JSON report; the other cases write none of them.
func TestJSONSpecialFields(t *testing.T) {
	c := Case{ID: "v/bf16/max/4100B/oop-reg-plain/special/np2", Verdict: Fail, Input: "special", Failures: []RankFailure{{
		Kind: "mismatch", Mismatches: []Mismatch{{Index: 3, GotBits: 0x3f80, WantBits: 0x0000, Accept: "+0 (0x0000) or -0 (0x8000)",
			Inputs: []uint32{0x8000, 0x0000}}},
	}}}
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, &Report{Cases: []Case{c}}))
	for _, key := range []string{`"input": "special"`, `"accept": "+0 (0x0000) or -0 (0x8000)"`, `"inputs": [`} {
		require.Contains(t, buf.String(), key)
	}
	got, err := ReadJSON(&buf)
	require.NoError(t, err)
	require.Equal(t, c.Input, got.Cases[0].Input)
	require.Equal(t, c.Failures[0].Mismatches, got.Cases[0].Failures[0].Mismatches)

	buf.Reset()
	require.NoError(t, WriteJSON(&buf, &Report{Cases: []Case{{ID: "v/bf16/max/4100B/oop-reg-plain/np2", Verdict: Fail,
		Failures: []RankFailure{{Kind: "mismatch", Mismatches: []Mismatch{{Index: 3}}}}}}}))
	for _, key := range []string{`"input": "special"`, `"accept"`, `"inputs"`} {
		require.NotContains(t, buf.String(), key)
	}
}

func TestJSONNonFiniteMismatchValues(t *testing.T) {
	tests := []struct {
		name string
		v    float64
		text string
	}{
		{"NaN", math.NaN(), `"NaN"`},
		{"+Inf", math.Inf(1), `"+Inf"`},
		{"-Inf", math.Inf(-1), `"-Inf"`},
		{"finite", -0.5, `-0.5`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Cases: []Case{{ID: "c", Verdict: Fail, Failures: []RankFailure{{
				Rank: 1, WorstULP: tt.v,
				Mismatches: []Mismatch{{Index: 3, Got: tt.v, Want: tt.v, ULP: tt.v}},
			}}}}}
			var buf bytes.Buffer
			require.NoError(t, WriteJSON(&buf, r))
			for _, key := range []string{`"got": `, `"want": `, `"ulp": `, `"worst_ulp": `} {
				require.Contains(t, buf.String(), key+tt.text)
			}
			got, err := ReadJSON(&buf)
			require.NoError(t, err)
			f := got.Cases[0].Failures[0]
			m := f.Mismatches[0]
			for _, v := range []float64{f.WorstULP, m.Got, m.Want, m.ULP} {
				if math.IsNaN(tt.v) {
					require.True(t, math.IsNaN(v), "got %v", v)
				} else {
					require.Equal(t, tt.v, v)
				}
			}
			require.Equal(t, uint64(3), m.Index, "fields beside the floats survive")
			require.Equal(t, 1, f.Rank)
		})
	}
}

func TestWriteJSONKeepsMarkupReadable(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, &Report{Cases: []Case{{Reason: "got < want & more"}}}))
	require.Contains(t, buf.String(), `"reason": "got < want & more"`)
}

func TestReadJSONErrors(t *testing.T) {
	tests := []struct {
		name, in string
	}{
		{"empty", ""},
		{"not JSON", "# pass 1, FAIL 0"},
		{"wrong type", `{"cases": {"id": 1}}`},
		{"bad float word", `{"cases": [{"failures": [{"mismatches": [{"got": "lots"}]}]}]}`},
		{"bad worst ulp", `{"cases": [{"failures": [{"worst_ulp": "many"}]}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadJSON(strings.NewReader(tt.in))
			require.ErrorContains(t, err, "read JSON report")
		})
	}
}

func TestReadJSONIgnoresUnknownFields(t *testing.T) {
	r, err := ReadJSON(strings.NewReader(`{"header": {"tool": "artest", "from_the_future": 1}, "cases": [{"id": "a", "verdict": "pass", "new": [1]}]}`))
	require.NoError(t, err)
	require.Equal(t, "artest", r.Header.Tool)
	require.Equal(t, Pass, r.Cases[0].Verdict)
}

func TestWriteJSONReportsWriteErrors(t *testing.T) {
	require.Error(t, WriteJSON(failingWriter{}, fixtureReport()))
}

// One report a file: anything after it (a second report, garbage) is an
// error, not silently left unread.
func TestReadJSONRefusesTrailingData(t *testing.T) {
	one := `{"header":{"tool":"artest"},"cases":[],"summary":{}}`
	_, err := ReadJSON(strings.NewReader(one + "\n"))
	require.NoError(t, err)
	for _, tail := range []string{"\n" + one, "}}garbage", "\n[]"} {
		_, err := ReadJSON(strings.NewReader(one + tail))
		require.ErrorContains(t, err, "data after the report", "%q", tail)
	}
}
