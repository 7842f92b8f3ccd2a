package report

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The test reads the XML with its own minimal types, the way a CI reporter
// would, rather than with the writer's.
type parsedSuites struct {
	XMLName  xml.Name      `xml:"testsuites"`
	Tests    int           `xml:"tests,attr"`
	Failures int           `xml:"failures,attr"`
	Skipped  int           `xml:"skipped,attr"`
	Suites   []parsedSuite `xml:"testsuite"`
}

type parsedSuite struct {
	Name       string `xml:"name,attr"`
	Tests      int    `xml:"tests,attr"`
	Failures   int    `xml:"failures,attr"`
	Skipped    int    `xml:"skipped,attr"`
	Time       string `xml:"time,attr"`
	Properties []struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	} `xml:"properties>property"`
	Cases []struct {
		Classname string `xml:"classname,attr"`
		Name      string `xml:"name,attr"`
		Time      string `xml:"time,attr"`
		Failure   *struct {
			Message string `xml:"message,attr"`
			Type    string `xml:"type,attr"`
			Text    string `xml:",chardata"`
		} `xml:"failure"`
		Skipped *struct {
			Message string `xml:"message,attr"`
		} `xml:"skipped"`
	} `xml:"testcase"`
}

func parseJUnit(t *testing.T, r *Report) parsedSuites {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, WriteJUnit(&buf, r))
	require.True(t, strings.HasPrefix(buf.String(), `<?xml version="1.0" encoding="UTF-8"?>`))
	var doc parsedSuites
	require.NoError(t, xml.Unmarshal(buf.Bytes(), &doc), buf.String())
	return doc
}

func TestWriteJUnitGolden(t *testing.T) {
	got := render(t, func(b *bytes.Buffer) error { return WriteJUnit(b, fixtureReport()) })
	checkGolden(t, "junit.xml.golden", got)
}

func TestWriteJUnitCounts(t *testing.T) {
	r := fixtureReport()
	doc := parseJUnit(t, r)

	require.Equal(t, len(r.Cases), doc.Tests)
	require.Equal(t, 2, doc.Failures)
	require.Equal(t, 7, doc.Skipped)

	want := []struct {
		name                     string
		tests, failures, skipped int
		time                     string
	}{
		{"artest.oneshot", 6, 1, 3, "0.066"},
		{"artest.twoshot", 3, 1, 1, "0.541"},
		{"artest.multimem", 3, 0, 3, "0.000"},
		{"artest.nccl", 1, 0, 0, "1.250"},
	}
	require.Len(t, doc.Suites, len(want))
	var ids []string
	for i, w := range want {
		s := doc.Suites[i]
		require.Equal(t, w.name, s.Name)
		require.Equal(t, w.time, s.Time, s.Name)
		// The attributes agree with the testcases they count.
		failures, skipped := 0, 0
		for _, c := range s.Cases {
			require.Equal(t, s.Name, c.Classname)
			ids = append(ids, c.Name)
			if c.Failure != nil {
				failures++
				require.NotContains(t, c.Failure.Message, "\n", "message is one line")
			}
			if c.Skipped != nil {
				skipped++
				require.NotEmpty(t, c.Skipped.Message)
			}
		}
		require.Equal(t, []int{w.tests, w.failures, w.skipped}, []int{len(s.Cases), failures, skipped}, s.Name)
		require.Equal(t, []int{w.tests, w.failures, w.skipped}, []int{s.Tests, s.Failures, s.Skipped}, s.Name)
	}
	var wantIDs []string
	for _, block := range variantBlocks(r.Cases) {
		for _, c := range block {
			wantIDs = append(wantIDs, c.ID)
		}
	}
	require.Equal(t, wantIDs, ids)

	require.NotEmpty(t, doc.Suites[0].Properties, "the first suite carries the header")
	for _, s := range doc.Suites[1:] {
		require.Empty(t, s.Properties, s.Name)
	}
	props := map[string]string{}
	for _, p := range doc.Suites[0].Properties {
		props[p.Name] = p.Value
	}
	require.Equal(t, "cuda", props["backend"])
	require.Equal(t, "4", props["ranks"])
	require.Equal(t, "42", props["seed"])
	require.Equal(t, "2.27.3", props["versions.nccl"])
	require.Equal(t, "artest --sizes 1K:1M:x1024 --variants oneshot,twoshot,multimem,nccl --note 'it'\\''s a test'", props["command"])
}

func TestWriteJUnitFailureDetails(t *testing.T) {
	doc := parseJUnit(t, fixtureReport())
	f := doc.Suites[0].Cases[2].Failure
	require.NotNil(t, f)
	require.Equal(t, "5 wrong elements on ranks 1, 3 (skip-last injected)", f.Message)
	require.Equal(t, "mismatch", f.Type)
	for _, want := range []string{
		"rank 1 mismatch, 1 wrong, worst +Inf ulp: last element not written\n  index 2047: got NaN (0x7e00) want 10 (0x4900), +Inf ulp\n",
		"rank 3 mismatch, 4 wrong, worst 3 ulp: values off by more than the bound\n",
		"  index 7: got -2 (0xc000) want -2.00390625 (0xc002), 2 ulp, stress iteration 3\n",
	} {
		require.Contains(t, f.Text, want)
	}
}

func TestWriteJUnitCapsMismatches(t *testing.T) {
	c := Case{ID: "x", Variant: "oneshot", DType: "f32", Verdict: Fail, Failures: []RankFailure{{Rank: 0, Kind: "mismatch"}}}
	for i := range maxJUnitMismatches + 3 {
		c.Failures[0].Mismatches = append(c.Failures[0].Mismatches, Mismatch{Index: uint64(i)})
	}
	doc := parseJUnit(t, &Report{Cases: []Case{c}})
	text := doc.Suites[0].Cases[0].Failure.Text
	require.Equal(t, maxJUnitMismatches, strings.Count(text, "  index "))
	require.Contains(t, text, "... 3 more listed in the JSON report")
}

func TestWriteJUnitEscapes(t *testing.T) {
	nasty := `<kernel "a"> & 'b' ]]>` + "\x1b[31m\xff"
	r := &Report{Cases: []Case{
		{ID: "a<&>/f32", Variant: "v&<", Verdict: Fail, Reason: nasty + "\nsecond line"},
		{ID: "b", Variant: "v&<", Verdict: Skipped, Reason: nasty},
	}}
	doc := parseJUnit(t, r)
	s := doc.Suites[0]
	require.Equal(t, "artest.v&<", s.Name)
	require.Equal(t, "a<&>/f32", s.Cases[0].Name)
	// Characters XML cannot carry (ESC, invalid UTF-8) become U+FFFD, and
	// "]]>" survives the CDATA section of the details.
	clean := `<kernel "a"> & 'b' ]]>` + "\uFFFD[31m\uFFFD"
	require.Equal(t, clean, s.Cases[0].Failure.Message)
	require.Contains(t, s.Cases[0].Failure.Text, clean+"\nsecond line\n")
	require.Equal(t, clean, s.Cases[1].Skipped.Message)
}

func TestWriteJUnitRunError(t *testing.T) {
	r := fixtureReport()
	r.Summary.Error = "watchdog: rank 2 stuck in the end barrier\nstack follows \x00"
	r.Summary.ExitCode = 3
	doc := parseJUnit(t, r)
	last := doc.Suites[len(doc.Suites)-1]
	require.Equal(t, runSuiteName, last.Name)
	require.Equal(t, 1, last.Failures)
	require.Equal(t, "run stopped early: watchdog: rank 2 stuck in the end barrier", last.Cases[0].Failure.Message)
	require.Equal(t, "run", last.Cases[0].Failure.Type)
	require.Contains(t, last.Cases[0].Failure.Text, "exit code 3")
	require.Equal(t, 3, doc.Failures, "the run failure counts in the total")
}

// A run a signal ended shows as the run suite's failure of type
// "interrupted", so CI tells it from a failing case and from a hang.
func TestWriteJUnitInterrupted(t *testing.T) {
	r := fixtureReport()
	r.Summary.Interrupted = "SIGTERM"
	r.Summary.Error = "interrupted by SIGTERM after 2 of 9 cases"
	r.Summary.ExitCode = 143
	doc := parseJUnit(t, r)
	last := doc.Suites[len(doc.Suites)-1]
	require.Equal(t, runSuiteName, last.Name)
	require.Equal(t, "interrupted", last.Cases[0].Failure.Type)
	require.Equal(t, "run stopped early: interrupted by SIGTERM after 2 of 9 cases", last.Cases[0].Failure.Message)
	require.Contains(t, last.Cases[0].Failure.Text, "exit code 143")

	r.Summary.Error = ""
	last = parseJUnit(t, r).Suites[len(doc.Suites)-1]
	require.Equal(t, "run stopped early: interrupted by SIGTERM", last.Cases[0].Failure.Message)
}

func TestWriteJUnitEmptyReport(t *testing.T) {
	doc := parseJUnit(t, &Report{})
	require.Zero(t, doc.Tests)
	require.Empty(t, doc.Suites)
}

func TestWriteJUnitReportsWriteErrors(t *testing.T) {
	require.Error(t, WriteJUnit(failingWriter{}, fixtureReport()))
}
