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

// exp(x), max error 0.99 ulp (docs/math.md). exp(-inf) = +0, exp(+inf) = +inf, NaN -> canonical
// NaN; results below half the smallest subnormal round to +0, above FLT_MAX to +inf; subnormal
// results are rounded once.
template <class D>
HWY_INLINE hn::Vec<D> Exp(D d, hn::Vec<D> x) {
  const hn::RebindToSigned<D> di;
  // exp(-104) is below half the smallest subnormal and exp(89) above FLT_MAX, so clamping
  // changes no finite result and maps -inf to 0 and +inf to inf. (NaN is replaced at the end.)
  const auto xc = hn::Min(hn::Max(x, hn::Set(d, -104.0f)), hn::Set(d, 89.0f));
  // n = round-to-nearest-even(x / ln 2): adding and subtracting 1.5 * 2^23 rounds |v| < 2^22 to
  // an integer in every target's fp32 addition.
  const auto magic = hn::Set(d, 12582912.0f);
  const auto n = hn::Sub(hn::Add(hn::Mul(xc, hn::Set(d, 1.44269504088896341f)), magic), magic);
  // r = x - n ln 2 in two steps (Cody and Waite): ln2_hi has 9 significant bits, so n * ln2_hi
  // (|n| <= 151) is exact and so is x - n * ln2_hi (Sterbenz); only the small n * ln2_lo
  // term rounds. It's necessary to keep the order of the operations.
  const auto r = hn::Sub(hn::Sub(xc, hn::Mul(n, hn::Set(d, 0.693359375f))),
                         hn::Mul(n, hn::Set(d, -2.12194440e-4f)));
  // exp(r) on |r| <= 0.35: 1 + r + r^2 * p(r), Horner with separate multiply and add.
  auto p = hn::Set(d, 1.9875691500e-4f);
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.3981999507e-3f));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 8.3334519073e-3f));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 4.1665795894e-2f));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 1.6666665459e-1f));
  p = hn::Add(hn::Mul(p, r), hn::Set(d, 5.0000001201e-1f));
  const auto y = hn::Add(hn::Add(hn::Mul(p, hn::Mul(r, r)), r), hn::Set(d, 1.0f));
  // y * 2^n as y * 2^n1 * 2^n2 with n1 = floor(n / 2), n2 = n - n1: both factors are normal
  // powers of two for n in [-151, 129]; the first product is exact (a normal number) and the
  // second rounds once, also when the result is subnormal or overflows.
  const auto ni = hn::ConvertTo(di, n);
  const auto n1 = hn::ShiftRight<1>(ni);  // arithmetic shift: floor
  const auto n2 = hn::Sub(ni, n1);
  const auto bias = hn::Set(di, 127);
  const auto s1 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n1, bias)));
  const auto s2 = hn::BitCast(d, hn::ShiftLeft<23>(hn::Add(n2, bias)));
  const auto result = hn::Mul(hn::Mul(y, s1), s2);
  return hn::IfThenElse(hn::IsNaN(x), hn::BitCast(d, hn::Set(di, 0x7FC00000)), result);
}

// exp(x) on fp64 lanes, for kernels that carry an fp32 input's exponential into an fp64
// computation (LogSoftmaxGrad's exp(y) * sum(dy), where an fp32 exp's rounding would be amplified
// by cancellation). Max error 1.13 ulp of fp64 (docs/math.md). The same steps as Exp, widened:
// exp(-inf) = +0, exp(+inf) = +inf, NaN -> canonical NaN, results below half the smallest
// subnormal round to +0, above DBL_MAX to +inf.
//
// K vectors in place, each step applied to all K before the next: the degree-13 Horner chain is
// about 30 dependent operations, and K independent chains in one stretch of code keep the
// multipliers busy where one chain would wait on its own latency. Every lane goes through the
// same operations whatever K is, so K never changes a bit.
template <size_t K, class D>
HWY_INLINE void Exp64(D d, hn::Vec<D> (&x)[K]) {
  const hn::RebindToSigned<D> di;
  // exp(-746) is below half the smallest subnormal and exp(710) above DBL_MAX.
  const auto lo = hn::Set(d, -746.0), hi = hn::Set(d, 710.0);
  // n = round-to-nearest-even(x / ln 2) by adding and subtracting 1.5 * 2^52.
  const auto magic = hn::Set(d, 6755399441055744.0);
  const auto log2e = hn::Set(d, 1.4426950408889634);
  // r = x - n ln 2 in two steps: ln2_hi has 32 significant bits, so n * ln2_hi (|n| <= 1077) is
  // exact. It's necessary to keep the order of the operations.
  const auto ln2_hi = hn::Set(d, 0x1.62e42feep-1), ln2_lo = hn::Set(d, 0x1.a39ef35793c76p-33);
  hn::Vec<D> shifted[K], r[K], y[K];
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    const auto xc = hn::Min(hn::Max(x[k], lo), hi);
    shifted[k] = hn::Add(hn::Mul(xc, log2e), magic);
    const auto n = hn::Sub(shifted[k], magic);
    r[k] = hn::Sub(hn::Sub(xc, hn::Mul(n, ln2_hi)), hn::Mul(n, ln2_lo));
  }
  // exp(r) on |r| <= 0.35: the Taylor polynomial of degree 13 (truncation below 0.04 ulp),
  // Horner with separate multiply and add, coefficients 1/k! rounded to fp64.
  static constexpr double kInvFactorial[] = {1.0 / 6227020800.0,
                                             1.0 / 479001600.0,
                                             1.0 / 39916800.0,
                                             1.0 / 3628800.0,
                                             1.0 / 362880.0,
                                             1.0 / 40320.0,
                                             1.0 / 5040.0,
                                             1.0 / 720.0,
                                             1.0 / 120.0,
                                             1.0 / 24.0,
                                             1.0 / 6.0,
                                             0.5,
                                             1.0,
                                             1.0};
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) y[k] = hn::Set(d, kInvFactorial[0]);
#pragma GCC unroll 16
  for (int j = 1; j < 14; ++j) {
    const auto c = hn::Set(d, kInvFactorial[j]);
#pragma GCC unroll 8
    for (size_t k = 0; k < K; ++k) y[k] = hn::Add(hn::Mul(y[k], r[k]), c);
  }
  // y * 2^n as y * 2^n1 * 2^n2 with n1 = floor(n / 2), n2 = n - n1 (both normal powers of two).
  // n as an integer: magic + n lies in magic's binade [2^52, 2^53), so the difference of the two
  // bit patterns is n (no fp64 to int64 conversion, which most x86 targets lack).
  const auto bias = hn::Set(di, 1023);
  const auto nan = hn::BitCast(d, hn::Set(di, 0x7FF8000000000000LL));
#pragma GCC unroll 8
  for (size_t k = 0; k < K; ++k) {
    const auto ni = hn::Sub(hn::BitCast(di, shifted[k]), hn::BitCast(di, magic));
    const auto n1 = hn::ShiftRight<1>(ni);  // arithmetic shift: floor
    const auto n2 = hn::Sub(ni, n1);
    const auto s1 = hn::BitCast(d, hn::ShiftLeft<52>(hn::Add(n1, bias)));
    const auto s2 = hn::BitCast(d, hn::ShiftLeft<52>(hn::Add(n2, bias)));
    const auto result = hn::Mul(hn::Mul(y[k], s1), s2);
    x[k] = hn::IfThenElse(hn::IsNaN(x[k]), nan, result);
  }
}

// One vector.
template <class D>
HWY_INLINE hn::Vec<D> Exp64(D d, hn::Vec<D> x) {
  hn::Vec<D> v[1] = {x};
  Exp64(d, v);
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
