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
// of the dtype random; they are never zero, subnormal, Inf or NaN. Special
// inputs are those: signed zeros, subnormals, infinities, NaNs with
// payloads and the largest finite values, in tiles of 8 elements whose
// patterns make each rank's specials meet other ranks' (special.go).
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
// # Special inputs
//
// Every element's expectation is IEEE 754 arithmetic in round to nearest
// even (specialExpect). Sum: acc = x0, then acc += x_r in float32, rounded
// once; -0 + -0 is -0, +0 + -0 and x + -x are +0, a sum past the largest
// finite value is Inf of its sign, and a NaN among the inputs or
// infinities of both signs give a NaN, of any payload and sign. The layout
// makes that the one result of every order and tree, with partial sums
// kept in float32 or rounded to the dtype after every add: at most two
// ranks hold a finite nonzero value at an element (zeros change no
// nonzero partial sum, an exact zero of nonzero terms is +0 in any order,
// and a sum of two 16-bit values is exact in float32 unless the smaller is
// far below half an ulp of the larger, where every rounding gives the
// larger, so rounding it once more to the dtype gives what rounding the
// exact sum gives),
// except where every rank holds a value of the top binade of one sign
// (any two overflow the dtype) or ±Inf, NaN, ±1 and ±0 (integers, exact in
// any order). TestSpecialSumsHaveOneResult checks it over orders, trees
// and both accumulators. So the sums of every variant, of declared order
// or not, are compared bit for bit, and a NaN by class.
//
// Max and min: the extreme of the inputs that are not NaNs, bit for bit;
// where it is a zero and both zeros are among the inputs, either zero
// (C's fmax and CUDA's fmaxf may return either); where a NaN is among
// numbers, a NaN too (IEEE 754-2019 maximum propagates it, 754-2008
// maxNum, fmax and fmaxf return the number); only NaNs: a NaN. A NaN
// result is never right when it is the poison pattern, which no input is
// and arithmetic never yields (Expectation).
//
// # Checking
//
// Check streams over an output buffer on GOMAXPROCS goroutines with no
// per-element allocation, counts wrong elements, keeps the first few and
// the worst error in ulps. PoisonBits is a signalling NaN no generator and
// no arithmetic produces, so an element that was never written is wrong.
package reference
