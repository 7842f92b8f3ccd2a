package twoshotbulk

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/kernels"
	"github.com/artest/artest/kernels/twoshot"
	"github.com/artest/artest/reference"
)

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestRegistryEntry(t *testing.T) {
	v := Variant()
	require.Equal(t, "twoshot-bulk", v.Name)
	require.Equal(t, ID, v.ID)
	require.True(t, v.Custom())
	require.Equal(t, kernels.NeedP2P|kernels.NeedSM90, v.Needs, "bulk copies exist from sm_90 on")
	require.Equal(t, reference.OrderRankAscendingF32, v.Order, "twoshot's order: bit-identical results")
	require.Equal(t, "artest_twoshot_bulk_bf16_sum", v.KernelName(reference.BF16, reference.Sum))
	require.ElementsMatch(t, kernels.AllDTypes, v.DTypes)
	require.ElementsMatch(t, kernels.AllOps, v.Ops)
	require.Equal(t, 1, v.MinRanks)
	require.Equal(t, 8, v.MaxRanks)
	require.Empty(t, v.Params, "pull only: no gather parameter")
	require.NotNil(t, v.SharedBytes)
}

// Four tiles of one 16-byte vector per thread: 32 KiB at 512 threads,
// below the 48 KiB a launch gets without the opt-in attribute.
func TestSharedBytes(t *testing.T) {
	v := Variant()
	for _, tc := range []struct{ threads, want int }{
		{512, 32 << 10},
		{256, 16 << 10},
		{32, 2 << 10},
	} {
		a := kernels.Args{NRanks: 8}
		require.Equal(t, tc.want, v.SharedBytes(&a, tc.threads), "%+v", tc)
	}
	a := kernels.Args{NRanks: 8}
	require.LessOrEqual(t, v.SharedBytes(&a, kernels.MaxThreads), 48<<10)
}

// The grid is twoshot's: one 16-byte vector per thread over one chunk,
// within the block cap (the partition the bulk tiles depend on).
func TestGridIsTwoshots(t *testing.T) {
	v := Variant()
	two := twoshot.Variant()
	for _, count := range []uint64{1, 4 * 512 * 4, 4*512*4*3 + 4, 1 << 28, 3 * 512 * 8, 12345} {
		for _, n := range []uint32{1, 2, 4, 8} {
			for _, elem := range []int64{2, 4} {
				for _, threads := range kernels.TuneThreads {
					a := kernels.Args{Count: count, NRanks: n}
					require.Equal(t, kernels.Grid(&two, &a, elem, v.Blocks, threads), kernels.Grid(&v, &a, elem, v.Blocks, threads),
						"count %d n %d elem %d threads %d", count, n, elem, threads)
				}
			}
		}
	}
}

// The buffer count lives on both sides, the .cu file defines the symbols
// the registry names, and the all-gather is built from bulk copies.
func TestHeaderMatchesGo(t *testing.T) {
	hdr := readFile(t, "twoshot_bulk.cuh")
	m := regexp.MustCompile(`constexpr uint32_t TWOSHOT_BULK_BUFFERS = (\d+)u;`).FindStringSubmatch(hdr)
	require.NotNil(t, m, "TWOSHOT_BULK_BUFFERS not found in twoshot_bulk.cuh")
	got, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	require.Equal(t, Buffers, got)

	src := readFile(t, "twoshot_bulk.cu")
	require.Contains(t, src, "artest_"+Variant().Kernel+"_##dname##_##oname(")
	require.Contains(t, src, "ARTEST_FOR_EACH_DTYPE_OP(ARTEST_TWOSHOT_BULK_KERNEL)")
	for _, call := range []string{"bulk_load(", "bulk_store(", "bulk_commit()", "bulk_wait_read()", "bulk_wait_all()",
		"mbar_init(", "mbar_arrive_expect_tx(", "mbar_wait_parity(", "fence_proxy_async()"} {
		require.Contains(t, src, call)
	}
	elem := readFile(t, "../device/elem.cuh")
	for _, insn := range []string{
		"cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
		"cp.async.bulk.global.shared::cta.bulk_group",
		"cp.async.bulk.commit_group", "cp.async.bulk.wait_group.read", "cp.async.bulk.wait_group 0",
		"mbarrier.init.shared::cta.b64", "mbarrier.arrive.expect_tx.shared::cta.b64",
		"mbarrier.try_wait.parity.shared::cta.b64", "fence.proxy.async",
	} {
		require.Contains(t, elem, insn)
	}
}
