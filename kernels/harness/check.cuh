// The device checker's arithmetic: the input generator and the expected
// output of every element, ported from the pure-Go reference (reference/
// gen.go, reduce.go, sums.go, checkloops.go) bit for bit. The reference stays
// the truth: kernels/check_test.go compiles this header with a host C++
// compiler and compares it with the Go package over dtypes, ops, input kinds,
// orders, rank counts, element offsets and iterations. artest_check
// (kernels/harness/check.cu) runs the same functions on the GPU.
//
// Plain C++ outside nvcc: every function is ARTEST_HD, and where host and
// device must be spelled differently (the 128-bit product, bit casts, IEEE
// operations the device compiler would otherwise contract into FMAs) both
// spellings sit side by side.
#pragma once

#include <stdint.h>

#include "device/common.cuh"

#if !defined(__CUDA_ARCH__)
#include <string.h>
#endif

// Input kinds and orders, numbered as reference.InputKind and
// reference.Order (kernels/check_test.go checks the numbers).
constexpr uint32_t KIND_RANDOM = 0u;
constexpr uint32_t KIND_EXACT = 1u;
constexpr uint32_t ORDER_UNKNOWN = 0u;
constexpr uint32_t ORDER_RANK_ASCENDING_F32 = 1u;

// ---------------------------------------------------------------------------
// artest_check's ABI (kernels/harness/check.cu).

// The kernel's one parameter, by value; its Go twin is kernels.CheckArgs
// (kernels/check_test.go has a host compiler lay both out and compares).
struct ArtestCheckArgs {
  uint64_t region;       // slot 0's region: [lead bytes][message][guard_after bytes]
  uint64_t slot_bytes;   // from one slot's region to the next
  uint64_t lead;         // bytes of guard and offset gap before each message
  uint64_t guard_after;  // bytes of guard after each message
  uint64_t count;        // elements in each message
  uint64_t first;        // element index of each message's element 0
  uint64_t seed;         // the generator's seed
  uint64_t result;       // ArtestCheckSlot[slots], zeroed before the launch
  uint32_t iter0;        // generator iteration of slot 0; slot j is iter0 + j
  uint32_t slots;
  uint32_t nranks;
  uint32_t dtype;  // DTYPE_*
  uint32_t op;     // OP_*
  uint32_t order;  // ORDER_*
  uint32_t kind;   // KIND_*
  uint32_t guard;  // the guard byte, in the low 8 bits
};

static_assert(sizeof(ArtestCheckArgs) == 96, "ArtestCheckArgs changed: change kernels.CheckArgs with it");

// Wrong elements each slot's record describes (the first ones to claim a
// record, not the lowest: the host re-checks a wrong slot for its report).
constexpr uint32_t ARTEST_CHECK_RECORDS = 4u;

struct ArtestCheckRecord {
  uint64_t index;     // element index
  uint32_t got;       // dtype bits found
  uint32_t want;      // expected dtype bits (0 where the check is bounded)
  uint64_t ref_bits;  // the expected value, or the float64 reference, as float64 bits
};

// One slot's verdict; the Go twin is kernels.CheckSlot.
struct ArtestCheckSlot {
  uint64_t wrong;      // wrong elements
  uint64_t guard_bad;  // guard bytes that no longer hold the guard byte
  uint32_t claimed;    // records claimed (the first ARTEST_CHECK_RECORDS are written)
  uint32_t spare;
  ArtestCheckRecord rec[ARTEST_CHECK_RECORDS];
};

static_assert(sizeof(ArtestCheckRecord) == 24, "ArtestCheckRecord changed: change kernels.CheckRecord with it");
static_assert(sizeof(ArtestCheckSlot) == 120, "ArtestCheckSlot changed: change kernels.CheckSlot with it");

// The checker's block size (kernels.CheckThreads).
constexpr uint32_t ARTEST_CHECK_THREADS = 256u;

namespace artest {
namespace check {

// Constants of reference/gen.go.
constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kWyKey = 0xe7037ed1a0b428dbull;
constexpr uint32_t kExactBits = 8u;         // field width of an Exact input
constexpr int kExactMin = -8;               // Exact inputs are integers in [-8, 8]
constexpr uint64_t kExactSpan = 17u;        // ExactMax - ExactMin + 1
constexpr uint32_t kBinadeBits = 3u;        // a Random input's binade: one of [2^-4, 2^4)
constexpr int kRandomMinExp = -4;           // RandomMinExp
constexpr uint32_t kRandomExpBase = 123u;   // biased float32 exponent of 2^RandomMinExp

// ---------------------------------------------------------------------------
// Bits.

ARTEST_HD inline float f32_from_bits(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
#endif
}

ARTEST_HD inline uint32_t f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
#endif
}

ARTEST_HD inline double f64_from_bits(uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double d;
  memcpy(&d, &b, sizeof d);
  return d;
#endif
}

ARTEST_HD inline uint64_t f64_bits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t b;
  memcpy(&b, &d, sizeof b);
  return b;
#endif
}

// 2^e as a double, for the exponents used here (normal range only).
ARTEST_HD inline double pow2(int e) { return f64_from_bits(static_cast<uint64_t>(1023 + e) << 52); }

// IEEE operations that neither compiler may fuse or reorder: nvcc contracts
// a*b+c into an FMA by default, which could move the bound by its last bit.
ARTEST_HD inline float fadd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
ARTEST_HD inline double dadd(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
ARTEST_HD inline double dsub(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
ARTEST_HD inline double dmul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
ARTEST_HD inline double dabs(double a) { return f64_from_bits(f64_bits(a) & ~(1ull << 63)); }

// ---------------------------------------------------------------------------
// Conversions, as reference/convert.go: round to nearest even, in integer
// arithmetic so that host and device agree by construction.

// reference.BF16FromF32: a NaN keeps its sign and top payload bits, quiet.
ARTEST_HD inline uint32_t bf16_from_f32(uint32_t b) {
  if ((b & 0x7fffffffu) > 0x7f800000u) return ((b >> 16) | 0x0040u) & 0xffffu;
  b += 0x7fffu + ((b >> 16) & 1u);
  return b >> 16;
}

// reference.F16FromF32 (x448/float16's f32bitsToF16bits).
ARTEST_HD inline uint32_t f16_from_f32(uint32_t b) {
  const uint32_t sign = (b & 0x80000000u) >> 16;
  const uint32_t exp = b & 0x7f800000u;
  const uint32_t coef = b & 0x007fffffu;
  if (exp == 0x7f800000u) return sign | 0x7c00u | (coef != 0 ? 0x0200u : 0u) | (coef >> 13);
  const int half_exp = static_cast<int>(exp >> 23) - 127 + 15;
  if (half_exp >= 0x1f) return sign | 0x7c00u;
  if (half_exp <= 0) {
    if (14 - half_exp > 24) return sign;
    const uint32_t c = coef | 0x00800000u;
    uint32_t half_coef = c >> (14 - half_exp);
    const uint32_t round_bit = 1u << (13 - half_exp);
    if ((c & round_bit) != 0 && (c & (3u * round_bit - 1u)) != 0) half_coef++;
    return sign | half_coef;
  }
  const uint32_t half = sign | (static_cast<uint32_t>(half_exp) << 10) | (coef >> 13);
  const uint32_t round_bit = 0x00001000u;
  // A carry out of the mantissa is the right answer, up to Inf.
  if ((coef & round_bit) != 0 && (coef & (3u * round_bit - 1u)) != 0) return half + 1u;
  return half;
}

// reference.F16ToF32: exact; a NaN comes back quiet.
ARTEST_HD inline float f16_to_f32(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1fu) return f32_from_bits(sign | 0x7f800000u | (mant != 0 ? 0x00400000u : 0u) | (mant << 13));
  if (exp != 0) return f32_from_bits(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return f32_from_bits(sign);
  // Subnormal: normalise; the value is mant * 2^-24.
  uint32_t e = 113u;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    e--;
  }
  return f32_from_bits(sign | (e << 23) | ((mant & 0x3ffu) << 13));
}

// DType.FromF32: f rounded to dtype, as bits.
ARTEST_HD inline uint32_t dtype_from_f32(uint32_t dtype, float f) {
  const uint32_t b = f32_bits(f);
  if (dtype == DTYPE_BF16) return bf16_from_f32(b);
  if (dtype == DTYPE_F16) return f16_from_f32(b);
  return b;
}

// DType.ToF64: exact.
ARTEST_HD inline double dtype_to_f64(uint32_t dtype, uint32_t bits) {
  if (dtype == DTYPE_BF16) return static_cast<double>(f32_from_bits(bits << 16));
  if (dtype == DTYPE_F16) return static_cast<double>(f16_to_f32(bits));
  return static_cast<double>(f32_from_bits(bits));
}

ARTEST_HD inline uint32_t dtype_precision(uint32_t dtype) {
  return dtype == DTYPE_BF16 ? 8u : dtype == DTYPE_F16 ? 11u : 24u;
}

// ---------------------------------------------------------------------------
// The generator (reference.Gen): one hash per element shared by all ranks;
// rank r's input is bit field r % per of hash word r / per.

ARTEST_HD inline uint64_t wymix(uint64_t x) {
  const uint64_t y = x ^ kWyKey;
#if defined(__CUDA_ARCH__)
  return __umul64hi(x, y) ^ (x * y);
#else
  const unsigned __int128 p = static_cast<unsigned __int128>(x) * y;
  return static_cast<uint64_t>(p >> 64) ^ static_cast<uint64_t>(p);
#endif
}

ARTEST_HD inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

ARTEST_HD inline uint64_t elem_key(uint64_t seed, uint64_t iter) { return mix64(mix64(seed + kGolden) ^ iter); }
ARTEST_HD inline uint64_t elem_hash(uint64_t key, uint64_t index) { return wymix(key + index * kGolden); }
ARTEST_HD inline uint64_t hash_word(uint64_t h, uint32_t w) { return w == 0 ? h : wymix(h + w * kGolden); }

// How one (kind, dtype) turns hash bits into inputs.
struct Scheme {
  uint32_t kind;
  uint32_t width;      // bits per rank
  uint32_t per;        // ranks per hash word
  uint32_t mant_bits;  // Random: mantissa bits of the field
  uint64_t mask;
};

ARTEST_HD inline Scheme scheme_of(uint32_t kind, uint32_t dtype) {
  Scheme s;
  s.kind = kind;
  s.width = kind == KIND_EXACT ? kExactBits : 1u + kBinadeBits + dtype_precision(dtype) - 1u;
  s.per = 64u / s.width;
  s.mant_bits = s.width - 1u - kBinadeBits;
  s.mask = (1ull << s.width) - 1u;
  return s;
}

ARTEST_HD inline uint64_t field(const Scheme& s, uint64_t h, uint32_t rank) {
  return (hash_word(h, rank / s.per) >> (s.width * (rank % s.per))) & s.mask;
}

// An input as float (the dtype's value exactly).
ARTEST_HD inline float input_value(const Scheme& s, uint64_t f) {
#if defined(ARTEST_CHECK_PLANT)
  // The planted disagreement of kernels/check_test.go: one field value in
  // 256 decodes to another input (bit 4 flipped: another Exact integer,
  // another Random mantissa), so the agreement test must fail.
  if ((f & 0xffu) == 0x2au) f ^= 0x10u;
#endif
  if (s.kind == KIND_EXACT) return static_cast<float>(static_cast<int>((f * kExactSpan) >> kExactBits) + kExactMin);
  const uint32_t m = s.mant_bits;
  const uint32_t mant = static_cast<uint32_t>(f) & ((1u << m) - 1u);
  const uint32_t binade = static_cast<uint32_t>(f >> m) & ((1u << kBinadeBits) - 1u);
  const uint32_t sign = static_cast<uint32_t>(f >> (m + kBinadeBits)) & 1u;
  return f32_from_bits(sign << 31 | (kRandomExpBase + binade) << 23 | mant << (23u - m));
}

// A Random input in units of 2^(RandomMinExp - mant_bits), the spacing of
// its lowest binade: exact integers, so sums of them are exact.
ARTEST_HD inline int64_t input_units(const Scheme& s, uint64_t f, int64_t* mag) {
  const uint32_t m = s.mant_bits;
  const uint64_t mant = f & ((1ull << m) - 1u);
  const uint32_t binade = static_cast<uint32_t>(f >> m) & ((1u << kBinadeBits) - 1u);
  const int64_t a = static_cast<int64_t>(((1ull << m) | mant) << binade);
  *mag = a;
  return ((f >> (m + kBinadeBits)) & 1u) != 0 ? -a : a;
}

// reference.Gen.Bits: rank's input of element index in iteration iter.
ARTEST_HD inline uint32_t input_bits(uint32_t dtype, const Scheme& s, uint64_t key, uint32_t rank, uint64_t index) {
  return dtype_from_f32(dtype, input_value(s, field(s, elem_hash(key, index), rank)));
}

// ---------------------------------------------------------------------------
// The expected output (reference.CheckSpec and its reducer).

struct Spec {
  uint64_t key;
  Scheme s;
  uint32_t dtype, op, nranks;
  bool bounded;  // a Random sum in an unknown order: checked within a bound
  double unit;   // Random: the value of one input unit
  // The bound is bound_abs * sum|x_r| + bound_ref * |ref| (reference/doc.go).
  double bound_abs, bound_ref;
};

ARTEST_HD inline Spec make_spec(uint64_t seed, uint64_t iter, uint32_t kind, uint32_t dtype, uint32_t op,
                                uint32_t order, uint32_t nranks) {
  Spec sp;
  sp.key = elem_key(seed, iter);
  sp.s = scheme_of(kind, dtype);
  sp.dtype = dtype;
  sp.op = op;
  sp.nranks = nranks;
  sp.bounded = kind == KIND_RANDOM && op == OP_SUM && order == ORDER_UNKNOWN;
  sp.unit = pow2(kRandomMinExp - static_cast<int>(sp.s.mant_bits));
  const double u = pow2(-static_cast<int>(dtype_precision(dtype)));
  sp.bound_abs = static_cast<double>(nranks - 1) * u;
  sp.bound_ref = u;
  return sp;
}

// The rank-ascending float32 reduction of the element with hash h: for sum
// acc = +0, then acc += x_r for r = 0..n-1 (+0 + x0 is x0: the generator
// never makes -0); for max and min acc = x0, then the comparison. For max,
// min and Exact inputs it is the exact result in any order.
ARTEST_HD inline float acc_f32(const Spec& sp, uint64_t h) {
  if (sp.op == OP_SUM) {
    float acc = 0.0f;
    uint64_t w = h;
    uint32_t left = sp.nranks;
    for (uint32_t word = 1;; ++word) {
      const uint32_t k = left < sp.s.per ? left : sp.s.per;
      for (uint32_t i = 0; i < k; ++i) {
        acc = fadd(acc, input_value(sp.s, w & sp.s.mask));
        w >>= sp.s.width;
      }
      left -= k;
      if (left == 0) return acc;
      w = hash_word(h, word);
    }
  }
  const bool is_max = sp.op == OP_MAX;
  float acc = input_value(sp.s, h & sp.s.mask);
  for (uint32_t r = 1; r < sp.nranks; ++r) {
    const float v = input_value(sp.s, field(sp.s, h, r));
    if ((is_max && v > acc) || (!is_max && v < acc)) acc = v;
  }
  return acc;
}

// The exact sum of a Random element's inputs and of their magnitudes, in
// units (reference fixedSum).
ARTEST_HD inline void sum_units(const Spec& sp, uint64_t h, int64_t* sum, int64_t* mag) {
  int64_t s = 0, m = 0;
  uint64_t w = h;
  uint32_t left = sp.nranks;
  for (uint32_t word = 1;; ++word) {
    const uint32_t k = left < sp.s.per ? left : sp.s.per;
    for (uint32_t i = 0; i < k; ++i) {
      int64_t a;
      s += input_units(sp.s, w & sp.s.mask, &a);
      m += a;
      w >>= sp.s.width;
    }
    left -= k;
    if (left == 0) break;
    w = hash_word(h, word);
  }
  *sum = s;
  *mag = m;
}

// What element index must be: bits (bit-exact) or within bound of value.
struct Expect {
  bool bit_exact;
  uint32_t bits;  // bit-exact only
  double value;   // the expected value, or the exact float64 reference sum
  double bound;   // bounded only
};

ARTEST_HD inline double bound_of(const Spec& sp, double ref, double abs) {
  return dadd(dmul(sp.bound_abs, abs), dmul(sp.bound_ref, dabs(ref)));
}

ARTEST_HD inline Expect expect(const Spec& sp, uint64_t index) {
  const uint64_t h = elem_hash(sp.key, index);
  Expect e;
  if (sp.bounded) {
    int64_t sum, mag;
    sum_units(sp, h, &sum, &mag);
    e.bit_exact = false;
    e.bits = 0;
    e.value = dmul(static_cast<double>(sum), sp.unit);
    e.bound = bound_of(sp, e.value, dmul(static_cast<double>(mag), sp.unit));
    return e;
  }
  e.bit_exact = true;
  e.bits = dtype_from_f32(sp.dtype, acc_f32(sp, h));
  e.value = dtype_to_f64(sp.dtype, e.bits);
  e.bound = 0;
  return e;
}

// Whether got (dtype bits) is right for element index, as reference.Check
// judges it: bit for bit, or |got - ref| <= bound (false for NaN and Inf).
// want gets the expected bits (0 when bounded), ref the expected value.
ARTEST_HD inline bool check_elem(const Spec& sp, uint64_t index, uint32_t got, uint32_t* want, double* ref) {
  const Expect e = expect(sp, index);
  *want = e.bits;
  *ref = e.value;
  if (e.bit_exact) return got == e.bits;
  const double err = dabs(dsub(dtype_to_f64(sp.dtype, got), e.value));
  return err <= e.bound;
}

}  // namespace check
}  // namespace artest
