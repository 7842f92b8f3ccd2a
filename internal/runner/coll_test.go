package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/cases"
	"github.com/artest/artest/internal/report"
	"github.com/artest/artest/kernels/registry"
	"github.com/artest/artest/reference"
)

// A collective's baselines are NCCL's of the same collective: a
// reduce-scatter case is compared with reduce-scatter:nccl, never with
// nccl's allreduce of the same size.
func TestAttachNCCLPerCollective(t *testing.T) {
	c := func(variant, coll string, us float64) report.Case {
		return report.Case{Variant: variant, Coll: coll, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", Bytes: 1024, TimeUS: us, Verdict: report.Pass}
	}
	cs := []report.Case{
		c("nccl", "", 10),
		c("reduce-scatter:nccl", "reduce-scatter", 4),
		c("reduce-scatter:nccl-reg", "reduce-scatter", 2),
		c("reduce-scatter:pull", "reduce-scatter", 8),
		c("all-gather:pull", "all-gather", 8),
	}
	attachNCCL(cs)
	require.Equal(t, 4.0, cs[3].NCCLTimeUS)
	require.Equal(t, 0.5, cs[3].Speedup)
	require.Equal(t, "nccl-reg", cs[3].NCCLBestVariant)
	require.Equal(t, 2.0, cs[3].NCCLBestTimeUS)
	require.Equal(t, 4.0, cs[2].NCCLTimeUS, "a baseline keeps its speed-up over nccl of its collective")
	require.Empty(t, cs[2].NCCLBestVariant)
	require.Zero(t, cs[4].NCCLTimeUS, "no all-gather of NCCL ran")
	require.Empty(t, cs[4].NCCLBestVariant)
}

// Where each collective's input and output lie in their regions, and the
// part of an output region the call may write (fence): out of place the
// output; in place the whole buffer, input and output sharing one region
// at NCCL's offsets. Peers read an in-place all-gather's input where it
// lies in the registered region, the rank's chunk, when the output is that
// region; staged, the chunk is copied to the start of the registered
// region.
func TestCollBuffers(t *testing.T) {
	pull, err := registry.Builtins().Lookup("pull")
	require.NoError(t, err)
	const rank, ranks, lead = 2, 4, 256
	for _, tc := range []struct {
		coll              reference.Coll
		inPlace           bool
		inBytes, outBytes int64
		inAt, outAt       int64
		fenceLo, fenceHi  int64
		peerInAt1         int64
	}{
		{reference.AllReduce, false, 4096, 4096, 0, 0, lead, lead + 4096, 0},
		{reference.ReduceScatter, false, 4096, 1024, 0, 0, lead, lead + 1024, 0},
		{reference.ReduceScatter, true, 4096, 1024, 0, 2048, lead, lead + 4096, 0},
		{reference.AllGather, false, 1024, 4096, 0, 0, lead, lead + 4096, 0},
		{reference.AllGather, true, 1024, 4096, 2048, 0, lead, lead + 4096, 1024},
	} {
		c := cases.Case{Variant: pull, Coll: tc.coll, DType: reference.F32, Bytes: 4096, Mode: cases.Mode{InPlace: tc.inPlace, Registered: true}, Ranks: ranks}
		s := &caseState{c: c, elem: 4, bytes: 4096, lead: lead, region: lead + 4096 + guardBytes}
		s.layout(rank, ranks)
		name := c.ID()
		require.Equal(t, tc.inBytes, s.inBytes, name)
		require.Equal(t, tc.outBytes, s.outBytes, name)
		require.Equal(t, tc.inAt, s.inAt, name)
		require.Equal(t, tc.outAt, s.outAt, name)
		lo, hi := s.fence()
		require.Equal(t, tc.fenceLo, lo, name)
		require.Equal(t, tc.fenceHi, hi, name)
		require.Equal(t, tc.peerInAt1, s.peerInAt(1), name)

		c.Mode.Registered = false
		staged := &caseState{c: c, elem: 4, bytes: 4096, lead: lead}
		staged.layout(rank, ranks)
		require.Zero(t, staged.peerInAt(1), "%s: staged, every input starts its registered region", c.ID())
		require.Equal(t, s.inAt, staged.inAt, "%s: in a region of its own the input is where it is registered", c.ID())

		img := s.poison()
		for i := range img {
			poisoned := int64(i) >= lead+s.outAt && int64(i) < lead+s.outAt+s.outBytes
			require.Equal(t, poisoned, img[i] != guardByte, "%s byte %d", name, i)
		}
	}
}
