package report

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Go benchmark data format (golang.org/design/14313-benchmark-format):
// configuration lines "key: value" (key: a lower-case letter first, no
// space or upper-case letter), and result lines "Benchmark<Name> <iters>
// <value> <unit>...", where Name starts with a character that is not a
// lower-case letter and holds no space, iterations is an integer, and every
// value parses as a float and is followed by a unit without spaces.
var (
	benchConfigLine = regexp.MustCompile(`^[a-z][^\sA-Z:]*: .*$`)
	benchResultLine = regexp.MustCompile(`^Benchmark([^\sa-z]\S*)\s+(\d+)((?:\s+\S+\s+\S+)+)$`)
)

func TestWriteGoBenchFollowsTheFormat(t *testing.T) {
	r := &Report{Header: Header{Tool: "artest", Version: "0.1.0", GitRevision: "abc", Ranks: 4, Backend: "cuda", Agg: "max",
		Devices: []string{"rank 0: NVIDIA H200", "rank 1: NVIDIA H200"}}}
	r.Cases = []Case{
		{ID: "oneshot/bf16/sum/1MiB/oop-reg-plain/np4", Variant: "oneshot", DType: "bf16", Op: "sum", Mode: "oop-reg-plain", Bytes: 1 << 20, Ranks: 4,
			Verdict: Pass, TimeUS: 10, Iters: 20, Timing: &Timing{Iters: 20, RepUS: []float64{10, 11.5, 9.75}}},
		{ID: "nccl/bf16/sum/4KiB/oop-reg-graph/np4", Variant: "nccl", DType: "bf16", Op: "sum", Mode: "oop-reg-graph", Bytes: 4096, Ranks: 4,
			Verdict: Pass, TimeUS: 7.25, Iters: 3}, // a test run: no repetitions kept, the median is one line
		{ID: "twoshot/bf16/sum/4KiB/oop-reg-plain/np4", Variant: "twoshot", Verdict: Fail, TimeUS: 3, Iters: 20},
		{ID: "ring/bf16/sum/4KiB/oop-reg-plain/np4", Variant: "ring", Verdict: Skipped},
	}
	var b bytes.Buffer
	require.NoError(t, WriteGoBench(&b, r))
	var names []string
	var nsPerOp, mbPerS []float64
	var iters []int
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if line == "" || benchConfigLine.MatchString(line) {
			continue
		}
		m := benchResultLine.FindStringSubmatch(line)
		require.NotNil(t, m, "not a result line: %q", line)
		n, err := strconv.Atoi(m[2])
		require.NoError(t, err, line)
		iters = append(iters, n)
		fields := strings.Fields(m[3])
		units := map[string]float64{}
		for i := 0; i < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			require.NoError(t, err, line)
			units[fields[i+1]] = v
		}
		names = append(names, m[1])
		nsPerOp = append(nsPerOp, units["ns/op"])
		mbPerS = append(mbPerS, units["MB/s"])
	}
	require.Equal(t, []string{
		"Allreduce/variant=oneshot/dtype=bf16/op=sum/mode=oop-reg-plain/bytes=1048576/ranks=4",
		"Allreduce/variant=oneshot/dtype=bf16/op=sum/mode=oop-reg-plain/bytes=1048576/ranks=4",
		"Allreduce/variant=oneshot/dtype=bf16/op=sum/mode=oop-reg-plain/bytes=1048576/ranks=4",
		"Allreduce/variant=nccl/dtype=bf16/op=sum/mode=oop-reg-graph/bytes=4096/ranks=4",
	}, names, "one line per repetition; failed and skipped cases have no time")
	require.Equal(t, []int{20, 20, 20, 3}, iters, "iterations: the calls per repetition")
	require.Equal(t, []float64{10000, 11500, 9750, 7250}, nsPerOp)
	require.InDelta(t, float64(1<<20)/10, mbPerS[0], 0.01, "MB/s is bytes per microsecond")
	require.Contains(t, b.String(), "backend: cuda\n")
	require.Contains(t, b.String(), "artest-revision: abc\n")
}

// Each collective's timings carry its own benchmark name, so benchstat never
// compares a reduce-scatter with an allreduce of the same variant and size.
func TestWriteGoBenchNamesTheCollective(t *testing.T) {
	r := &Report{Header: Header{Ranks: 2, Backend: "cuda"}}
	for _, coll := range []string{"", "reduce-scatter", "all-gather"} {
		r.Cases = append(r.Cases, Case{ID: "pull/" + coll, Variant: "pull", Coll: coll, DType: "bf16", Op: "sum", Mode: "oop-reg-plain",
			Bytes: 4096, Ranks: 2, Verdict: Pass, TimeUS: 5, Iters: 20})
	}
	var b bytes.Buffer
	require.NoError(t, WriteGoBench(&b, r))
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if m := benchResultLine.FindStringSubmatch(line); m != nil {
			name, _, _ := strings.Cut(m[1], "/")
			names = append(names, name)
		}
	}
	require.Equal(t, []string{"Allreduce", "ReduceScatter", "AllGather"}, names)
}
