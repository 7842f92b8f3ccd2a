package kernels

import (
	"testing"

	"github.com/stretchr/testify/require"
)

type ownerOnly string

func (o ownerOnly) Owner() string               { return string(o) }
func (ownerOnly) Setup(*ExternalWorld) error    { return nil }
func (ownerOnly) Allreduce(*ExternalCall) error { return nil }
func (ownerOnly) Busy() string                  { return "" }

// A plugin variant's trace id is a function of its name alone (every rank
// and every rerun agree) and never one of artest's own ids.
func TestExternalTraceID(t *testing.T) {
	id := ExternalTraceID("example:oneshot")
	require.Equal(t, id, ExternalTraceID("example:oneshot"))
	require.Equal(t, uint32(0x8336b82b), id, "pinned: repro bundles of earlier runs name it")
	require.NotEqual(t, id, ExternalTraceID("example:twoshot"))
	for i := range Registry {
		if Registry[i].External == nil {
			require.Less(t, Registry[i].ID, uint32(1<<31), "%s: artest's own ids stay below the plugins' range", Registry[i].Name)
		}
	}
}

func TestAddExternalRefusesATakenTraceID(t *testing.T) {
	saved := append([]Variant(nil), Registry...)
	t.Cleanup(func() { Registry = saved })
	a := Variant{Name: "a:x", ID: 0x80000001, External: ownerOnly("plugin a")}
	require.NoError(t, AddExternal([]Variant{a}))
	require.NoError(t, AddExternal([]Variant{a}), "the same variant again replaces itself")
	b := Variant{Name: "b:y", ID: 0x80000001, External: ownerOnly("plugin b")}
	require.EqualError(t, AddExternal([]Variant{b}), "variant b:y of plugin b: its trace id 0x80000001 is a:x's: rename one of them")
	b.ID = IDOneshot
	require.ErrorContains(t, AddExternal([]Variant{b}), "is oneshot's")
	b.ID = 0
	require.NoError(t, AddExternal([]Variant{b}), "variants without the helpers (id 0) never collide")
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
	saved := append([]Variant(nil), Registry...)
	t.Cleanup(func() { Registry = saved })
	a := ownerWithControl{ownerOnly("plugin a"), 100}
	b := ownerWithControl{ownerOnly("plugin b"), 5000}
	c := ownerOnly("plugin c") // declares no control region
	require.NoError(t, AddExternal([]Variant{
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
