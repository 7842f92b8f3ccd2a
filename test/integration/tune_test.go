//go:build integration

package integration

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/tune"
)

// artest tune on 2 host ranks, 2 sizes and 2 block counts writes the JSON
// table (every candidate, the best per variant and overall, nccl skipped
// with its reason), the C++ header and the Go table; a run with --tuned
// launches from it and records so per case.
func TestTuneWritesTheTables(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	js, h, gof := filepath.Join(dir, "tune.json"), filepath.Join(dir, "tuned.h"), filepath.Join(dir, "tuned.go")
	o := mpirun(t, 2, 3*time.Minute, "tune", "--size", "4K,256K", "--variant", "oneshot,twoshot,ring",
		"--tune-blocks", "4,16", "--tune-threads", "256", "--tune-param", "lanes=2", "--tune-param", "slots=4",
		"--tune-param", "slot-bytes=4K", "--json", js, "--header", h, "--go", gof)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	require.Contains(t, o.stdout, "# artest tune: 2 ranks, host backend")
	require.Regexp(t, `(?m)^2\s+bf16\s+graph\s+256KiB\s+\S+\s+\d+x\d+`, o.stdout)

	tab, err := tune.ReadTable(js)
	require.NoError(t, err)
	require.Equal(t, 2, tab.Provenance.Ranks)
	require.Len(t, tab.Buckets, 2)
	big := tab.Buckets[1]
	require.Equal(t, int64(256<<10), big.Bytes)
	require.True(t, big.Finished)
	blocks := map[string]map[int]bool{}
	for _, c := range big.Candidates {
		require.Equal(t, "pass", string(c.Verdict), "%+v", c)
		require.Positive(t, c.TimeUS)
		if blocks[c.Variant] == nil {
			blocks[c.Variant] = map[int]bool{}
		}
		blocks[c.Variant][c.Blocks] = true
	}
	// 256 KiB of bf16 at 256 threads needs 64 blocks: 4 and 16 are two
	// launches, beside the registry default (36 x 512: 32 blocks).
	require.Equal(t, map[int]bool{4: true, 16: true, 32: true}, blocks["oneshot"])
	require.Len(t, big.BestPerVariant, 3)
	require.NotNil(t, big.Best)
	require.Equal(t, "skipped", string(big.NCCL.Verdict))
	require.NotEmpty(t, big.NCCL.Reason)

	hb, err := os.ReadFile(h)
	require.NoError(t, err)
	require.Contains(t, string(hb), "constexpr std::array<Launch, 2> kBest{{")
	require.Contains(t, string(hb), "constexpr std::array<Launch, 6> kPerVariant{{")
	gb, err := os.ReadFile(gof)
	require.NoError(t, err)
	_, err = parser.ParseFile(token.NewFileSet(), gof, gb, 0)
	require.NoError(t, err)
	require.Equal(t, 6, strings.Count(string(gb), "{Ranks: 2, "))

	rep := filepath.Join(dir, "run.json")
	o = mpirun(t, 2, 2*time.Minute, "--tuned", js, "--variant", "oneshot,ring", "--size", "256K", "--dtype", "bf16",
		"--op", "sum", "--mode", "oop,reg,graph,aligned", "--json", rep)
	require.Equal(t, 0, o.code, "%s\n%s", o.stdout, o.stderr)
	r := readReport(t, rep)
	require.Contains(t, r.Header.Tuned, "artest tune ")
	require.Len(t, r.Cases, 2)
	tt := tab.Tuned()
	for _, c := range r.Cases {
		e, ok := tt.Lookup(c.Variant, 2, "bf16", true, c.Bytes)
		require.True(t, ok, c.ID)
		require.Equal(t, "tuned", c.LaunchFrom, c.ID)
		require.Equal(t, e.Blocks, c.Blocks, c.ID)
		require.Equal(t, e.Threads, c.Threads, c.ID)
		if c.Variant == "ring" {
			require.Equal(t, e.Params, c.Params, c.ID)
		}
	}
}
