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

func TestAddExternalRefusesATakenTraceID(t *testing.T) {
	saved := append([]kernels.Variant(nil), Variants...)
	t.Cleanup(func() { Variants = saved })
	a := kernels.Variant{Name: "a:x", ID: 0x80000001, External: ownerOnly("plugin a")}
	require.NoError(t, AddExternal([]kernels.Variant{a}))
	require.NoError(t, AddExternal([]kernels.Variant{a}), "the same variant again replaces itself")
	b := kernels.Variant{Name: "b:y", ID: 0x80000001, External: ownerOnly("plugin b")}
	require.EqualError(t, AddExternal([]kernels.Variant{b}), "variant b:y of plugin b: its trace id 0x80000001 is a:x's: rename one of them")
	b.ID = oneshot.ID
	require.ErrorContains(t, AddExternal([]kernels.Variant{b}), "is oneshot's")
	b.ID = 0
	require.NoError(t, AddExternal([]kernels.Variant{b}), "variants without the helpers (id 0) never collide")
	found := ByID(0x80000001)
	require.NotNil(t, found)
	require.Equal(t, "a:x", found.Name)
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
	saved := append([]kernels.Variant(nil), Variants...)
	t.Cleanup(func() { Variants = saved })
	a := ownerWithControl{ownerOnly("plugin a"), 100}
	b := ownerWithControl{ownerOnly("plugin b"), 5000}
	c := ownerOnly("plugin c") // declares no control region
	require.NoError(t, AddExternal([]kernels.Variant{
		{Name: "a:x", External: a}, {Name: "a:y", External: a}, {Name: "c:z", External: c}, {Name: "b:y", External: b},
	}))
	for _, tc := range []struct {
		owner      string
		off, bytes int64
	}{
		{"plugin a", 0, 100},
		{"plugin b", 4096, 5000},
		{"plugin c", 0, 0},
		{"plugin nobody", 0, 0},
	} {
		off, size := ExternalControlRegion(tc.owner)
		require.Equal(t, [2]int64{tc.off, tc.bytes}, [2]int64{off, size}, tc.owner)
	}
	require.Equal(t, int64(4096+8192), ExternalControlBytes(), "a's page, then b's two pages")
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
		v, err := Lookup(e.Variant)
		require.NoError(t, err)
		require.True(t, v.Custom, e.Variant)
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

// Lookup and ByID find every built-in variant of the running set, the
// same one; an unknown name lists the valid ones.
func TestLookupNamesTheValidOnes(t *testing.T) {
	_, err := Lookup("threeshot")
	// Every variant of the running set, in Builtin order, so a new
	// folder's line in Builtin needs no edit here.
	require.EqualError(t, err, `unknown variant "threeshot" (valid: `+strings.Join(Names(), ", ")+`)`)
	require.Len(t, Variants, len(Builtin), "no plugin is loaded in this test")
	for i, f := range Builtin {
		name := f().Name
		require.Equal(t, name, Names()[i])
		v, err := Lookup(name)
		require.NoError(t, err)
		if v.ID != 0 {
			require.Same(t, v, ByID(v.ID))
		}
	}
	require.Nil(t, ByID(0), "id 0 is no variant's")
}
