package report

import (
	"bufio"
	"fmt"
	"github.com/artest/artest/reference"
	"io"
	"strings"
)

// WriteGoBench writes the timed, passing cases in the Go benchmark data
// format (golang.org/design/14313-benchmark-format), so that benchstat
// compares two runs with its own significance test: configuration lines
// first (backend, ranks, devices, aggregation), then one result line per
// timed repetition,
//
//	BenchmarkAllreduce/variant=oneshot/dtype=bf16/op=sum/mode=oop-reg-plain/bytes=1048576/ranks=4 20 12345 ns/op 84.94 MB/s
//
// (BenchmarkReduceScatter and BenchmarkAllGather for the other
// collectives), where the iteration count is the calls per repetition, ns/op the
// repetition's per-call time (aggregated over ranks) and MB/s the message
// bytes over that time. A case without kept repetitions (a test run, not a
// bench) gives one line with its median time.
func WriteGoBench(w io.Writer, r *Report) error {
	bw := bufio.NewWriter(w)
	h := &r.Header
	config := [][2]string{
		{"artest-version", h.Version}, {"artest-revision", h.GitRevision}, {"backend", h.Backend},
		{"ranks", fmt.Sprint(h.Ranks)}, {"agg", h.Agg},
	}
	if len(h.Devices) > 0 {
		config = append(config, [2]string{"device", deviceName(h.Devices[0])})
	}
	for _, kv := range config {
		if kv[1] != "" {
			fmt.Fprintf(bw, "%s: %s\n", kv[0], kv[1])
		}
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		if verdictOf(c) != Pass || c.TimeUS <= 0 {
			continue
		}
		name := fmt.Sprintf("%s/variant=%s/dtype=%s/op=%s/mode=%s/bytes=%d/ranks=%d",
			benchName(c.Coll), benchKey(c.Variant), benchKey(c.DType), benchKey(c.Op), benchKey(c.Mode), c.Bytes, c.Ranks)
		iters, reps := c.Iters, []float64{c.TimeUS}
		if c.Timing != nil && len(c.Timing.RepUS) > 0 {
			reps = c.Timing.RepUS
			if c.Timing.Iters > 0 {
				iters = c.Timing.Iters
			}
		}
		iters = max(iters, 1)
		for _, us := range reps {
			if us <= 0 {
				continue
			}
			fmt.Fprintf(bw, "%s\t%d\t%.1f ns/op\t%.2f MB/s\n", name, iters, us*1e3, float64(c.Bytes)/us)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write Go benchmark format: %w", err)
	}
	return nil
}

// benchName is the benchmark's name for collective coll (Case.Coll: ""
// for the allreduce): the collective's (reference.Collective.Bench),
// BenchmarkAllreduce, BenchmarkReduceScatter, BenchmarkAllGather; a name
// this artest does not know is spelled from its words.
func benchName(coll string) string {
	if coll == "" {
		return reference.AllReduce.Desc().Bench
	}
	if c, err := reference.ParseColl(coll); err == nil && c.Desc().Bench != "" {
		return c.Desc().Bench
	}
	var b strings.Builder
	b.WriteString("Benchmark")
	for _, part := range strings.FieldsFunc(coll, func(r rune) bool { return r == '-' || r == '_' || r == ' ' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

// benchKey keeps a name part free of what the format splits on (spaces,
// and '/' and '=' inside a key=value part).
func benchKey(s string) string {
	if s == "" {
		return "none"
	}
	return strings.NewReplacer(" ", "_", "/", "_", "=", "_").Replace(s)
}

// deviceName is a header device line without its "rank N: " prefix.
func deviceName(d string) string {
	if _, rest, ok := strings.Cut(d, ": "); ok && strings.HasPrefix(d, "rank ") {
		return rest
	}
	return d
}
