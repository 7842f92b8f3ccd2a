package report

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// JSONLWriter streams a report as JSON Lines while the run goes on: one
// {"header": ...} line, one {"case": ...} line per finished case, and a
// {"summary": ...} line at a clean end, each also holding the run's id
// ({"run": ID, "case": ...}). Every line is written with one write(2) and
// fsynced before Append returns, so a crash, an abort (exit 3) or a SIGKILL
// loses at most the case that was running. A file without a summary line is
// the record of a run that did not end cleanly.
type JSONLWriter struct {
	f    *os.File
	path string
	run  string // Header.RunID
}

// jsonlLine is one line of the stream: Run and exactly one other field.
// Run is empty in the files of versions that wrote no run id.
type jsonlLine struct {
	Run     string   `json:"run,omitempty"`
	Header  *Header  `json:"header,omitempty"`
	Case    *Case    `json:"case,omitempty"`
	Summary *Summary `json:"summary,omitempty"`
}

// CreateJSONL opens path for appending (creating it if needed) and writes
// the header line: a file that already holds runs keeps them, and the new
// run's lines follow. When h.RunID is empty it is set to a new id, which
// every line of the run carries: two runs appending to one file at the same
// time interleave their lines, and the id keeps them apart.
func CreateJSONL(path string, h *Header) (*JSONLWriter, error) {
	if h.RunID == "" {
		id, err := newRunID()
		if err != nil {
			return nil, fmt.Errorf("create JSON Lines report: %w", err)
		}
		h.RunID = id
	}
	f, err := openAppend(path)
	if err != nil {
		return nil, fmt.Errorf("create JSON Lines report: %w", err)
	}
	w := &JSONLWriter{f: f, path: path, run: h.RunID}
	// A run killed mid-write leaves its last line without a newline; end
	// it, so this run's header starts a line of its own.
	if err := endLastLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("create JSON Lines report: %s: %w", path, err)
	}
	if err := w.write(jsonlLine{Header: h}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// newRunID is the start time, the process id and 32 random bits: unique
// among runs on one host (the pid) and across hosts sharing a file system
// (the random part), and sortable by start time.
func newRunID() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("run id: %w", err)
	}
	return fmt.Sprintf("%s-%d-%s", time.Now().UTC().Format("20060102T150405.000000Z"), os.Getpid(), hex.EncodeToString(b[:])), nil
}

// endLastLine writes a newline when f (opened for appending) is a
// non-empty regular file whose last byte is not one.
func endLastLine(f *os.File) error {
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || info.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, info.Size()-1); err != nil {
		// Opened write-only: reopen to read the last byte.
		r, oerr := os.Open(f.Name())
		if oerr != nil {
			return oerr
		}
		defer r.Close()
		if _, err := r.ReadAt(last, info.Size()-1); err != nil {
			return err
		}
	}
	if last[0] == '\n' {
		return nil
	}
	_, err = f.Write([]byte{'\n'})
	return err
}

// Append writes one finished case and syncs it to disk.
func (w *JSONLWriter) Append(c Case) error {
	c = rounded(c)
	return w.write(jsonlLine{Case: &c})
}

// Close writes the summary line and closes the file.
func (w *JSONLWriter) Close(s Summary) error {
	err := w.write(jsonlLine{Summary: &s})
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("close %s: %w", w.path, cerr)
	}
	return err
}

func (w *JSONLWriter) write(l jsonlLine) error {
	l.Run = w.run
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode JSON Lines record: %w", err)
	}
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	// A device or a FIFO (/dev/null, a pipe) cannot be fsynced and keeps
	// nothing to sync: EINVAL there is no failure.
	if err := w.f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("sync %s: %w", w.path, errors.Unwrap(err))
	}
	return nil
}

// ReadJSONL rebuilds a report from a JSON Lines stream. complete says
// whether the summary line was there (the run ended cleanly); without it the
// report holds every case that finished before the run stopped. A truncated
// last line (a write cut by a crash) is ignored. A file that several runs
// appended to reads as its last run: the one whose header line comes last.
// Its lines are those that carry its run id, wherever they are, so runs
// that appended at the same time are kept apart; lines without a run id
// (older versions wrote none) belong to the last header without one.
func ReadJSONL(r io.Reader) (rep *Report, complete bool, err error) {
	var (
		runs   = map[string]*jsonlRun{}    // by run id
		legacy = &jsonlRun{rep: &Report{}} // lines without a run id
		last   = legacy                    // the run whose header came last
		cut    = map[string]error{}        // runs with a line cut short, by id
		sc     = bufio.NewScanner(r)
		line   = 0
		// pendingErr is a cut line whose run is unknown: forgiven when it
		// ends the file, or when the next line starts a run or belongs to
		// one with an id (which may be another run than the cut line's).
		pendingErr error
	)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line++
		var l jsonlLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			lineErr := fmt.Errorf("JSON Lines report line %d: %w", line, err)
			if pendingErr != nil {
				return nil, false, pendingErr
			}
			if id := cutRunID(sc.Bytes()); id != "" {
				cut[id] = lineErr
			} else {
				pendingErr = lineErr
			}
			// Another run's line appended to the cut one is whole.
			var ok bool
			if l, ok = gluedLine(sc.Bytes()); !ok {
				continue
			}
		}
		if pendingErr != nil && l.Header == nil && l.Run == "" {
			// Only the last line of a run may be cut short: the last of
			// the file, or the one before the next run's line.
			return nil, false, pendingErr
		}
		pendingErr = nil
		if err := cut[l.Run]; err != nil && l.Run != "" {
			return nil, false, err // a run that went on after its cut line
		}
		run := legacy
		if l.Run != "" {
			run = runs[l.Run]
		}
		switch {
		case l.Header != nil:
			run = &jsonlRun{rep: &Report{Header: *l.Header}}
			if l.Run == "" {
				legacy = run
			} else {
				runs[l.Run] = run
			}
			last = run
		case run == nil:
			// A run whose header line is not in the file cannot be the
			// last one.
		case l.Case != nil:
			run.rep.Cases = append(run.rep.Cases, *l.Case)
		case l.Summary != nil:
			run.rep.Summary = *l.Summary
			run.complete = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, false, fmt.Errorf("read JSON Lines report: %w", err)
	}
	if line == 0 {
		return nil, false, fmt.Errorf("read JSON Lines report: empty")
	}
	return last.rep, last.complete, nil
}

// jsonlRun is one run's lines in a JSON Lines file.
type jsonlRun struct {
	rep      *Report
	complete bool
}

// runLinePrefix starts every line of a run with an id: Run is the first
// field jsonlLine writes.
var runLinePrefix = []byte(`{"run":"`)

// cutRunID is the run id a line cut short starts with, "" when too little
// of it was written to tell (or the line has none).
func cutRunID(b []byte) string {
	rest, ok := bytes.CutPrefix(b, runLinePrefix)
	if !ok {
		return ""
	}
	id, _, ok := bytes.Cut(rest, []byte(`"`))
	if !ok {
		return ""
	}
	return string(id)
}

// gluedLine finds a whole line of a run with an id after the start of b: a
// run killed mid-write leaves its line without a newline, and the next line
// another run appends continues it.
func gluedLine(b []byte) (jsonlLine, bool) {
	for i := 1; i < len(b); {
		j := bytes.Index(b[i:], runLinePrefix)
		if j < 0 {
			break
		}
		i += j
		var l jsonlLine
		if json.Unmarshal(b[i:], &l) == nil && l.Run != "" {
			return l, true
		}
		i++
	}
	return jsonlLine{}, false
}
