package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// JSONLWriter streams a report as JSON Lines while the run goes on: one
// {"header": ...} line, one {"case": ...} line per finished case, and a
// {"summary": ...} line at a clean end. Every line is written with one
// write(2) and fsynced before Append returns, so a crash, an abort (exit 3)
// or a SIGKILL loses at most the case that was running. A file without a
// summary line is the record of a run that did not end cleanly.
type JSONLWriter struct {
	f    *os.File
	path string
}

// jsonlLine is one line of the stream; exactly one field is set.
type jsonlLine struct {
	Header  *Header  `json:"header,omitempty"`
	Case    *Case    `json:"case,omitempty"`
	Summary *Summary `json:"summary,omitempty"`
}

// CreateJSONL opens path for appending (creating it if needed) and writes
// the header line: a file that already holds runs keeps them, and the new
// run's lines follow.
func CreateJSONL(path string, h *Header) (*JSONLWriter, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, fmt.Errorf("create JSON Lines report: %w", err)
	}
	w := &JSONLWriter{f: f, path: path}
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
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode JSON Lines record: %w", err)
	}
	if _, err := w.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", w.path, err)
	}
	return nil
}

// ReadJSONL rebuilds a report from a JSON Lines stream. complete says
// whether the summary line was there (the run ended cleanly); without it the
// report holds every case that finished before the run stopped. A truncated
// last line (a write cut by a crash) is ignored. A file that several runs
// appended to reads as its last run: every header line starts a new one.
func ReadJSONL(r io.Reader) (rep *Report, complete bool, err error) {
	rep = &Report{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	var pendingErr error
	for sc.Scan() {
		line++
		var l jsonlLine
		err := json.Unmarshal(sc.Bytes(), &l)
		if pendingErr != nil && (err != nil || l.Header == nil) {
			// Only the last line of a run may be cut short: the last of
			// the file, or the one before the next run's header.
			return nil, false, pendingErr
		}
		pendingErr = nil
		if err != nil {
			pendingErr = fmt.Errorf("JSON Lines report line %d: %w", line, err)
			continue
		}
		switch {
		case l.Header != nil:
			rep = &Report{Header: *l.Header}
			complete = false
		case l.Case != nil:
			rep.Cases = append(rep.Cases, *l.Case)
		case l.Summary != nil:
			rep.Summary = *l.Summary
			complete = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, false, fmt.Errorf("read JSON Lines report: %w", err)
	}
	if line == 0 {
		return nil, false, fmt.Errorf("read JSON Lines report: empty")
	}
	return rep, complete, nil
}
