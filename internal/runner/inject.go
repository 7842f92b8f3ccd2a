package runner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
)

// Inject is the set of faults a run plants on purpose, to prove that each
// protection of the suite catches what it exists for.
type Inject struct {
	Bits        uint32 // kernels.Inject* bits passed to every launch
	DelayRank   int
	Delay       time.Duration
	WrongKernel bool // the dispatcher launches another variant than the case names
	// The hang scenarios (hangs.go): rank SizeMismatchRank launches
	// one 16-byte slot fewer elements than its peers; rank ReregisterRank
	// re-registers its input after the graph was captured; every call is
	// also launched on a second stream (TwoStreams).
	SizeMismatch     bool
	SizeMismatchRank int
	Reregister       bool
	ReregisterRank   int
	TwoStreams       bool
	// Plugin are the External variants' own fault switches that --inject
	// named (PLUGIN:NAME), by plugin name: the bits of its variants'
	// Faults, passed to their calls (backend.Launch.Faults).
	Plugin map[string]uint32
	specs  []string
}

// pluginOf is the plugin a variant name belongs to ("example" of
// "example:oneshot"), or "" for a built-in.
func pluginOf(name string) string {
	p, _, ok := strings.Cut(name, ":")
	if !ok {
		return ""
	}
	return p
}

// pluginFaults is the bits of --inject's plugin switches that variant v
// has, 0 for a built-in.
func (in *Inject) pluginFaults(v *kernels.Variant) uint32 {
	if v.External == nil {
		return 0
	}
	return in.Plugin[pluginOf(v.Name)]
}

// faultNames maps --inject words to kernel bits: the switches every custom
// kernel has, then each built-in variant's own (kernels.Variant.Faults).
var faultNames = func() map[string]uint32 {
	m := map[string]uint32{
		"no-end-barrier":   kernels.InjectNoEndBarrier,
		"no-start-barrier": kernels.InjectNoStartBarrier,
		"no-mid-barrier":   kernels.InjectNoMidBarrier,
		"skip-last":        kernels.InjectSkipLast,
		"overrun":          kernels.InjectOverrun,
		"pdl-no-wait":      kernels.InjectPdlNoWait, // --pdl: the kernel does not wait for the producer
	}
	for _, f := range registry.Faults() {
		if _, taken := m[f.Name]; taken {
			panic(fmt.Sprintf("fault switch %s is declared twice", f.Name))
		}
		m[f.Name] = f.Bit
	}
	return m
}()

// FaultHelp lists the --inject values; plugin are the loaded plugins'
// switches (PLUGIN:NAME).
func FaultHelp(plugin ...kernels.Fault) string {
	var names []string
	for n := range faultNames {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, f := range plugin {
		names = append(names, f.Name)
	}
	names = append(names, "wrong-kernel", "delay:rank=R,us=N", "size-mismatch:rank=R", "reregister:rank=R (graph cases)",
		"two-streams (plain cases)")
	return strings.Join(names, ", ")
}

// Parse adds one --inject value; plugin are the loaded plugins' fault
// switches (their variants' Faults, each once), which it may name.
func (in *Inject) Parse(spec string, plugin []kernels.Fault) error {
	spec = strings.TrimSpace(spec)
	if bit, ok := faultNames[spec]; ok {
		in.Bits |= bit
		in.specs = append(in.specs, spec)
		return nil
	}
	for _, f := range plugin {
		if f.Name == spec {
			if in.Plugin == nil {
				in.Plugin = map[string]uint32{}
			}
			in.Plugin[pluginOf(f.Name)] |= f.Bit
			in.specs = append(in.specs, spec)
			return nil
		}
	}
	switch {
	case spec == "wrong-kernel":
		in.WrongKernel = true
	case spec == "two-streams":
		in.TwoStreams = true
	case strings.HasPrefix(spec, "size-mismatch:"):
		rank, err := parseRankSpec(spec, "size-mismatch")
		if err != nil {
			return err
		}
		in.SizeMismatch, in.SizeMismatchRank = true, rank
	case strings.HasPrefix(spec, "reregister:"):
		rank, err := parseRankSpec(spec, "reregister")
		if err != nil {
			return err
		}
		in.Reregister, in.ReregisterRank = true, rank
	case strings.HasPrefix(spec, "delay:"):
		rank, us := -1, int64(-1)
		for _, kv := range strings.Split(strings.TrimPrefix(spec, "delay:"), ",") {
			k, v, ok := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if !ok || err != nil || n < 0 {
				return fmt.Errorf("bad --inject %q: want delay:rank=R,us=N", spec)
			}
			switch k {
			case "rank":
				rank = int(n)
			case "us":
				us = n
			default:
				return fmt.Errorf("bad --inject %q: unknown key %q (want rank and us)", spec, k)
			}
		}
		if rank < 0 || us < 0 {
			return fmt.Errorf("bad --inject %q: want delay:rank=R,us=N", spec)
		}
		if us > 3600e6 {
			return fmt.Errorf("bad --inject %q: a delay over an hour", spec)
		}
		in.Bits |= kernels.InjectDelay
		in.DelayRank = rank
		in.Delay = time.Duration(us) * time.Microsecond
	default:
		return fmt.Errorf("unknown --inject %q (valid: %s)", spec, FaultHelp(plugin...))
	}
	in.specs = append(in.specs, spec)
	return nil
}

// CheckRanks says whether every fault aimed at a rank names one of a job of
// world ranks: a fault at a rank that does not exist plants nothing, and
// the run would pass as if it had been caught.
func (in *Inject) CheckRanks(world int) error {
	for _, f := range []struct {
		on   bool
		name string
		rank int
	}{
		{in.Bits&kernels.InjectDelay != 0, "delay", in.DelayRank},
		{in.SizeMismatch, "size-mismatch", in.SizeMismatchRank},
		{in.Reregister, "reregister", in.ReregisterRank},
	} {
		if f.on && f.rank >= world {
			return fmt.Errorf("--inject %s aims at rank %d, but the job has %d ranks (0 to %d)", f.name, f.rank, world, world-1)
		}
	}
	return nil
}

// Specs is what was asked for, for the report header and repro lines.
func (in *Inject) Specs() []string { return append([]string(nil), in.specs...) }

// Any reports whether a fault is planted.
func (in *Inject) Any() bool { return len(in.specs) > 0 }

// wrongKernel is the variant of vs a broken dispatcher would pick instead
// of v for collective c: another custom variant that implements c.
func wrongKernel(vs *registry.Set, v *kernels.Variant, c reference.Coll) *kernels.Variant {
	for _, o := range vs.All() {
		if o.Kind == kernels.KindKernel && o.ID != 0 && o.ID != v.ID && o.SupportsDType(reference.F32) && o.Implements(c) {
			return o
		}
	}
	return nil
}
