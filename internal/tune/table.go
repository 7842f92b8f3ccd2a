package tune

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels"
)

// FormatVersion is written into every tuning table; ReadTable refuses
// other versions.
const FormatVersion = 1

// Table is one `artest tune` run: where it ran and, per dtype, launch kind
// and size bucket, every candidate and the best ones.
type Table struct {
	Format     int        `json:"artest_tune"`
	Provenance Provenance `json:"provenance"`
	Buckets    []Bucket   `json:"buckets"`
	// Unfinished names the buckets the sweep did not finish (--budget ran
	// out, or the run stopped), with why.
	Unfinished []string `json:"unfinished,omitempty"`
	// Failed counts candidates that computed wrong results (disqualified).
	Failed int `json:"failed"`
	// Merged: the runs whose buckets were added with --merge (another
	// world size, dtype or size), so that one table holds them all.
	Merged []Provenance `json:"merged,omitempty"`
}

// Provenance is where and how the table was measured.
type Provenance struct {
	Date     time.Time `json:"date"`
	Version  string    `json:"artest_version"`
	Revision string    `json:"artest_revision"`
	Hosts    []string  `json:"hosts"`
	GPUs     []string  `json:"gpus,omitempty"`
	Driver   string    `json:"driver,omitempty"`
	NCCL     string    `json:"nccl,omitempty"`
	Backend  string    `json:"backend"`
	Ranks    int       `json:"ranks"`
	Command  []string  `json:"command"`
	Warmup   int       `json:"warmup"`
	Iters    int       `json:"iters"`
	Reps     int       `json:"reps"`
	Agg      string    `json:"agg"`
	BudgetS  float64   `json:"budget_s,omitempty"`
	Seconds  float64   `json:"seconds"` // how long the sweep took
}

// Result is one measured (or skipped, or not reached) launch.
type Result struct {
	Variant string `json:"variant"`
	Launch
	Default bool `json:"default,omitempty"`
	// Verdict: pass, FAIL (wrong results: disqualified), skipped, or empty
	// when the sweep did not reach it.
	Verdict report.Verdict `json:"verdict,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	TimeUS  float64        `json:"time_us,omitempty"`
	BusBW   float64        `json:"busbw_gbps,omitempty"`
	Case    string         `json:"case,omitempty"`
}

// Timed reports whether r passed with a time.
func (r *Result) Timed() bool { return r.Verdict == report.Pass && r.TimeUS > 0 }

// Bucket is one dtype, launch kind and size: messages of (MinBytes, Bytes]
// use what was measured at Bytes.
type Bucket struct {
	Ranks    int    `json:"ranks"`
	DType    string `json:"dtype"`
	Launch   string `json:"launch"` // graph or plain
	MinBytes int64  `json:"min_bytes"`
	Bytes    int64  `json:"bytes"`
	// Candidates: every distinct launch of every variant, in sweep order.
	Candidates []Result `json:"candidates"`
	// Points, Duplicates, TooMuchShared: as Enumeration's, summed over
	// the variants.
	Points        int `json:"points"`
	Duplicates    int `json:"duplicates"`
	TooMuchShared int `json:"too_much_shared,omitempty"`
	// NCCL is the baseline (verdict skipped with the reason where NCCL
	// cannot run).
	NCCL           *Result  `json:"nccl,omitempty"`
	BestPerVariant []Result `json:"best_per_variant,omitempty"`
	Best           *Result  `json:"best,omitempty"`
	Speedup        float64  `json:"speedup,omitempty"` // NCCL's time / Best's
	Finished       bool     `json:"finished"`
}

// Name is "bf16 graph 64KiB".
func (b *Bucket) Name() string {
	return fmt.Sprintf("%s %s %s", b.DType, b.Launch, cases.FormatSize(b.Bytes))
}

// Choose fills BestPerVariant, Best and Speedup from the candidates that
// passed with a time: the fastest per variant (on a tie the earlier one,
// so the registry default wins ties) and the fastest of those.
func (b *Bucket) Choose() {
	b.BestPerVariant, b.Best, b.Speedup = nil, nil, 0
	index := map[string]int{}
	for _, r := range b.Candidates {
		if !r.Timed() {
			continue
		}
		i, ok := index[r.Variant]
		if !ok {
			index[r.Variant] = len(b.BestPerVariant)
			b.BestPerVariant = append(b.BestPerVariant, r)
			continue
		}
		if r.TimeUS < b.BestPerVariant[i].TimeUS {
			b.BestPerVariant[i] = r
		}
	}
	for i := range b.BestPerVariant {
		if b.Best == nil || b.BestPerVariant[i].TimeUS < b.Best.TimeUS {
			best := b.BestPerVariant[i]
			b.Best = &best
		}
	}
	if b.Best != nil && b.NCCL != nil && b.NCCL.Timed() {
		b.Speedup = b.NCCL.TimeUS / b.Best.TimeUS
	}
}

// Finish chooses every bucket's best and lists the unfinished ones.
func (t *Table) Finish(stopReason string) {
	t.Unfinished, t.Failed = nil, 0
	for i := range t.Buckets {
		b := &t.Buckets[i]
		b.Choose()
		for _, r := range b.Candidates {
			if r.Verdict == report.Fail {
				t.Failed++
			}
		}
		if !b.Finished {
			t.Unfinished = append(t.Unfinished, fmt.Sprintf("%s: %s", b.Name(), stopReason))
		}
	}
}

// Tuned is the table as kernels/tuned.go holds it: for every finished
// bucket, each variant's best launch, the fastest marked Best.
func (t *Table) Tuned() kernels.TunedTable {
	p := t.Provenance
	out := kernels.TunedTable{Provenance: kernels.TunedProvenance{
		Date:     p.Date.UTC().Format(time.RFC3339),
		Revision: p.Revision,
		Machine:  strings.Join(uniq(p.Hosts), ","),
		GPUs:     strings.Join(uniq(p.GPUs), ","),
		Driver:   p.Driver,
		NCCL:     p.NCCL,
		Command:  report.ShellCommand(p.Command),
		Backend:  p.Backend,
	}}
	for _, m := range t.Merged {
		out.Provenance.Command += "; " + report.ShellCommand(m.Command)
	}
	for _, b := range t.Buckets {
		if !b.Finished {
			continue
		}
		for _, r := range b.BestPerVariant {
			ranks := b.Ranks
			if ranks == 0 {
				ranks = p.Ranks
			}
			e := kernels.TunedEntry{
				Ranks: ranks, DType: b.DType, Launch: b.Launch, MaxBytes: b.Bytes,
				Variant: r.Variant, Blocks: r.Blocks, Threads: r.Threads, Params: r.Params,
				TimeUS: r.TimeUS, Best: b.Best != nil && r.Variant == b.Best.Variant,
			}
			if b.NCCL != nil && b.NCCL.Timed() {
				e.NCCLTimeUS = b.NCCL.TimeUS
			}
			out.Entries = append(out.Entries, e)
		}
	}
	return out
}

// Merge adds other's buckets that t did not measure (another world size,
// dtype, launch kind or size), and records other's provenance.
func (t *Table) Merge(other *Table) {
	type key struct {
		ranks         int
		dtype, launch string
		bytes         int64
	}
	keyOf := func(b *Bucket, ranks int) key {
		if b.Ranks != 0 {
			ranks = b.Ranks
		}
		return key{ranks, b.DType, b.Launch, b.Bytes}
	}
	have := map[key]bool{}
	for i := range t.Buckets {
		have[keyOf(&t.Buckets[i], t.Provenance.Ranks)] = true
	}
	for _, b := range other.Buckets {
		k := keyOf(&b, other.Provenance.Ranks)
		if have[k] {
			continue
		}
		have[k] = true
		b.Ranks = k.ranks
		t.Buckets = append(t.Buckets, b)
	}
	t.Merged = append(append(t.Merged, other.Provenance), other.Merged...)
}

// uniq drops repeats, keeping the first of each.
func uniq(xs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// WriteJSON writes the table, indented.
func (t *Table) WriteJSON(path string) error {
	t.Format = FormatVersion
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	return report.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
}

// ReadTable loads a table WriteJSON wrote.
func ReadTable(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tuning table: %w", err)
	}
	var t Table
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("tuning table %s: %w", path, err)
	}
	if t.Format != FormatVersion {
		return nil, fmt.Errorf("tuning table %s: format %d, this artest reads %d", path, t.Format, FormatVersion)
	}
	return &t, nil
}
