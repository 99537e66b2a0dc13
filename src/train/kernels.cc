// The trainer's GELU and underflow count, written once for every SIMD target (see kernels.h).
// Its matrix products are the library's MatMul and Addmm (mantissa/ops/matmul.h).
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "train/kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <vector>

#include "core/math-inl.h"
#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::train::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using mantissa::HWY_NAMESPACE::Exp;
using mantissa::HWY_NAMESPACE::Fp16;
using mantissa::HWY_NAMESPACE::Fp32;
using mantissa::HWY_NAMESPACE::LoadF32;

// tanh(u) = 1 - 2 / (1 + exp(2u)): exp overflows to inf for large u (tanh = 1) and underflows to
// 0 for very negative u (tanh = -1), so no clamping is needed.
template <class D>
HWY_INLINE hn::Vec<D> Tanh(D d, hn::Vec<D> u) {
  const auto one = hn::Set(d, 1.0f);
  const auto e = Exp(d, hn::Add(u, u));
  return hn::Sub(one, hn::Div(hn::Set(d, 2.0f), hn::Add(one, e)));
}

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

template <class D>
HWY_INLINE hn::Vec<D> GeluInner(D d, hn::Vec<D> x) {
  const auto x3 = hn::Mul(hn::Mul(x, x), x);
  return hn::Mul(hn::Set(d, kSqrt2OverPi), hn::Add(x, hn::Mul(hn::Set(d, kGeluCubic), x3)));
}

void GeluForwardImpl(const float* x_all, float* y_all, int64_t n) {
  auto chunk = [x_all, y_all](int64_t begin, int64_t end) {
    const float* const x = x_all;  // locals, kept in registers across the stores
    float* const y = y_all;
    mantissa::HWY_NAMESPACE::ForEachVector(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      const auto xv = hn::LoadU(d, x + i);
      const auto t = Tanh(d, GeluInner(d, xv));
      const auto half_x = hn::Mul(hn::Set(d, 0.5f), xv);
      hn::StoreU(hn::Mul(half_x, hn::Add(hn::Set(d, 1.0f), t)), d, y + i);
    });
  };
  mantissa::detail::parallel_for(n, mantissa::detail::kDefaultGrain, chunk);
}

// d/dx gelu = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
void GeluBackwardImpl(const float* x_all, const float* dy_all, float* dx_all, int64_t n) {
  auto chunk = [x_all, dy_all, dx_all](int64_t begin, int64_t end) {
    const float* const x = x_all;  // locals, kept in registers across the stores
    const float* const dy = dy_all;
    float* const dx = dx_all;
    mantissa::HWY_NAMESPACE::ForEachVector(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      const auto xv = hn::LoadU(d, x + i);
      const auto one = hn::Set(d, 1.0f);
      const auto half = hn::Set(d, 0.5f);
      const auto t = Tanh(d, GeluInner(d, xv));
      const auto du =
          hn::Mul(hn::Set(d, kSqrt2OverPi),
                  hn::Add(one, hn::Mul(hn::Set(d, 3.0f * kGeluCubic), hn::Mul(xv, xv))));
      const auto left = hn::Mul(half, hn::Add(one, t));
      const auto right = hn::Mul(hn::Mul(hn::Mul(half, xv), hn::Sub(one, hn::Mul(t, t))), du);
      hn::StoreU(hn::Mul(hn::LoadU(d, dy + i), hn::Add(left, right)), d, dx + i);
    });
  };
  mantissa::detail::parallel_for(n, mantissa::detail::kDefaultGrain, chunk);
}

// Elements nonzero in fp32 whose 16-bit rounding (fp16 or bf16 bits) is +-0.
int64_t CountUnderflowImpl(const float* src, const uint16_t* bits, int64_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::Rebind<uint16_t, decltype(d)> d16;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t count = 0, i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto magnitude =
        hn::And(hn::PromoteTo(du, hn::LoadU(d16, bits + i)), hn::Set(du, 0x7FFFu));
    const auto lost = hn::And(hn::RebindMask(d, hn::Eq(magnitude, hn::Zero(du))),
                              hn::Ne(hn::LoadU(d, src + i), hn::Zero(d)));
    count += static_cast<int64_t>(hn::CountTrue(d, lost));
  }
  for (; i < n; ++i) count += ((bits[i] & 0x7FFF) == 0 && src[i] != 0.0f) ? 1 : 0;
  return count;
}

}  // namespace mantissa::train::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/runtime_internal.h"
#include "train/kernels.h"

namespace mantissa::train::detail {

HWY_EXPORT(GeluForwardImpl);
HWY_EXPORT(GeluBackwardImpl);
HWY_EXPORT(CountUnderflowImpl);

int64_t count_underflow(const float* src, const uint16_t* bits, int64_t n) {
  if (n <= 0) return 0;
  mantissa::detail::ensure_runtime_initialized();
  return HWY_DYNAMIC_DISPATCH(CountUnderflowImpl)(src, bits, n);
}

void gelu_forward(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  mantissa::detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(GeluForwardImpl)(x, y, n);
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
  if (n <= 0) return;
  mantissa::detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(GeluBackwardImpl)(x, dy, dx, n);
}

}  // namespace mantissa::train::detail
#endif  // HWY_ONCE
