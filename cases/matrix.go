package cases

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
)

// Selection is what the flags ask for. Empty fields mean "the matrix's own".
type Selection struct {
	Variants []string
	// Colls are the collectives (empty: the allreduce alone). A variant
	// gets the cases of those it implements (kernels.Variant.Colls).
	Colls  []reference.Coll
	DTypes []reference.DType
	Ops    []reference.Op
	Sizes  []int64
	// ModeWords filter modes: ip, oop, reg, stg, plain, graph, off. Words of
	// one axis are alternatives; words of different axes must all hold.
	ModeWords []string
	IDs       []string
	Quick     bool
	// Stress picks the stress matrix: two small sizes in modes covering
	// each axis, plus a slow path, where a call reads for long enough that
	// a peer which does not wait for the slowest rank overwrites what it
	// still reads: a misaligned 1 MiB (the element-wise path). Every dtype.
	// Its cases run cheapest first across the variants (stressOrder), so a
	// broken variant fails early whatever its place in the list.
	Stress bool
	// StressFull widens the stress matrix to every dtype and the four
	// stress modes (--stress-set full); without it the stress matrix is
	// the default set, which keeps a plain --stress 2000 over every
	// variant within about two minutes (stressDefault).
	StressFull bool
	// MaxBytes drops matrix sizes above it (explicit --size is never
	// dropped); 0 means no cap. The host backend uses it to keep its default
	// matrix within shared memory.
	MaxBytes int64
	// Input is --input: the kind of every case's inputs, except the
	// default matrix's special cases, which are special whatever it says.
	// An ID that names special inputs keeps them.
	Input reference.InputKind
}

// Default matrix. Small sizes get every dtype, op and mode; large sizes get
// sum over a set of modes that still covers each axis value, because checking
// 256 MiB on every rank for every combination would take longer than
// everything else together. Sizes that are not a whole number of elements of
// a dtype are simply not generated for it (6 B exists for f16 and bf16 only).
var (
	// 1 element, odd counts, sizes not a multiple of 16 bytes, just under and
	// over a power of two.
	smallSizes = []int64{2, 4, 6, 12, 100, 1020, 4 << 10, 4100, 64<<10 - 2, 64 << 10, 256 << 10, 1 << 20, 1<<20 + 12}
	largeSizes = []int64{4 << 20, 16 << 20, 64 << 20, 256 << 20}
	largeModes = []Mode{
		{Registered: true},
		{InPlace: true},
		{Graph: true},
		{InPlace: true, Registered: true, Graph: true},
	}
	offsetSizes = []int64{12, 4100, 1<<20 + 12}
	offsetModes = []Mode{{Registered: true, Offset: 1}, {InPlace: true, Offset: 1}, {Registered: true, Offset: 3}}

	stressSizes = []int64{4100, 64 << 10}
	stressModes = []Mode{
		{Registered: true},
		{Graph: true},
		{InPlace: true, Registered: true},
		{InPlace: true, Graph: true},
	}
	// The slow path of stress: misaligned, so the element-wise path, and
	// long enough to read for tens of microseconds. (A 4 MiB max tier was
	// measured too, on one H100 with 4 ranks under MPS: it caught nothing
	// the small cases missed and took half the run; docs/schedules.md.)
	stressSlowSizes = []int64{1<<20 + 12}
	stressSlowModes = []Mode{{Registered: true, Offset: 1}}

	// The default stress set: the full set's sizes and modes in bf16 alone
	// (f16 takes the same 16-bit path; f32 the 32-bit one, which --dtype
	// f32 or --stress-set full adds), and the slow path in bf16: 9 cases per
	// variant instead of 27. Every mode stays, since a kernel that needs a
	// registered input (vLLM's) runs only the reg modes and a missing end
	// barrier in oneshot was caught only in the staged graph modes on one
	// H100 with 4 ranks under MPS (docs/results/2026-11-25-h100-x1-mutants.md).
	// The full set at --stress 2000 took 166 s on 2 H200 for every variant
	// (docs/results/2026-11-26-h200-x2-stress.md); a third of its cases
	// keeps a plain run near a minute there.
	stressDefaultDTypes = []reference.DType{reference.BF16}
	stressSlowDTypes    = []reference.DType{reference.BF16}

	// The default matrix's special-input cases (reference.Special): every
	// dtype and op in two modes that cover the in-place, registered and
	// staged axes, at 4100 B (a tail past the 16-byte vectors) and 64 KiB
	// (every f16 subnormal bit pattern on rank 0): 36 cases per variant.
	specialSizes = []int64{4100, 64 << 10}
	specialModes = []Mode{{Registered: true}, {InPlace: true}}

	quickSizes = []int64{4, 6, 4100, 64 << 10, 1 << 20}
	quickOps   = []reference.Op{reference.Sum, reference.Max}
	quickModes = []Mode{
		{Registered: true},
		{InPlace: true},
		{Graph: true},
		{InPlace: true, Registered: true, Graph: true},
		{Registered: true, Offset: 1},
	}
)

// UsageError is a selection the user got wrong: artest exits 2 on it.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

func usage(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// Build expands a selection of the variants of vs into the cases to run on
// a world of ranks ranks, in report order (variant, collective, dtype, op,
// mode, size).
func Build(vs *registry.Set, sel Selection, ranks int) ([]Case, error) {
	if ranks < 1 {
		return nil, usage("world size %d: need at least one rank", ranks)
	}
	if len(sel.IDs) > 0 {
		return buildIDs(vs, sel, ranks)
	}
	variants, err := pickVariants(vs, sel.Variants, ranks)
	if err != nil {
		return nil, err
	}
	modes, err := filterModes(sel.ModeWords)
	if err != nil {
		return nil, err
	}
	dtypes := sel.DTypes
	if len(dtypes) == 0 {
		dtypes = reference.DTypes
	}
	ops := sel.Ops
	if len(ops) == 0 {
		ops = reference.Ops
	}
	if len(sel.Sizes) > 0 {
		if err := checkSizesFit(sel.Sizes, dtypes, len(sel.DTypes) > 0); err != nil {
			return nil, err
		}
	}

	type tier struct {
		sizes []int64
		ops   []reference.Op
		modes []Mode
		// dtypes narrows the tier where the user named none (nil: every
		// selected dtype).
		dtypes []reference.DType
		// special: the tier's cases have special inputs, whatever --input
		// says.
		special bool
	}
	var tiers []tier
	switch {
	case len(sel.Sizes) > 0:
		all := append(append([]Mode{}, AllModes...), offsetModes...)
		tiers = []tier{{sel.Sizes, reference.Ops, all, nil, false}}
	case sel.Stress && sel.StressFull:
		tiers = []tier{
			{stressSizes, []reference.Op{reference.Sum}, stressModes, nil, false},
			{stressSlowSizes, []reference.Op{reference.Sum}, stressSlowModes, nil, false},
		}
	case sel.Stress:
		tiers = []tier{
			{stressSizes, []reference.Op{reference.Sum}, stressModes, stressDefaultDTypes, false},
			{stressSlowSizes, []reference.Op{reference.Sum}, stressSlowModes, stressSlowDTypes, false},
		}
	case sel.Quick:
		tiers = []tier{{quickSizes, quickOps, quickModes, nil, false}}
	default:
		tiers = []tier{
			{smallSizes, reference.Ops, AllModes, nil, false},
			{offsetSizes, []reference.Op{reference.Sum}, offsetModes, nil, false},
			{largeSizes, []reference.Op{reference.Sum}, largeModes, nil, false},
			{largeSizes[:1], []reference.Op{reference.Max}, largeModes[:1], nil, false},
			{specialSizes, reference.Ops, specialModes, nil, true},
		}
	}

	if sel.Stress && len(sel.Sizes) == 0 && len(sel.Ops) > 0 {
		// The stress sets run sum; an --op given explicitly replaces it,
		// as a --dtype replaces their dtypes.
		for i := range tiers {
			tiers[i].ops = sel.Ops
		}
	}
	colls := sel.Colls
	if len(colls) == 0 {
		colls = []reference.Coll{reference.AllReduce}
	}
	if err := checkVariantsImplement(variants, sel.Variants, colls); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []Case
	for _, v := range variants {
		for _, coll := range colls {
			if !v.Implements(coll) {
				continue
			}
			for _, t := range tiers {
				for _, d := range dtypes {
					if len(sel.DTypes) == 0 && t.dtypes != nil && !slices.Contains(t.dtypes, d) {
						continue
					}
					for _, o := range collOps(coll, t.ops) {
						if coll.Reduces() && !containsOp(ops, o) {
							continue
						}
						for _, m := range t.modes {
							if !modeSelected(modes, m) {
								continue
							}
							for _, b := range t.sizes {
								if len(sel.Sizes) == 0 && sel.MaxBytes > 0 && b > sel.MaxBytes {
									continue
								}
								c := Case{Variant: v, Coll: coll, DType: d, Op: o, Bytes: b, Mode: m, Ranks: ranks, Input: sel.Input}
								if t.special {
									c.Input = reference.Special
								}
								if c.fits() != nil {
									continue
								}
								if c.Bytes = chunkBytes(c); c.Bytes == 0 {
									continue
								}
								if id := c.ID(); !seen[id] {
									seen[id] = true
									out = append(out, c)
								}
							}
						}
					}
				}
			}
		}
	}
	if sel.Stress && len(sel.Sizes) == 0 {
		stressOrder(vs, out)
	} else {
		sortCases(vs, out)
	}
	if len(out) == 0 {
		return nil, usage("the selection matches no case")
	}
	return out, nil
}

// SkipReason says why the registry rules a case out ("" if it does not):
// the variant lacks the collective, dtype or op, the world size is outside
// its range, or a reduce-scatter's or all-gather's count does not cut into
// one chunk per rank. Backends add their own reasons (no GPU, no NCCL, no
// P2P).
func SkipReason(v *kernels.Variant, c Case) string {
	if !v.Implements(c.Coll) {
		return fmt.Sprintf("%s does not implement %s", v.Name, c.Coll)
	}
	if !v.SupportsDType(c.DType) {
		return fmt.Sprintf("%s has no %s kernel", v.Name, c.DType)
	}
	if c.Coll.Reduces() && !v.SupportsOp(c.Op) {
		return fmt.Sprintf("%s has no %s kernel", v.Name, c.Op)
	}
	if r := v.RanksReason(c.Ranks); r != "" {
		return r
	}
	if r := c.Coll.DividesReason(c.Count(), c.Ranks); r != "" {
		return r
	}
	if v.TooBig != nil {
		if r := v.TooBig(c.Bytes); r != "" {
			return r
		}
	}
	if a := v.Align; a > 1 && (c.Bytes%a != 0 || int64(c.Mode.Offset*c.DType.Size())%a != 0) {
		return fmt.Sprintf("%s needs messages and addresses aligned to %d bytes", v.Name, a)
	}
	return ""
}

// collOps are the ops of coll's cases in a tier of ops: the tier's for a
// collective that reduces, one (reference.Sum, written NoOp) for the
// all-gather, whatever --op says.
func collOps(coll reference.Coll, ops []reference.Op) []reference.Op {
	if !coll.Reduces() {
		return []reference.Op{reference.Sum}
	}
	return ops
}

// chunkBytes is c's size as the matrix builds it: a chunked collective's
// (a reduce-scatter's or all-gather's) count rounded down to a multiple of the world size, as
// nccl-tests rounds its counts, so that every rank's chunk is whole (0:
// not one element per rank); the allreduce's as it is.
func chunkBytes(c Case) int64 {
	if !c.Coll.Chunked() {
		return c.Bytes
	}
	n, elem := int64(c.Ranks), int64(c.DType.Size())
	return c.Bytes / elem / n * n * elem
}

// checkVariantsImplement: when the variants named with --variant implement
// none of the selected collectives, the selection is a usage error that
// says what they implement, not an empty match. A named variant that
// implements none while another does simply has no cases (a list of every
// custom variant keeps working whatever --coll says).
func checkVariantsImplement(vs []*kernels.Variant, named []string, colls []reference.Coll) error {
	if len(named) == 0 {
		return nil
	}
	var has []string
	for _, v := range vs {
		var its []string
		for _, c := range v.Collectives() {
			if slices.Contains(colls, c) {
				return nil
			}
			its = append(its, c.String())
		}
		has = append(has, fmt.Sprintf("%s implements %s", v.Name, strings.Join(its, ", ")))
	}
	var want []string
	for _, c := range colls {
		want = append(want, c.String())
	}
	return usage("--coll %s: %s (select with --coll)", strings.Join(want, ","), strings.Join(has, "; "))
}

func pickVariants(set *registry.Set, names []string, ranks int) ([]*kernels.Variant, error) {
	if len(names) == 0 {
		return set.All(), nil
	}
	var vs []*kernels.Variant
	for _, n := range names {
		v, err := set.Lookup(n)
		if err != nil {
			return nil, usage("%v", err)
		}
		// Asked for by name, a variant that cannot run on this world size
		// is a usage error, not a skip: the user asked for something that
		// cannot happen.
		if r := v.RanksReason(ranks); r != "" {
			return nil, usage("%s", r)
		}
		vs = append(vs, v)
	}
	return vs, nil
}

func buildIDs(vs *registry.Set, sel Selection, ranks int) ([]Case, error) {
	ids := sel.IDs
	var out []Case
	seen := map[string]bool{}
	for _, id := range ids {
		c, err := ParseID(id, vs)
		if err != nil {
			return nil, usage("%v", err)
		}
		if c.Ranks != ranks {
			return nil, usage("case %s is for %d ranks; this run has %d (start it with mpirun -np %d)", id, c.Ranks, ranks, c.Ranks)
		}
		if r := SkipReason(c.Variant, c); r != "" {
			return nil, usage("case %s: %s", id, r)
		}
		if c.Input != reference.Special {
			c.Input = sel.Input
		}
		if seen[c.ID()] {
			continue // named twice: X under --input special is X/special
		}
		seen[c.ID()] = true
		out = append(out, c)
	}
	return out, nil
}

func checkSizesFit(sizes []int64, dtypes []reference.DType, explicit bool) error {
	for _, b := range sizes {
		fitsAny := false
		for _, d := range dtypes {
			if b%int64(d.Size()) == 0 {
				fitsAny = true
			} else if explicit {
				return usage("size %s is not a whole number of %s elements (%d bytes each)", FormatSize(b), d, d.Size())
			}
		}
		if !fitsAny {
			return usage("size %s fits no selected dtype", FormatSize(b))
		}
	}
	return nil
}

type modeFilter struct {
	inPlace, registered, graph map[bool]bool
	offset                     *bool
}

func filterModes(words []string) (*modeFilter, error) {
	if len(words) == 0 {
		return nil, nil
	}
	f := &modeFilter{}
	add := func(m *map[bool]bool, v bool) {
		if *m == nil {
			*m = map[bool]bool{}
		}
		(*m)[v] = true
	}
	for _, w := range words {
		switch strings.TrimSpace(w) {
		case "ip":
			add(&f.inPlace, true)
		case "oop":
			add(&f.inPlace, false)
		case "reg":
			add(&f.registered, true)
		case "stg":
			add(&f.registered, false)
		case "graph":
			add(&f.graph, true)
		case "plain":
			add(&f.graph, false)
		case "off":
			t := true
			f.offset = &t
		case "aligned":
			t := false
			f.offset = &t
		default:
			return nil, usage("unknown mode word %q (valid: ip, oop, reg, stg, plain, graph, off, aligned)", w)
		}
	}
	return f, nil
}

func modeSelected(f *modeFilter, m Mode) bool {
	if f == nil {
		return true
	}
	ok := func(set map[bool]bool, v bool) bool { return set == nil || set[v] }
	if f.offset != nil && *f.offset != (m.Offset != 0) {
		return false
	}
	return ok(f.inPlace, m.InPlace) && ok(f.registered, m.Registered) && ok(f.graph, m.Graph)
}

func containsOp(ops []reference.Op, o reference.Op) bool {
	for _, x := range ops {
		if x == o {
			return true
		}
	}
	return false
}

// stressOrder runs the stress matrix cheapest first: by size, then mode,
// dtype and variant, so every variant's small cases come before any slow
// path and a variant that fails is seen in seconds.
func stressOrder(vs *registry.Set, cs []Case) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if a.Bytes != b.Bytes {
			return a.Bytes < b.Bytes
		}
		if ma, mb := modeRank(a.Mode), modeRank(b.Mode); ma != mb {
			return ma < mb
		}
		if a.DType != b.DType {
			return a.DType < b.DType
		}
		if ai, bi := vs.Index(a.Variant.Name), vs.Index(b.Variant.Name); ai != bi {
			return ai < bi
		}
		if a.Coll != b.Coll {
			return a.Coll < b.Coll
		}
		return a.Op < b.Op
	})
}

func sortCases(vs *registry.Set, cs []Case) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if ai, bi := vs.Index(a.Variant.Name), vs.Index(b.Variant.Name); ai != bi {
			return ai < bi
		}
		if a.Coll != b.Coll {
			return a.Coll < b.Coll
		}
		if a.DType != b.DType {
			return a.DType < b.DType
		}
		if a.Op != b.Op {
			return a.Op < b.Op
		}
		if ma, mb := modeRank(a.Mode), modeRank(b.Mode); ma != mb {
			return ma < mb
		}
		if a.Bytes != b.Bytes {
			return a.Bytes < b.Bytes
		}
		return a.Input < b.Input
	})
}

// modeRank orders modes for reports: registered before staged, out of place
// before in place, plain before graph, aligned before offset.
func modeRank(m Mode) int {
	r := m.Offset
	if m.Graph {
		r += 1 << 8
	}
	if m.InPlace {
		r += 1 << 9
	}
	if !m.Registered {
		r += 1 << 10
	}
	return r
}
