// Package tune is `artest tune`: for one world size, it sweeps every custom
// variant's launch parameters (blocks, threads, the variant's own params)
// over dtypes and message size buckets, times every distinct launch with
// the runner's cases, and writes the fastest as a tuning table (JSON, a
// C/C++ header, a Go table for kernels/tuned.go) with a human summary.
//
// The package plans and records; the CLI runs each planned case through
// the runner (internal/cli/tune.go), so checking and timing are the same
// code as every other artest run.
package tune

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/sigblock"
)

// Space is the launch parameters to try for one variant. An empty axis
// means the variant's launch default only.
type Space struct {
	Blocks  []int
	Threads []int
	// Params are candidate values by parameter name; a parameter not named
	// keeps its default.
	Params map[string][]uint32
}

// MaxSharedBytes is the most dynamic shared memory one block may opt in
// to on sm_90 (227 KiB: the CUDA C++ Programming Guide's table of compute
// capabilities). A candidate that needs more is skipped, not launched.
const MaxSharedBytes = 227 << 10

// Overrides narrow the default spaces from the command line: a non-empty
// axis replaces that axis of every variant (a parameter: of every variant
// that has it).
type Overrides struct {
	Blocks  []int
	Threads []int
	Params  map[string][]uint32
}

// SpaceFor is v's space: its own (kernels.Variant.Tune) with the
// overrides. A plugin's variant has none: its declared parameters are swept
// over pluginValues of their ranges, and blocks and threads are not axes
// (the plugin chooses its own launch; a parameter may set it).
func SpaceFor(v *kernels.Variant, o Overrides) Space {
	d := v.Tune
	if v.External != nil {
		d = kernels.TuneSpace{Params: map[string][]uint32{}}
		for _, p := range v.Params {
			d.Params[p.Name] = pluginValues(p)
		}
		o.Blocks, o.Threads = nil, nil
	}
	sp := Space{Blocks: d.Blocks, Threads: d.Threads, Params: map[string][]uint32{}}
	for _, p := range v.Params {
		if vals, ok := d.Params[p.Name]; ok {
			sp.Params[p.Name] = vals
		}
		if vals, ok := o.Params[p.Name]; ok {
			sp.Params[p.Name] = vals
		}
	}
	if len(o.Blocks) > 0 {
		sp.Blocks = o.Blocks
	}
	if len(o.Threads) > 0 {
		sp.Threads = o.Threads
	}
	return sp
}

// maxPluginValues bounds the values tried per plugin parameter: with 4
// parameters that is at most 6^4 launches per message.
const maxPluginValues = 6

// pluginValues are the values tried for a plugin's parameter: its default,
// its minimum and maximum, and powers of two between them, thinned to
// maxPluginValues evenly across the range (the default always kept).
func pluginValues(p kernels.Param) []uint32 {
	vals := []uint32{p.Min, p.Max}
	for x := uint64(1); x <= uint64(p.Max); x *= 2 {
		if x > uint64(p.Min) && x < uint64(p.Max) {
			vals = append(vals, uint32(x))
		}
	}
	vals = sortedUnique(vals)
	if len(vals) > maxPluginValues {
		thin := make([]uint32, 0, maxPluginValues)
		for i := 0; i < maxPluginValues; i++ {
			thin = append(thin, vals[i*(len(vals)-1)/(maxPluginValues-1)])
		}
		vals = thin
	}
	return sortedUnique(append(vals, p.Default))
}

// ParseInts reads a comma-separated list of whole numbers ("16,36,132").
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", f)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// ParseOverrides reads --tune-blocks, --tune-threads and --tune-param
// NAME=V1,V2 (sizes as 64K are accepted) and checks every value against
// the limits the kernels have, a parameter's against those of every
// variant of vs that has it.
func ParseOverrides(vs *registry.Set, blocks, threads string, params []string) (Overrides, error) {
	var o Overrides
	var err error
	if blocks != "" {
		if o.Blocks, err = ParseInts(blocks); err != nil {
			return o, fmt.Errorf("--tune-blocks: %w", err)
		}
		for _, b := range o.Blocks {
			if b < 1 || b > sigblock.MaxBlocks {
				return o, fmt.Errorf("--tune-blocks %d: want 1..%d (sigblock.MaxBlocks)", b, sigblock.MaxBlocks)
			}
		}
	}
	if threads != "" {
		if o.Threads, err = ParseInts(threads); err != nil {
			return o, fmt.Errorf("--tune-threads: %w", err)
		}
		for _, t := range o.Threads {
			if t < 32 || t%32 != 0 || t > kernels.MaxThreads {
				return o, fmt.Errorf("--tune-threads %d: want a multiple of 32 up to %d", t, kernels.MaxThreads)
			}
		}
	}
	for _, spec := range params {
		name, list, ok := strings.Cut(spec, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return o, fmt.Errorf("--tune-param %q: want NAME=V1,V2,...", spec)
		}
		var vals []uint32
		for _, f := range strings.Split(list, ",") {
			if f = strings.TrimSpace(f); f == "" {
				continue
			}
			n, err := cases.ParseSize(f)
			if err != nil || n < 0 || n > 1<<32-1 {
				return o, fmt.Errorf("--tune-param %s: %q is not a whole number", name, f)
			}
			vals = append(vals, uint32(n))
		}
		if len(vals) == 0 {
			return o, fmt.Errorf("--tune-param %s: no values", name)
		}
		found := false
		for _, v := range vs.All() {
			p, has := v.Param(name)
			if !has {
				continue
			}
			found = true
			for _, n := range vals {
				if n < p.Min || n > p.Max {
					return o, fmt.Errorf("--tune-param %s=%d: %s allows %d to %d", name, n, v.Name, p.Min, p.Max)
				}
			}
		}
		if !found {
			return o, fmt.Errorf("--tune-param %s: no variant has this parameter", name)
		}
		if o.Params == nil {
			o.Params = map[string][]uint32{}
		}
		o.Params[name] = vals
	}
	return o, nil
}

// Launch is one launch configuration as the runner is given it: the grid
// (what kernels.Grid gives for the space's block count), the block size,
// and the variant's parameters after Resolve.
type Launch struct {
	Blocks  int               `json:"blocks,omitempty"`
	Threads int               `json:"threads,omitempty"`
	Params  map[string]uint32 `json:"params,omitempty"`
}

// String is "132x512 stages=3", the parameters in name order.
func (l Launch) String() string {
	s := fmt.Sprintf("%dx%d", l.Blocks, l.Threads)
	if l.Blocks == 0 && l.Threads == 0 {
		s = "plugin's" // a plugin chooses its own grid (a parameter may set it)
	}
	for _, k := range sortedKeys(l.Params) {
		s += fmt.Sprintf(" %s=%d", k, l.Params[k])
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// Candidate is one distinct launch of a variant for one message.
type Candidate struct {
	Variant string
	Launch
	// Default: the registry's launch (blocks, threads, parameter defaults),
	// always measured so the table never picks something slower than what
	// artest runs without it.
	Default bool
}

// Enumeration is what one variant's space gives for one message.
type Enumeration struct {
	Candidates []Candidate
	// Points is the number of space points tried; Duplicates of them gave
	// the launch of an earlier candidate (e.g. more blocks than the message
	// needs), TooMuchShared needed more than MaxSharedBytes.
	Points, Duplicates, TooMuchShared int
}

// Enumerate lists the distinct launches of v's space for a message of
// count elements of elem bytes on ranks ranks: the registry default first,
// then threads, blocks and parameter values in ascending order. Two points
// are the same launch when they give the same grid, block size and
// resolved parameters; only the first is kept.
func Enumerate(v *kernels.Variant, sp Space, ranks int, count, elem int64) Enumeration {
	var e Enumeration
	seen := map[string]bool{}
	try := func(blocks, threads int, set map[string]uint32, def bool) {
		e.Points++
		a := kernels.Args{Count: uint64(count), NRanks: uint32(ranks)}
		v.SetParams(&a, set, elem)
		if v.SharedBytes != nil && v.SharedBytes(&a, threads) > MaxSharedBytes {
			e.TooMuchShared++
			return
		}
		l := Launch{Blocks: blocks, Threads: threads}
		if v.External == nil {
			l.Blocks = kernels.Grid(v, &a, elem, blocks, threads)
		}
		for _, p := range v.Params {
			if l.Params == nil {
				l.Params = map[string]uint32{}
			}
			l.Params[p.Name] = *a.ParamSlot(p.Slot)
		}
		key := l.String()
		if seen[key] {
			e.Duplicates++
			return
		}
		seen[key] = true
		e.Candidates = append(e.Candidates, Candidate{Variant: v.Name, Launch: l, Default: def})
	}
	def := kernels.Args{Count: uint64(count), NRanks: uint32(ranks)}
	v.SetParams(&def, nil, elem)
	try(v.Blocks, v.DefaultThreads(&def, elem), nil, true)

	blocks, threads := sp.Blocks, sp.Threads
	if len(blocks) == 0 {
		blocks = []int{v.Blocks}
	}
	if len(threads) == 0 {
		threads = []int{v.Threads}
	}
	blocks, threads = sortedUnique(blocks), sortedUnique(threads)
	combos := paramCombos(v, sp.Params)
	for _, t := range threads {
		for _, b := range blocks {
			for _, set := range combos {
				try(b, t, set, false)
			}
		}
	}
	return e
}

func sortedUnique[T int | uint32](xs []T) []T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return slices.Compact(s)
}

// paramCombos is the cartesian product of the space's parameter values, in
// the order of v's parameters; a parameter the space does not name keeps
// its default (it is left out of the set).
func paramCombos(v *kernels.Variant, vals map[string][]uint32) []map[string]uint32 {
	combos := []map[string]uint32{{}}
	for _, p := range v.Params {
		vs := vals[p.Name]
		if len(vs) == 0 {
			continue
		}
		var next []map[string]uint32
		for _, c := range combos {
			for _, x := range sortedUnique(vs) {
				m := make(map[string]uint32, len(c)+1)
				for k, y := range c {
					m[k] = y
				}
				m[p.Name] = x
				next = append(next, m)
			}
		}
		combos = next
	}
	return combos
}
