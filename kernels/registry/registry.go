// Package registry is the list of every variant artest ships, one line per
// variant (a variant folder kernels/<variant>/ holds one, the NCCL
// baselines' folder three), and the set of variants one run
// knows: that list plus the plugins' (Set, built once by New and passed
// down). It is data, not init-time self-registration, so what exists is
// visible in Builtin.
package registry

import (
	"fmt"
	"strings"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/multimem"
	"github.com/artest/artest/kernels/ncclbaseline"
	"github.com/artest/artest/kernels/oneshot"
	"github.com/artest/artest/kernels/oneshotcpasync"
	"github.com/artest/artest/kernels/oneshotll"
	"github.com/artest/artest/kernels/oneshotsentinel"
	"github.com/artest/artest/kernels/pull"
	"github.com/artest/artest/kernels/ring"
	"github.com/artest/artest/kernels/twoshot"
	"github.com/artest/artest/kernels/twoshotbulk"
)

// Builtin is every variant artest ships, in the order reports list them.
// A new variant is a folder below kernels/ and one line here.
var Builtin = []func() kernels.Variant{
	oneshot.Variant,
	twoshot.Variant,
	twoshotbulk.Variant,
	oneshotcpasync.Variant,
	oneshotll.Variant,
	oneshotsentinel.Variant,
	ring.Variant,
	multimem.Variant,
	pull.Variant,
	ncclbaseline.Plain,
	ncclbaseline.Registered,
	ncclbaseline.Window,
}

// Faults are the fault switches of the built-in variants' own protocols
// (kernels.Variant.Faults), in Builtin order.
func Faults() []kernels.Fault {
	var fs []kernels.Fault
	for _, f := range Builtin {
		fs = append(fs, f().Faults...)
	}
	return fs
}

// Set is the variants one run knows: Builtin's, then the plugins'. New
// builds it once; nothing changes it afterwards, so the pointers its
// methods return stay valid and every reader sees the same variants.
type Set struct {
	variants []kernels.Variant
	// control is each External owner's regions in the control block
	// (owner -> control offset and bytes, private staging offset and
	// bytes); controlBytes what all of them need per rank.
	control      map[string][4]int64
	controlBytes int64
}

// New is the set of the built-in variants and external, the variants
// implemented outside artest (the plugins'), so that --variant, the matrix
// and the reports see them as any other. Each external variant must have
// External set, a name no built-in variant and no other owner's variant
// has, and a trace id no other variant has; a variant of the same name and
// owner as an earlier one (a second load of the same plugin) replaces it.
func New(external []kernels.Variant) (*Set, error) {
	s := &Set{variants: make([]kernels.Variant, len(Builtin), len(Builtin)+len(external))}
	for i, f := range Builtin {
		s.variants[i] = f()
	}
	for i := range external {
		if err := s.add(external[i]); err != nil {
			return nil, err
		}
	}
	s.control, s.controlBytes = externalControlLayout(s.variants)
	return s, nil
}

// Builtins is the set of the built-in variants alone.
func Builtins() *Set {
	s, err := New(nil)
	if err != nil {
		panic(err) // no external variant: nothing can clash
	}
	return s
}

func (s *Set) add(v kernels.Variant) error {
	if v.External == nil {
		return fmt.Errorf("external variant %s has no implementation", v.Name)
	}
	if v.Kind != kernels.KindPlugin {
		return fmt.Errorf("external variant %s is of kind %s, not %s", v.Name, v.Kind, kernels.KindPlugin)
	}
	replaced := false
	for j := range s.variants {
		o := &s.variants[j]
		if o.Name != v.Name {
			if v.ID != 0 && o.ID == v.ID {
				return fmt.Errorf("variant %s of %s: its trace id %#x is %s's: rename one of them", v.Name, v.External.Owner(), v.ID, o.Name)
			}
			continue
		}
		if o.External == nil || o.External.Owner() != v.External.Owner() {
			owner := "artest"
			if o.External != nil {
				owner = o.External.Owner()
			}
			return fmt.Errorf("variant %s of %s: %s already has a variant of that name", v.Name, v.External.Owner(), owner)
		}
		s.variants[j] = v
		replaced = true
	}
	if !replaced {
		s.variants = append(s.variants, v)
	}
	return nil
}

// All is every variant of the set, in report order: Builtin's, then the
// plugins' in the order they were given.
func (s *Set) All() []*kernels.Variant {
	out := make([]*kernels.Variant, len(s.variants))
	for i := range s.variants {
		out[i] = &s.variants[i]
	}
	return out
}

// Names lists the variant names, in All's order.
func (s *Set) Names() []string {
	names := make([]string, len(s.variants))
	for i := range s.variants {
		names[i] = s.variants[i].Name
	}
	return names
}

// Index is the place of the variant named name in All's order (reports
// sort by it); len(All()) when the set has no such variant.
func (s *Set) Index(name string) int {
	for i := range s.variants {
		if s.variants[i].Name == name {
			return i
		}
	}
	return len(s.variants)
}

// Lookup finds a variant by name; an unknown name lists the valid ones.
func (s *Set) Lookup(name string) (*kernels.Variant, error) {
	if i := s.Index(name); i < len(s.variants) {
		return &s.variants[i], nil
	}
	return nil, fmt.Errorf("unknown variant %q (valid: %s)", name, strings.Join(s.Names(), ", "))
}

// ByID finds the variant that writes trace id id (nil for id 0, which no
// variant writes, or an id no variant of the set has).
func (s *Set) ByID(id uint32) *kernels.Variant {
	for i := range s.variants {
		if s.variants[i].ID == id && id != 0 {
			return &s.variants[i]
		}
	}
	return nil
}

// ExternalFaults are the External variants' own fault switches, each once
// (a plugin's variants share its switches), in the set's order.
func (s *Set) ExternalFaults() []kernels.Fault {
	var out []kernels.Fault
	seen := map[string]bool{}
	for i := range s.variants {
		v := &s.variants[i]
		if v.External == nil {
			continue
		}
		for _, f := range v.Faults {
			if !seen[f.Name] {
				seen[f.Name] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// ExternalOwners are the distinct owners of the set's External variants (in
// All's order, the same on every rank) that have a variant for a world of
// size ranks: the plugins whose cases can run.
func (s *Set) ExternalOwners(size int) []kernels.External {
	var out []kernels.External
	seen := map[string]bool{}
	for i := range s.variants {
		e := s.variants[i].External
		if e == nil || size < s.variants[i].MinRanks || size > s.variants[i].MaxRanks || seen[e.Owner()] {
			continue
		}
		seen[e.Owner()] = true
		out = append(out, e)
	}
	return out
}

// ExternalControlBytes is the control memory per rank that the set's
// External variants need together (0 when there is none): the backends
// give every rank one block of that size, zeroed once.
func (s *Set) ExternalControlBytes() int64 { return s.controlBytes }

// ExternalControlRegion is owner's own control region within that block:
// its offset and the bytes it declared (0, 0 for an owner that declared
// none).
func (s *Set) ExternalControlRegion(owner string) (offset, size int64) {
	r := s.control[owner]
	return r[0], r[1]
}

// ExternalStagingRegion is owner's private staging within the same block:
// its offset and the bytes it declared (0, 0 for an owner that declared
// none, which gets the shared staging buffers artest's variants use as
// scratch).
func (s *Set) ExternalStagingRegion(owner string) (offset, size int64) {
	r := s.control[owner]
	return r[2], r[3]
}

// controlAlign separates the control regions of two owners: a page, so no
// two plugins' flags share a cache line (or a host page).
const controlAlign = 4096

// externalControlLayout gives each External owner of vs (a plugin) its own
// control region and, when it declares staging, its own staging region, in
// vs order, within one block per rank: owner -> the control offset and
// bytes and the staging offset and bytes, and the bytes the block needs.
// Two plugins in one job never share barrier flags or call counters: one's
// state left in the other's region would make the other's barriers wait
// for values that never come. Declared staging is private for the same
// reason: kernels that keep state there between calls (sentinel values a
// reader polls) lose it when another variant uses the staging buffers as
// scratch, as artest's own do.
func externalControlLayout(vs []kernels.Variant) (map[string][4]int64, int64) {
	regions := map[string][4]int64{}
	var total int64
	up := func(n int64) int64 { return (n + controlAlign - 1) / controlAlign * controlAlign }
	for i := range vs {
		e := vs[i].External
		if e == nil {
			continue
		}
		if _, seen := regions[e.Owner()]; seen {
			continue
		}
		var ctl, stg int64
		if c, ok := e.(interface{ ControlBytes() int64 }); ok {
			ctl = c.ControlBytes()
		}
		if st, ok := e.(interface{ StagingBytes() int64 }); ok {
			stg = st.StagingBytes()
		}
		if ctl == 0 && stg == 0 {
			continue
		}
		r := [4]int64{total, ctl, 0, 0}
		total += up(ctl)
		if stg > 0 {
			r[2], r[3] = total, stg
			total += up(stg)
		}
		regions[e.Owner()] = r
	}
	return regions, total
}
