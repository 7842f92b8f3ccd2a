package tune

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/registry"
)

// builtins is the set the tests draw variants from: no plugin loaded.
var builtins = registry.Builtins()

func variant(t *testing.T, name string) *kernels.Variant {
	t.Helper()
	v, err := builtins.Lookup(name)
	require.NoError(t, err)
	return v
}

// At 1 KiB of bf16 (64 vectors) every block count gives a grid of 1: the
// space's 30 points collapse to one candidate per block size, and the
// registry default (36 x 512) is the first of them.
func TestEnumerateDeduplicatesByGrid(t *testing.T) {
	v := variant(t, "oneshot")
	sp := SpaceFor(v, Overrides{})
	e := Enumerate(v, sp, 4, 512, 2)
	require.Equal(t, 1+len(kernels.TuneBlocks)*len(kernels.TuneThreads), e.Points)
	var got []string
	for _, c := range e.Candidates {
		got = append(got, c.Launch.String())
	}
	require.Equal(t, []string{"1x512", "1x128", "1x256"}, got)
	require.True(t, e.Candidates[0].Default)
	require.Equal(t, e.Points-3, e.Duplicates)

	// 256 MiB needs every block: nothing collapses but the default's twin
	// (36 is not in the space, so none).
	big := Enumerate(v, sp, 4, 128<<20, 2)
	require.Equal(t, 0, big.Duplicates)
	require.Len(t, big.Candidates, 1+len(kernels.TuneBlocks)*len(kernels.TuneThreads))
}

func TestEnumerateOverridesAndParams(t *testing.T) {
	v := variant(t, "oneshot-cpasync")
	o, err := ParseOverrides(builtins, "16,36", "512", []string{"stages=2,4"})
	require.NoError(t, err)
	e := Enumerate(v, SpaceFor(v, o), 2, 64<<20, 2)
	var got []string
	for _, c := range e.Candidates {
		got = append(got, c.Launch.String())
	}
	// Default (72x256, 3 stages) first, then threads, blocks, stages.
	require.Equal(t, []string{"72x256 stages=3", "16x512 stages=2", "16x512 stages=4", "36x512 stages=2", "36x512 stages=4"}, got)

	// 8 ranks x 512 threads x 4 stages x 16 B = 256 KiB: past sm_90's
	// 227 KiB, never launched.
	e8 := Enumerate(v, SpaceFor(v, o), 8, 64<<20, 2)
	require.Equal(t, 2, e8.TooMuchShared)
	for _, c := range e8.Candidates {
		require.NotEqual(t, uint32(4), c.Params["stages"], c.Launch.String())
	}
}

// A candidate's parameters are the resolved ones, which the runner passes
// back as --param values: resolving them again must give the same launch,
// or the case would run something else than was enumerated.
func TestResolvedParamsAreStable(t *testing.T) {
	for _, name := range []string{"ring", "multimem", "twoshot", "oneshot-cpasync"} {
		v := variant(t, name)
		for _, bytes := range []int64{16, 1 << 10, 4100, 64 << 10, 1 << 20, 16 << 20} {
			for _, ranks := range []int{2, 4, 8} {
				e := Enumerate(v, SpaceFor(v, Overrides{}), ranks, bytes/2, 2)
				for _, c := range e.Candidates {
					a := kernels.Args{Count: uint64(bytes / 2), NRanks: uint32(ranks)}
					v.SetParams(&a, c.Params, 2)
					for _, p := range v.Params {
						require.Equal(t, c.Params[p.Name], *a.ParamSlot(p.Slot), "%s %d B np%d %s", name, bytes, ranks, c.Launch)
					}
					require.Equal(t, c.Blocks, kernels.Grid(v, &a, 2, c.Blocks, c.Threads), "%s %d B np%d %s", name, bytes, ranks, c.Launch)
				}
			}
		}
	}
}

func TestRingBlocksAreNotAnAxis(t *testing.T) {
	v := variant(t, "ring")
	o, err := ParseOverrides(builtins, "8,16,32", "512", []string{"lanes=4", "slot-bytes=64K", "slots=8"})
	require.NoError(t, err)
	e := Enumerate(v, SpaceFor(v, o), 4, 32<<20, 2)
	// The default (auto lanes: 16) and lanes=4; the block counts all give
	// RingGrid's one block per lane.
	require.Len(t, e.Candidates, 2)
	require.Equal(t, "4x512 lanes=4 slot-bytes=65536 slots=8", e.Candidates[1].Launch.String())
}

func TestParseOverridesRejects(t *testing.T) {
	for _, tc := range []struct {
		blocks, threads string
		params          []string
		want            string
	}{
		{blocks: "0", want: "want 1..256"},
		{blocks: "257", want: "want 1..256"},
		{blocks: "x", want: "not a whole number"},
		{threads: "100", want: "multiple of 32"},
		{threads: "1024", want: "multiple of 32 up to 512"},
		{params: []string{"lanes"}, want: "want NAME=V1,V2"},
		{params: []string{"nosuch=1"}, want: "no variant has this parameter"},
		{params: []string{"stages=1"}, want: "allows 2 to 8"},
		{params: []string{"lanes="}, want: "no values"},
	} {
		_, err := ParseOverrides(builtins, tc.blocks, tc.threads, tc.params)
		require.ErrorContains(t, err, tc.want, "%+v", tc)
	}
	o, err := ParseOverrides(builtins, " 16, 36 ", "256,512", []string{"slot-bytes=16K,64K"})
	require.NoError(t, err)
	require.Equal(t, []int{16, 36}, o.Blocks)
	require.Equal(t, []uint32{16 << 10, 64 << 10}, o.Params["slot-bytes"])
}

// Every variant's space names parameters it has, within range; nccl has
// none.
func TestVariantSpacesAreValid(t *testing.T) {
	for _, v := range builtins.All() {
		name, sp := v.Name, v.Tune
		if !v.Custom() {
			require.Zero(t, sp.Blocks, name)
			require.Zero(t, sp.Threads, name)
			require.Zero(t, sp.Params, name)
			continue
		}
		for p, vals := range sp.Params {
			prm, ok := v.Param(p)
			require.True(t, ok, "%s has no parameter %s", name, p)
			for _, x := range vals {
				require.True(t, x >= prm.Min && x <= prm.Max, "%s %s=%d", name, p, x)
			}
		}
		for _, b := range sp.Blocks {
			require.True(t, b >= 1 && b <= 256, "%s blocks %d", name, b)
		}
		for _, th := range sp.Threads {
			require.True(t, th%32 == 0 && th <= kernels.MaxThreads, "%s threads %d", name, th)
		}
	}
}

type pluginStub struct{}

func (pluginStub) Owner() string                         { return "plugin stub (stub.so)" }
func (pluginStub) Setup(*kernels.ExternalWorld) error    { return nil }
func (pluginStub) Allreduce(*kernels.ExternalCall) error { return nil }
func (pluginStub) Busy() string                          { return "" }

// A plugin's variant has no grid rule and no entry in DefaultSpaces: tune
// sweeps its declared parameters over their ranges and leaves blocks and
// threads to the plugin (before, Enumerate divided by its 0 threads).
func TestPluginVariantsSweepTheirParameters(t *testing.T) {
	v := &kernels.Variant{Name: "stub:oneshot", Kind: kernels.KindPlugin, External: pluginStub{}, Params: []kernels.Param{
		{Name: "blocks", Slot: 0, Default: 36, Min: 1, Max: 256},
		{Name: "mode", Slot: 1, Default: 0, Min: 0, Max: 1},
	}}
	sp := SpaceFor(v, Overrides{Blocks: []int{8}, Threads: []int{256}})
	require.Empty(t, sp.Blocks, "blocks are the plugin's, not an axis")
	require.Empty(t, sp.Threads)
	require.Equal(t, []uint32{1, 2, 8, 16, 36, 64, 256}, sp.Params["blocks"], "powers of two from min to max, thinned, and the default")
	require.Equal(t, []uint32{0, 1}, sp.Params["mode"])
	e := Enumerate(v, sp, 2, 1024, 4)
	require.Equal(t, 1+len(sp.Params["blocks"])*2, e.Points)
	require.Len(t, e.Candidates, len(sp.Params["blocks"])*2, "every combination once; the default's twin is a duplicate")
	for _, c := range e.Candidates {
		require.Zero(t, c.Blocks)
		require.Zero(t, c.Threads)
	}
}

func TestPluginValues(t *testing.T) {
	for _, tc := range []struct {
		p    kernels.Param
		want []uint32
	}{
		{kernels.Param{Default: 36, Min: 1, Max: 256}, []uint32{1, 2, 8, 16, 36, 64, 256}},
		{kernels.Param{Default: 3, Min: 2, Max: 4}, []uint32{2, 3, 4}},
		{kernels.Param{Default: 5, Min: 5, Max: 5}, []uint32{5}},
		{kernels.Param{Default: 0, Min: 0, Max: 1 << 31}, []uint32{0, 1 << 5, 1 << 11, 1 << 18, 1 << 24, 1 << 31}},
	} {
		require.Equal(t, tc.want, pluginValues(tc.p), "%+v", tc.p)
	}
}
