package runner

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/witness"
	"github.com/artest/artest/reference"
)

// Gathering and reporting: every rank's result of a case merged on rank 0,
// streamed as it finishes, and the run's reports written at the end.

// streamCase appends a finished case to the JSON Lines file and prints the
// progress line (rank 0). A JSON Lines write error is reported once and
// stops the streaming, not the run: the cases still run and the final
// reports still get written, and the run exits 4 (writeReports).
func (r *run) streamCase(c report.Case, n int) {
	if r.jsonl != nil {
		if err := r.jsonl.Append(c); err != nil {
			fmt.Fprintf(r.cfg.Stderr, "artest: %v (JSON Lines streaming stopped)\n", err)
			r.jsonl, r.jsonlErr = nil, err
		}
	}
	if r.prog != nil {
		line := fmt.Sprintf("# [%d/%d] %s %s %.2fs", n, len(r.cfg.Cases), c.ID, c.Verdict, c.Seconds)
		if c.Reason != "" && c.Verdict == report.Fail {
			line += ": " + firstLine(c.Reason)
		}
		if c.Witness != nil && c.Witness.Warning != "" {
			line += "; WARNING " + c.Witness.Warning
		}
		r.prog.finished(n, line, r.cfg.Stress > 0)
	}
}

// gather merges every rank's result on rank 0. fatal is non-empty on every
// rank when any rank's backend broke.
func (r *run) gather(c cases.Case, res rankResult) (report.Case, string, error) {
	blob, err := json.Marshal(res)
	if err != nil {
		return report.Case{}, "", err
	}
	all, err := r.c.Gather(blob, 0)
	if err != nil {
		return report.Case{}, "", err
	}
	var merged report.Case
	fatal := ""
	if r.c.Rank() == 0 {
		results := make([]rankResult, len(all))
		for i, b := range all {
			if err := json.Unmarshal(b, &results[i]); err != nil {
				return report.Case{}, "", fmt.Errorf("rank %d result: %w", i, err)
			}
			if results[i].Fatal != "" && fatal == "" {
				fatal = fmt.Sprintf("rank %d: %s", i, results[i].Fatal)
			}
		}
		merged = merge(c, results, r.cfg, r.modes)
	}
	// Everyone learns whether to stop.
	fb := make([]byte, 1)
	if fatal != "" {
		fb[0] = 1
	}
	if err := r.c.Bcast(fb, 0); err != nil {
		return report.Case{}, "", err
	}
	if fb[0] == 1 && fatal == "" {
		fatal = "a rank's backend failed"
	}
	return merged, fatal, nil
}

// caseInput is report.Case.Input: "special" for a case of special inputs,
// "" for one of the run's --input (the header's Input).
func caseInput(c cases.Case) string {
	if c.Input == reference.Special {
		return c.Input.String()
	}
	return ""
}

func merge(c cases.Case, rs []rankResult, cfg *Config, modes []timingMode) report.Case {
	out := report.Case{
		ID: c.ID(), Variant: c.Label(), Coll: c.CollName(), DType: c.DType.String(), Op: c.OpName(),
		Bytes: c.Bytes, Count: c.Count(), Mode: c.Mode.String(), Ranks: c.Ranks, Input: caseInput(c),
		Verdict: report.Pass, Iters: cfg.Iters, Stress: cfg.Stress, Schedule: cfg.Header.Schedules,
	}
	for i, res := range rs {
		if res.Skip != "" {
			out.Verdict = report.Skipped
			out.Reason = res.Skip
			out.Failures = nil
			out.Wrong = 0
			out.TimeUS = 0
			return out
		}
		for _, f := range res.Failures {
			f.Rank = i
			out.Failures = append(out.Failures, f)
		}
		out.Wrong += res.Wrong
	}
	setLaunch(&out, rs)
	mergeModes(&out, rs, cfg, modes)
	out.Check = mergeChecks(rs)
	var rows []witnessRow
	var keep func(witnessRow)
	dump := cfg.Knobs.WitnessDump
	if dump != "" && cfg.witnessDumpErr == nil {
		keep = func(r witnessRow) { rows = append(rows, r) }
	}
	out.Witness = witness.MergeRows(stampsOf(rs), cfg.Header.Backend, earlyReturn(c.Variant), c.Mode.Graph, keep)
	if len(rows) > 0 {
		// Said once; the dump stops, and the run ends with exit 4 (Run).
		if err := witness.WriteRows(dump, c.ID(), rows); err != nil {
			cfg.witnessDumpErr = err
			fmt.Fprintf(cfg.Stderr, "artest: %v (no more rows are dumped)\n", err)
		}
	}
	if len(out.Failures) > 0 {
		out.Verdict = report.Fail
		f := out.Failures[0]
		more := ""
		if n := ranksFailing(out.Failures); n > 1 {
			more = fmt.Sprintf(" (and %d more ranks)", n-1)
		}
		out.Reason = fmt.Sprintf("rank %d %s: %s%s", f.Rank, f.Kind, f.Detail, more)
	}
	if out.TimeUS > 0 {
		out.AlgBW = report.AlgbwGBps(out.Bytes, out.TimeUS)
		out.BusBW = report.BusbwColl(out.Coll, out.AlgBW, out.Ranks)
	}
	return out
}

func ranksFailing(fs []report.RankFailure) int {
	set := map[int]bool{}
	for _, f := range fs {
		set[f.Rank] = true
	}
	return len(set)
}

// writeReports writes the table, draws the plot (AfterReports), writes the
// Go benchmark file, then closes the JSON Lines stream and writes the JSON
// and JUnit files, in that
// order: a failure of an earlier step turns an exit code of 0 into 4 before
// the later files record it, so the reports say the code the process exits
// with. A JSON Lines stream that stopped on a write error during the run
// counts as such a failure (its error was printed then).
func (r *run) writeReports() error {
	rep := r.rep
	attachNCCL(rep.Cases)
	report.AttachFieldBest(rep)
	rep.Tally()
	var firstErr error
	if r.jsonlErr != nil {
		firstErr = r.jsonlErr
		if rep.Summary.ExitCode == exitcode.OK {
			rep.Summary.ExitCode = exitcode.Env
		}
	}
	note := func(err error) {
		if err != nil {
			fmt.Fprintf(r.cfg.Stderr, "artest: %v\n", err)
			if firstErr == nil {
				firstErr = err
			}
			if rep.Summary.ExitCode == exitcode.OK {
				rep.Summary.ExitCode = exitcode.Env
			}
		}
	}
	if r.cfg.Bench {
		note(report.WriteBenchTable(r.cfg.Stdout, rep))
	} else if r.cfg.FullTable {
		note(report.WriteTable(r.cfg.Stdout, rep))
	} else {
		note(report.WriteSummary(r.cfg.Stdout, rep))
	}
	if r.cfg.AfterReports != nil {
		note(r.cfg.AfterReports(rep))
	}
	if r.cfg.GoBenchPath != "" {
		note(report.WriteFileAtomic(r.cfg.GoBenchPath, func(w io.Writer) error { return report.WriteGoBench(w, rep) }))
	}
	if r.jsonl != nil {
		note(r.jsonl.Close(rep.Summary))
		r.jsonl = nil
	}
	if r.cfg.JSONPath != "" {
		note(report.WriteFileAtomic(r.cfg.JSONPath, func(w io.Writer) error { return report.WriteJSON(w, rep) }))
	}
	if r.cfg.JUnitPath != "" {
		note(report.WriteFileAtomic(r.cfg.JUnitPath, func(w io.Writer) error { return report.WriteJUnit(w, rep) }))
	}
	return firstErr
}

// attachNCCL puts the nccl variant's time beside every other variant's case
// with the same dtype, op, size, mode and input, with the speed-up; and beside
// every case of a variant that is no NCCL baseline, NCCL's best mode there
// (the fastest of report.NCCLBaselines that passed), its time and the
// speed-up over it.
func attachNCCL(cs []report.Case) {
	type key struct {
		coll, dtype, op, mode, input string
		bytes                        int64
	}
	// A case's variant without its collective's head: the baselines of a
	// collective are NCCL's of the same collective.
	name := func(c *report.Case) string {
		if c.Coll == "" {
			return c.Variant
		}
		return strings.TrimPrefix(c.Variant, c.Coll+":")
	}
	baselines := map[key]map[string]float64{}
	for i := range cs {
		c := &cs[i]
		if report.IsNCCLBaseline(name(c)) && c.Verdict == report.Pass && c.TimeUS > 0 {
			k := key{c.Coll, c.DType, c.Op, c.Mode, c.Input, c.Bytes}
			if baselines[k] == nil {
				baselines[k] = map[string]float64{}
			}
			baselines[k][name(c)] = c.TimeUS
		}
	}
	for i := range cs {
		c := &cs[i]
		if name(c) == "nccl" || c.TimeUS <= 0 {
			continue
		}
		times := baselines[key{c.Coll, c.DType, c.Op, c.Mode, c.Input, c.Bytes}]
		if t := times["nccl"]; t > 0 {
			c.NCCLTimeUS = t
			c.Speedup = t / c.TimeUS
		}
		if report.IsNCCLBaseline(name(c)) {
			continue
		}
		if best, t := report.BestNCCL(times); best != "" {
			c.NCCLBestVariant, c.NCCLBestTimeUS = best, t
			c.SpeedupVsBest = t / c.TimeUS
		}
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
