// Package bench holds what `artest bench` adds on top of the runner and the
// reports: the comparison of two runs that CI gates on (`artest compare`)
// and the plot of times and bandwidths against size (--plot).
package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
)

// Thresholds decide when a case got slower. Small messages are latency
// bound, and their times jitter by a few hundred nanoseconds from run to
// run, so they get a wide margin on time; large messages are bandwidth
// bound and steadier, so a small drop of bus bandwidth already counts. The
// defaults (15 % and 5 % around 1 MiB) are not derived from a measurement
// of run-to-run noise (docs/bench.md).
type Thresholds struct {
	// SmallBelow: cases with fewer bytes are judged by time, the others by
	// bus bandwidth.
	SmallBelow int64
	// MaxSlowdown is the largest allowed time increase of a small case, as
	// a fraction (0.15: 15 % slower).
	MaxSlowdown float64
	// MaxBWDrop is the largest allowed bus bandwidth drop of a large case,
	// as a fraction (0.05: 5 % less).
	MaxBWDrop float64
	// Alpha is the significance level of the test that tells a change past
	// the thresholds from noise, when both cases kept at least
	// MinRepetitions timed repetitions: a change whose Mann-Whitney U test
	// gives p >= Alpha is NOISE, not SLOWER (or faster). 0 turns the test
	// off.
	Alpha float64
	// VerdictsOnly judges verdicts alone (--verdicts-only): a case FAILS
	// or is newly SKIPPED, and times are shown but not judged. Compare
	// also judges this way, whatever this says, when TimesNotJudged finds
	// that the times of either run are not speed.
	VerdictsOnly bool
}

// MinRepetitions is the fewest timed repetitions per side for the
// significance test: with 3 and 3 even two samples that do not overlap
// give p = 0.08 (normal approximation), so no change could pass at 0.05.
const MinRepetitions = 4

// DefaultThresholds: 15 % time under 1 MiB, 5 % busbw from
// 1 MiB up.
var DefaultThresholds = Thresholds{SmallBelow: 1 << 20, MaxSlowdown: 0.15, MaxBWDrop: 0.05, Alpha: 0.05}

// Status of one case in a comparison.
type Status string

const (
	StatusOK         Status = "ok"
	StatusFaster     Status = "faster"      // better by more than the threshold
	StatusRegression Status = "SLOWER"      // worse by more than the threshold
	StatusFails      Status = "FAILS"       // failed in NEW, passed (or was absent) in OLD
	StatusStillFails Status = "still-fails" // failed in both
	StatusUntimed    Status = "untimed"     // no time in one of them (skipped, failed before timing)
	StatusNoise      Status = "NOISE"       // past a threshold, but the repetitions cannot tell it from noise
	StatusSkipped    Status = "SKIPPED"     // judged by verdicts: passed in OLD, skipped in NEW
	StatusOnlyOld    Status = "only-old"
	StatusOnlyNew    Status = "only-new"
)

// Row is one case of a comparison.
type Row struct {
	ID       string
	Bytes    int64
	Old, New *report.Case
	// TimeChange is new/old - 1 of the time; BWChange new/old - 1 of the
	// bus bandwidth (from the times when a report has no busbw, as for one
	// rank). Both are 0 unless both cases were timed.
	TimeChange, BWChange float64
	Status               Status
	// Why explains a regression or a failure.
	Why string
	// P is the Mann-Whitney U test's p-value of the repetitions when the
	// change passed a threshold and both sides had enough of them; else 0.
	P float64
}

// severity orders statuses for picking the worst of several records of one
// case: what fails the gate first, then what it reports.
func severity(s Status) int {
	switch s {
	case StatusFails:
		return 5
	case StatusSkipped:
		return 4
	case StatusRegression:
		return 3
	case StatusStillFails:
		return 2
	case StatusNoise:
		return 1
	}
	return 0
}

// Regression reports whether the row fails the gate.
func (r *Row) Regression() bool {
	return r.Status == StatusRegression || r.Status == StatusFails || r.Status == StatusSkipped
}

// TimesNotJudged says why the times of two runs say nothing of speed, ""
// when they may be judged: a run on the host backend (Go models of the
// kernels on the CPU, whose times jitter by far more than any limit: two
// identical --quick runs used to be 15 cases SLOWER) or one whose ranks
// shared GPUs (Header.SharedGPUs: each rank's kernels wait on the others').
func TimesNotJudged(old, new *report.Header) string {
	which := func(o, n bool) string {
		switch {
		case o && n:
			return "OLD and NEW"
		case o:
			return "OLD"
		case n:
			return "NEW"
		}
		return ""
	}
	if who := which(old.Backend == "host", new.Backend == "host"); who != "" {
		return fmt.Sprintf("host backend (%s): host times are not speed", who)
	}
	if who := which(old.SharedGPUs != "", new.SharedGPUs != ""); who != "" {
		how := new.SharedGPUs
		if how == "" {
			how = old.SharedGPUs
		}
		return fmt.Sprintf("shared GPUs (%s: %s): times of ranks that share a GPU are not speed", who, how)
	}
	return ""
}

// VerdictsOnly reports whether the comparison judges verdicts alone: asked
// for, or forced by a report whose times are not speed (TimesNotJudged).
func VerdictsOnly(old, new *report.Header, th Thresholds) bool {
	return th.VerdictsOnly || TimesNotJudged(old, new) != ""
}

// Compare matches the cases of old and new by ID and judges each. Rows come
// in new's order, then the cases only old has. When VerdictsOnly, a case is
// judged by its verdicts alone (judgeVerdicts), never by its times.
func Compare(old, new *report.Report, th Thresholds) []Row {
	judgeCase := judge
	if VerdictsOnly(&old.Header, &new.Header, th) {
		judgeCase = func(o, n *report.Case, _ Thresholds) Row { return judgeVerdicts(o, n) }
	}
	oldByID := map[string]*report.Case{}
	for i := range old.Cases {
		oldByID[old.Cases[i].ID] = &old.Cases[i]
	}
	seen := map[string]bool{}
	var rows []Row
	at := map[string]int{}       // a case's row
	recorded := map[string]int{} // its records in NEW
	for i := range new.Cases {
		n := &new.Cases[i]
		recorded[n.ID]++
		row := judgeCase(oldByID[n.ID], n, th)
		if seen[n.ID] {
			// A case recorded twice in NEW (a JSON Lines file appended
			// to): every record is judged and the worst stands.
			if j := at[n.ID]; severity(row.Status) > severity(rows[j].Status) {
				rows[j] = row
			}
			continue
		}
		seen[n.ID] = true
		at[n.ID] = len(rows)
		rows = append(rows, row)
	}
	for id, k := range recorded {
		if k > 1 {
			r := &rows[at[id]]
			note := fmt.Sprintf("recorded %d times in NEW, the worst record judged", k)
			if r.Why != "" {
				note = r.Why + "; " + note
			}
			r.Why = note
		}
	}
	for i := range old.Cases {
		o := &old.Cases[i]
		if !seen[o.ID] {
			seen[o.ID] = true
			rows = append(rows, Row{ID: o.ID, Bytes: o.Bytes, Old: o, Status: StatusOnlyOld})
		}
	}
	return rows
}

// judgeFailure is what every comparison judges first: a case only in NEW
// (FAILS when it fails there), a case failing in both, a case newly
// failing. done is false when neither side failed and o exists.
func judgeFailure(o, n *report.Case) (row Row, done bool) {
	row = Row{ID: n.ID, Bytes: n.Bytes, Old: o, New: n}
	switch {
	case o == nil:
		row.Status = StatusOnlyNew
		if failed(n) {
			row.Status, row.Why = StatusFails, "fails in NEW: "+firstLine(n.Reason)
		}
	case failed(n) && failed(o):
		row.Status = StatusStillFails
	case failed(n):
		row.Status, row.Why = StatusFails, "fails in NEW: "+firstLine(n.Reason)
	default:
		return row, false
	}
	return row, true
}

func judge(o, n *report.Case, th Thresholds) Row {
	row, done := judgeFailure(o, n)
	if done {
		return row
	}
	switch {
	case o.TimeUS <= 0 || n.TimeUS <= 0:
		row.Status = StatusUntimed
		return row
	}
	row.TimeChange, row.BWChange = changes(o, n)
	row.Status = StatusOK
	change := ""
	if n.Bytes < th.SmallBelow {
		change = "time " + percent(row.TimeChange)
		switch {
		case row.TimeChange > th.MaxSlowdown:
			row.Status = StatusRegression
			row.Why = fmt.Sprintf("%s, limit +%s below %s", change, percentAbs(th.MaxSlowdown), cases.FormatSize(th.SmallBelow))
		case row.TimeChange < -th.MaxSlowdown:
			row.Status = StatusFaster
		}
	} else {
		change = "busbw " + percent(row.BWChange)
		switch {
		case -row.BWChange > th.MaxBWDrop:
			row.Status = StatusRegression
			row.Why = fmt.Sprintf("%s, limit -%s from %s", change, percentAbs(th.MaxBWDrop), cases.FormatSize(th.SmallBelow))
		case row.BWChange > th.MaxBWDrop:
			row.Status = StatusFaster
		}
	}
	if row.Status == StatusOK || th.Alpha <= 0 {
		return row
	}
	oldReps, newReps := repetitions(o), repetitions(n)
	if len(oldReps) < MinRepetitions || len(newReps) < MinRepetitions {
		return row
	}
	row.P = MannWhitneyP(oldReps, newReps)
	if row.P >= th.Alpha {
		row.Status = StatusNoise
		row.Why = fmt.Sprintf("%s but p=%.2f over %d and %d repetitions (Mann-Whitney U, alpha %g)", change, row.P, len(oldReps), len(newReps), th.Alpha)
	}
	return row
}

// judgeVerdicts judges a case by its verdicts alone: it FAILS when it
// fails (or hangs) in NEW and did not in OLD, or is new and fails; it is
// SKIPPED when it passed in OLD and is skipped in NEW (the run no longer
// checks it). Its changes of time and busbw are computed when both sides
// were timed, to be shown, and decide nothing.
func judgeVerdicts(o, n *report.Case) Row {
	row, done := judgeFailure(o, n)
	if done {
		return row
	}
	switch {
	case n.Verdict == report.Skipped && o.Verdict == report.Pass:
		row.Status, row.Why = StatusSkipped, "passed in OLD, skipped in NEW"
		if r := firstLine(n.Reason); r != "" {
			row.Why += ": " + r
		}
		return row
	}
	row.Status = StatusOK
	if o.TimeUS > 0 && n.TimeUS > 0 {
		row.TimeChange, row.BWChange = changes(o, n)
	}
	return row
}

// changes are new/old - 1 of two timed cases' time and bus bandwidth (the
// latter from the times when a report has no busbw, as for one rank).
func changes(o, n *report.Case) (timeChange, bwChange float64) {
	timeChange = n.TimeUS/o.TimeUS - 1
	if o.BusBW > 0 && n.BusBW > 0 {
		return timeChange, n.BusBW/o.BusBW - 1
	}
	return timeChange, o.TimeUS/n.TimeUS - 1 // bandwidth is bytes over time
}

// failed reports whether a case failed or hung.
func failed(c *report.Case) bool { return c.Verdict == report.Fail || c.Verdict == report.Hung }

// repetitions are a case's timed repetitions (bench runs keep them).
func repetitions(c *report.Case) []float64 {
	if c.Timing == nil {
		return nil
	}
	return c.Timing.RepUS
}

// MannWhitneyP is the two-sided p-value of the Mann-Whitney U test that x
// and y come from one distribution: the normal approximation with tie and
// continuity correction. It needs no assumption about the shape of the
// times (GPU timings are skewed, with rare slow outliers), only that the
// repetitions are independent. 1 when there is no spread at all.
func MannWhitneyP(x, y []float64) float64 {
	n1, n2 := float64(len(x)), float64(len(y))
	if n1 == 0 || n2 == 0 {
		return 1
	}
	type sample struct {
		v     float64
		first bool
	}
	all := make([]sample, 0, len(x)+len(y))
	for _, v := range x {
		all = append(all, sample{v, true})
	}
	for _, v := range y {
		all = append(all, sample{v, false})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	n := n1 + n2
	var rankSumX, ties float64
	for i := 0; i < len(all); {
		j := i
		for j+1 < len(all) && all[j+1].v == all[i].v {
			j++
		}
		rank := float64(i+j)/2 + 1 // the mid-rank of a run of ties
		for k := i; k <= j; k++ {
			if all[k].first {
				rankSumX += rank
			}
		}
		t := float64(j - i + 1)
		ties += t*t*t - t
		i = j + 1
	}
	u := rankSumX - n1*(n1+1)/2
	mean := n1 * n2 / 2
	variance := n1 * n2 / 12 * ((n + 1) - ties/(n*(n-1)))
	if variance <= 0 {
		return 1
	}
	z := (math.Abs(u-mean) - 0.5) / math.Sqrt(variance)
	if z <= 0 {
		return 1
	}
	return math.Erfc(z / math.Sqrt2)
}

func percent(f float64) string    { return fmt.Sprintf("%+.1f%%", 100*f) }
func percentAbs(f float64) string { return fmt.Sprintf("%g%%", 100*f) }

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// Input is one side of a comparison: a report and what is known of the
// run behind it.
type Input struct {
	Path   string
	Report *report.Report
	// Incomplete says why the run did not finish its cases, "" when it
	// did: a --jsonl stream without its summary line, or a summary with
	// an error (the run stopped early) or an exit code other than 0 (every
	// case passed) and 1 (a case failed), such as 3 for a hang.
	Incomplete string
}

// ReadInput reads the --json report, or the --jsonl stream, of an artest
// run, and judges whether the run finished. A file that is neither is an
// error that says so; so is a path that is not a regular file of at most
// report.MaxReportBytes (a device, a FIFO, a directory), which is refused
// without reading it.
func ReadInput(path string) (*Input, error) {
	rep, complete, err := readReport(path)
	if err != nil {
		return nil, err
	}
	in := &Input{Path: path, Report: rep}
	switch s := rep.Summary; {
	case !complete:
		in.Incomplete = "no summary line (the run did not finish)"
	case s.Error != "":
		in.Incomplete = fmt.Sprintf("the run stopped early (exit code %d): %s", s.ExitCode, firstLine(s.Error))
	case s.ExitCode != exitcode.OK && s.ExitCode != exitcode.Wrong:
		in.Incomplete = fmt.Sprintf("the run exited with code %d", s.ExitCode)
		if name := exitName[s.ExitCode]; name != "" {
			in.Incomplete += " (" + name + ")"
		}
	}
	return in, nil
}

// exitName names the exit codes that end a run before its cases are done.
var exitName = map[int]string{exitcode.Usage: "usage error", exitcode.Hang: "hang", exitcode.Env: "environment"}

// readReport reads a report; complete is false for a --jsonl stream
// without its summary line.
func readReport(path string) (rep *report.Report, complete bool, err error) {
	b, err := report.ReadInputFile(path, report.MaxReportBytes)
	if err != nil {
		if errors.Is(err, report.ErrNotRegular) || errors.Is(err, report.ErrTooLarge) {
			return nil, false, fmt.Errorf("%w; want the --json or --jsonl file of an artest run", err)
		}
		return nil, false, err
	}
	notReport := fmt.Errorf("%s: not an artest report (want the --json or --jsonl file of an artest run)", path)
	// A JSON Lines stream's first line is an object holding the header
	// alone (and the run's id); a report (indented or not) holds cases and
	// summary too, a repro bundle its case.
	first, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n"))
	var fields map[string]json.RawMessage
	if json.Unmarshal(first, &fields) == nil && isJSONLHeader(fields) {
		rep, complete, err := report.ReadJSONL(bytes.NewReader(b))
		if err != nil || rep.Header.Tool != "artest" {
			return nil, false, notReport
		}
		return rep, complete, nil
	}
	fields = nil
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&fields); err != nil {
		return nil, false, notReport
	}
	// A repro bundle has a header too, and a "result" case: read as a
	// report it would be one without cases.
	if fields["artest_repro"] != nil {
		var bundle struct {
			Ranks int `json:"ranks"`
		}
		rerun := "artest --repro " + path
		if json.Unmarshal(b, &bundle) == nil && bundle.Ranks > 0 {
			rerun = fmt.Sprintf("mpirun -np %d %s", bundle.Ranks, rerun)
		}
		return nil, false, fmt.Errorf("%s is a repro bundle, not a report; rerun it with %s", path, rerun)
	}
	if fields["cases"] == nil && fields["summary"] == nil {
		return nil, false, notReport
	}
	rep, err = report.ReadJSON(bytes.NewReader(b))
	if errors.Is(err, report.ErrTrailingData) {
		return nil, false, fmt.Errorf("%s: %w", path, err)
	}
	if err != nil || rep.Header.Tool != "artest" {
		return nil, false, notReport
	}
	return rep, true, nil
}

// isJSONLHeader reports whether the fields of a file's first line are
// those of a JSON Lines stream's header line.
func isJSONLHeader(fields map[string]json.RawMessage) bool {
	for k := range fields {
		if k != "header" && k != "run" {
			return false
		}
	}
	return fields["header"] != nil
}

// Missing lists the IDs of the cases only OLD has, in the rows' order.
func Missing(rows []Row) []string {
	var ids []string
	for i := range rows {
		if rows[i].Status == StatusOnlyOld {
			ids = append(ids, rows[i].ID)
		}
	}
	return ids
}

// Summary counts the rows by outcome.
type Summary struct {
	Compared, Regressions, Fails, Faster, Untimed, OnlyOld, OnlyNew, Noise int
	// Skipped counts the cases newly skipped (judged by verdicts only),
	// StillFails those that fail in both.
	Skipped, StillFails int
	// Common counts the cases both reports have; Compared also counts a
	// case that fails in NEW and is missing from OLD.
	Common int
}

// Summarize counts rows.
func Summarize(rows []Row) Summary {
	var s Summary
	for i := range rows {
		if rows[i].Old != nil && rows[i].New != nil {
			s.Common++
		}
		switch rows[i].Status {
		case StatusOnlyOld:
			s.OnlyOld++
			continue
		case StatusOnlyNew:
			s.OnlyNew++
			continue
		case StatusRegression:
			s.Regressions++
		case StatusFails:
			s.Fails++
		case StatusFaster:
			s.Faster++
		case StatusUntimed:
			s.Untimed++
		case StatusNoise:
			s.Noise++
		case StatusSkipped:
			s.Skipped++
		case StatusStillFails:
			s.StillFails++
		}
		s.Compared++
	}
	return s
}

// WriteComparison prints the comparison: where each report comes from and
// whether its run finished, the thresholds, one row per case (old and new
// time and busbw with their change, and the status), then the counts, and
// gate when NEW as a whole fails the gate (it did not finish, or it lacks
// cases of OLD; "" when it passes). Every line but the rows starts with '#'.
func WriteComparison(w io.Writer, oldIn, newIn *Input, th Thresholds, rows []Row, gate string) error {
	old, new := oldIn.Report, newIn.Report
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# artest compare\n")
	fmt.Fprintf(bw, "# old: %s (%s)\n", oldIn.Path, describe(&old.Header))
	fmt.Fprintf(bw, "# new: %s (%s)\n", newIn.Path, describe(&new.Header))
	if warn := mismatchedRuns(&old.Header, &new.Header); warn != "" {
		fmt.Fprintf(bw, "# warning: %s\n", warn)
	}
	// An unfinished OLD is compared as far as it goes: the cases it lacks
	// are only in new, which fails nothing but a failing case.
	if oldIn.Incomplete != "" {
		fmt.Fprintf(bw, "# warning: OLD is incomplete: %s\n", oldIn.Incomplete)
	}
	if newIn.Incomplete != "" {
		fmt.Fprintf(bw, "# warning: NEW is incomplete: %s\n", newIn.Incomplete)
	}
	verdictsOnly := VerdictsOnly(&old.Header, &new.Header, th)
	if verdictsOnly {
		why := "--verdicts-only: times are not judged"
		if w := TimesNotJudged(&old.Header, &new.Header); w != "" {
			why = w + " and are not judged"
		}
		fmt.Fprintf(bw, "# %s (shown as information only); the exit code depends on verdicts alone\n", why)
		fmt.Fprintf(bw, "# a case FAILS when it fails in new only; is SKIPPED when it passed in old and is skipped in new; is only-old when new lacks it\n")
	} else {
		fmt.Fprintf(bw, "# a case is SLOWER when its time grew by more than %s (below %s) or its busbw fell by more than %s (from %s up); FAILS when it fails in new only\n",
			percentAbs(th.MaxSlowdown), cases.FormatSize(th.SmallBelow), percentAbs(th.MaxBWDrop), cases.FormatSize(th.SmallBelow))
	}
	if th.Alpha > 0 && !verdictsOnly {
		fmt.Fprintf(bw, "# a change past a limit is NOISE when both cases kept %d or more repetitions and the Mann-Whitney U test of them gives p >= %g\n", MinRepetitions, th.Alpha)
	}

	idWidth := len("case")
	for i := range rows {
		idWidth = max(idWidth, len(rows[i].ID))
	}
	const num = 10
	fmt.Fprintf(bw, "#%-*s  %*s  %*s  %*s  %*s  %*s  %*s  %s\n", idWidth-1, " case",
		num, "old (us)", num, "new (us)", 8, "time", num, "old busbw", num, "new busbw", 8, "busbw", "status")
	for i := range rows {
		r := &rows[i]
		var oldT, newT, oldB, newB float64
		if r.Old != nil {
			oldT, oldB = r.Old.TimeUS, r.Old.BusBW
		}
		if r.New != nil {
			newT, newB = r.New.TimeUS, r.New.BusBW
		}
		dt, db := "-", "-"
		if oldT > 0 && newT > 0 && r.Status != StatusFails && r.Status != StatusStillFails {
			dt, db = percent(r.TimeChange), percent(r.BWChange)
		}
		status := string(r.Status)
		if r.Why != "" {
			status += ": " + r.Why
		}
		fmt.Fprintf(bw, "%-*s  %*s  %*s  %*s  %*s  %*s  %*s  %s\n", idWidth, r.ID,
			num, number(oldT), num, number(newT), 8, dt, num, number(oldB), num, number(newB), 8, db, status)
	}
	s := Summarize(rows)
	if verdictsOnly {
		fmt.Fprintf(bw, "#\n# %d compared by verdict: %d FAILS, %d SKIPPED, %d missing (only in old); %d still failing, %d only in new\n",
			s.Compared, s.Fails, s.Skipped, s.OnlyOld, s.StillFails, s.OnlyNew)
	} else {
		fmt.Fprintf(bw, "#\n# %d compared: %d SLOWER, %d FAILS, %d faster, %d NOISE, %d untimed; %d only in old, %d only in new\n",
			s.Compared, s.Regressions, s.Fails, s.Faster, s.Noise, s.Untimed, s.OnlyOld, s.OnlyNew)
	}
	if gate != "" {
		fmt.Fprintf(bw, "# %s\n", gate)
	}
	if s.Regressions+s.Fails+s.Skipped > 0 || gate != "" {
		fmt.Fprintf(bw, "# exit code 1\n")
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write comparison: %w", err)
	}
	return nil
}

func number(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func describe(h *report.Header) string {
	parts := []string{fmt.Sprintf("%s %s", h.Tool, h.Version)}
	if h.GitRevision != "" {
		parts = append(parts, "revision "+h.GitRevision)
	}
	parts = append(parts, fmt.Sprintf("backend %s, %d ranks", h.Backend, h.Ranks))
	if !h.Start.IsZero() {
		parts = append(parts, h.Start.Format("2006-01-02T15:04:05Z07:00"))
	}
	return strings.Join(parts, ", ")
}

// mismatchedRuns says what makes two runs' times incomparable, if anything.
func mismatchedRuns(o, n *report.Header) string {
	var diffs []string
	if o.Backend != n.Backend {
		diffs = append(diffs, fmt.Sprintf("backend %s vs %s", o.Backend, n.Backend))
	}
	if strings.Join(o.Devices, ";") != strings.Join(n.Devices, ";") {
		diffs = append(diffs, "devices differ")
	}
	if o.Agg != n.Agg && o.Agg != "" && n.Agg != "" {
		diffs = append(diffs, fmt.Sprintf("aggregation over ranks %s vs %s", o.Agg, n.Agg))
	}
	if len(diffs) == 0 {
		return ""
	}
	return "the runs differ: " + strings.Join(diffs, ", ")
}
