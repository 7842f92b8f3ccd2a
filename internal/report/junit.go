package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The JUnit dialect that Jenkins (junit plugin), GitLab and the GitHub test
// reporter actions all read: testsuites > testsuite > testcase, with
// failure/skipped children and counts as attributes.

type junitTestsuites struct {
	XMLName  xml.Name         `xml:"testsuites"`
	Name     string           `xml:"name,attr"`
	Tests    int              `xml:"tests,attr"`
	Failures int              `xml:"failures,attr"`
	Errors   int              `xml:"errors,attr"`
	Skipped  int              `xml:"skipped,attr"`
	Time     string           `xml:"time,attr"`
	Suites   []junitTestsuite `xml:"testsuite"`
}

type junitTestsuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr"`
	Timestamp  string           `xml:"timestamp,attr,omitempty"`
	Hostname   string           `xml:"hostname,attr,omitempty"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitTestcase  `xml:"testcase"`
}

type junitProperties struct {
	Properties []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestcase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Details string `xml:",cdata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

// maxJUnitMismatches bounds the mismatches listed per rank in a failure's
// details; the JSON report has every one the ranks sent.
const maxJUnitMismatches = 8

// runSuiteName holds the pseudo-case that reports a run which stopped early.
const runSuiteName = "artest.run"

// WriteJUnit writes r as JUnit XML: one testsuite "artest.<variant>" per
// variant in first-appearance order, one testcase per case (named by its ID),
// <failure> for failed cases with every rank's failure and first mismatches,
// <skipped> with the reason for skipped ones, and the header's key facts as
// properties of the first suite. Timed cases carry their numbers in
// <system-out>. When r.Summary.Error says the run stopped early, a suite
// "artest.run" with one failing testcase "run" carries it, so a CI system
// that only reads this file still sees the run failed; its failure's type
// is "interrupted" when a signal ended the run (r.Summary.Interrupted),
// "run" otherwise.
func WriteJUnit(w io.Writer, r *Report) error {
	doc := junitTestsuites{Name: r.Header.Tool}
	if doc.Name == "" {
		doc.Name = "artest"
	}
	var total float64
	for _, block := range variantBlocks(r.Cases) {
		suite, seconds := junitSuite(block, &r.Header)
		total += seconds
		doc.Suites = append(doc.Suites, suite)
	}
	if r.Summary.Error != "" || r.Summary.Interrupted != "" {
		why, kind := r.Summary.Error, "run"
		if r.Summary.Interrupted != "" {
			kind = "interrupted"
			if why == "" {
				why = "interrupted by " + r.Summary.Interrupted
			}
		}
		doc.Suites = append(doc.Suites, junitTestsuite{
			Name: runSuiteName, Tests: 1, Failures: 1, Time: junitSeconds(0),
			Timestamp: junitTimestamp(&r.Header), Hostname: firstHost(&r.Header),
			Cases: []junitTestcase{{
				Classname: runSuiteName, Name: "run", Time: junitSeconds(0),
				Failure: &junitFailure{
					Message: "run stopped early: " + firstLine(why),
					Type:    kind,
					Details: xmlSafe(fmt.Sprintf("%s\nexit code %d\n", why, r.Summary.ExitCode)),
				},
			}},
		})
	}
	if len(doc.Suites) > 0 {
		doc.Suites[0].Properties = &junitProperties{Properties: headerProperties(&r.Header)}
	}
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Skipped += s.Skipped
	}
	doc.Time = junitSeconds(total)

	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(&doc); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return nil
}

func junitSuite(block []*Case, h *Header) (junitTestsuite, float64) {
	name := "artest." + block[0].Variant
	suite := junitTestsuite{
		Name:      name,
		Tests:     len(block),
		Timestamp: junitTimestamp(h),
		Hostname:  firstHost(h),
	}
	var seconds float64
	for _, c := range block {
		seconds += c.Seconds
		tc := junitTestcase{Classname: name, Name: c.ID, Time: junitSeconds(c.Seconds), SystemOut: timingLine(c)}
		switch verdictOf(c) {
		case Skipped:
			suite.Skipped++
			tc.Skipped = &junitSkipped{Message: skipReason(c)}
		case Fail:
			suite.Failures++
			tc.Failure = &junitFailure{Message: failureReason(c), Type: failureKinds(c), Details: failureDetails(c)}
		}
		suite.Cases = append(suite.Cases, tc)
	}
	suite.Time = junitSeconds(seconds)
	return suite, seconds
}

// failureDetails lists every rank's failure and its first mismatches. It is
// written as CDATA so that its lines stay lines in the file, not &#xA;.
func failureDetails(c *Case) string {
	var b strings.Builder
	// Without a Reason the message was built from the rank failures listed
	// below; repeating it adds nothing.
	if firstLine(c.Reason) != "" || c.Verdict != Fail || len(c.Failures) == 0 {
		reason := failureReason(c)
		if full := strings.TrimSpace(c.Reason); c.Verdict == Fail && strings.ContainsAny(full, "\r\n") {
			reason = full // the message attribute holds one line; the details keep all
		}
		fmt.Fprintf(&b, "%s\n", reason)
	}
	if c.Wrong > 0 {
		noun := "elements"
		if c.Wrong == 1 {
			noun = "element"
		}
		fmt.Fprintf(&b, "%d wrong %s over all ranks\n", c.Wrong, noun)
	}
	for i := range c.Failures {
		f := &c.Failures[i]
		fmt.Fprintf(&b, "%s\n", rankFailureLine(f))
		for j := range f.Mismatches {
			if j == maxJUnitMismatches {
				fmt.Fprintf(&b, "  ... %d more listed in the JSON report\n", len(f.Mismatches)-maxJUnitMismatches)
				break
			}
			fmt.Fprintf(&b, "  %s\n", mismatchLine(&f.Mismatches[j], c.DType))
		}
	}
	return xmlSafe(b.String())
}

// xmlSafe replaces what XML 1.0 cannot carry (control characters other than
// tab and newlines, invalid UTF-8) with U+FFFD, as encoding/xml does for
// attributes and character data but not for CDATA. A kernel's garbage can
// reach a detail string, and one bad byte must not make the file unreadable.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r == utf8.RuneError, r < 0x20, r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE || r == 0xFFFF:
			return '\uFFFD'
		}
		return r
	}, s)
}

// failureKinds is the type attribute: the distinct failure kinds of the
// ranks, in rank order, e.g. "mismatch,guard".
func failureKinds(c *Case) string {
	var kinds []string
	seen := map[string]bool{}
	for _, f := range c.Failures {
		if f.Kind != "" && !seen[f.Kind] {
			seen[f.Kind] = true
			kinds = append(kinds, f.Kind)
		}
	}
	return strings.Join(kinds, ",")
}

// timingLine is the benchmark numbers of a timed case; empty otherwise.
func timingLine(c *Case) string {
	if c.TimeUS == 0 {
		return ""
	}
	fixed := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
	s := fmt.Sprintf("time %s us, algbw %s GB/s, busbw %s GB/s", fixed(c.TimeUS), fixed(c.AlgBW), fixed(c.BusBW))
	if c.NCCLTimeUS != 0 {
		s += fmt.Sprintf(", nccl %s us, speedup %sx", fixed(c.NCCLTimeUS), fixed(c.Speedup))
	}
	return s
}

// headerProperties are the header's key facts, in a fixed order.
func headerProperties(h *Header) []junitProperty {
	props := []junitProperty{
		{"tool", h.Tool},
		{"version", h.Version},
		{"git_revision", h.GitRevision},
		{"command", ShellCommand(h.Command)},
		{"start", junitTimestamp(h)},
		{"backend", h.Backend},
		{"ranks", strconv.Itoa(h.Ranks)},
		{"hosts", hostsLine(h.Hosts)},
		{"seed", strconv.FormatUint(h.Seed, 10)},
		{"input", h.Input},
		{"iters", strconv.Itoa(h.Iters)},
		{"warmup", strconv.Itoa(h.Warmup)},
		{"stress", strconv.Itoa(h.Stress)},
		{"inject", strings.Join(h.Inject, ",")},
	}
	if h.Schedules != "" { // stress runs only
		props = append(props, junitProperty{"schedules", h.Schedules})
	}
	if h.SharedGPUs != "" {
		props = append(props, junitProperty{"shared_gpus", h.SharedGPUs + "; times mean nothing"})
	}
	for i, d := range h.Devices {
		props = append(props, junitProperty{fmt.Sprintf("device.%d", i), d})
	}
	for _, k := range sortedKeys(h.Versions) {
		props = append(props, junitProperty{"versions." + k, h.Versions[k]})
	}
	return props
}

// junitTimestamp is ISO 8601 without a zone, as the JUnit schema wants, in
// UTC.
func junitTimestamp(h *Header) string {
	if h.Start.IsZero() {
		return ""
	}
	return h.Start.UTC().Format("2006-01-02T15:04:05")
}

func firstHost(h *Header) string {
	if len(h.Hosts) == 0 {
		return ""
	}
	return h.Hosts[0]
}

func junitSeconds(s float64) string {
	if !(s >= 0) || math.IsInf(s, 1) { // negative, NaN or +Inf: readers reject them
		s = 0
	}
	return strconv.FormatFloat(s, 'f', 3, 64)
}
