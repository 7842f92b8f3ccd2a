package report

import "fmt"

// Witness is the end-barrier witness of a stress case: every rank stamped
// the moment each of its calls returned (in stream order, on its device's
// clock made comparable through the host's), and for every iteration the
// rank whose call returned first is compared with the rank that finished
// last. A call that returns while a peer's call still runs did not wait for
// that peer; with an end barrier every rank returns within a few
// microseconds of the last. The witness fires on the lead alone, whether or
// not a value came out wrong: it needs nothing from the kernel.
type Witness struct {
	// MaxLeadUS is the largest lead in any iteration: how long before the
	// last rank's call finished the first rank's returned; Iteration,
	// First and Last say where.
	MaxLeadUS float64 `json:"max_lead_us"`
	Iteration int     `json:"iteration"`
	First     int     `json:"first_rank"`
	Last      int     `json:"last_rank"`
	// ThresholdUS is the lead above which an iteration counts (the base
	// threshold plus the clock uncertainty of the two ranks), and Over
	// how many iterations passed it, of Iterations.
	ThresholdUS float64 `json:"threshold_us"`
	Over        int     `json:"over"`
	Iterations  int     `json:"iterations"`
	// LinkSkipped iterations of Iterations were not compared: a link
	// load (--schedule link) ran in them, and it holds its GPU's kernel
	// ends, so a lead there says nothing.
	LinkSkipped int `json:"link_skipped,omitempty"`
	// LinkMaxLeadUS and LinkOver are the same measures over the
	// LinkSkipped iterations: shown, never warned on.
	LinkMaxLeadUS float64 `json:"link_max_lead_us,omitempty"`
	LinkOver      int     `json:"link_over,omitempty"`
	// LoadSkipped iterations of Iterations ran beside the straggler's
	// side load (on its own GPU's SMs or memory), where the loaded rank's
	// correct call can exit late too. In plain calls they are not
	// compared: LoadMaxLeadUS and LoadOver (past ThresholdUS) are shown,
	// never warned on. In graph replays on a GPU (LoadCompared) they are
	// compared past LoadThresholdUS, which LoadOver counts, and warn when
	// such leads recur (a smaller share than Over needs);
	// LoadIteration, LoadFirst and LoadLast say where the largest was.
	LoadSkipped     int     `json:"load_skipped,omitempty"`
	LoadMaxLeadUS   float64 `json:"load_max_lead_us,omitempty"`
	LoadOver        int     `json:"load_over,omitempty"`
	LoadCompared    bool    `json:"load_compared,omitempty"`
	LoadThresholdUS float64 `json:"load_threshold_us,omitempty"`
	LoadIteration   int     `json:"load_iteration,omitempty"`
	LoadFirst       int     `json:"load_first_rank,omitempty"`
	LoadLast        int     `json:"load_last_rank,omitempty"`
	// HostSkipped iterations of Iterations were not compared: the rank
	// that finished last ran its stamp right after its host enqueued it
	// (the host, not the call, decided when), so its lead is not known.
	HostSkipped int `json:"host_skipped,omitempty"`
	// SameClock: every rank read one clock (one GPU's timer), so the
	// leads are exact; else they went through the host's wall clock.
	SameClock bool `json:"same_clock,omitempty"`
	// Stamps names what the stamps were: "events" (timestamps the GPU
	// takes when the work before them finishes, needing no SM),
	// "kernel" (one thread writing the global timer, which waits for
	// room on the SMs) or "wall clock" (the host backend).
	Stamps string `json:"stamps,omitempty"`
	// Silent says why the leads give no warning: the variant returns
	// before its peers finish by design (it pushes its data rather than
	// letting peers read it), or the ranks share a GPU.
	Silent string `json:"silent,omitempty"`
	// Warning is the named warning when leads past the threshold recur
	// (Over, or LoadOver where LoadCompared) and nothing makes the
	// witness Silent, else "".
	Warning string `json:"warning,omitempty"`
}

// WitnessLoadWarning is the warning text of w's largest lead beside a
// side load, in a graph replay.
func WitnessLoadWarning(w *Witness) string {
	return fmt.Sprintf("end-barrier witness: rank %d's call returned %.1f us before rank %d's finished, beside the straggler's load (iteration %d; %d of %d such iterations led by more than %.1f us)",
		w.LoadFirst, w.LoadMaxLeadUS, w.LoadLast, w.LoadIteration, w.LoadOver, w.LoadSkipped, w.LoadThresholdUS)
}

// WitnessWarning is the warning text of w's largest lead.
func WitnessWarning(w *Witness) string {
	return fmt.Sprintf("end-barrier witness: rank %d's call returned %.1f us before rank %d's finished (iteration %d; %d of %d iterations led by more than %.1f us)",
		w.First, w.MaxLeadUS, w.Last, w.Iteration, w.Over, w.Iterations, w.ThresholdUS)
}
