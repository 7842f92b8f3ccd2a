package pull

import (
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/hostmodel/hostmodeltest"
	"github.com/artest/artest/reference"
)

// The kernels the backends look up by name (kernels.Variant.CollKernelName)
// are the ones pull.cu defines, for every dtype, and every op of the
// reduce-scatter; pull implements no allreduce.
func TestKernelNames(t *testing.T) {
	v := Variant()
	require.False(t, v.Implements(reference.AllReduce))
	src, err := os.ReadFile("pull.cu")
	require.NoError(t, err)
	require.Regexp(t, `artest_pull_rs_##dname##_##oname\(`, string(src))
	require.Regexp(t, `ARTEST_FOR_EACH_DTYPE_OP\(ARTEST_PULL_RS_KERNEL\)`, string(src))
	require.Equal(t, "artest_pull_rs_bf16_max", v.CollKernelName(reference.ReduceScatter, reference.BF16, reference.Max))
	for _, d := range v.DTypes {
		name := v.CollKernelName(reference.AllGather, d, reference.Sum)
		require.Equal(t, "artest_pull_ag_"+d.String(), name)
		require.Regexp(t, regexp.MustCompile(`ARTEST_PULL_AG_KERNEL\(`+d.String()+`, `), string(src))
	}
}

// The grid is one 16-byte vector per thread over one rank's chunk.
func TestGrid(t *testing.T) {
	v := Variant()
	for _, tc := range []struct {
		count uint64
		n     uint32
		elem  int64
		want  int
	}{
		{4, 4, 4, 1},
		{4 * 512 * 4, 4, 4, 1},       // chunks of 512 vectors: one block
		{4 * 512 * 4 * 3, 4, 4, 3},   // three blocks per chunk
		{4 * (512*4*3 + 4), 4, 4, 4}, // the chunk's last vector takes a fourth block
		{1 << 28, 2, 2, v.Blocks},    // capped
		{3 * 512 * 8, 1, 2, 3},       // one rank: the chunk is the buffer
	} {
		a := kernels.Args{Count: tc.count, NRanks: tc.n}
		require.Equal(t, tc.want, kernels.Grid(&v, &a, tc.elem, v.Blocks, 512), "%+v", tc)
	}
}

// Each barrier is needed, seen on the model without a hook inside it: a
// rank writes its input just before its call and poisons it as soon as
// its call returned (as stress's poison-after-return does), and the last
// rank comes late. Without the start barrier its peers read its input
// before it wrote it; without the end barrier they return and poison
// their inputs while it still reads them. With both barriers every
// iteration is right.
func TestMissingBarriersGoWrong(t *testing.T) {
	if raceDetector {
		t.Skip("a missing barrier plants data races, which the race detector reports")
	}
	v := Variant()
	for _, coll := range v.Colls {
		for _, tc := range []struct {
			name             string
			inject           uint32
			before, inKernel time.Duration // how late the last rank is
		}{
			{"no-start-barrier", kernels.InjectNoStartBarrier, 2 * time.Millisecond, 0},
			{"no-end-barrier", kernels.InjectNoEndBarrier, 0, 2 * time.Millisecond},
		} {
			for _, n := range []int{2, 3, 4} {
				t.Run(fmt.Sprintf("%s/%s/np%d", coll, tc.name, n), func(t *testing.T) {
					wrong := func(inject uint32) uint64 {
						var bad uint64
						for iter := 0; iter < 5 && bad == 0; iter++ {
							bad += launchLate(t, &v, coll, n, iter, inject, tc.before, tc.inKernel)
						}
						return bad
					}
					require.Zero(t, wrong(0), "with every barrier")
					require.NotZero(t, wrong(tc.inject), "without the %s", tc.name)
				})
			}
		}
	}
}

// launchLate runs one iteration of coll on n ranks whose inputs start
// poisoned: each rank writes its input, calls, and poisons its input
// again once the call returned; the last rank writes its input before
// late (it starts late) and sleeps inKernel after its start barrier
// (kernels.InjectDelay). It returns the wrong elements over every rank.
func launchLate(t *testing.T, v *kernels.Variant, coll reference.Coll, n, iter int, inject uint32, before, inKernel time.Duration) uint64 {
	t.Helper()
	w := hostmodeltest.NewWorldFor(v, n, reference.F32, hostmodeltest.CollCount(coll, 4096, n), false)
	w.Coll = coll
	w.DelayRank, w.Delay = n-1, inKernel
	if inKernel > 0 {
		inject |= kernels.InjectDelay
	}
	for r := 0; r < n; r++ {
		reference.FillPoison(w.Input(r), w.DType)
	}
	errs := w.LaunchHooked(v, reference.Sum, 0, inject,
		func(r int) {
			if r == n-1 {
				time.Sleep(before)
			}
			w.FillRank(r, iter)
		},
		func(r int) { reference.FillPoison(w.Input(r), w.DType) })
	var bad uint64
	for r, err := range errs {
		require.NoError(t, err, "rank %d", r)
		bad += w.Check(r, reference.Sum, iter, v.Order).Wrong
	}
	return bad
}
