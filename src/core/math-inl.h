// Per-target elementary functions on fp32 lanes: Exp and Log, written once for every SIMD target
// (the one-lane tail included) so that every target gives the same bits.
//
// Only lane operations that are exactly rounded on every target are used: separate Mul, Add
// and Sub (never MulAdd: targets without FMA must give the same bits as those with it),
// comparisons, selects and integer bit operations. Rounding to an integer uses the add-and-
// subtract-1.5*2^23 trick rather than Round, whose implementation differs between targets.
// Accuracy, measured against fp64 over all 2^32 inputs (tests/test_math_exhaustive.cc), is stated
// in docs/math.md.
//
// Glossary: D is a descriptor of fp32 lanes; "canonical NaN" is 0x7FC00000.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_CORE_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_CORE_MATH_INL_H_
#undef MANTISSA_CORE_MATH_INL_H_
#else
#define MANTISSA_CORE_MATH_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// y * 2^n where that product is a normal number: n added to y's exponent field (exact).
template <class D>
HWY_INLINE hn::Vec<D> AddToExponent(D d, hn::Vec<D> y, hn::Vec<hn::RebindToSigned<D>> n) {
  constexpr int kMantissaBits = sizeof(hn::TFromD<D>) == 4 ? 23 : 52;
  const hn::RebindToSigned<D> di;
  return hn::BitCast(d, hn::Add(hn::BitCast(di, y), hn::ShiftLeft<kMantissaBits>(n)));
}

// Whether every lane of the K vectors has |x| < bound (false where a lane is NaN): one branch
// for the vectors Exp and Exp64 evaluate together.
template <size_t K, class D>
HWY_INLINE bool AllBelow(D d, const hn::Vec<D> (&x)[K], hn::TFromD<D> bound) {
  const auto b = hn::Set(d, bound);
  auto below = hn::Lt(hn::Abs(x[0]), b);
#pragma GCC unroll 8
  for (size_t k = 1; k < K; ++k) below = hn::And(below, hn::Lt(hn::Abs(x[k]), b));
  return hn::AllTrue(d, below);
}

// The last step of Exp and Exp64: y * 2^n, y in [0.7, 1.42] and n an integer (lanes of y's width),
// for the exponential of x. Where every lane has |x| < fast_bound (false for NaN) the caller
// guarantees y * 2^n is a normal number: both products below are then exact and equal to y with n
// added to its exponent field, which is what this does instead (the same bits). Otherwise y * 2^n
// as y * 2^n1 * 2^n2 with n1 = floor(n / 2), n2 = n - n1, both normal powers of two over the
// clamped input range: the first product is exact (a normal number) and the second rounds once,
// also when the result is subnormal or overflows; NaN x gives the canonical NaN.
template <class D>
HWY_INLINE hn::Vec<D> ScaleExp(D d, hn::Vec<D> x, hn::Vec<D> y, hn::Vec<hn::RebindToSigned<D>> n,
                               hn::TFromD<D> fast_bound) {
  using T = hn::TFromD<D>;
  using I = hwy::MakeSigned<T>;
  constexpr int kMantissaBits = sizeof(T) == 4 ? 23 : 52;
  constexpr I kBias = sizeof(T) == 4 ? 127 : 1023;
  constexpr I kCanonicalNaN = sizeof(T) == 4 ? I{0x7FC00000} : static_cast<I>(0x7FF8000000000000LL);
  const hn::RebindToSigned<D> di;
  const hn::Vec<D> xs[1] = {x};
  if (HWY_LIKELY(AllBelow(d, xs, fast_bound))) return AddToExponent(d, y, n);
  const auto n1 = hn::ShiftRight<1>(n);  // arithmetic shift: floor
  const auto n2 = hn::Sub(n, n1);
  const auto bias = hn::Set(di, kBias);
  const auto s1 = hn::BitCast(d, hn::ShiftLeft<kMantissaBits>(hn::Add(n1, bias)));
  const auto s2 = hn::BitCast(d, hn::ShiftLeft<kMantissaBits>(hn::Add(n2, bias)));
  const auto result = hn::Mul(hn::Mul(y, s1), s2);
  return hn::IfThenElse(hn::IsNaN(x), hn::BitCast(d, hn::Set(di, kCanonicalNaN)), result);
}

// exp(x) for K vectors in place, the steps of Exp below. kInRange: the caller has checked that
// every lane has |x| < 86, where the clamp changes nothing and y * 2^n is normal (ScaleExp's fast
// path), so neither is computed; otherwise the clamp and ScaleExp's own check. The same bits
// either way.
template <bool kInRange, size_t K, class D>
HWY_INLINE void ExpSteps(D d, hn::Vec<D> (&x)[K]) {
  const hn::RebindToSigned<D> di;
  // exp(-104) is below half the smallest subnormal and exp(89) above FLT_MAX, so clamping
  // changes no finite result and maps -inf to 0 and +inf to inf. (NaN is replaced at the end.)
  const auto lo = hn::Set(d, -104.0f), hi = hn::Set(d, 89.0f);
  // n = round-to-nearest-even(x / ln 2): adding and subtracting 1.5 * 2^23 rounds |v| < 2^22 to
  // an integer in every target's fp32 addition.
  const auto magic = hn::Set(d, 12582912.0f);
  const auto log2e = hn::Set(d, 1.44269504088896341f);
  // r = x - n ln 2 in two steps (Cody and Waite): ln2_hi has 9 significant bits, so n * ln2_hi
  // (|n| <= 151) is exact and so is x - n * ln2_hi (Sterbenz); only the small n * ln2_lo
  // term rounds. It's necessary to keep the order of the operations.
  const auto ln2_hi = hn::Set(d, 0.693359375f), ln2_lo = hn::Set(d, -2.12194440e-4f);
  hn::Vec<D> shifted[K], r[K], p[K];
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    const auto xc = kInRange ? x[k] : hn::Min(hn::Max(x[k], lo), hi);
    shifted[k] = hn::Add(hn::Mul(xc, log2e), magic);
    const auto n = hn::Sub(shifted[k], magic);
    r[k] = hn::Sub(hn::Sub(xc, hn::Mul(n, ln2_hi)), hn::Mul(n, ln2_lo));
  }
  // exp(r) on |r| <= 0.35: 1 + r + r^2 * p(r), Horner with separate multiply and add.
  static constexpr float kCoefficients[] = {1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                                            1.6666665459e-1f, 5.0000001201e-1f};
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) p[k] = hn::Set(d, 1.9875691500e-4f);
#pragma GCC unroll 8
  for (float coefficient : kCoefficients) {
    const auto c = hn::Set(d, coefficient);
#pragma GCC unroll 8
    for (size_t k = 0; k < K; ++k) p[k] = hn::Add(hn::Mul(p[k], r[k]), c);
  }
  const auto one = hn::Set(d, 1.0f);
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    const auto y = hn::Add(hn::Add(hn::Mul(p[k], hn::Mul(r[k], r[k])), r[k]), one);
    // n as an integer: magic + n lies in magic's binade [2^23, 2^24), where the spacing is 1, so
    // the difference of the two bit patterns is n (one subtraction; the conversion instruction
    // needs a fix-up for out-of-range lanes on x86).
    const auto ni = hn::Sub(hn::BitCast(di, shifted[k]), hn::BitCast(di, magic));
    // |x| < 86: |n| <= 124 and y in [0.7, 1.42], so y * 2^n is normal: n added to y's exponent
    // field (ScaleExp's fast path, whose check the caller made). n in [-151, 129] otherwise,
    // where both factors of the two-product scaling are normal powers of two.
    if constexpr (kInRange) {
      x[k] = AddToExponent(d, y, ni);
    } else {
      x[k] = ScaleExp(d, x[k], y, ni, 86.0f);
    }
  }
}

// exp(x), max error 0.99 ulp (docs/math.md). exp(-inf) = +0, exp(+inf) = +inf, NaN -> canonical
// NaN; results below half the smallest subnormal round to +0, above FLT_MAX to +inf; subnormal
// results are rounded once.
//
// K vectors in place, each step applied to all K before the next (as Exp64 below): the chain of
// some 25 dependent operations of one vector would otherwise keep the core waiting on its
// latency. Every lane goes through the same operations whatever K is, so K never changes a bit.
// One range check for all K vectors picks the steps without the clamp and the scaling's check
// (every lane |x| < 86: softmax's x - max of any realistic row) or with them.
template <size_t K, class D>
HWY_INLINE void Exp(D d, hn::Vec<D> (&x)[K]) {
  if (HWY_LIKELY(AllBelow(d, x, 86.0f))) {
    ExpSteps<true>(d, x);
  } else {
    ExpSteps<false>(d, x);
  }
}

// One vector.
template <class D>
HWY_INLINE hn::Vec<D> Exp(D d, hn::Vec<D> x) {
  hn::Vec<D> v[1] = {x};
  Exp(d, v);
  return v[0];
}

// 2^(j/32) for j in [0, 32), each rounded to the nearest fp64 (Exp64's table).
alignas(64) inline constexpr double kExp2ThirtySeconds[32] = {
    0x1.0000000000000p+0, 0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
    0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
    0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
    0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
    0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
    0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f090p+0, 0x1.a5503b23e255dp+0,
    0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
    0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e4540p+0};

// kExp2ThirtySeconds[j] for j in [0, 32) in every lane. On AVX-512 the table is four vectors and
// the lookup two two-vector permutes and a select by bit 4 of j, where a gather issues a load
// per lane (the gather was a third of LogSoftmaxGrad's fp32 time on AMD Zen 5); elsewhere a
// gather. Both read the same table entries: the bits do not depend on the path.
template <class D>
HWY_INLINE hn::Vec<D> Exp2ThirtySeconds(D d, hn::Vec<hn::RebindToSigned<D>> j) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (hn::MaxLanes(D()) == 8) {
    const __m512d t0 = _mm512_load_pd(kExp2ThirtySeconds);
    const __m512d t1 = _mm512_load_pd(kExp2ThirtySeconds + 8);
    const __m512d t2 = _mm512_load_pd(kExp2ThirtySeconds + 16);
    const __m512d t3 = _mm512_load_pd(kExp2ThirtySeconds + 24);
    const __m512d low = _mm512_permutex2var_pd(t0, j.raw, t1);   // bits 0-3 of j
    const __m512d high = _mm512_permutex2var_pd(t2, j.raw, t3);  // bits 0-3 of j
    const __mmask8 upper = _mm512_test_epi64_mask(j.raw, _mm512_set1_epi64(16));
    return hn::Vec<D>{_mm512_mask_blend_pd(upper, low, high)};
  }
#endif
  return hn::GatherIndex(d, kExp2ThirtySeconds, j);
}

// exp(x) on fp64 lanes, for kernels that carry an fp32 input's exponential into an fp64
// computation (LogSoftmaxGrad's exp(y) * sum(dy), where an fp32 exp's rounding would be amplified
// by cancellation). Max error about 1 ulp of fp64 (docs/math.md). exp(-inf) = +0,
// exp(+inf) = +inf, NaN -> canonical NaN, results below half the smallest subnormal round to +0,
// above DBL_MAX to +inf.
//
// exp(x) = 2^n * 2^(j/32) * exp(r) with k = 32 n + j = round(32 x / ln 2): the table value comes
// from Exp2ThirtySeconds (every target reads the same 32 constants, so the bits do not depend on
// how it is read; the index is masked to [0, 32), so every lane read stays in the table, the
// unused lanes of a partial vector included), which leaves |r| <= ln 2 / 64 for a degree-6
// polynomial where the whole range [-ln 2 / 2, ln 2 / 2] would need degree 13.
//
// K vectors in place, each step applied to all K before the next: the Horner chain is a run of
// dependent operations, and K independent chains in one stretch of code keep the multipliers
// busy where one chain would wait on its own latency. Every lane goes through the same
// operations whatever K is, so K never changes a bit. One range check for all K vectors, as in
// Exp: every lane |x| < 700 skips the clamp and the scaling's check (the same bits).
template <bool kInRange, size_t K, class D>
HWY_INLINE void Exp64Steps(D d, hn::Vec<D> (&x)[K]) {
  const hn::RebindToSigned<D> di;
  // exp(-746) is below half the smallest subnormal and exp(710) above DBL_MAX.
  const auto lo = hn::Set(d, -746.0), hi = hn::Set(d, 710.0);
  // k = round-to-nearest-even(32 x / ln 2) by adding and subtracting 1.5 * 2^52.
  const auto magic = hn::Set(d, 6755399441055744.0);
  const auto log2e_32 = hn::Set(d, 0x1.71547652b82fep+5);  // 32 / ln 2 (32 * fp64(1 / ln 2))
  // r = x - k ln2/32 in two steps: ln2_hi/32 has 32 significant bits, so k * ln2_hi/32
  // (|k| < 2^16) is exact and so is x - k * ln2_hi/32 (Sterbenz). It's necessary to keep the
  // order of the operations.
  const auto l_hi = hn::Set(d, 0x1.62e42feep-6), l_lo = hn::Set(d, 0x1.a39ef35793c76p-38);
  hn::Vec<D> shifted[K], r[K], q[K];
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    const auto xc = kInRange ? x[k] : hn::Min(hn::Max(x[k], lo), hi);
    shifted[k] = hn::Add(hn::Mul(xc, log2e_32), magic);
    const auto kf = hn::Sub(shifted[k], magic);
    r[k] = hn::Sub(hn::Sub(xc, hn::Mul(kf, l_hi)), hn::Mul(kf, l_lo));
  }
  // exp(r) - 1 on |r| <= ln 2 / 64 as r + r^2 p(r), p the Taylor polynomial 1/2! + ... + r^4/6!
  // (truncation below 0.04 ulp), Horner with separate multiply and add, coefficients 1/k!
  // rounded to fp64.
  static constexpr double kInvFactorial[] = {1.0 / 720.0, 1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5};
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) q[k] = hn::Set(d, kInvFactorial[0]);
#pragma GCC unroll 8
  for (int i = 1; i < 5; ++i) {
    const auto c = hn::Set(d, kInvFactorial[i]);
#pragma GCC unroll 8
    for (size_t k = 0; k < K; ++k) q[k] = hn::Add(hn::Mul(q[k], r[k]), c);
  }
  // y = t + t * (exp(r) - 1), t = 2^(j/32) from the table; then y * 2^n (ScaleExp). k as an
  // integer: magic + k lies in magic's binade [2^52, 2^53), so the difference of the two bit
  // patterns is k (no fp64 to int64 conversion, which most x86 targets lack).
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    const auto em1 = hn::Add(hn::Mul(q[k], hn::Mul(r[k], r[k])), r[k]);
    const auto ki = hn::Sub(hn::BitCast(di, shifted[k]), hn::BitCast(di, magic));
    const auto t = Exp2ThirtySeconds(d, hn::And(ki, hn::Set(di, 31)));
    const auto y = hn::Add(t, hn::Mul(t, em1));
    const auto n = hn::ShiftRight<5>(ki);  // arithmetic shift: floor(k / 32)
    // |x| < 700: y * 2^n is normal: n added to y's exponent field (ScaleExp's fast path).
    if constexpr (kInRange) {
      x[k] = AddToExponent(d, y, n);
    } else {
      x[k] = ScaleExp(d, x[k], y, n, 700.0);
    }
  }
}

// Returns whether every lane had |x| < 700, so that every result is finite and positive (a
// caller that has to make NaN results canonical may skip that step then).
template <size_t K, class D>
HWY_INLINE bool Exp64(D d, hn::Vec<D> (&x)[K]) {
  if (HWY_LIKELY(AllBelow(d, x, 700.0))) {
    Exp64Steps<true>(d, x);
    return true;
  }
  Exp64Steps<false>(d, x);
  return false;
}

// One vector.
template <class D>
HWY_INLINE hn::Vec<D> Exp64(D d, hn::Vec<D> x) {
  hn::Vec<D> v[1] = {x};
  Exp64(d, v);
  return v[0];
}

// erfc(z) for z >= 0 on fp64 lanes (erfc(+inf) = +0; NaN gives a NaN), K vectors in place, for
// the kernels that need the normal distribution's tails (GELU's erf form) and for Erf64. Relative
// error below 4e-15 for z <= 6 and below z^2 * 2^-52 beyond (the rounding of z^2 in the
// exponent), normal results; docs/math.md.
//
// erfc(z) = t * exp(p(u) - z^2) with t = 2 / (2 + z) in (0, 1] and u = 2t - 1 in (-1, 1]: p is the
// degree-24 Chebyshev interpolant of log(erfc(z) / t) + z^2 over u (a smooth function on the
// whole half-line, tending to -log(2 sqrt(pi)) as z -> inf), rewritten in powers of u (the sum
// of the coefficients' magnitudes is 1.5, so Horner loses nothing) and rounded to fp64; its
// truncation error is below 3e-16. Separate multiply and add, in this order.
template <size_t K, class D>
HWY_INLINE void ErfcNonNegative64(D d, hn::Vec<D> (&z)[K]) {
  static constexpr double kLogErfcPoly[] = {
      // highest degree first
      -0x1.b6fba552f88ccp-27, 0x1.00062e98e5a55p-25,  0x1.4cab7822378b0p-24,
      -0x1.36ea60840aee0p-22, -0x1.64364747c3a27p-25, 0x1.58823a1e913efp-20,
      -0x1.7a586419d1a2cp-20, -0x1.8dc08af7225c5p-19, 0x1.22aa9cca84f23p-17,
      0x1.2c6b60a59bfecp-23,  -0x1.fb4e8945cc100p-16, 0x1.0a500652733cap-15,
      0x1.2b8c9b098c74bp-14,  -0x1.6d8ad131f0ab9p-13, -0x1.892b6dbc8b112p-14,
      0x1.6133aed4d7188p-11,  -0x1.32b360b13da07p-13, -0x1.33786865342aep-9,
      0x1.cd18078f7f2fap-10,  0x1.212cf341492dbp-7,   -0x1.43821ef89faf5p-7,
      -0x1.802b39089fe9ep-5,  0x1.83d61c523fdf4p-5,   0x1.5864b151b857ep-1,
      -0x1.57f564e956ebdp-1};
  const auto one = hn::Set(d, 1.0), two = hn::Set(d, 2.0);
  hn::Vec<D> t[K], u[K], p[K];
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    t[k] = hn::Div(two, hn::Add(two, z[k]));
    u[k] = hn::Sub(hn::Add(t[k], t[k]), one);
    p[k] = hn::Set(d, kLogErfcPoly[0]);
  }
  for (size_t i = 1; i < sizeof(kLogErfcPoly) / sizeof(kLogErfcPoly[0]); ++i) {
    const auto c = hn::Set(d, kLogErfcPoly[i]);
#pragma GCC unroll 8
    for (size_t k = 0; k < K; ++k) p[k] = hn::Add(hn::Mul(p[k], u[k]), c);
  }
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) p[k] = hn::Sub(p[k], hn::Mul(z[k], z[k]));
  Exp64(d, p);
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) z[k] = hn::Mul(t[k], p[k]);
}

// erf(x) on fp64 lanes, K vectors in place: odd, with
//   |x| < 0.5:  x * q(x^2), q the Taylor polynomial 2/sqrt(pi) * sum (-1)^n x^2n / (n! (2n + 1))
//               to n = 11 (truncation below 1e-17 relative), coefficients rounded to fp64;
//   |x| >= 0.5: 1 - erfc(|x|) (ErfcNonNegative64; erfc(0.5) < 0.48, so the subtraction loses
//               nothing), with x's sign.
// Relative error below 5e-16 on normal results (docs/math.md). erf(+-0) = +-0, erf(+-inf) = +-1,
// NaN gives a NaN.
template <size_t K, class D>
HWY_INLINE void Erf64(D d, hn::Vec<D> (&x)[K]) {
  static constexpr double kErfTaylor[] = {
      // highest degree first
      -0x1.51d7181c5d36dp-30, 0x1.fcc5720624c1cp-27, -0x1.5f742ec43e71ap-23, 0x1.b9e6c9dc651a3p-20,
      -0x1.f4d25c3e0c2ebp-17, 0x1.f9a326f9b89b7p-14, -0x1.c02db40040b86p-11, 0x1.565bcd0e6a53fp-8,
      -0x1.b82ce31288b51p-6,  0x1.ce2f21a042be2p-4,  -0x1.812746b0379e7p-2,  0x1.20dd750429b6dp+0};
  const auto half = hn::Set(d, 0.5), one = hn::Set(d, 1.0);
  hn::Vec<D> a[K], c[K];
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    a[k] = hn::Abs(x[k]);
    c[k] = a[k];
  }
  ErfcNonNegative64(d, c);
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    const auto s = hn::Mul(x[k], x[k]);
    auto q = hn::Set(d, kErfTaylor[0]);
    for (size_t i = 1; i < sizeof(kErfTaylor) / sizeof(kErfTaylor[0]); ++i) {
      q = hn::Add(hn::Mul(q, s), hn::Set(d, kErfTaylor[i]));
    }
    const auto large = hn::CopySign(hn::Sub(one, c[k]), x[k]);
    x[k] = hn::IfThenElse(hn::Lt(a[k], half), hn::Mul(x[k], q), large);
  }
}

// tanh(x) on fp64 lanes, K vectors in place: odd, with
//   |x| < 1/16:  x + x^3 q(x^2), q the Taylor series of (tanh(x) - x) / x^3 to x^8 (truncation
//                below 2e-17 relative), coefficients rounded to fp64;
//   |x| >= 1/16: (1 - e) / (1 + e) with e = Exp64(-2|x|) in (0, 0.89], with x's sign (1 - e loses
//                at most 3 bits to cancellation).
// Relative error below 1e-15 (docs/math.md). tanh(+-0) = +-0, tanh(+-inf) = +-1, NaN gives a NaN.
template <size_t K, class D>
HWY_INLINE void Tanh64(D d, hn::Vec<D> (&x)[K]) {
  static constexpr double kTanhTaylor[] = {
      // highest degree first: x^8, ..., x^0
      -0x1.226e355e6c23dp-7, 0x1.664f4882c10fap-6, -0x1.ba1ba1ba1ba1cp-5, 0x1.1111111111111p-3,
      -0x1.5555555555555p-2};
  const auto one = hn::Set(d, 1.0), small = hn::Set(d, 0.0625);
  hn::Vec<D> a[K], e[K];
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    a[k] = hn::Abs(x[k]);
    e[k] = hn::Mul(a[k], hn::Set(d, -2.0));
  }
  Exp64(d, e);
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    const auto s = hn::Mul(x[k], x[k]);
    auto q = hn::Set(d, kTanhTaylor[0]);
    for (size_t i = 1; i < sizeof(kTanhTaylor) / sizeof(kTanhTaylor[0]); ++i) {
      q = hn::Add(hn::Mul(q, s), hn::Set(d, kTanhTaylor[i]));
    }
    // With x's sign: x + (x s) q would give +0 for -0.
    const auto series = hn::CopySign(hn::Add(x[k], hn::Mul(hn::Mul(x[k], s), q)), x[k]);
    const auto large = hn::CopySign(hn::Div(hn::Sub(one, e[k]), hn::Add(one, e[k])), x[k]);
    x[k] = hn::IfThenElse(hn::Lt(a[k], small), series, large);
  }
}

// One vector each.
template <class D>
HWY_INLINE hn::Vec<D> Erf64(D d, hn::Vec<D> x) {
  hn::Vec<D> v[1] = {x};
  Erf64(d, v);
  return v[0];
}
template <class D>
HWY_INLINE hn::Vec<D> Tanh64(D d, hn::Vec<D> x) {
  hn::Vec<D> v[1] = {x};
  Tanh64(d, v);
  return v[0];
}

// log(x), max error 0.83 ulp (docs/math.md). log(+-0) = -inf, log(+inf) = +inf, log(x < 0) and
// log(NaN) = canonical NaN; subnormal inputs are exact.
template <class D>
HWY_INLINE hn::Vec<D> Log(D d, hn::Vec<D> x) {
  const hn::RebindToSigned<D> di;
  // Subnormal inputs: scale by 2^23 (exact) and take 23 off the exponent.
  const auto is_sub = hn::Lt(x, hn::Set(d, 1.17549435e-38f));  // also zero and negatives
  const auto xs = hn::IfThenElse(is_sub, hn::Mul(x, hn::Set(d, 8388608.0f)), x);
  const auto bits = hn::BitCast(di, xs);
  auto e = hn::Sub(hn::ShiftRight<23>(bits), hn::Set(di, 127));
  e = hn::IfThenElse(hn::RebindMask(di, is_sub), hn::Sub(e, hn::Set(di, 23)), e);
  // m in [1, 2), then folded into [sqrt(1/2), sqrt(2)) so that f = m - 1 is small.
  auto m = hn::BitCast(d, hn::Or(hn::And(bits, hn::Set(di, 0x007FFFFF)), hn::Set(di, 0x3F800000)));
  const auto big = hn::Gt(m, hn::Set(d, 1.41421356f));
  m = hn::IfThenElse(big, hn::Mul(m, hn::Set(d, 0.5f)), m);  // exact
  e = hn::IfThenElse(hn::RebindMask(di, big), hn::Add(e, hn::Set(di, 1)), e);
  const auto ef = hn::ConvertTo(d, e);          // exact: |e| < 2^8
  const auto f = hn::Sub(m, hn::Set(d, 1.0f));  // exact (Sterbenz)
  const auto z = hn::Mul(f, f);
  // log(1 + f) = f - f^2 / 2 + f^3 q(f), Horner with separate multiply and add.
  auto q = hn::Set(d, 7.0376836292e-2f);
  q = hn::Add(hn::Mul(q, f), hn::Set(d, -1.1514610310e-1f));
  q = hn::Add(hn::Mul(q, f), hn::Set(d, 1.1676998740e-1f));
  q = hn::Add(hn::Mul(q, f), hn::Set(d, -1.2420140846e-1f));
  q = hn::Add(hn::Mul(q, f), hn::Set(d, 1.4249322787e-1f));
  q = hn::Add(hn::Mul(q, f), hn::Set(d, -1.6668057665e-1f));
  q = hn::Add(hn::Mul(q, f), hn::Set(d, 2.0000714765e-1f));
  q = hn::Add(hn::Mul(q, f), hn::Set(d, -2.4999993993e-1f));
  q = hn::Add(hn::Mul(q, f), hn::Set(d, 3.3333331174e-1f));
  // e ln 2 added in two parts (ln2_hi * e is exact: 9 + 8 bits). It's necessary to keep the
  // order of the operations: the small terms first, the large ones last.
  auto y = hn::Mul(hn::Mul(q, f), z);
  y = hn::Add(y, hn::Mul(ef, hn::Set(d, -2.12194440e-4f)));
  y = hn::Sub(y, hn::Mul(z, hn::Set(d, 0.5f)));
  auto result = hn::Add(hn::Add(f, y), hn::Mul(ef, hn::Set(d, 0.693359375f)));
  const auto inf = hn::Inf(d);
  const auto nan = hn::BitCast(d, hn::Set(di, 0x7FC00000));
  result = hn::IfThenElse(hn::Eq(x, inf), inf, result);
  result = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(inf), result);
  // x < 0 or NaN: NaN (the comparison is false for NaN, so test the complement).
  return hn::IfThenElse(hn::Ge(x, hn::Zero(d)), result, nan);
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_CORE_MATH_INL_H_
