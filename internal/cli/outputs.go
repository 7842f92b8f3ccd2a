package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
)

// fifoWait is how long a FIFO named as a report waits for its reader before
// the run: long enough for a reader started beside artest, short enough
// that a forgotten one is reported instead of a job that never starts.
var fifoWait = 5 * time.Second

// pathFlag is a path the run writes or reads, with the flag that named it.
type pathFlag struct {
	flag, path string
	stream     bool // appended to, not replaced (reportFormat.stream: --jsonl)
}

// outputFiles are the files the run writes, in the order of their flags:
// the report formats' (reportFormats), then tune's and the witness dump.
func (o *Options) outputFiles() []pathFlag {
	out := o.reportFiles()
	for _, p := range []pathFlag{
		{flag: "--header", path: o.Tune.Header}, {flag: "--go", path: o.Tune.GoFile},
		// The witness's per-iteration leads (a diagnostic; appended to).
		{flag: "ARTEST_WITNESS_DUMP", path: o.Knobs.WitnessDump},
	} {
		if p.path != "" {
			out = append(out, p)
		}
	}
	return out
}

// inputFiles are the files the run reads; none may be an output.
func (o *Options) inputFiles() []pathFlag {
	var in []pathFlag
	add := func(flag string, paths ...string) {
		for _, p := range paths {
			if p != "" && p != "none" {
				in = append(in, pathFlag{flag: flag, path: p})
			}
		}
	}
	add("--repro", o.Repro)
	add("--plugin", o.Plugins...)
	add("--fatbin", o.Fatbin)
	add("--nccl", o.NCCL)
	add("--tuned", o.Tune.Tuned)
	add("--merge", o.Tune.Merge...)
	return in
}

// checkOutputPlan resolves, before the first case, every path the run will
// write and refuses what would lose evidence: two outputs on one file (exit
// 2), an output that is one of the run's inputs (exit 2), a --jsonl file
// that holds something else (exit 2), a report that is a directory (exit 2)
// or cannot be written or replaced (exit 4), a --repro-dir that is not a
// writable directory, and a FIFO without a reader (exit 4). Rank 0 calls it:
// it writes the reports. A FIFO that has a reader is kept open for the
// report written into it.
func (o *Options) checkOutputPlan() error {
	outs := o.outputFiles()
	type use struct {
		what  string
		input bool
	}
	owner := map[string]use{}
	for _, in := range o.inputFiles() {
		if id, err := report.Identity(in.path); err == nil {
			owner[id] = use{in.flag + " " + in.path, true}
		}
	}
	for _, p := range outs {
		if strings.ContainsAny(p.path, "\n\r") {
			return exitcode.Usagef("%s %q: a file name with a line break would break the report's lines; choose another", p.flag, p.path)
		}
		id, err := report.Identity(p.path)
		if err != nil {
			return exitcode.Envf("%s %s: %v", p.flag, p.path, err)
		}
		prev, taken := owner[id]
		switch {
		case taken && prev.input:
			return exitcode.Usagef("%s %s: that file is an input of this run (%s): give the report another file", p.flag, p.path, prev.what)
		case taken && !report.IsSpecial(p.path):
			// /dev/null may take any number of reports.
			return exitcode.Usagef("%s %s: %s writes that file too; each report needs its own file", p.flag, p.path, prev.what)
		}
		owner[id] = use{p.flag + " " + p.path, false}
	}
	for _, p := range outs {
		var err error
		if p.stream {
			err = report.CheckJSONL(p.path)
		} else if err = notToReplace(p.path); err == nil {
			err = report.CheckWritable(p.path)
		}
		if errors.Is(err, errKeep) {
			return exitcode.Usagef("%s %v", p.flag, err)
		}
		switch {
		case errors.Is(err, report.ErrIsDirectory), errors.Is(err, report.ErrNotJSONL):
			return exitcode.Usagef("%s %v", p.flag, err)
		case err != nil:
			return exitcode.Envf("%s: %v", p.flag, err)
		}
	}
	if o.ReproDir != "" {
		err := report.CheckDir(o.ReproDir)
		switch {
		case errors.Is(err, report.ErrNotDirectory), errors.Is(err, os.ErrNotExist):
			return exitcode.Usagef("--repro-dir %s: %v (give an existing directory)", o.ReproDir, err)
		case err != nil:
			return exitcode.Envf("--repro-dir: %v", err)
		}
	} else if err := report.CheckDir(o.reproDirCheckable()); err != nil {
		o.notes = append(o.notes, fmt.Sprintf("repro bundles cannot be written into %s (%v): a failing case gets its rerun line but no bundle; give --repro-dir", o.reproDir(), err))
	}
	for _, p := range outs {
		if report.IsFIFO(p.path) {
			if err := report.HoldFIFO(p.path, fifoWait); err != nil {
				report.ReleaseFIFOs()
				return exitcode.Envf("%s: %v", p.flag, err)
			}
		}
	}
	return nil
}

// errKeep: a report path names a file a report must not replace.
var errKeep = errors.New("a report would replace it")

// notToReplace refuses, as a report's path, an existing file that is not a
// report's to replace: an executable (the artest binary itself, a script),
// a JSON Lines history (--jsonl appends to it; a report would erase every
// run in it) or a repro bundle (evidence, never written over). A missing
// file, a special file or anything else returns nil.
func notToReplace(path string) error {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() {
		return nil
	}
	if info.Mode().Perm()&0o111 != 0 {
		return fmt.Errorf("%s: an executable file; %w: give the report another file", path, errKeep)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil // CheckWritable says what is wrong with it
	}
	defer f.Close()
	head := make([]byte, 64<<10)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	if bytes.HasPrefix(head, []byte("\x7fELF")) {
		return fmt.Errorf("%s: an executable file; %w: give the report another file", path, errKeep)
	}
	first, _, _ := bytes.Cut(bytes.TrimSpace(head), []byte("\n"))
	var fields map[string]json.RawMessage
	if json.Unmarshal(first, &fields) == nil && fields["header"] != nil && fields["run"] != nil && len(fields) == 2 {
		return fmt.Errorf("%s: a --jsonl history of artest runs; %w and every run in it: give the report another file", path, errKeep)
	}
	// A bundle's first field is artest_repro (repro.Bundle).
	if bytes.Contains(head[:min(len(head), 256)], []byte(`"artest_repro"`)) {
		return fmt.Errorf("%s: an artest repro bundle; %w: bundles are evidence, never written over", path, errKeep)
	}
	return nil
}
