package cli

import (
	"fmt"
	"sort"

	"github.com/artest/artest/internal/exitcode"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/internal/runner"
	"github.com/artest/artest/internal/tune"
	"github.com/artest/artest/kernels"
)

// loadTuned reads --tuned FILE (every rank reads it, so a bad file is a
// usage error that the ranks agree on).
func (o *Options) loadTuned() error {
	if o.Tune.Tuned == "" || o.Tune.Tuned == "none" {
		return nil
	}
	t, err := tune.ReadTable(o.Tune.Tuned)
	if err != nil {
		return exitcode.Usagef("--tuned: %v", err)
	}
	tt := t.Tuned()
	o.Tune.table = &tt
	return nil
}

// applyTuned sets where an ordinary run's launch defaults come from:
// --tuned FILE, none, or by default kernels.Tuned on the cuda backend (it
// was measured on GPUs; on the host backend blocks are goroutines).
func (o *Options) applyTuned(cfg *runner.Config, backendName string) {
	switch {
	case o.Tune.On || o.Tune.Tuned == "none":
		return
	case o.Tune.table != nil:
		cfg.Tuned = o.Tune.table
	case backendName == "cuda":
		cfg.Tuned = &kernels.Tuned
	default:
		return
	}
	cfg.Header.Tuned = cfg.Tuned.Provenance.String()
	if cfg.Header.Tuned == "" && len(cfg.Tuned.Entries) > 0 {
		cfg.Header.Tuned = "kernels/tuned.go (no provenance)"
	}
}

// withCaseLaunch adds the launch a case ran with to its rerun flags, where
// the user's flags did not already fix it, so that a repro launches the
// same grid, block size and parameters whatever table a later build has.
func (o *Options) withCaseLaunch(args []string, c report.Case) []string {
	if c.LaunchFrom == "" {
		return args
	}
	if o.Blocks == 0 && c.Blocks > 0 {
		args = append(args, "--blocks", fmt.Sprint(c.Blocks))
	}
	if o.Threads == 0 && c.Threads > 0 {
		args = append(args, "--threads", fmt.Sprint(c.Threads))
	}
	names := make([]string, 0, len(c.Params))
	for k := range c.Params {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, given := o.params[k]; !given {
			args = append(args, "--param", fmt.Sprintf("%s=%d", k, c.Params[k]))
		}
	}
	return args
}
