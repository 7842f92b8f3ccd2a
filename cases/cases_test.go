package cases

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  string
	}{
		{"4", 4, ""},
		{"12B", 12, ""},
		{"1K", 1024, ""},
		{"1KB", 1024, ""},
		{"64KiB", 64 << 10, ""},
		{"256M", 256 << 20, ""},
		{"1G", 1 << 30, ""},
		{"1gib", 1 << 30, ""},
		{"0", 0, "at least 1 byte"},
		{"-4", 0, "at least 1 byte"},
		{"1.5K", 0, "bad size"},
		{"", 0, "bad size"},
		{"K", 0, "bad size"},
		{"+4", 0, "bad size"},
		{"2000G", 0, "larger than"},
	} {
		got, err := ParseSize(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestFormatSizeRoundTrips(t *testing.T) {
	for _, b := range []int64{1, 2, 4, 12, 1000, 1024, 4100, 65534, 65536, 1<<20 + 12, 256 << 20, 1 << 30, 3 << 30} {
		s := FormatSize(b)
		got, err := ParseSize(s)
		require.NoError(t, err, s)
		require.Equal(t, b, got, s)
	}
	require.Equal(t, "4100B", FormatSize(4100))
	require.Equal(t, "64KiB", FormatSize(64<<10))
	require.Equal(t, "1048588B", FormatSize(1<<20+12))
}

func TestParseSizes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64
		err  string
	}{
		{"1K:16K:x4", []int64{1024, 4096, 16384}, ""},
		{"1K:4K", []int64{1024, 2048, 4096}, ""},
		{"4:16:+4", []int64{4, 8, 12, 16}, ""},
		{"12,4,1K:2K:x2,4", []int64{4, 12, 1024, 2048}, ""},
		{"8:4", nil, "below"},
		{"1:1G:+1", nil, "more than"},
		{"1K:2K:x1", nil, "above 1"},
		{"1K:2K:y2", nil, "wants xF or +S"},
		{"1:2:3:4", nil, "MIN:MAX"},
		{"", nil, "empty"},
	} {
		got, err := ParseSizes(tc.in)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		require.Equal(t, tc.want, got, tc.in)
	}
}

func TestModeRoundTrip(t *testing.T) {
	modes := append(append([]Mode{}, AllModes...), offsetModes...)
	require.Len(t, AllModes, 8)
	seen := map[string]bool{}
	for _, m := range modes {
		s := m.String()
		require.False(t, seen[s], "duplicate mode %s", s)
		seen[s] = true
		got, err := ParseMode(s)
		require.NoError(t, err)
		require.Equal(t, m, got)
	}
	for _, bad := range []string{"", "oop", "oop-reg", "in-reg-plain", "oop-xx-plain", "oop-reg-fast", "oop-reg-plain-off0", "oop-reg-plain-offx", "oop-reg-plain-off999"} {
		_, err := ParseMode(bad)
		require.Error(t, err, bad)
	}
}

func TestCaseIDRoundTrip(t *testing.T) {
	c := Case{Variant: mustLookup(t, "oneshot"), DType: reference.BF16, Op: reference.Sum, Bytes: 1 << 20, Mode: Mode{Registered: true}, Ranks: 4}
	require.Equal(t, "oneshot/bf16/sum/1MiB/oop-reg-plain/np4", c.ID())
	got, err := ParseID(c.ID(), builtins)
	require.NoError(t, err)
	require.Equal(t, c, got)
	for _, bad := range []string{
		"oneshot/bf16/sum/1MiB/oop-reg-plain",             // missing np
		"oneshot/bf17/sum/1MiB/oop-reg-plain/np4",         // dtype
		"oneshot/bf16/add/1MiB/oop-reg-plain/np4",         // op
		"oneshot/bf16/sum/1XB/oop-reg-plain/np4",          // size
		"oneshot/bf16/sum/1MiB/oop/np4",                   // mode
		"oneshot/bf16/sum/1MiB/oop-reg-plain/n4",          // np
		"oneshot/f32/sum/6B/oop-reg-plain/np4",            // 6 bytes is not whole f32 elements
		"threeshot/bf16/sum/1MiB/oop-reg-plain/np4",       // no such variant
		"oneshot/bf16/sum/1MiB/oop-reg-plain/exact/np4",   // only special is named
		"oneshot/bf16/sum/1MiB/oop-reg-plain/np4/special", // the input comes before npN
		"oneshot/bf16/sum/1MiB/special/oop-reg-plain/np4",
	} {
		_, err := ParseID(bad, builtins)
		require.Error(t, err, bad)
	}

	// Special inputs are named in the ID, before the world size; the
	// other kinds are the run's --input and are not.
	c.Input = reference.Special
	require.Equal(t, "oneshot/bf16/sum/1MiB/oop-reg-plain/special/np4", c.ID())
	got, err = ParseID(c.ID(), builtins)
	require.NoError(t, err)
	require.Equal(t, c, got)
	c.Input = reference.Exact
	require.Equal(t, "oneshot/bf16/sum/1MiB/oop-reg-plain/np4", c.ID())
}

// The default matrix holds 36 special-input cases per variant (every
// dtype and op, 4100 B and 64 KiB, oop-reg-plain and ip-stg-plain) beside
// its other cases, whose IDs and inputs stay what --input says; the quick,
// stress and --size matrices hold none unless --input special makes every
// case special.
func TestBuildSpecialCases(t *testing.T) {
	count := func(cs []Case) (special, other int) {
		for _, c := range cs {
			if c.Input == reference.Special {
				special++
				require.Contains(t, c.ID(), "/special/np", c.ID())
			} else {
				require.NotContains(t, c.ID(), "special", c.ID())
			}
		}
		return special, len(cs) - special
	}
	variants := 0 // the default --coll is the allreduce
	for _, v := range builtins.All() {
		if v.Implements(reference.AllReduce) {
			variants++
		}
	}
	for _, input := range []reference.InputKind{reference.Random, reference.Exact} {
		cs, err := Build(builtins, Selection{Input: input}, 2)
		require.NoError(t, err)
		special, other := count(cs)
		require.Equal(t, 36*variants, special)
		require.Equal(t, 942*variants, other, "the default matrix's other cases")
		for _, c := range cs {
			if c.Input != reference.Special {
				require.Equal(t, input, c.Input, c.ID())
			}
		}
		ids := map[string]bool{}
		for _, c := range cs {
			ids[c.ID()] = true
		}
		for _, id := range []string{
			"oneshot/f16/sum/64KiB/oop-reg-plain/special/np2", "nccl/bf16/max/4100B/ip-stg-plain/special/np2",
			"twoshot/f32/min/4100B/oop-reg-plain/special/np2", "oneshot/f16/sum/64KiB/oop-reg-plain/np2",
		} {
			require.True(t, ids[id], id)
		}
	}
	for name, sel := range map[string]Selection{
		"quick":  {Quick: true},
		"stress": {Stress: true},
		"sizes":  {Sizes: []int64{4100}},
	} {
		cs, err := Build(builtins, sel, 2)
		require.NoError(t, err)
		special, _ := count(cs)
		require.Zero(t, special, name)
		sel.Input = reference.Special
		cs, err = Build(builtins, sel, 2)
		require.NoError(t, err)
		_, other := count(cs)
		require.Zero(t, other, name)
	}
	cs, err := Build(builtins, Selection{Input: reference.Special, Variants: []string{"oneshot"}}, 2)
	require.NoError(t, err)
	special, other := count(cs)
	require.Equal(t, 942, special, "--input special: every case of the default matrix, once")
	require.Zero(t, other)

	// A selection narrows the special cases as it narrows the others.
	cs, err = Build(builtins, Selection{Variants: []string{"twoshot"}, DTypes: []reference.DType{reference.BF16}, Ops: []reference.Op{reference.Sum}, ModeWords: []string{"ip"}}, 2)
	require.NoError(t, err)
	var specials []string
	for _, c := range cs {
		if c.Input == reference.Special {
			specials = append(specials, c.ID())
		}
	}
	require.Equal(t, []string{"twoshot/bf16/sum/4100B/ip-stg-plain/special/np2", "twoshot/bf16/sum/64KiB/ip-stg-plain/special/np2"}, specials)
}

func TestBuildDefaultMatrix(t *testing.T) {
	cs, err := Build(builtins, Selection{}, 4)
	require.NoError(t, err)
	ids := map[string]bool{}
	sizes := map[int64]bool{}
	var oddCount, notVec16, offset bool
	for _, c := range cs {
		require.False(t, ids[c.ID()], "duplicate %s", c.ID())
		ids[c.ID()] = true
		require.NoError(t, c.fits())
		sizes[c.Bytes] = true
		oddCount = oddCount || c.Count()%2 == 1
		notVec16 = notVec16 || c.Bytes%16 != 0
		offset = offset || c.Mode.Offset != 0
	}
	// The matrix promised in design.md: 1 element, odd counts, sizes not a
	// multiple of 16 bytes, misaligned offsets, 4 bytes up to 256 MiB.
	require.True(t, ids["oneshot/f32/sum/4B/oop-reg-plain/np4"], "one f32 element")
	require.True(t, ids["twoshot/f16/max/2B/ip-stg-graph/np4"], "one f16 element, every mode")
	require.True(t, ids["nccl/bf16/sum/256MiB/oop-reg-plain/np4"])
	require.False(t, ids["oneshot/f32/sum/6B/oop-reg-plain/np4"], "6 bytes is no whole f32 count")
	require.True(t, oddCount && notVec16 && offset)
	require.True(t, sizes[4] && sizes[256<<20])
	// Every one of the 8 modes appears for every variant at a small size.
	for _, v := range []string{"oneshot", "twoshot", "nccl"} {
		for _, m := range AllModes {
			c := Case{Variant: mustLookup(t, v), DType: reference.BF16, Op: reference.Min, Bytes: 4100, Mode: m, Ranks: 4}
			require.True(t, ids[c.ID()], c.ID())
		}
	}
}

func TestBuildQuickIsSmall(t *testing.T) {
	cs, err := Build(builtins, Selection{Quick: true}, 2)
	require.NoError(t, err)
	require.Less(t, len(cs), 150*len(builtins.All()), "about 140 quick cases per variant at 2 ranks")
	for _, c := range cs {
		require.LessOrEqual(t, c.Bytes, int64(1<<20))
	}
}

func TestBuildFilters(t *testing.T) {
	cs, err := Build(builtins, Selection{
		Variants:  []string{"twoshot"},
		DTypes:    []reference.DType{reference.F16},
		Ops:       []reference.Op{reference.Max},
		Sizes:     []int64{6, 1 << 20},
		ModeWords: []string{"ip", "graph"},
	}, 3)
	require.NoError(t, err)
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID())
	}
	require.Equal(t, []string{
		"twoshot/f16/max/6B/ip-reg-graph/np3",
		"twoshot/f16/max/1MiB/ip-reg-graph/np3",
		"twoshot/f16/max/6B/ip-stg-graph/np3",
		"twoshot/f16/max/1MiB/ip-stg-graph/np3",
	}, ids)

	capped, err := Build(builtins, Selection{MaxBytes: 1 << 20}, 2)
	require.NoError(t, err)
	for _, c := range capped {
		require.LessOrEqual(t, c.Bytes, int64(1<<20))
	}
}

func TestBuildIDs(t *testing.T) {
	cs, err := Build(builtins, Selection{IDs: []string{"oneshot/bf16/sum/1MiB/oop-reg-plain/np4"}}, 4)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	require.Equal(t, "oneshot/bf16/sum/1MiB/oop-reg-plain/np4", cs[0].ID())

	// An ID's input kind is its own; one that names none takes --input's.
	plain, special := "oneshot/bf16/sum/4100B/oop-reg-plain/np2", "oneshot/bf16/sum/4100B/oop-reg-plain/special/np2"
	for _, tc := range []struct {
		input reference.InputKind
		ids   []string
		want  []string
		kinds []reference.InputKind
	}{
		{reference.Exact, []string{plain, special}, []string{plain, special}, []reference.InputKind{reference.Exact, reference.Special}},
		{reference.Random, []string{special}, []string{special}, []reference.InputKind{reference.Special}},
		{reference.Special, []string{plain, special}, []string{special}, []reference.InputKind{reference.Special}},
	} {
		cs, err := Build(builtins, Selection{IDs: tc.ids, Input: tc.input}, 2)
		require.NoError(t, err)
		var ids []string
		var kinds []reference.InputKind
		for _, c := range cs {
			ids = append(ids, c.ID())
			kinds = append(kinds, c.Input)
		}
		require.Equal(t, tc.want, ids, tc.input)
		require.Equal(t, tc.kinds, kinds, tc.input)
	}
}

func TestBuildUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sel   Selection
		ranks int
		err   string
	}{
		{"unknown variant", Selection{Variants: []string{"threeshot"}}, 4, "valid: oneshot, twoshot"},
		{"too many ranks", Selection{Variants: []string{"oneshot"}}, 9, "supports 1 to 8 ranks, not 9"},
		{"size fits no dtype", Selection{Sizes: []int64{3}}, 2, "fits no selected dtype"},
		{"size does not fit chosen dtype", Selection{Sizes: []int64{6}, DTypes: []reference.DType{reference.F32}}, 2, "not a whole number of f32"},
		{"bad mode word", Selection{ModeWords: []string{"inplace"}}, 2, "unknown mode word"},
		{"ID for another world size", Selection{IDs: []string{"oneshot/bf16/sum/1MiB/oop-reg-plain/np4"}}, 2, "is for 4 ranks"},
		{"bad ID", Selection{IDs: []string{"oneshot/bf16"}}, 2, "bad case ID"},
		{"empty selection", Selection{MaxBytes: 1}, 2, "matches no case"},
	} {
		_, err := Build(builtins, tc.sel, tc.ranks)
		require.Error(t, err, tc.name)
		var ue *UsageError
		require.True(t, errors.As(err, &ue), "%s: %T is not a UsageError", tc.name, err)
		require.True(t, strings.Contains(err.Error(), tc.err), "%s: %q lacks %q", tc.name, err, tc.err)
	}
}

func TestDefaultMatrixSkipsUnsupportedRanksInsteadOfFailing(t *testing.T) {
	cs, err := Build(builtins, Selection{Quick: true}, 9)
	require.NoError(t, err)
	var skipped int
	for _, c := range cs {
		// Sum: every custom variant has it (multimem has no other op, and
		// says so first).
		if v := c.Variant; v.Custom() && c.Op == reference.Sum { // the NCCL baselines take any number of ranks
			require.Contains(t, skipReasonFor(t, c), "supports 1 to 8 ranks")
			skipped++
		}
	}
	require.Positive(t, skipped)
}

func skipReasonFor(t *testing.T, c Case) string {
	return SkipReason(c.Variant, c)
}

// builtins is the set the tests build matrices from: no plugin loaded.
var builtins = registry.Builtins()

func mustLookup(t *testing.T, name string) *kernels.Variant {
	t.Helper()
	v, err := builtins.Lookup(name)
	require.NoError(t, err)
	return v
}

func TestStressMatrixCoversEveryAxisAndTheSlowPath(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		full                  bool
		axes, slowDTypes, per int
	}{
		// 2 sizes x 4 modes in bf16, and the slow path in bf16.
		{"default set", false, 7, 1, 9},
		// 2 sizes x 4 modes x 3 dtypes, and the slow path x 3 dtypes.
		{"full set", true, 9, 3, 27},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := Build(builtins, Selection{Stress: true, StressFull: tc.full}, 4)
			require.NoError(t, err)
			seen := map[string]bool{}
			slow := map[string]bool{}
			perVariant := map[string]int{}
			for i, c := range cs {
				perVariant[c.Variant.Name]++
				require.Equal(t, reference.Sum, c.Op)
				seen[fmt.Sprint(c.Mode.InPlace, "ip")] = true
				seen[fmt.Sprint(c.Mode.Registered, "reg")] = true
				seen[fmt.Sprint(c.Mode.Graph, "graph")] = true
				seen[c.DType.String()] = true
				if c.Bytes > 64<<10 {
					// The element-wise path: misaligned, just over 1 MiB.
					require.Equal(t, int64(1<<20+12), c.Bytes)
					require.Equal(t, 1, c.Mode.Offset)
					slow[c.DType.String()] = true
				}
				// Cheapest first across the variants: sizes never go down.
				if i > 0 {
					require.LessOrEqual(t, cs[i-1].Bytes, c.Bytes, "%s after %s", c.ID(), cs[i-1].ID())
				}
			}
			require.Len(t, seen, tc.axes, "both values of each mode axis and the set's dtypes: %v", seen)
			require.Len(t, slow, tc.slowDTypes, "the slow path: %v", slow)
			for v, n := range perVariant {
				require.LessOrEqual(t, n, tc.per, "variant %s", v)
			}
		})
	}
	// An --op given explicitly replaces the stress sets' sum.
	cs, err := Build(builtins, Selection{Stress: true, Ops: []reference.Op{reference.Min}}, 4)
	require.NoError(t, err)
	require.NotEmpty(t, cs)
	for _, c := range cs {
		require.Equal(t, reference.Min, c.Op)
	}
	// A --dtype given explicitly wins over the default set's.
	cs, err = Build(builtins, Selection{Stress: true, DTypes: []reference.DType{reference.F16}}, 4)
	require.NoError(t, err)
	for _, c := range cs {
		require.Equal(t, reference.F16, c.DType)
	}
	require.NotEmpty(t, cs)
	cs, err = Build(builtins, Selection{Stress: true}, 4)
	require.NoError(t, err)
	// Every variant's first case is among the first few: a broken one
	// fails early.
	first := map[string]int{}
	for i, c := range cs {
		if _, ok := first[c.Variant.Name]; !ok {
			first[c.Variant.Name] = i
		}
	}
	for v, i := range first {
		require.Less(t, i, len(builtins.All()), "variant %s's first stress case", v)
	}
}
