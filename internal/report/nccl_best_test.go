package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBestNCCL(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times map[string]float64
		want  string
		us    float64
	}{
		{"none ran", map[string]float64{"oneshot": 3}, "", 0},
		{"nccl alone", map[string]float64{"nccl": 9}, "nccl", 9},
		{"registered is faster", map[string]float64{"nccl": 9, "nccl-reg": 7, "oneshot": 1}, "nccl-reg", 7},
		{"window is fastest", map[string]float64{"nccl": 9, "nccl-reg": 7, "nccl-win": 4}, "nccl-win", 4},
		{"a zero time did not run", map[string]float64{"nccl": 9, "nccl-win": 0}, "nccl", 9},
		{"ties go to the plain mode", map[string]float64{"nccl": 5, "nccl-reg": 5}, "nccl", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, us := BestNCCL(tc.times)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.us, us)
		})
	}
	require.True(t, IsNCCLBaseline("nccl-win"))
	require.False(t, IsNCCLBaseline("oneshot"))
}

// With nccl-reg beside nccl, the comparison names NCCL's best mode at each
// size and the best artest variant's gain over it; nccl-reg is never the
// best custom variant, and speedup still compares with nccl alone.
func TestWriteBenchTableComparisonWithNCCLModes(t *testing.T) {
	r := benchFixture()
	for _, c := range append([]Case(nil), r.Cases...) {
		if c.Variant != "nccl" || !strings.HasSuffix(c.Mode, "-plain") {
			continue
		}
		c.Variant, c.ID = "nccl-reg", strings.Replace(c.ID, "nccl/", "nccl-reg/", 1)
		c.TimeUS = map[int64]float64{1 << 10: 5.0, 64 << 10: 15.0, 1 << 20: 10.0}[c.Bytes]
		r.Cases = append(r.Cases, c)
	}
	r.Tally()
	out := string(render(t, func(b *bytes.Buffer) error { return WriteBenchTable(b, r) }))
	_, cmp, ok := strings.Cut(out, "# comparison bf16 sum oop-reg, plain launches")
	require.True(t, ok)
	require.Contains(t, cmp, "#   ncclbest is NCCL's fastest mode at the size, vsbest the best artest variant's gain over it")
	rows := map[string][]string{}
	for _, l := range strings.Split(cmp, "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(l, "#") {
			if _, seen := rows[f[0]]; !seen {
				rows[f[0]] = f
			}
		}
	}
	// size, oneshot, twoshot, nccl, nccl-reg, best, speedup, ncclbest, vsbest
	require.Equal(t, []string{"1024", "6.50", "-", "11.50", "5.00", "oneshot", "1.77", "nccl-reg", "0.77"}, rows["1024"])
	require.Equal(t, []string{"65536", "8.25", "-", "14.00", "15.00", "oneshot", "1.70", "nccl", "1.70"}, rows["65536"])
	require.Equal(t, []string{"1048576", "21.75", "18.00", "19.00", "10.00", "twoshot", "1.06", "nccl-reg", "0.56"}, rows["1048576"])

	// Graph replays had nccl only there: the columns are the same for the
	// whole table, NCCL's best is nccl.
	_, graph, ok := strings.Cut(out, "# comparison bf16 sum oop-reg, CUDA graph replays")
	require.True(t, ok)
	require.Contains(t, graph, "\n        1024       4.12          -       9.50          -   oneshot      2.30      nccl      2.30\n")
}
