package runner

import (
	"fmt"
	"time"

	"github.com/artest/artest/internal/report"
)

// maxStressFailures bounds how many failing iterations are described one by
// one; the rest are counted.
const maxStressFailures = 4

// checkBatch collects the witness's stamps of iterations s0..s0+kk-1 and
// checks every iteration's output, on the device where the run has a
// device checker for the case (checksOnDevice), else on the host, and
// records the failing ones. false
// stops the case (its failure recorded).
func (st *stressCase) checkBatch(s0, kk int) bool {
	r := st.r
	if st.wit != nil {
		if err := st.wit.collect(r.b, kk, st.loads[kk]); err != nil {
			st.fail("error", "%v", err)
			st.res.Fatal = fatalText(err)
			return false
		}
	}
	results := make([]rankResult, kk)
	oks := make([]bool, kk)
	check := st.checkOnHost
	if r.checksOnDevice(st.s.c) {
		check = st.checkOnDevice
	}
	if !check(s0, kk, results, oks) {
		return false
	}
	st.record(kk, results, oks)
	return true
}

// checkOnDevice checks the batch with the device checker (check.go), a
// few iterations also on the host.
func (st *stressCase) checkOnDevice(s0, kk int, results []rankResult, oks []bool) bool {
	r := st.r
	if err := r.checkBatchOnDevice(st.s, r.devCheck, st.check[0], st.slot, s0, kk, st.failedIters, results, oks, &st.stats); err != nil {
		st.fail("error", "%v", err)
		st.res.Fatal = fatalText(err)
		return false
	}
	return true
}

// checkOnHost downloads the batch's check slots, which are contiguous, at
// once, then checks every slot in parallel (a slot is small; one check
// rarely fills the cores by itself).
func (st *stressCase) checkOnHost(s0, kk int, results []rankResult, oks []bool) bool {
	r, slot := st.r, st.slot
	start := time.Now()
	all := make([]byte, int64(kk)*slot)
	if err := r.b.Download(all, st.check[0]); err != nil {
		st.fail("error", "download stress outputs: %v", err)
		st.res.Fatal = fatalText(err)
		return false
	}
	parallel(kk, func(j int) {
		img := all[int64(j)*slot : int64(j+1)*slot]
		oks[j] = r.checkImage(st.s, img, s0+j, &results[j], fmt.Sprintf("iteration %d: ", s0+j))
	})
	st.stats.HostIters += kk
	st.stats.HostSec += time.Since(start).Seconds()
	return true
}

// record counts the batch's failing iterations and keeps the failures of
// the first maxStressFailures of the case.
func (st *stressCase) record(kk int, results []rankResult, oks []bool) {
	res := st.res
	for j := 0; j < kk; j++ {
		if oks[j] {
			continue
		}
		one := results[j]
		st.failedIters++
		res.Wrong += one.Wrong
		if one.Wrong > 0 {
			st.wrongIters++
		}
		if st.failedIters <= maxStressFailures {
			res.Failures = append(res.Failures, one.Failures...)
		}
	}
}

// finish, after the last batch, keeps the witness and heads the failures
// with the count of wrong iterations, then checks the trace word over the
// whole case.
func (st *stressCase) finish() {
	res := st.res
	if st.wit != nil {
		res.Witness = &st.wit.out
	}
	if st.failedIters > 0 {
		res.Failures = append([]report.RankFailure{{Kind: "mismatch", Wrong: res.Wrong,
			Detail: fmt.Sprintf("%d of %d stress iterations wrong (%d with wrong values, %d wrong elements in all)", st.failedIters, st.n, st.wrongIters, res.Wrong)}},
			res.Failures...)
	}
	st.r.verifyTrace(st.s, res)
}
