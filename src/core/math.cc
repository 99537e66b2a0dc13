// Array entry points of core/math-inl.h, dispatched once per call to the current SIMD target.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/math.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include "core/math-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

void ExpArray(const float* in, float* out, int64_t n) {
  ForEachVector(0, n, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
    hn::StoreU(Exp(d, hn::LoadU(d, in + i)), d, out + i);
  });
}

void Exp64Array(const double* in, double* out, int64_t n) {
  const hn::ScalableTag<double> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(Exp64(d, hn::LoadU(d, in + i)), d, out + i);
  const hn::CappedTag<double, 1> d1;
  for (; i < n; ++i) hn::StoreU(Exp64(d1, hn::LoadU(d1, in + i)), d1, out + i);
}

void LogArray(const float* in, float* out, int64_t n) {
  ForEachVector(0, n, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
    hn::StoreU(Log(d, hn::LoadU(d, in + i)), d, out + i);
  });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/runtime_internal.h"
#include "mantissa/math.h"

namespace mantissa {

HWY_EXPORT(ExpArray);
HWY_EXPORT(LogArray);
HWY_EXPORT(Exp64Array);

void exp_f32(const float* in, float* out, int64_t n) {
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(ExpArray)(in, out, n);
}

void exp_f64(const double* in, double* out, int64_t n) {
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(Exp64Array)(in, out, n);
}

void log_f32(const float* in, float* out, int64_t n) {
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(LogArray)(in, out, n);
}

}  // namespace mantissa
#endif  // HWY_ONCE
