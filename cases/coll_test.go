package cases

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/reference"
)

// An ID names its collective at its head only where it is not the
// allreduce, and an all-gather's op is "-"; ParseID reads every form back,
// plugin variants (whose names hold a colon) included.
func TestCollIDRoundTrip(t *testing.T) {
	m := Mode{Registered: true}
	for _, tc := range []struct {
		c    Case
		want string
	}{
		{Case{Variant: mustLookup(t, "nccl"), DType: reference.BF16, Op: reference.Max, Bytes: 1 << 20, Mode: m, Ranks: 4},
			"nccl/bf16/max/1MiB/oop-reg-plain/np4"},
		{Case{Variant: mustLookup(t, "nccl"), Coll: reference.ReduceScatter, DType: reference.BF16, Op: reference.Max, Bytes: 1 << 20, Mode: m, Ranks: 4},
			"reduce-scatter:nccl/bf16/max/1MiB/oop-reg-plain/np4"},
		{Case{Variant: mustLookup(t, "pull"), Coll: reference.AllGather, DType: reference.F16, Bytes: 12, Mode: Mode{InPlace: true, Offset: 1}, Ranks: 3},
			"all-gather:pull/f16/-/12B/ip-stg-plain-off1/np3"},
	} {
		require.Equal(t, tc.want, tc.c.ID())
		got, err := ParseID(tc.want, builtins)
		require.NoError(t, err, tc.want)
		require.Equal(t, tc.c, got)
		require.Equal(t, tc.c.Variant.Name, VariantOfID(tc.want))
	}
	for _, bad := range []string{
		"all-gather:pull/f16/sum/12B/oop-reg-plain/np3",          // an all-gather has no op
		"reduce-scatter:pull/f16/-/12B/oop-reg-plain/np3",        // a reduce-scatter has one
		"allreduce:oneshot/f16/sum/12B/oop-reg-plain/np3",        // the allreduce is never named
		"reduce-scatter:threeshot/f16/sum/12B/oop-reg-plain/np3", // no such variant
	} {
		_, err := ParseID(bad, builtins)
		require.Error(t, err, bad)
	}
}

// --coll adds each collective's cases for the variants that implement it,
// the all-gather's once per dtype whatever --op says, and sizes rounded
// down to a whole chunk per rank (none where not one element a rank
// remains); without it the matrix is the allreduce's alone.
func TestBuildColls(t *testing.T) {
	sel := Selection{Colls: []reference.Coll{reference.ReduceScatter, reference.AllGather},
		Variants: []string{"pull", "oneshot"}, DTypes: []reference.DType{reference.F32},
		Ops: []reference.Op{reference.Max}, Sizes: []int64{4, 12, 4100}, ModeWords: []string{"oop", "reg", "plain", "aligned"}}
	cs, err := Build(builtins, sel, 3)
	require.NoError(t, err)
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID())
		require.Empty(t, SkipReason(c.Variant, c), c.ID())
	}
	require.Equal(t, []string{
		"reduce-scatter:pull/f32/max/12B/oop-reg-plain/np3",
		"reduce-scatter:pull/f32/max/4092B/oop-reg-plain/np3",
		"all-gather:pull/f32/-/12B/oop-reg-plain/np3",
		"all-gather:pull/f32/-/4092B/oop-reg-plain/np3",
	}, ids, "oneshot implements no other collective; 4 B is one f32 element, not one per rank")

	all, err := Build(builtins, Selection{}, 2)
	require.NoError(t, err)
	for _, c := range all {
		require.Equal(t, reference.AllReduce, c.Coll, c.ID())
	}
}

// A selection of variants that implement none of the selected collectives
// says what they implement; an ID of one is refused with the reason, as
// is a count that does not cut into one chunk per rank.
func TestBuildCollUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		sel  Selection
		err  string
	}{
		{"allreduce of pull", Selection{Variants: []string{"pull"}}, "--coll allreduce: pull implements reduce-scatter, all-gather"},
		{"all-gather of oneshot", Selection{Variants: []string{"oneshot"}, Colls: []reference.Coll{reference.AllGather}},
			"oneshot implements allreduce"},
		{"ID of a collective the variant lacks", Selection{IDs: []string{"reduce-scatter:oneshot/f32/sum/12B/oop-reg-plain/np3"}},
			"oneshot does not implement reduce-scatter"},
		{"count not divisible", Selection{IDs: []string{"all-gather:pull/f32/-/16B/oop-reg-plain/np3"}},
			"all-gather on 3 ranks needs a count divisible by 3, not 4 elements"},
	} {
		_, err := Build(builtins, tc.sel, 3)
		var ue *UsageError
		require.True(t, errors.As(err, &ue), "%s: %v", tc.name, err)
		require.ErrorContains(t, err, tc.err, tc.name)
	}
}
