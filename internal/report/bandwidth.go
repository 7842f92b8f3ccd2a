package report

import "github.com/artest/artest/reference"

// AlgbwGBps is the algorithm bandwidth of moving bytes in us microseconds, in
// GB/s with 1 GB = 1e9 bytes, as nccl-tests computes it. A time that is not
// positive gives 0, not an infinity, so an untimed case never puts Inf or NaN
// into a report.
func AlgbwGBps(bytes int64, us float64) float64 {
	if us <= 0 || bytes <= 0 {
		return 0
	}
	return float64(bytes) / 1e3 / us
}

// Busbw is the bus bandwidth of an allreduce over ranks ranks: algbw times
// 2(n-1)/n, the share of the data each rank's link carries in a ring. It
// follows nccl-tests' all_reduce.cu, which applies the factor for every n, so
// one rank gives 0 (nothing crosses a link). nccl-tests uses (n-1)/(n+1)
// instead when NCCL_ALGO is NVLS; artest reports every variant, multimem
// included, with the ring factor so the columns stay comparable.
func Busbw(algbw float64, ranks int) float64 {
	if ranks <= 1 {
		return 0
	}
	n := float64(ranks)
	return algbw * 2 * (n - 1) / n
}

// BusbwColl is the bus bandwidth of collective coll (as report.Case.Coll
// names it: "" for the allreduce) over ranks ranks, with the collective's
// factor (reference.Collective.BusFactor, nccl-tests'): the allreduce's
// 2(n-1)/n (Busbw), (n-1)/n for the reduce-scatter and the all-gather, whose
// algbw is of the full buffer (n chunks), as nccl-tests sizes them. An
// unknown name gets the allreduce's.
func BusbwColl(coll string, algbw float64, ranks int) float64 {
	c, err := reference.ParseColl(coll)
	if coll == "" || err != nil {
		return Busbw(algbw, ranks)
	}
	return algbw * c.BusFactor(ranks)
}
