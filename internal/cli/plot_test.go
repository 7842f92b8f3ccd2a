package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

// `artest plot`: the figure from a saved report, and one line with a
// documented exit code for everything it cannot draw.
func TestPlotFromReport(t *testing.T) {
	dir := t.TempDir()
	timed := func(name string, verdict report.Verdict) string {
		r := &report.Report{Header: report.Header{Tool: "artest", Ranks: 2, Backend: "host"}, Summary: report.Summary{Pass: 2}}
		for _, c := range []struct {
			variant string
			us      float64
		}{{"oneshot", 10}, {"nccl", 12}} {
			alg := report.AlgbwGBps(4<<10, c.us)
			r.Cases = append(r.Cases, report.Case{ID: c.variant + "/bf16/sum/4KiB/oop-reg-graph/np2", Variant: c.variant, DType: "bf16",
				Op: "sum", Mode: "oop-reg-graph", Bytes: 4 << 10, Ranks: 2, Verdict: verdict, TimeUS: c.us, AlgBW: alg, BusBW: report.Busbw(alg, 2)})
		}
		p := filepath.Join(dir, name)
		writeReport(t, p, r)
		return p
	}
	good := timed("good.json", report.Pass)
	failing := timed("failing.json", report.Fail)
	notReport := filepath.Join(dir, "other.json")
	require.NoError(t, os.WriteFile(notReport, []byte(`{"hello": 1}`), 0o644))
	// A report named like a figure: drawing into it would destroy it.
	disguised := filepath.Join(dir, "report.svg")
	b, err := os.ReadFile(good)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(disguised, b, 0o644))

	tests := []struct {
		name   string
		args   []string
		code   int
		out    string // the figure written, "" for none
		stderr string
	}{
		{"svg", []string{good, filepath.Join(dir, "a.svg")}, 0, "a.svg", ""},
		{"png", []string{good, filepath.Join(dir, "a.png")}, 0, "a.png", ""},
		{"no passing case", []string{failing, filepath.Join(dir, "b.svg")}, 2, "", "nothing to plot"},
		{"not a report", []string{notReport, filepath.Join(dir, "c.svg")}, 2, "", "not an artest report"},
		{"missing report", []string{filepath.Join(dir, "nope.json"), filepath.Join(dir, "d.svg")}, 2, "", "no such file"},
		{"other extension", []string{good, filepath.Join(dir, "e.pdf")}, 2, "", ".pdf"},
		{"the report itself", []string{disguised, disguised}, 2, "", "is the report itself"},
		{"one argument", []string{good}, 2, "", "want a report and a figure"},
		{"unwritable", []string{good, filepath.Join(dir, "no-such-dir", "f.svg")}, 4, "", "f.svg"},
		{"bad flag", []string{"--size", "4K", good, filepath.Join(dir, "g.svg")}, 2, "", "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Plot(tt.args, &out, &errb)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out.String(), errb.String())
			require.Contains(t, errb.String(), tt.stderr)
			if tt.out != "" {
				info, err := os.Stat(filepath.Join(dir, tt.out))
				require.NoError(t, err)
				require.Positive(t, info.Size())
				require.Contains(t, out.String(), "drawn into")
				return
			}
			require.Equal(t, 1, strings.Count(errb.String(), "\n"), "one clear line: %s", errb.String())
			require.True(t, strings.HasPrefix(errb.String(), "artest plot: "))
			require.NotContains(t, errb.String(), "goroutine")
		})
	}
	// The disguised report is still the report.
	after, err := os.ReadFile(disguised)
	require.NoError(t, err)
	require.Equal(t, b, after)
}

func TestPlotHelpAndWord(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, Plot([]string{"--help"}, &out, &errb))
	require.Contains(t, out.String(), "usage: artest plot REPORT.json OUT.svg|OUT.png")
	require.True(t, IsPlot([]string{"plot", "r.json", "p.svg"}))
	require.False(t, IsPlot([]string{"bench", "--plot", "p.svg"}))
}
