package oneshotcpasync

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/oneshot"
	"github.com/artest/artest/reference"
)

func variant() *kernels.Variant {
	v := Variant()
	return &v
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestCpasyncRegistryEntry(t *testing.T) {
	v := variant()
	require.Equal(t, ID, v.ID)
	require.True(t, v.Custom())
	require.Equal(t, kernels.NeedP2P|kernels.NeedSM80, v.Needs)
	require.Equal(t, reference.OrderRankAscendingF32, v.Order, "same order as oneshot: bit-identical results")
	require.Equal(t, "artest_oneshot_cpasync_bf16_sum", v.KernelName(reference.BF16, reference.Sum))
	require.ElementsMatch(t, kernels.AllDTypes, v.DTypes)
	require.ElementsMatch(t, kernels.AllOps, v.Ops)
	require.Equal(t, 1, v.MinRanks)
	require.Equal(t, 8, v.MaxRanks)
	require.NotNil(t, v.SharedBytes)
	require.Nil(t, v.GridFunc, "the oneshot grid formula applies")

	p, ok := v.Param("stages")
	require.True(t, ok)
	require.Equal(t, kernels.Param{Name: "stages", Slot: 0, Default: 3, Min: 2, Max: 8, Help: "cp.async pipeline stages"}, p)
	require.Len(t, v.Params, 1)
}

func TestCpasyncSetParams(t *testing.T) {
	v := variant()
	for _, tc := range []struct {
		name string
		set  map[string]uint32
		want uint32
	}{
		{"default", nil, DefaultStages},
		{"other variants' params are ignored", map[string]uint32{"lanes": 4}, DefaultStages},
		{"--param stages=5", map[string]uint32{"stages": 5}, 5},
		{"--param stages=2", map[string]uint32{"stages": 2}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := kernels.Args{Param0: 99, Param1: 7}
			v.SetParams(&a, tc.set, 2)
			require.Equal(t, tc.want, a.Param0)
			require.Equal(t, uint32(7), a.Param1, "only slot 0 is this variant's")
		})
	}
}

func TestCpasyncSharedBytes(t *testing.T) {
	v := variant()
	for _, tc := range []struct {
		stages, nranks uint32
		threads, want  int
	}{
		{3, 8, 256, 3 * 8 * 256 * 16}, // the defaults at 8 ranks: 96 KiB
		{3, 2, 256, 24 << 10},
		{2, 1, 32, 1 << 10},
		{8, 8, 512, 512 << 10}, // past every GPU's limit: the launch must fail, not the kernel
		{0, 4, 256, 0},         // param0 unset: the kernel traps on its own check
	} {
		a := kernels.Args{Param0: tc.stages, NRanks: tc.nranks}
		require.Equal(t, tc.want, v.SharedBytes(&a, tc.threads), "%+v", tc)
	}

	// The defaults fit one block of 8 ranks on both compiled targets. The
	// limits are the per-block opt-in maxima of the CUDA programming guide
	// (compute capabilities 8.0 and 9.0).
	const sm80Max, sm90Max = 163 << 10, 227 << 10
	a := kernels.Args{NRanks: 8}
	v.SetParams(&a, nil, 2)
	require.LessOrEqual(t, v.SharedBytes(&a, v.Threads), sm80Max)
	require.LessOrEqual(t, v.SharedBytes(&a, v.Threads), sm90Max)
}

// kernels.Grid falls back to oneshot's formula: one 16-byte vector per thread over
// the whole message, capped at the registry's Blocks.
func TestCpasyncGrid(t *testing.T) {
	v := variant()
	one := oneshot.Variant()
	for _, tc := range []struct {
		count   uint64
		elem    int64
		threads int
		want    int
	}{
		{1, 4, 256, 1},
		{1024, 4, 256, 1},                 // 256 vectors
		{1025, 4, 256, 2},                 // 257 vectors
		{1 << 20, 2, 256, v.Blocks},       // 131072 vectors: capped
		{3 * 256 * 8, 2, 256, 3},          // 768 vectors
		{(1 << 28) / 4, 4, 512, v.Blocks}, // 256 MiB f32, --threads 512
		{5 * 512 * 4, 4, 512, 5},          // 2560 vectors, --threads 512
	} {
		a := kernels.Args{Count: tc.count, NRanks: 8}
		got := kernels.Grid(v, &a, tc.elem, v.Blocks, tc.threads)
		require.Equal(t, tc.want, got, "%+v", tc)
		require.Equal(t, kernels.Grid(&one, &a, tc.elem, v.Blocks, tc.threads), got, "same as oneshot %+v", tc)
	}
}

// The stage range and the kernel stem live on both sides: the CUDA header
// and the Go constants must agree, and the .cu file must define the
// symbols the registry names.
func TestCpasyncHeaderMatchesGo(t *testing.T) {
	hdr := readFile(t, "cpasync.cuh")
	for name, want := range map[string]int{
		"CPASYNC_MIN_STAGES": MinStages,
		"CPASYNC_MAX_STAGES": MaxStages,
	} {
		m := regexp.MustCompile(`constexpr uint32_t ` + name + ` = (\d+)u;`).FindStringSubmatch(hdr)
		require.NotNil(t, m, "%s not found in cpasync.cuh", name)
		got, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		require.Equal(t, want, got, name)
	}
	p, ok := variant().Param("stages")
	require.True(t, ok)
	require.Equal(t, uint32(MinStages), p.Min)
	require.Equal(t, uint32(MaxStages), p.Max)

	src := readFile(t, "oneshot_cpasync.cu")
	require.Contains(t, src, "artest_"+variant().Kernel+"_##dname##_##oname(")
	require.Contains(t, src, "ARTEST_FOR_EACH_DTYPE_OP(ARTEST_ONESHOT_CPASYNC_KERNEL)")
	// The cp.async pipeline, by instruction.
	for _, insn := range []string{"cp.async.cg.shared.global", "cp.async.commit_group", "cp.async.wait_group"} {
		require.Contains(t, hdr, insn)
	}
}
