package registry

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/oneshot"
)

type ownerOnly string

func (o ownerOnly) Owner() string                       { return string(o) }
func (ownerOnly) Setup(*kernels.ExternalWorld) error    { return nil }
func (ownerOnly) Allreduce(*kernels.ExternalCall) error { return nil }
func (ownerOnly) Busy() string                          { return "" }

// A plugin variant's trace id is a function of its name alone (every rank
// and every rerun agree) and never one of artest's own ids.
func TestExternalTraceID(t *testing.T) {
	id := kernels.ExternalTraceID("example:oneshot")
	require.Equal(t, id, kernels.ExternalTraceID("example:oneshot"))
	require.Equal(t, uint32(0x8336b82b), id, "pinned: repro bundles of earlier runs name it")
	require.NotEqual(t, id, kernels.ExternalTraceID("example:twoshot"))
	require.GreaterOrEqual(t, id, uint32(1<<31), "the plugins' range, above artest's own ids (conformance_test.go)")
}

func TestNewRefusesClashes(t *testing.T) {
	a := kernels.Variant{Name: "a:x", ID: 0x80000001, Kind: kernels.KindPlugin, External: ownerOnly("plugin a")}
	for _, tc := range []struct {
		name     string
		external []kernels.Variant
		err      string
	}{
		{"one plugin", []kernels.Variant{a}, ""},
		{"the same variant again replaces itself", []kernels.Variant{a, a}, ""},
		{"a taken trace id", []kernels.Variant{a, {Name: "b:y", ID: 0x80000001, Kind: kernels.KindPlugin, External: ownerOnly("plugin b")}},
			"variant b:y of plugin b: its trace id 0x80000001 is a:x's: rename one of them"},
		{"a built-in's trace id", []kernels.Variant{{Name: "b:y", ID: oneshot.ID, Kind: kernels.KindPlugin, External: ownerOnly("plugin b")}},
			"variant b:y of plugin b: its trace id 0x51 is oneshot's: rename one of them"},
		{"variants without the helpers (id 0) never collide", []kernels.Variant{a, {Name: "b:y", Kind: kernels.KindPlugin, External: ownerOnly("plugin b")},
			{Name: "b:z", Kind: kernels.KindPlugin, External: ownerOnly("plugin b")}}, ""},
		{"a built-in's name", []kernels.Variant{{Name: "oneshot", Kind: kernels.KindPlugin, External: ownerOnly("plugin b")}},
			"variant oneshot of plugin b: artest already has a variant of that name"},
		{"another owner's name", []kernels.Variant{a, {Name: "a:x", Kind: kernels.KindPlugin, External: ownerOnly("plugin b")}},
			"variant a:x of plugin b: plugin a already has a variant of that name"},
		{"no implementation", []kernels.Variant{{Name: "c:x"}}, "external variant c:x has no implementation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.external)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			found := s.ByID(0x80000001)
			require.NotNil(t, found)
			require.Equal(t, "a:x", found.Name)
			require.Equal(t, len(Builtin), s.Index("a:x"), "the plugins' variants follow the built-ins")
		})
	}
}

// A set is built once: what one New is given never reaches another set.
func TestSetsAreIndependent(t *testing.T) {
	with, err := New([]kernels.Variant{{Name: "a:x", Kind: kernels.KindPlugin, External: ownerOnly("plugin a")}})
	require.NoError(t, err)
	require.Len(t, with.All(), len(Builtin)+1)
	_, err = Builtins().Lookup("a:x")
	require.Error(t, err)
	require.Len(t, Builtins().All(), len(Builtin))
}

type ownerWithControl struct {
	ownerOnly
	bytes int64
}

func (o ownerWithControl) ControlBytes() int64 { return o.bytes }

// Each plugin gets a control region of its own: two plugins in one job that
// shared one would read each other's barrier flags and counters (seen on a
// GPU: vLLM's custom allreduce, loaded beside the example plugin, waited
// forever at its first barrier).
func TestExternalControlRegionsAreDisjoint(t *testing.T) {
	a := ownerWithControl{ownerOnly("plugin a"), 100}
	b := ownerWithControl{ownerOnly("plugin b"), 5000}
	c := ownerOnly("plugin c") // declares no control region
	s, err := New([]kernels.Variant{
		{Name: "a:x", Kind: kernels.KindPlugin, External: a}, {Name: "a:y", Kind: kernels.KindPlugin, External: a}, {Name: "c:z", Kind: kernels.KindPlugin, External: c}, {Name: "b:y", Kind: kernels.KindPlugin, External: b},
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		owner      string
		off, bytes int64
	}{
		{"plugin a", 0, 100},
		{"plugin b", 4096, 5000},
		{"plugin c", 0, 0},
		{"plugin nobody", 0, 0},
	} {
		off, size := s.ExternalControlRegion(tc.owner)
		require.Equal(t, [2]int64{tc.off, tc.bytes}, [2]int64{off, size}, tc.owner)
	}
	require.Equal(t, int64(4096+8192), s.ExternalControlBytes(), "a's page, then b's two pages")
	require.Zero(t, Builtins().ExternalControlBytes())
}

type ownerWithStaging struct {
	ownerWithControl
	staging int64
}

func (o ownerWithStaging) StagingBytes() int64 { return o.staging }

// A plugin that declares staging gets it to itself, in the control block
// after its control region: artest's variants and other plugins use the
// shared staging buffers as scratch, which would erase state a plugin's
// kernels keep there between calls (sentinel values a reader polls).
func TestExternalStagingIsPrivate(t *testing.T) {
	a := ownerWithStaging{ownerWithControl{ownerOnly("plugin a"), 100}, 10000}
	b := ownerWithControl{ownerOnly("plugin b"), 5000}
	c := ownerWithStaging{ownerWithControl{ownerOnly("plugin c"), 0}, 1}
	s, err := New([]kernels.Variant{{Name: "a:x", Kind: kernels.KindPlugin, External: a}, {Name: "b:y", Kind: kernels.KindPlugin, External: b}, {Name: "c:z", Kind: kernels.KindPlugin, External: c}})
	require.NoError(t, err)
	for _, tc := range []struct {
		owner                    string
		ctl, ctlBytes, stg, stgB int64
	}{
		{"plugin a", 0, 100, 4096, 10000}, // its control page, then three pages of staging
		{"plugin b", 16384, 5000, 0, 0},   // no staging declared: the shared buffers
		{"plugin c", 24576, 0, 24576, 1},  // staging only
		{"plugin nobody", 0, 0, 0, 0},
	} {
		off, size := s.ExternalControlRegion(tc.owner)
		soff, ssize := s.ExternalStagingRegion(tc.owner)
		require.Equal(t, [4]int64{tc.ctl, tc.ctlBytes, tc.stg, tc.stgB}, [4]int64{off, size, soff, ssize}, tc.owner)
	}
	require.Equal(t, int64(24576+4096), s.ExternalControlBytes())
}

// The checked-in tuning table (kernels.Tuned) was measured on H200 (2 and
// 4 ranks, bf16): every entry names a registered variant and a launch the
// kernels accept, and it says where it was made.
func TestTunedTableNamesRegisteredVariants(t *testing.T) {
	// The checked-in table was measured on H200 (2 and 4 ranks, bf16):
	// every entry names a registered variant and a launch the kernels
	// accept, and it says where it was made.
	require.NotEmpty(t, kernels.Tuned.Entries)
	require.NotEmpty(t, kernels.Tuned.Provenance.Date)
	require.Contains(t, kernels.Tuned.Provenance.GPUs, "H200")
	for _, e := range kernels.Tuned.Entries {
		v, err := Builtins().Lookup(e.Variant)
		require.NoError(t, err)
		require.True(t, v.Custom(), e.Variant)
		require.Contains(t, []int{2, 4}, e.Ranks)
		require.Positive(t, e.Blocks)
		require.LessOrEqual(t, e.Blocks, 256)
		require.Zero(t, e.Threads%32)
		require.LessOrEqual(t, e.Threads, kernels.MaxThreads)
		for name := range e.Params {
			_, ok := v.Param(name)
			require.True(t, ok, "%s has no param %s", e.Variant, name)
		}
	}
	got, ok := kernels.Tuned.Lookup("oneshot-ll", 4, "bf16", true, 4096)
	require.True(t, ok)
	require.Equal(t, "oneshot-ll", got.Variant)
}

func mustLookup(t *testing.T, set *Set, name string) *kernels.Variant {
	t.Helper()
	v, err := set.Lookup(name)
	require.NoError(t, err)
	return v
}

func TestLookupNamesTheValidOnes(t *testing.T) {
	set := Builtins()
	_, err := set.Lookup("threeshot")
	// Every variant of the set, in Builtin order, so a new folder's line
	// in Builtin needs no edit here.
	require.EqualError(t, err, `unknown variant "threeshot" (valid: `+strings.Join(set.Names(), ", ")+`)`)
	require.Subset(t, set.Names(), []string{"oneshot", "twoshot", "twoshot-bulk", "oneshot-cpasync", "oneshot-ll", "ring", "multimem", "nccl"})
	require.Nil(t, set.ByID(0), "id 0 is no variant's")
	require.Equal(t, len(Builtin), set.Index("threeshot"))
	for i, f := range Builtin {
		name := f().Name
		require.Equal(t, name, set.Names()[i])
		v := mustLookup(t, set, name)
		if v.ID != 0 {
			require.Same(t, v, set.ByID(v.ID), "Lookup and ByID find the same variant")
		}
	}
}

// The owners set up for a world are those with a variant for its size,
// each once, in the set's order (the same on every rank).
func TestExternalOwners(t *testing.T) {
	a, b := ownerOnly("plugin a"), ownerOnly("plugin b")
	s, err := New([]kernels.Variant{
		{Name: "a:x", MinRanks: 1, MaxRanks: 16, Kind: kernels.KindPlugin, External: a}, {Name: "a:y", MinRanks: 1, MaxRanks: 16, Kind: kernels.KindPlugin, External: a},
		{Name: "b:even", MinRanks: 2, MaxRanks: 2, Kind: kernels.KindPlugin, External: b}, {Name: "b:big", MinRanks: 4, MaxRanks: 8, Kind: kernels.KindPlugin, External: b},
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		size int
		want []string
	}{
		{1, []string{"plugin a"}},
		{2, []string{"plugin a", "plugin b"}},
		{3, []string{"plugin a"}},
		{8, []string{"plugin a", "plugin b"}},
	} {
		var got []string
		for _, e := range s.ExternalOwners(tc.size) {
			got = append(got, e.Owner())
		}
		require.Equal(t, tc.want, got, "%d ranks", tc.size)
	}
	require.Empty(t, Builtins().ExternalOwners(2))
}
