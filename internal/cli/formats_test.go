package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/runner"
)

// withReportFormats replaces the table of report formats for one test.
// rerunLeftOut and bundleIgnoredFlags keep the real table's flags.
func withReportFormats(t *testing.T, fs ...reportFormat) {
	t.Helper()
	was := reportFormats
	reportFormats = fs
	t.Cleanup(func() { reportFormats = was })
}

// formatPath is a path every format takes (--plot wants .svg or .png).
func formatPath(dir string, f reportFormat) string {
	return filepath.Join(dir, f.flagName()+".svg")
}

// Every report format of the table has its flag, is refused beside --list
// and --list-variants, is in the output plan, and is left out of rerun
// lines and bundles' reruns; artest tune refuses it unless it takes it.
func TestEveryReportFormatGoesThroughTheLists(t *testing.T) {
	require.NotEmpty(t, reportFormats)
	var refused []string
	for _, f := range reportFormats {
		if !f.inTune() {
			refused = append(refused, "--"+f.flagName())
		}
	}
	for _, f := range reportFormats {
		name := f.flagName()
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := formatPath(dir, f)
			flag := newFlagSet(&Options{}).Lookup(name)
			require.NotNil(t, flag)
			require.Equal(t, f.usage(), flag.Usage)
			require.True(t, rerunLeftOut[name], "a rerun line leaves --%s out", name)
			require.True(t, bundleIgnoredFlags[name], "a bundle's --%s is ignored", name)

			_, err := Parse([]string{"--list", "--" + name, path})
			require.EqualError(t, err, "--list prints the selected case IDs and runs nothing: --"+name+" would write nothing; drop one of them")
			require.Equal(t, exitcode.Usage, exitcode.Of(err))
			_, err = Parse([]string{"--list-variants", "--" + name, path})
			require.EqualError(t, err, "--list-variants prints the variant names and runs nothing: --"+name+" would do nothing; drop one of them")

			o, err := Parse([]string{"--" + name, path})
			require.NoError(t, err)
			require.Equal(t, path, *f.field(o))
			require.Contains(t, o.outputFiles(), pathFlag{flag: "--" + name, path: path, stream: f.stream()})
			require.NotContains(t, o.rerunArgs("oneshot/f32/sum/4KiB/oop-reg-plain/np2", "host"), "--"+name)

			// Another report on the same file is refused before the run.
			other := "--json"
			if name == "json" {
				other = "--junit"
			}
			o, err = Parse([]string{"--" + name, path, other, path})
			require.NoError(t, err)
			err = o.checkOutputPlan()
			require.ErrorContains(t, err, "writes that file too; each report needs its own file")
			require.Equal(t, exitcode.Usage, exitcode.Of(err))

			_, err = Parse([]string{"tune", "--" + name, path})
			if f.inTune() {
				require.True(t, err == nil || !strings.Contains(err.Error(), "do not apply"), "%v", err)
				return
			}
			require.ErrorContains(t, err, "tune writes --json (the tuning table), --header and --go; ")
			for _, r := range refused {
				require.ErrorContains(t, err, r)
			}
		})
	}
}

// A bench run given every report format writes every one of them.
func TestEveryReportFormatIsWritten(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--backend", "host", "bench", "-b", "4K", "-e", "4K", "--variant", "oneshot", "--iters", "2", "--reps", "2",
		"--mode", "oop,reg,plain,aligned"}
	for _, f := range reportFormats {
		args = append(args, "--"+f.flagName(), formatPath(dir, f))
	}
	res := runWorld(t, 2, same(args...))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	for _, f := range reportFormats {
		info, err := os.Stat(formatPath(dir, f))
		require.NoError(t, err, "--%s", f.flagName())
		require.NotZero(t, info.Size(), "--%s", f.flagName())
	}
}

// caseCount is a scratch format's writer: the number of cases.
func caseCount(w io.Writer, r *report.Report) error {
	_, err := fmt.Fprintf(w, "%d cases, exit %d\n", len(r.Cases), r.Summary.ExitCode)
	return err
}

// A fileFormat, one entry of the table, is a flag of its own, kept in
// Options.Reports, checked in the output plan and written at the end.
func TestAFileFormatIsOneEntry(t *testing.T) {
	real := slices.Clone(reportFormats)
	withReportFormats(t, append(real, fileFormat{formatFlag{"cases", "write the number of cases to FILE"}, caseCount})...)
	dir := t.TempDir()
	path := filepath.Join(dir, "n.txt")

	o, err := Parse([]string{"--cases", path})
	require.NoError(t, err)
	require.Equal(t, path, *o.Reports["cases"])
	require.Contains(t, o.outputFiles(), pathFlag{flag: "--cases", path: path})
	_, err = Parse([]string{"--list", "--cases", path})
	require.ErrorContains(t, err, "--cases would write nothing")
	_, err = Parse([]string{"tune", "--cases", path})
	require.ErrorContains(t, err, "--header and --go; --junit, --jsonl, --plot")
	require.ErrorContains(t, err, " and --cases do not apply")
	o, err = Parse([]string{"--cases", path, "--json", path})
	require.NoError(t, err)
	require.ErrorContains(t, o.checkOutputPlan(), "--cases "+path+": --json "+path+" writes that file too")

	res := runWorld(t, 2, same("--backend", "host", "--case", "oneshot/f32/sum/4KiB/oop-reg-plain/np2", "--cases", path))
	require.Equal(t, []int{0, 0}, res.codes, res.stderr)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "1 cases, exit 0\n", string(b))
}

// The writers run in the table's order; one that fails is said on its own
// line and the later ones see exit code 4, as the runner's files do.
func TestReportWritersAfterAFailure(t *testing.T) {
	failing := func(what string) func(io.Writer, *report.Report) error {
		return func(io.Writer, *report.Report) error { return errors.New(what + " broke") }
	}
	var seen []int
	record := func(_ io.Writer, r *report.Report) error { seen = append(seen, r.Summary.ExitCode); return nil }
	withReportFormats(t,
		fileFormat{formatFlag{"a", ""}, record},
		fileFormat{formatFlag{"b", ""}, failing("b")},
		fileFormat{formatFlag{"c", ""}, record},
		fileFormat{formatFlag{"d", ""}, failing("d")},
	)
	dir := t.TempDir()
	o := &Options{}
	for _, f := range reportFormats {
		*f.field(o) = filepath.Join(dir, f.flagName())
	}
	var stderr bytes.Buffer
	write := o.planReports(&runner.Config{}, &stderr)
	r := &report.Report{}
	err := write(r)
	require.ErrorContains(t, err, "d broke")
	require.Equal(t, []int{exitcode.OK, exitcode.Env}, seen)
	require.Equal(t, exitcode.Env, r.Summary.ExitCode)
	require.Equal(t, 1, strings.Count(stderr.String(), "\n"), stderr.String())
	require.Contains(t, stderr.String(), "b broke")
	require.True(t, strings.HasPrefix(stderr.String(), "artest: "), stderr.String())
	_, err = os.Stat(filepath.Join(dir, "b"))
	require.ErrorIs(t, err, os.ErrNotExist, "a failed writer leaves no file")
}
