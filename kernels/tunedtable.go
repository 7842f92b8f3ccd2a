package kernels

import "sort"

// The tuning table: the launch parameters `artest tune` measured fastest,
// per world size, dtype, launch kind and message size bucket, for every
// custom variant (Tuned, in tuned.go). The runner launches a variant with
// its tuned entry when the user gives no --blocks, --threads or --param for
// it, else with the registry's defaults.
//
// This file imports nothing but the standard library, so that a test can
// type-check tuned.go as `artest tune --go` writes it beside a copy of this
// file alone.

// TunedTable is a measured table and where it was measured.
type TunedTable struct {
	Provenance TunedProvenance
	// Entries, in any order; Lookup finds the bucket.
	Entries []TunedEntry
}

// TunedProvenance says where and how a table was measured.
type TunedProvenance struct {
	Date     string // UTC, RFC 3339
	Revision string // artest's git revision
	Machine  string // host names
	GPUs     string // device names
	Driver   string // CUDA driver version
	NCCL     string // NCCL version of the baseline
	Command  string // the artest tune command line
	// Backend measured the table: cuda, or host (the host model's
	// goroutines: a plumbing check whose times say nothing of a GPU).
	Backend string
}

// TunedEntry is one variant's best launch for one bucket: messages of
// (the next smaller bucket's MaxBytes, MaxBytes] bytes.
type TunedEntry struct {
	Ranks    int
	DType    string // f32, f16, bf16
	Launch   string // graph or plain: how the calls were issued when measured
	MaxBytes int64
	Variant  string
	// Blocks is an upper bound, as the registry's: a message that needs
	// fewer blocks (Grid) gets fewer. Threads is the block size.
	Blocks  int
	Threads int
	// Params are the variant's --param values by name.
	Params map[string]uint32
	// TimeUS is the measured median time per call at MaxBytes;
	// NCCLTimeUS NCCL's in the same run (0: not measured).
	TimeUS     float64
	NCCLTimeUS float64
	// Best: the fastest variant of this bucket (what a dispatcher picks).
	Best bool
}

// Lookup finds variant's entry for a message of bytes bytes on ranks ranks:
// the entry of the smallest bucket that holds the message, measured with
// the same launch kind if there is one, else with the other. Messages
// above the largest bucket use the largest bucket's entry (launch
// parameters stop changing once every block is busy).
func (t *TunedTable) Lookup(variant string, ranks int, dtype string, graph bool, bytes int64) (TunedEntry, bool) {
	if t == nil {
		return TunedEntry{}, false
	}
	want := "plain"
	if graph {
		want = "graph"
	}
	var same, other []TunedEntry
	for _, e := range t.Entries {
		if e.Variant != variant || e.Ranks != ranks || e.DType != dtype {
			continue
		}
		if e.Launch == want {
			same = append(same, e)
		} else {
			other = append(other, e)
		}
	}
	if e, ok := bucketOf(same, bytes); ok {
		return e, true
	}
	return bucketOf(other, bytes)
}

// bucketOf is the entry of the smallest MaxBytes at or above bytes, else
// the largest.
func bucketOf(es []TunedEntry, bytes int64) (TunedEntry, bool) {
	if len(es) == 0 {
		return TunedEntry{}, false
	}
	sort.Slice(es, func(i, j int) bool { return es[i].MaxBytes < es[j].MaxBytes })
	for _, e := range es {
		if bytes <= e.MaxBytes {
			return e, true
		}
	}
	return es[len(es)-1], true
}

// String is the provenance in one line, for report headers.
func (p TunedProvenance) String() string {
	if p.Date == "" && p.Machine == "" {
		return ""
	}
	return "artest tune " + p.Date + " on " + p.Machine + " (" + p.GPUs + ", driver " + p.Driver + ", nccl " + p.NCCL + ", artest " + p.Revision + ")"
}
