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
