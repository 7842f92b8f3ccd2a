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

// CreateJSONL creates (or truncates) path and writes the header line.
func CreateJSONL(path string, h *Header) (*JSONLWriter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("create JSON Lines report: %w", err)
	}
	w := &JSONLWriter{f: f, path: path}
	if err := w.write(jsonlLine{Header: h}); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
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
// last line (a write cut by a crash) is ignored.
func ReadJSONL(r io.Reader) (rep *Report, complete bool, err error) {
	rep = &Report{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	var pendingErr error
	for sc.Scan() {
		line++
		if pendingErr != nil {
			return nil, false, pendingErr
		}
		var l jsonlLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			// Only the last line may be cut short.
			pendingErr = fmt.Errorf("JSON Lines report line %d: %w", line, err)
			continue
		}
		switch {
		case l.Header != nil:
			rep.Header = *l.Header
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
