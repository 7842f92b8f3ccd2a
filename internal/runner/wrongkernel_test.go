package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/oneshot"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

// The wrong-kernel injection plays a dispatcher that silently runs another
// custom kernel. For oneshot-cpasync that must be plain oneshot: the bug the
// trace word exists for is a cp.async kernel that was never selected while
// the plain one-shot, computing the same bits, made every test pass.
func TestWrongKernelForCpasyncIsPlainOneshot(t *testing.T) {
	set := registry.Builtins()
	cp, err := set.Lookup("oneshot-cpasync")
	require.NoError(t, err)
	w := wrongKernel(set, cp, reference.AllReduce)
	require.NotNil(t, w)
	require.Equal(t, oneshot.ID, w.ID)
	require.Equal(t, cp.Order, w.Order, "same reduction order: only the trace word can tell them apart")

	// Every custom variant's allreduce has another to be mistaken for; a
	// collective that one variant alone implements has none (its cases
	// skip the injection with the reason), and the pick implements the
	// case's collective.
	for _, v := range set.All() {
		if !v.Custom() {
			continue
		}
		for _, c := range v.Collectives() {
			others := 0
			for _, o := range set.All() {
				if o.Custom() && o.ID != v.ID && o.Implements(c) {
					others++
				}
			}
			w := wrongKernel(set, v, c)
			if others == 0 {
				require.Nil(t, w, "%s %s", v.Name, c)
				continue
			}
			require.NotNil(t, w, "%s %s", v.Name, c)
			require.NotEqual(t, v.ID, w.ID, v.Name)
			require.True(t, w.Custom(), v.Name)
			require.True(t, w.Implements(c), "%s %s: picked %s", v.Name, c, w.Name)
		}
	}
	allreduce := 0
	for _, v := range set.All() {
		if v.Custom() && v.Implements(reference.AllReduce) {
			allreduce++
		}
	}
	require.Greater(t, allreduce, 1, "the allreduce has custom variants to be mistaken for each other")
}

// A plugin variant has a trace id once it uses the device helpers, but the
// wrong-kernel injection plays artest's dispatcher: it never picks one.
func TestWrongKernelIsNeverAPlugins(t *testing.T) {
	ext := kernels.Variant{Name: "ex:x", ID: kernels.ExternalTraceID("ex:x"), Kind: kernels.KindPlugin, External: testExternal{},
		DTypes: []reference.DType{reference.F32}}
	set, err := registry.New([]kernels.Variant{ext})
	require.NoError(t, err)
	for _, v := range set.All() {
		if !v.Custom() {
			continue
		}
		w := wrongKernel(set, v, reference.AllReduce)
		require.NotNil(t, w, v.Name)
		require.Nil(t, w.External, "%s: %s is a plugin's", v.Name, w.Name)
	}
}

type testExternal struct{}

func (testExternal) Owner() string                         { return "plugin ex" }
func (testExternal) Setup(*kernels.ExternalWorld) error    { return nil }
func (testExternal) Allreduce(*kernels.ExternalCall) error { return nil }
func (testExternal) Busy() string                          { return "" }

// A plugin's give-up holds its trace id and the wait point's index; the
// diagnosis names both from the variant's declaration.
func TestNameGiveUps(t *testing.T) {
	id := kernels.ExternalTraceID("ex:x")
	set, err := registry.New([]kernels.Variant{
		{Name: "ex:x", ID: id, Kind: kernels.KindPlugin, External: testExternal{}, WaitPoints: []string{"start barrier", "end barrier"}}})
	require.NoError(t, err)
	gs := nameGiveUps(set, []sigblock.GiveUp{
		{Kind: sigblock.DiagKindPluginWait, Variant: id, Where: 1},
		{Kind: sigblock.DiagKindPluginWait, Variant: id, Where: 5},
		{Kind: sigblock.DiagKindPluginWait, Variant: 0x80000002, Where: 0},
		{Kind: sigblock.DiagKindBarrier, Variant: oneshot.ID, Where: sigblock.PhaseEnd},
	})
	require.Equal(t, []sigblock.GiveUp{
		{Kind: sigblock.DiagKindPluginWait, Variant: id, Where: 1, Name: "ex:x", Point: "end barrier"},
		{Kind: sigblock.DiagKindPluginWait, Variant: id, Where: 5, Name: "ex:x"},
		{Kind: sigblock.DiagKindPluginWait, Variant: 0x80000002, Where: 0},
		{Kind: sigblock.DiagKindBarrier, Variant: oneshot.ID, Where: sigblock.PhaseEnd},
	}, gs)
}
