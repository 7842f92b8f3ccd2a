package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
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

	broken := append([]byte(`{"header":`+"\n"), data...)
	_, _, err = ReadJSONL(bytes.NewReader(broken))
	require.ErrorContains(t, err, "line 1")

	_, _, err = ReadJSONL(bytes.NewReader(nil))
	require.ErrorContains(t, err, "empty")
}

func TestCreateJSONLInMissingDirectory(t *testing.T) {
	_, err := CreateJSONL(filepath.Join(t.TempDir(), "no", "such", "run.jsonl"), &Header{})
	require.ErrorContains(t, err, "create JSON Lines report")
}
