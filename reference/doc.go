// Package reference is the pure-Go truth every allreduce result is checked
// against.
//
// # Inputs
//
// Gen makes rank r's input element i of stress iteration k as a pure
// function of (seed, r, k, i). Each element has one hash, shared by all
// ranks; rank r's input is the r-th bit field of that hash (a further hash
// word per 5, 4, 2 or 8 ranks), so checking N ranks' sum costs one hash and
// N table lookups. Exact inputs are integers in [-8, 8]: every partial sum of
// up to 32 of them is an integer of magnitude <= 256, exact in bf16, f16
// and f32, so any order of summation gives the same bits. Random inputs
// have a random sign, a random binade in [2^-4, 2^4) and every mantissa bit
// of the dtype random; they are never zero, subnormal, Inf or NaN.
//
// # Orders
//
// OrderRankAscendingF32: acc = x0; acc = acc op x_r for r = 1..N-1 in
// float32, rounded once to the dtype (round to nearest even). Every output
// is compared bit for bit with that.
//
// OrderUnknown: Exact inputs, max and min are compared bit for bit (their
// result does not depend on the order). A Random sum is compared with the
// float64 reference ref = sum x_r, which is exact (every input is a whole
// number of 2^(-4-mantissa bits) below 2^4, summed in int64), within
//
//	bound = (N-1) * u * sum|x_r| + u * |ref|,  u = 2^-p of the dtype
//
// (u = 2^-8 for bf16, 2^-11 for f16, 2^-24 for f32). The first term is the
// error of any summation order or tree of N terms in a format with unit
// roundoff u under round to nearest, (N-1)*u*sum|x| with no second-order
// term (Jeannerod and Rump, SIAM J. Matrix Anal. Appl. 34(2), 2013); u is
// the dtype's own because an implementation may keep partial sums in the
// dtype (NCCL's ring stores them in the output type between steps). The
// second term is the final rounding of an implementation that accumulates
// in float32 and rounds once at the end; its float32 error is covered by the
// first term, since u_f32*(1+u) <= u.
//
// # Checking
//
// Check streams over an output buffer on GOMAXPROCS goroutines with no
// per-element allocation, counts wrong elements, keeps the first few and
// the worst error in ulps. PoisonBits is a signalling NaN no generator and
// no arithmetic produces, so an element that was never written is wrong.
package reference
