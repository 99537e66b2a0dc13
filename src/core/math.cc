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

void exp_f32(const float* in, float* out, int64_t n) {
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(ExpArray)(in, out, n);
}

void log_f32(const float* in, float* out, int64_t n) {
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(LogArray)(in, out, n);
}

}  // namespace mantissa
#endif  // HWY_ONCE
