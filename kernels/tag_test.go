package kernels

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/reference"
	"github.com/artest/artest/sigblock"
)

func tagArgs(count uint64) *Args {
	return &Args{Count: count, NRanks: 4, Rank: 1, Flags: 0}
}

// Every input of the call changes the hash; what ranks may legitimately
// differ in (buffers, rank, deadline, undeclared Param words) does not.
func TestCallHashCoversTheCall(t *testing.T) {
	one, two := &Variant{Name: "one", ID: 0x51}, &Variant{Name: "two", ID: 0x52}
	base := func() (*Variant, reference.DType, reference.Op, *Args, int, int) {
		return one, reference.F32, reference.Sum, tagArgs(1024), 1, 512
	}
	ref := CallHash(base())
	require.Zero(t, ref&^uint32(sigblock.TagCallMask), "the hash fits the tag's call bits")
	for _, tc := range []struct {
		name   string
		mutate func(v **Variant, d *reference.DType, o *reference.Op, a *Args, blocks, threads *int)
		same   bool
	}{
		{"count one slot smaller", func(_ **Variant, _ *reference.DType, _ *reference.Op, a *Args, _, _ *int) { a.Count -= 4 }, false},
		{"variant", func(v **Variant, _ *reference.DType, _ *reference.Op, _ *Args, _, _ *int) { *v = two }, false},
		{"dtype", func(_ **Variant, d *reference.DType, _ *reference.Op, _ *Args, _, _ *int) { *d = reference.BF16 }, false},
		{"op", func(_ **Variant, _ *reference.DType, o *reference.Op, _ *Args, _, _ *int) { *o = reference.Max }, false},
		{"grid", func(_ **Variant, _ *reference.DType, _ *reference.Op, _ *Args, b, _ *int) { *b = 2 }, false},
		{"threads", func(_ **Variant, _ *reference.DType, _ *reference.Op, _ *Args, _, th *int) { *th = 256 }, false},
		{"world size", func(_ **Variant, _ *reference.DType, _ *reference.Op, a *Args, _, _ *int) { a.NRanks = 2 }, false},
		{"in place", func(_ **Variant, _ *reference.DType, _ *reference.Op, a *Args, _, _ *int) { a.Flags |= FlagInPlace }, false},
		{"rank", func(_ **Variant, _ *reference.DType, _ *reference.Op, a *Args, _, _ *int) { a.Rank = 3 }, true},
		{"buffers", func(_ **Variant, _ *reference.DType, _ *reference.Op, a *Args, _, _ *int) {
			a.PeerIn[0], a.Out = 0x1000, 0x2000
		}, true},
		{"deadline", func(_ **Variant, _ *reference.DType, _ *reference.Op, a *Args, _, _ *int) { a.WaitTimeoutNs = 5 }, true},
		{"undeclared param word", func(_ **Variant, _ *reference.DType, _ *reference.Op, a *Args, _, _ *int) { a.Param3 = 7 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, d, o, a, blocks, threads := base()
			tc.mutate(&v, &d, &o, a, &blocks, &threads)
			got := CallHash(v, d, o, a, blocks, threads)
			if tc.same {
				require.Equal(t, ref, got)
			} else {
				require.NotEqual(t, ref, got)
			}
		})
	}
}

// A declared launch parameter is part of the call.
func TestCallHashCoversDeclaredParams(t *testing.T) {
	v := &Variant{Name: "staged", ID: 0x53, Params: []Param{{Name: "stages", Slot: 0, Default: 3, Min: 2, Max: 8}}}
	a := tagArgs(1024)
	ref := CallHash(v, reference.F32, reference.Sum, a, 1, 256)
	*a.ParamSlot(v.Params[0].Slot)++
	require.NotEqual(t, ref, CallHash(v, reference.F32, reference.Sum, a, 1, 256))
}

func TestSetTagsUsesEachRanksGeneration(t *testing.T) {
	a := tagArgs(1024)
	a.PeerTag[7] = 0xdead // beyond NRanks: cleared
	SetTags(a, 0x00abcdef, []uint32{1, 1, 2, 1})
	require.Equal(t, sigblock.MakeTag(0xabcdef, 1), a.SelfTag, "rank 1's own generation")
	require.Equal(t, [4]uint32{0x01abcdef, 0x01abcdef, 0x02abcdef, 0x01abcdef}, [4]uint32(a.PeerTag[:4]))
	require.Zero(t, a.PeerTag[7])
	// Rank 2 computing the same call expects from rank 1 what rank 1 stores.
	b := tagArgs(1024)
	b.Rank = 2
	SetTags(b, 0x00abcdef, []uint32{1, 1, 2, 1})
	require.Equal(t, a.SelfTag, b.PeerTag[1])
	require.Equal(t, b.SelfTag, a.PeerTag[2])
	// No generations: all zero, still consistent.
	SetTags(b, 0x12, nil)
	require.Equal(t, b.SelfTag, b.PeerTag[0])
}
