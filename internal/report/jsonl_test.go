package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSONLRoundTrip(t *testing.T) {
	rep := fixtureReport()
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := CreateJSONL(path, &rep.Header)
	require.NoError(t, err)
	for _, c := range rep.Cases {
		require.NoError(t, w.Append(c))
	}
	require.NoError(t, w.Close(rep.Summary))

	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	got, complete, err := ReadJSONL(f)
	require.NoError(t, err)
	require.True(t, complete)
	require.Equal(t, rep.Header.Command, got.Header.Command)
	require.Equal(t, rep.Summary, got.Summary)
	require.Len(t, got.Cases, len(rep.Cases))
	// Compared as JSON: the fixture holds NaN, which never equals itself.
	for i := range rep.Cases {
		want, err := json.Marshal(rounded(rep.Cases[i]))
		require.NoError(t, err)
		have, err := json.Marshal(got.Cases[i])
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(have))
	}
}

// A run killed mid-case leaves the cases before it and no summary; a write
// cut short leaves a partial last line, which is dropped. A broken line
// anywhere else is an error.
func TestJSONLWithoutSummaryKeepsFinishedCases(t *testing.T) {
	rep := fixtureReport()
	require.GreaterOrEqual(t, len(rep.Cases), 2)
	path := filepath.Join(t.TempDir(), "run.jsonl")
	w, err := CreateJSONL(path, &rep.Header)
	require.NoError(t, err)
	require.NoError(t, w.Append(rep.Cases[0]))
	require.NoError(t, w.Append(rep.Cases[1]))
	// no Close: the process died here
	data, err := os.ReadFile(path)
	require.NoError(t, err)

	for name, tail := range map[string]string{"clean": "", "cut": `{"case":{"id":"one/f3`} {
		t.Run(name, func(t *testing.T) {
			got, complete, err := ReadJSONL(bytes.NewReader(append(append([]byte(nil), data...), tail...)))
			require.NoError(t, err)
			require.False(t, complete)
			require.Len(t, got.Cases, 2)
			require.Equal(t, rep.Cases[1].ID, got.Cases[1].ID)
		})
	}

	// A cut line is forgiven only at the end of a run: before a case line
	// it is damage.
	broken := []byte(`{"header":{}}` + "\n" + `{"case":` + "\n" + `{"case":{"id":"x"}}` + "\n")
	_, _, err = ReadJSONL(bytes.NewReader(broken))
	require.ErrorContains(t, err, "line 2")

	_, _, err = ReadJSONL(bytes.NewReader(nil))
	require.ErrorContains(t, err, "empty")
}

func TestCreateJSONLInMissingDirectory(t *testing.T) {
	_, err := CreateJSONL(filepath.Join(t.TempDir(), "no", "such", "run.jsonl"), &Header{})
	require.ErrorContains(t, err, "create JSON Lines report")
}

// --jsonl appends: a second run adds its lines after the first run's, and
// reading the file gives the last run.
func TestJSONLAppends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	for run, id := range []string{"first/case", "second/case"} {
		w, err := CreateJSONL(path, &Header{Tool: "artest", Seed: uint64(run)})
		require.NoError(t, err)
		require.NoError(t, w.Append(Case{ID: id, Verdict: Pass}))
		require.NoError(t, w.Close(Summary{Pass: 1}))
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, 6, strings.Count(string(b), "\n"), "both runs' header, case and summary lines")
	require.Contains(t, string(b), "first/case")

	rep, complete, err := ReadJSONL(strings.NewReader(string(b)))
	require.NoError(t, err)
	require.True(t, complete)
	require.Equal(t, uint64(1), rep.Header.Seed)
	require.Len(t, rep.Cases, 1)
	require.Equal(t, "second/case", rep.Cases[0].ID)
}

// A run killed mid-line, then another run appended: the cut line is
// skipped and the file reads as the new run.
func TestJSONLAppendsAfterACutLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runs.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"header":{"tool":"artest"}}`+"\n"+`{"case":{"id":"cut`), 0o644))
	w, err := CreateJSONL(path, &Header{Tool: "artest", Seed: 9})
	require.NoError(t, err)
	require.NoError(t, w.Append(Case{ID: "new/case", Verdict: Pass}))
	require.NoError(t, w.Close(Summary{Pass: 1}))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rep, complete, err := ReadJSONL(f)
	require.NoError(t, err)
	require.True(t, complete)
	require.Equal(t, uint64(9), rep.Header.Seed)
	require.Len(t, rep.Cases, 1)
	require.Equal(t, "new/case", rep.Cases[0].ID)
}

// Two runs appending to one --jsonl file at once interleave their lines.
// Every line carries its run's id, so reading the file gives the run whose
// header came last with its own lines only, whatever lies between them.
// Lines without a run id (files of older versions) belong to the last
// header without one, as before.
func TestJSONLKeepsInterleavedRunsApart(t *testing.T) {
	// Steps: "A" or "B" starts that run (its header, seed 1 or 2), "A:id"
	// appends a case, "A." ends it with its summary; "legacy:LINE" appends
	// LINE as an older version wrote it (no run id), "cut:A" a line of run
	// A cut short by a kill, to which the next line is glued.
	tests := []struct {
		name     string
		steps    []string
		seed     uint64
		cases    []string
		complete bool
		err      string // a damaged file
	}{
		{"the second run ends first", []string{"A", "B", "A:a1", "B:b1", "B.", "A:a2"}, 2, []string{"b1"}, true, ""},
		{"the second run is still going", []string{"A", "B", "B:b1", "A:a1", "A.", "B:b2"}, 2, []string{"b1", "b2"}, false, ""},
		{"the first run ends after the second starts", []string{"A", "A:a1", "B", "A:a2", "A."}, 2, nil, false, ""},
		{"one run after the other", []string{"A", "A:a1", "A.", "B", "B:b1", "B."}, 2, []string{"b1"}, true, ""},
		{"an older run, then a new one", []string{`legacy:{"header":{"tool":"artest","seed":7}}`, `legacy:{"case":{"id":"old1"}}`, "B", "B:b1", "B."}, 2, []string{"b1"}, true, ""},
		{"an older run interleaved with a new one", []string{"B", `legacy:{"header":{"tool":"artest","seed":7}}`, "B:b1", `legacy:{"case":{"id":"old1"}}`, "B.", `legacy:{"summary":{"pass":1}}`}, 7, []string{"old1"}, true, ""},
		{"the first run killed mid-line while the second goes on", []string{"A", "B", "A:a1", "B:b1", "cut:A", "B:b2", "B."}, 2, []string{"b1", "b2"}, true, ""},
		{"the last run killed mid-line", []string{"A", "B", "B:b1", "A:a1", "cut:B"}, 2, []string{"b1"}, false, ""},
		{"a run that goes on after its cut line", []string{"A", "B", "A:a1", "cut:A", "B:b1", "A:a2", "A."}, 0, nil, false, "line 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "runs.jsonl")
			writers := map[string]*JSONLWriter{}
			runIDs := map[string]string{} // from each run's header line
			appendRaw := func(s string) {
				f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				require.NoError(t, err)
				_, err = f.WriteString(s)
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}
			for _, step := range tt.steps {
				switch {
				case strings.HasPrefix(step, "legacy:"):
					appendRaw(strings.TrimPrefix(step, "legacy:") + "\n")
				case strings.HasPrefix(step, "cut:"):
					appendRaw(`{"run":"` + runIDs[strings.TrimPrefix(step, "cut:")] + `","case":{"id":"cu`)
				case strings.HasSuffix(step, "."):
					require.NoError(t, writers[strings.TrimSuffix(step, ".")].Close(Summary{Pass: 1}))
				case strings.Contains(step, ":"):
					name, id, _ := strings.Cut(step, ":")
					require.NoError(t, writers[name].Append(Case{ID: id, Verdict: Pass}))
				default:
					w, err := CreateJSONL(path, &Header{Tool: "artest", Seed: map[string]uint64{"A": 1, "B": 2}[step]})
					require.NoError(t, err)
					writers[step] = w
					b, err := os.ReadFile(path)
					require.NoError(t, err)
					lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
					var line struct {
						Run string `json:"run"`
					}
					require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &line))
					runIDs[step] = line.Run
				}
			}
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			rep, complete, err := ReadJSONL(bytes.NewReader(b))
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err, "file:\n%s", b)
				return
			}
			require.NoError(t, err, "file:\n%s", b)
			require.Equal(t, tt.seed, rep.Header.Seed, "file:\n%s", b)
			var ids []string
			for _, c := range rep.Cases {
				ids = append(ids, c.ID)
			}
			require.Equal(t, tt.cases, ids, "file:\n%s", b)
			require.Equal(t, tt.complete, complete)
		})
	}
}

// Every line a JSONLWriter writes names its run, and the header holds the
// same id.
func TestJSONLRunIDOnEveryLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	h := &Header{Tool: "artest"}
	w, err := CreateJSONL(path, h)
	require.NoError(t, err)
	require.NoError(t, w.Append(Case{ID: "x", Verdict: Pass}))
	require.NoError(t, w.Close(Summary{Pass: 1}))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	require.Len(t, lines, 3)
	var header struct {
		Run    string `json:"run"`
		Header struct {
			RunID string `json:"run_id"`
		} `json:"header"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &header))
	require.NotEmpty(t, header.Run)
	require.Equal(t, header.Run, header.Header.RunID)
	for _, l := range lines {
		require.True(t, strings.HasPrefix(l, `{"run":"`+header.Run+`",`), l)
	}

	// Another run gets another id.
	w, err = CreateJSONL(path, &Header{Tool: "artest"})
	require.NoError(t, err)
	require.NoError(t, w.Close(Summary{}))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, strings.Split(string(b), "\n")[3], header.Run)
}

// A JSON Lines stream onto a device is written in place: /dev/null cannot
// be fsynced, and that is no failure.
func TestJSONLOntoDevNull(t *testing.T) {
	w, err := CreateJSONL("/dev/null", &Header{Tool: "artest"})
	require.NoError(t, err)
	require.NoError(t, w.Append(Case{ID: "a"}))
	require.NoError(t, w.Close(Summary{}))
}
