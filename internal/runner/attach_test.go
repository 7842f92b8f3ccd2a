package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/artest/artest/internal/report"
)

// TestAttachNCCLBest: nccl_time_us and speedup keep comparing with nccl
// alone; nccl_best_* compare a custom case with the fastest passing NCCL
// mode of the same dtype, op, mode and size.
func TestAttachNCCLBest(t *testing.T) {
	c := func(variant string, bytes int64, us float64, v report.Verdict) report.Case {
		return report.Case{Variant: variant, DType: "bf16", Op: "sum", Mode: "oop-reg-plain", Bytes: bytes, TimeUS: us, Verdict: v}
	}
	cs := []report.Case{
		c("oneshot", 1024, 5, report.Pass),
		c("nccl", 1024, 10, report.Pass),
		c("nccl-reg", 1024, 8, report.Pass),
		c("nccl-win", 1024, 4, report.Fail), // failed: not NCCL's best
		c("oneshot", 2048, 6, report.Pass),
		c("nccl-win", 2048, 3, report.Pass), // nccl did not run here
		c("oneshot", 4096, 6, report.Pass),  // no NCCL mode ran here
	}
	attachNCCL(cs)
	for _, tc := range []struct {
		i               int
		ncclUS, speedup float64
		best            string
		bestUS, vsBest  float64
	}{
		{0, 10, 2, "nccl-reg", 8, 1.6},
		{1, 0, 0, "", 0, 0},     // nccl itself
		{2, 10, 1.25, "", 0, 0}, // a baseline keeps its speed-up over nccl, gets no best
		{4, 0, 0, "nccl-win", 3, 0.5},
		{6, 0, 0, "", 0, 0},
	} {
		got := cs[tc.i]
		require.Equal(t, tc.ncclUS, got.NCCLTimeUS, "case %d", tc.i)
		require.Equal(t, tc.speedup, got.Speedup, "case %d", tc.i)
		require.Equal(t, tc.best, got.NCCLBestVariant, "case %d", tc.i)
		require.Equal(t, tc.bestUS, got.NCCLBestTimeUS, "case %d", tc.i)
		require.Equal(t, tc.vsBest, got.SpeedupVsBest, "case %d", tc.i)
	}
}
