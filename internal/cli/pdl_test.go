package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
)

func TestPDLFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
		pdl     bool
	}{
		{"off by default", nil, "", false},
		{"--pdl", []string{"--pdl"}, "", true},
		{"bench --pdl", []string{"bench", "--pdl"}, "", true},
		{"the fault with --pdl", []string{"--pdl", "--inject", "pdl-no-wait"}, "", true},
		{"the fault alone is a usage error", []string{"--inject", "pdl-no-wait"}, "--inject pdl-no-wait needs --pdl", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Equal(t, exitcode.Usage, exitcode.Of(err))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.pdl, o.PDL)
			require.Equal(t, tc.pdl, strings.Contains(strings.Join(o.rerunArgs("x", "host"), " "), "--pdl"),
				"the rerun line keeps --pdl")
			if tc.pdl && len(tc.args) > 2 {
				require.Equal(t, kernels.InjectPdlNoWait, o.inject.Bits)
			}
		})
	}
}

// On the host backend, --pdl passes where the kernels wait for the
// producer, and the pdl-no-wait fault makes every case fail with a
// mismatch (the model's producer writes nothing before it is waited for).
func TestPDLHost(t *testing.T) {
	args := []string{"--backend", "host", "--pdl", "--variant", "oneshot,twoshot,ring,oneshot-cpasync,nccl", "--dtype", "bf16",
		"--op", "sum", "--size", "4100", "--mode", "aligned", "--iters", "2", "--reps", "1", "--warmup", "1"}
	for _, tc := range []struct {
		name   string
		inject []string
		code   int
	}{
		{"waits: pass", nil, 0},
		{"pdl-no-wait: mismatch", []string{"--inject", "pdl-no-wait"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := filepath.Join(t.TempDir(), "r.json")
			res := runWorld(t, 2, same(append(append(args, tc.inject...), "--json", js)...))
			require.Equal(t, []int{tc.code, tc.code}, res.codes, "stderr: %v\nstdout: %s", res.stderr, res.stdout[0])
			rep := readReport(t, js)
			require.True(t, rep.Header.PDL)
			require.Len(t, rep.Cases, 5*8) // 5 variants x 8 aligned modes
			if tc.code != 0 {
				require.Contains(t, res.stderr[0], "--pdl --inject pdl-no-wait", "the repro lines rerun with --pdl")
			}
			for _, c := range rep.Cases {
				if c.Variant == "nccl" {
					require.Equal(t, report.Skipped, c.Verdict, c.ID)
					continue
				}
				if tc.code == 0 {
					require.Equal(t, report.Pass, c.Verdict, "%s: %s", c.ID, c.Reason)
					continue
				}
				require.Equal(t, report.Fail, c.Verdict, c.ID)
				require.Equal(t, "mismatch", c.Failures[0].Kind, "%s: %s", c.ID, c.Reason)
			}
		})
	}
}

// bench --pdl times the same calls without PDL as well.
func TestPDLBenchTimesBoth(t *testing.T) {
	js := filepath.Join(t.TempDir(), "b.json")
	res := runWorld(t, 2, same("--backend", "host", "bench", "-b", "4K", "-e", "16K", "-f", "4", "--pdl",
		"--variant", "oneshot,twoshot", "--iters", "2", "--reps", "2", "--warmup", "1", "--json", js))
	require.Equal(t, []int{0, 0}, res.codes, "stderr: %v", res.stderr)
	rep := readReport(t, js)
	require.Len(t, rep.Cases, 2*2*2)
	for _, c := range rep.Cases {
		require.Equal(t, report.Pass, c.Verdict, c.ID)
		require.Positive(t, c.TimeUS, c.ID)
		require.Positive(t, c.NoPDLTimeUS, c.ID)
		require.InDelta(t, c.NoPDLTimeUS-c.TimeUS, c.PDLGainUS, 1e-9, c.ID)
	}
	require.Contains(t, res.stdout[0], "# pdl: one call is the input poisoned")
}

func TestPDLChainFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"bench --pdl-chain", []string{"bench", "--pdl-chain"}, ""},
		{"outside bench", []string{"--pdl-chain"}, "--pdl-chain times chained calls: run artest bench"},
		{"with --pdl", []string{"bench", "--pdl-chain", "--pdl"}, "--pdl-chain and --pdl exclude each other"},
		{"under tune", []string{"tune", "--pdl-chain"}, "--pdl-chain is a flag of artest bench, not of artest tune"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse(tc.args)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.Equal(t, exitcode.Usage, exitcode.Of(err))
				return
			}
			require.NoError(t, err)
			require.True(t, o.PDLChain)
		})
	}
}

// bench --pdl-chain on the host backend: every out-of-place registered
// case of a custom variant gets its chained time and the gain; staged and
// in-place cases say why they were not chained; results are checked as
// usual after the chained calls.
func TestPDLChainBenchTimesRegisteredCases(t *testing.T) {
	js := filepath.Join(t.TempDir(), "b.json")
	res := runWorld(t, 2, same("--backend", "host", "bench", "-b", "4K", "-e", "16K", "-f", "4", "--pdl-chain",
		"--variant", "oneshot,twoshot", "--mode", "oop-reg-plain,oop-reg-graph,oop-stg-plain,ip-reg-plain",
		"--iters", "2", "--reps", "2", "--warmup", "1", "--json", js))
	require.Equal(t, []int{0, 0}, res.codes, "stderr: %v", res.stderr)
	rep := readReport(t, js)
	require.True(t, rep.Header.PDLChain)
	chained := 0
	for _, c := range rep.Cases {
		require.Equal(t, report.Pass, c.Verdict, c.ID)
		if strings.HasPrefix(c.Mode, "oop-reg") {
			chained++
			require.Positive(t, c.ChainTimeUS, c.ID)
			require.InDelta(t, c.TimeUS-c.ChainTimeUS, c.ChainGainUS, 1e-9, c.ID)
			require.Empty(t, c.ChainNote, c.ID)
			continue
		}
		require.Zero(t, c.ChainTimeUS, c.ID)
		require.NotEmpty(t, c.ChainNote, c.ID)
	}
	require.Equal(t, 2*2*4, chained, "oneshot and twoshot, 2 sizes, oop-reg plain, off1, off3 and graph: %v", ids(rep))
	require.Contains(t, res.stdout[0], "# pdl-chain: back-to-back calls")
	require.Contains(t, res.stdout[0], "# not chained: oneshot: staged modes copy the input in between calls")
}

func ids(r *report.Report) []string {
	var out []string
	for _, c := range r.Cases {
		out = append(out, c.ID)
	}
	return out
}
