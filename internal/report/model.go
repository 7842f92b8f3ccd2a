// Package report turns case results into what people and CI systems read:
// the nccl-tests style table on stdout, the JSON report and the JUnit XML.
// Only rank 0 writes reports; the runner gathers every rank's results first.
package report

import (
	"strings"
	"time"
)

// Verdict of one case.
type Verdict string

const (
	Pass    Verdict = "pass"
	Fail    Verdict = "FAIL"
	Skipped Verdict = "skipped"
	// Hung: the case never finished (the watchdog fired, or a kernel block
	// gave up waiting); its failure of kind "hang" holds the diagnosis. It
	// counts as a failure.
	Hung Verdict = "HUNG"
)

// PeerCopy is what the links carried when a bench run measured them
// before its first case: every rank copied Bytes of its own staging into
// its right neighbour's, Reps times back to back, all ranks at once, with
// the copy engine (cuMemcpyDtoDAsync) and then with a kernel on the
// multiprocessors (artest_copy), as the collectives move data; then the
// same kernel read its right neighbour's staging into its own (SMRead*:
// a pull, as twoshot's and oneshot's loads of a peer's memory); the
// slowest and the fastest rank's rate of each (SM rates 0: not measured).
// A reference for the bus bandwidth beside it, not a bound: on 2 H100 the
// copy engine moved 286 to 292 GB/s and oneshot's kernel 332.
type PeerCopy struct {
	Bytes     int64   `json:"bytes"`
	Reps      int     `json:"reps"`
	MinGBps   float64 `json:"min_gbps"`
	MaxGBps   float64 `json:"max_gbps"`
	SMMinGBps float64 `json:"sm_min_gbps,omitempty"`
	SMMaxGBps float64 `json:"sm_max_gbps,omitempty"`
	// SMReadMinGBps, SMReadMaxGBps: the kernel's copy out of the
	// neighbour's memory into this rank's.
	SMReadMinGBps float64 `json:"sm_read_min_gbps,omitempty"`
	SMReadMaxGBps float64 `json:"sm_read_max_gbps,omitempty"`
}

// Header is the environment a run happened in: enough to reproduce it.
type Header struct {
	// RunID tells this run's lines from those of another run appending to
	// the same --jsonl file at the same time. CreateJSONL sets it when it
	// is empty; a run without --jsonl has none.
	RunID       string    `json:"run_id,omitempty"`
	Tool        string    `json:"tool"`
	Version     string    `json:"version"`
	GitRevision string    `json:"git_revision"`
	Command     []string  `json:"command"`
	Start       time.Time `json:"start"`
	Hosts       []string  `json:"hosts"` // per rank
	Ranks       int       `json:"ranks"`
	Backend     string    `json:"backend"`
	Seed        uint64    `json:"seed"`
	Input       string    `json:"input"` // random | exact | special
	Iters       int       `json:"iters"`
	Warmup      int       `json:"warmup"`
	Stress      int       `json:"stress,omitempty"`
	// Schedules are the adversarial schedules stress ran under
	// (--schedule; "none" when off), ScheduleNote what the backend could
	// not do of those asked for.
	Schedules    string `json:"schedules,omitempty"`
	ScheduleNote string `json:"schedule_note,omitempty"`
	// Checker is what checked every stress iteration ("device": the GPU's
	// artest_check, spot-checked on the host with the Go reference;
	// "host": the Go reference alone), CheckerNote why --check auto or
	// device did not get the device checker.
	Checker     string `json:"checker,omitempty"`
	CheckerNote string `json:"checker_note,omitempty"`
	Reps        int    `json:"reps,omitempty"`      // timed repetitions of Iters calls
	Agg         string `json:"agg,omitempty"`       // how ranks' times combine: max, avg or min
	Bench       bool   `json:"bench,omitempty"`     // an `artest bench` run: cases carry Timing
	PDL         bool   `json:"pdl,omitempty"`       // --pdl: every call is poison, producer kernel, allreduce with PDL
	PDLChain    bool   `json:"pdl_chain,omitempty"` // bench --pdl-chain: calls also timed each launched with PDL after the previous
	// Overlap is bench --overlap's compute load in blocks (0: none), and
	// OverlapNote why the load did not run.
	Overlap     int    `json:"overlap,omitempty"`
	OverlapNote string `json:"overlap_note,omitempty"`
	// SMBudget is bench --sm-budget: the most blocks (so multiprocessors)
	// each collective's grid gets per GPU, NCCL's through NCCL_MAX_CTAS,
	// while the compute load (Overlap blocks) holds the rest; 0: none.
	SMBudget int `json:"sm_budget,omitempty"`
	// ModeTables describe the bench tables of the run's timing modes that
	// keep their figures in Case.Modes (modes.go): one per such mode.
	ModeTables []ModeTable `json:"mode_tables,omitempty"`
	// PeerCopy is a bench run's measure of the links: every rank copying
	// into its right neighbour's memory at once (nil: not measured), and
	// PeerCopyNote why it was not.
	PeerCopy     *PeerCopy         `json:"peer_copy,omitempty"`
	PeerCopyNote string            `json:"peer_copy_note,omitempty"`
	Inject       []string          `json:"inject,omitempty"`
	Versions     map[string]string `json:"versions"` // go, mpi, cuda driver, nccl, ...
	Devices      []string          `json:"devices,omitempty"`
	Topology     any               `json:"topology,omitempty"`
	// SharedGPUs says how ranks shared GPUs (--share-gpus), "" when each
	// had its own. Such a run covers the protocols; its times mean nothing.
	SharedGPUs string `json:"shared_gpus,omitempty"`
	// Tuned is the provenance of the tuning table the launch defaults
	// came from (cases with launch_from "tuned").
	Tuned string `json:"tuned,omitempty"`
	// Plugins are the --plugin libraries whose variants ran.
	Plugins []Plugin `json:"plugins,omitempty"`
}

// Plugin is one loaded plugin (plugin/artest_plugin.h).
type Plugin struct {
	Name     string   `json:"name"`
	Path     string   `json:"path"`
	SHA256   string   `json:"sha256"`
	Variants []string `json:"variants"`
	// Checks says which of artest's checks its variants have beyond values
	// and guards (the trace word, device-side deadlines): the variants'
	// common text, or "per variant" when they differ.
	Checks string `json:"checks"`
	// VariantChecks is each variant's, in the order of Variants.
	VariantChecks []string `json:"variant_checks,omitempty"`
}

// ChecksLine is the report header's account of p's variants and their
// checks: "a:x, a:y: TEXT", or "a:x: TEXT; a:y: OTHER" when they differ.
func (p Plugin) ChecksLine() string {
	if len(p.VariantChecks) != len(p.Variants) {
		return strings.Join(p.Variants, ", ") + ": " + p.Checks
	}
	var groups []string
	for i := 0; i < len(p.Variants); {
		j := i
		for j+1 < len(p.Variants) && p.VariantChecks[j+1] == p.VariantChecks[i] {
			j++
		}
		groups = append(groups, strings.Join(p.Variants[i:j+1], ", ")+": "+p.VariantChecks[i])
		i = j + 1
	}
	return strings.Join(groups, "; ")
}

// Mismatch is one wrong element.
type Mismatch struct {
	Index    uint64  `json:"index"`
	Got      float64 `json:"got"`
	Want     float64 `json:"want"`
	GotBits  uint32  `json:"got_bits"`
	WantBits uint32  `json:"want_bits"`
	ULP      float64 `json:"ulp"`
	Iter     int     `json:"iter,omitempty"` // stress iteration
	// Special inputs: Accept says what was right when more than WantBits
	// was ("a NaN (any sign and payload)", "+0 (0x0000) or -0 (0x8000)"),
	// and Inputs are every rank's input of the element, dtype bits in rank
	// order.
	Accept string   `json:"accept,omitempty"`
	Inputs []uint32 `json:"inputs,omitempty"`
}

// RankFailure is what one rank found wrong in a case.
type RankFailure struct {
	Rank int `json:"rank"`
	// Kind: "mismatch" (wrong values), "guard" (bytes outside the output
	// changed), "trace" (another kernel ran), "error" (a call failed).
	Kind       string     `json:"kind"`
	Detail     string     `json:"detail"`
	Wrong      uint64     `json:"wrong,omitempty"`
	WorstULP   float64    `json:"worst_ulp,omitempty"`
	Mismatches []Mismatch `json:"mismatches,omitempty"`
}

// Case is the merged result of one case over all ranks.
type Case struct {
	ID string `json:"id"`
	// Variant is the variant's name, headed by the collective where that
	// is not the allreduce ("reduce-scatter:nccl", as the ID's first
	// segment), so each collective of a variant is a block of its own.
	Variant string `json:"variant"`
	// Coll is the collective, "" for the allreduce: "reduce-scatter" or
	// "all-gather". Bytes and Count are its full buffer (the
	// reduce-scatter's input, the all-gather's output), each rank's part
	// of the other buffer Count/Ranks elements; an all-gather's Op is "-".
	Coll  string `json:"coll,omitempty"`
	DType string `json:"dtype"`
	Op    string `json:"op"`
	Bytes int64  `json:"bytes"`
	Count int64  `json:"count"`
	Mode  string `json:"mode"`
	Ranks int    `json:"ranks"`
	// Input is "special" for a case of special inputs (signed zeros,
	// subnormals, Inf, NaN); empty for a case of the run's --input
	// (Header.Input).
	Input   string  `json:"input,omitempty"`
	Verdict Verdict `json:"verdict"`
	// Reason: why skipped, or a one-line summary of the failure.
	Reason   string        `json:"reason,omitempty"`
	Wrong    uint64        `json:"wrong"` // wrong elements summed over ranks and checks
	Failures []RankFailure `json:"failures,omitempty"`
	// Timing: the median over repetitions of the per-call time, each
	// repetition's time aggregated across ranks (Header.Agg: the max unless
	// --agg says otherwise); zero when the case was not timed (skipped,
	// failed before timing, stress runs).
	TimeUS float64 `json:"time_us,omitempty"`
	AlgBW  float64 `json:"algbw_gbps,omitempty"` // bytes / time
	BusBW  float64 `json:"busbw_gbps,omitempty"` // algbw * 2(n-1)/n; (n-1)/n for reduce-scatter and all-gather
	// The nccl variant's time for the same dtype, op, size and mode, when it
	// ran in this job, and this case's speed-up over it.
	NCCLTimeUS float64 `json:"nccl_time_us,omitempty"`
	Speedup    float64 `json:"speedup,omitempty"`
	// NCCL's best mode for the same dtype, op, size and mode: the fastest
	// passing case of the NCCL baselines (NCCLBaselines) in this job, its
	// time, and this case's speed-up over it. Set on the other variants'
	// cases only.
	NCCLBestVariant string  `json:"nccl_best_variant,omitempty"`
	NCCLBestTimeUS  float64 `json:"nccl_best_time_us,omitempty"`
	SpeedupVsBest   float64 `json:"speedup_vs_best,omitempty"`
	// The fieldbest (fieldbest.go) at the same dtype, op, mode and size:
	// the fastest passing NCCL mode or plugin variant in this job, its
	// time, and this case's gain over it (FieldBestTimeUS / TimeUS, >1:
	// this case is faster). Set on the passing timed cases of artest's own
	// variants only, where some field entry passed.
	FieldBestVariant string  `json:"fieldbest_variant,omitempty"`
	FieldBestTimeUS  float64 `json:"fieldbest_time_us,omitempty"`
	FieldBestGain    float64 `json:"fieldbest_gain,omitempty"`
	Iters            int     `json:"iters,omitempty"`
	Stress           int     `json:"stress,omitempty"`
	// Schedule: the adversarial schedules a stress case ran under.
	Schedule string  `json:"schedule,omitempty"`
	Seconds  float64 `json:"seconds"` // wall time the case took
	// Timing is the distribution behind TimeUS; benchmark runs only.
	Timing *Timing `json:"timing,omitempty"`
	// The custom kernel's launch: grid, block size and the variant's
	// parameters (resolved), and where they came from: flags, tuned (the
	// tuning table), stress (the variant's stress shape, in a stress run)
	// or default (the registry). Empty for nccl.
	LaunchFrom string            `json:"launch_from,omitempty"`
	Blocks     int               `json:"blocks,omitempty"`
	Threads    int               `json:"threads,omitempty"`
	Params     map[string]uint32 `json:"params,omitempty"`
	// GridCap is the most blocks each rank could launch with its GPU
	// shared (Header.SharedGPUs) so that every rank's blocks were resident
	// at once, and GridCapFrom how it was computed; Blocks is the grid
	// that ran, at most GridCap. 0 and "" when GPUs were not shared.
	GridCap     int    `json:"grid_cap,omitempty"`
	GridCapFrom string `json:"grid_cap_from,omitempty"`
	// With --pdl, TimeUS is a whole call: the input poisoned, the producer
	// kernel, and the allreduce launched with PDL. NoPDLTimeUS is the same
	// calls with the allreduce launched normally (bench runs only), and
	// PDLGainUS the difference: what the overlap saves per call.
	NoPDLTimeUS float64 `json:"nopdl_time_us,omitempty"`
	PDLGainUS   float64 `json:"pdl_gain_us,omitempty"`
	// With bench --pdl-chain: ChainTimeUS is the time per call of the same
	// back-to-back calls with each allreduce launched with PDL after the
	// previous one, and ChainGainUS TimeUS - ChainTimeUS: what starting a
	// call while the previous one ends saves. ChainNote says why a case
	// was not timed so.
	ChainTimeUS float64 `json:"chain_time_us,omitempty"`
	ChainGainUS float64 `json:"chain_gain_us,omitempty"`
	ChainNote   string  `json:"chain_note,omitempty"`
	// With bench --overlap: OverlapBlocks is the compute load's grid,
	// OverlapTimeUS the per-call time of the same calls with the load
	// running beside them (TimeUS is without), LoadAloneUS and
	// LoadWithAllreduceUS the load's time alone and beside a repetition of
	// calls, and LoadSlowdown their ratio (with / alone).
	OverlapBlocks       int     `json:"overlap_blocks,omitempty"`
	OverlapTimeUS       float64 `json:"overlap_time_us,omitempty"`
	LoadAloneUS         float64 `json:"load_alone_us,omitempty"`
	LoadWithAllreduceUS float64 `json:"load_with_allreduce_us,omitempty"`
	LoadSlowdown        float64 `json:"load_slowdown,omitempty"`
	// PairUS, with bench --sm-budget, is the time from the first start to
	// the last end of a repetition of calls and the load of fixed work
	// beside it: the pair's total, which the best budget makes smallest.
	PairUS float64 `json:"pair_us,omitempty"`
	// Modes are the figures of the timing modes without fields of their
	// own above, by mode name (modes.go; Header.ModeTables prints them).
	Modes map[string]ModeFigures `json:"modes,omitempty"`
	// Repro is the command line that reruns a failed (or hung) case.
	Repro string `json:"repro,omitempty"`
	// Check says how a stress case's outputs were checked.
	Check *StressCheck `json:"check,omitempty"`
	// Witness compares, across ranks, when every stress call returned
	// (witness.go); nil where the backend cannot stamp its stream.
	Witness *Witness `json:"witness,omitempty"`
}

// StressCheck is how a stress case's outputs were checked, per rank: the
// fewest iterations and the lowest rate of any rank.
type StressCheck struct {
	// Checker is what checked every iteration: "device" or "host".
	Checker string `json:"checker"`
	// DeviceIters and HostIters are the iterations each rank checked on
	// the device and with the Go reference on the host (under the device
	// checker: the spot checks and the re-checks of wrong iterations).
	DeviceIters int `json:"device_iters"`
	HostIters   int `json:"host_iters"`
	// DeviceGBps and HostGBps are the output bytes each checker checked per
	// second of its own time on one rank (the device's includes its launch,
	// wait and the download of its verdicts; the host's the downloads of
	// the outputs it checked).
	DeviceGBps float64 `json:"device_gbps,omitempty"`
	HostGBps   float64 `json:"host_gbps,omitempty"`
}

// Summary counts verdicts and carries the exit code the run ends with.
type Summary struct {
	Pass     int `json:"pass"`
	Fail     int `json:"fail"`
	Skipped  int `json:"skipped"`
	ExitCode int `json:"exit_code"`
	// Error is set when the run stopped before finishing its cases.
	Error string `json:"error,omitempty"`
	// Interrupted is the signal that ended the run ("SIGINT", "SIGTERM");
	// the report then holds the cases that finished before it.
	Interrupted string `json:"interrupted,omitempty"`
}

// Report is the whole run.
type Report struct {
	Header  Header  `json:"header"`
	Cases   []Case  `json:"cases"`
	Summary Summary `json:"summary"`
	// JSONPath is where the run writes the JSON report (--json); "" when it
	// writes none, and the text summary then points at --table full only.
	JSONPath string `json:"-"`
}
