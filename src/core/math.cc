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

// fp32 in, the fp64 function F (Erf64, Tanh64) on the widened values, rounded once to fp32
// (canonical NaN).
template <class F>
void F32ThroughF64(const float* in, float* out, int64_t n, F f) {
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
  const auto nan = hn::BitCast(df, hn::Set(hn::RebindToSigned<decltype(df)>(), 0x7FC00000));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto x = hn::LoadU(df, in + i);
    const auto y = DemoteF64ToF32(df, dd, f(dd, hn::PromoteTo(dd, x)));
    hn::StoreU(hn::IfThenElse(hn::IsNaN(y), nan, y), df, out + i);
  }
  const hn::CappedTag<double, 1> d1;
  const hn::Rebind<float, decltype(d1)> df1;
  const auto nan1 = hn::BitCast(df1, hn::Set(hn::RebindToSigned<decltype(df1)>(), 0x7FC00000));
  for (; i < n; ++i) {
    const auto y = DemoteF64ToF32(df1, d1, f(d1, hn::PromoteTo(d1, hn::LoadU(df1, in + i))));
    hn::StoreU(hn::IfThenElse(hn::IsNaN(y), nan1, y), df1, out + i);
  }
}

// The fp64 function F over an fp64 array, full vectors then the one-lane tail.
template <class F>
void F64Array(const double* in, double* out, int64_t n, F f) {
  const hn::ScalableTag<double> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(d, hn::LoadU(d, in + i)), d, out + i);
  const hn::CappedTag<double, 1> d1;
  for (; i < n; ++i) hn::StoreU(f(d1, hn::LoadU(d1, in + i)), d1, out + i);
}

struct ErfOp {
  template <class D>
  hn::Vec<D> operator()(D d, hn::Vec<D> x) const {
    return Erf64(d, x);
  }
};
struct TanhOp {
  template <class D>
  hn::Vec<D> operator()(D d, hn::Vec<D> x) const {
    return Tanh64(d, x);
  }
};
// erfc on the whole line: ErfcNonNegative64(|x|), and 2 - that for x < 0.
struct ErfcOp {
  template <class D>
  hn::Vec<D> operator()(D d, hn::Vec<D> x) const {
    hn::Vec<D> c[1] = {hn::Abs(x)};
    ErfcNonNegative64(d, c);
    return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Sub(hn::Set(d, 2.0), c[0]), c[0]);
  }
};

void ErfF32Array(const float* in, float* out, int64_t n) { F32ThroughF64(in, out, n, ErfOp{}); }
void TanhF32Array(const float* in, float* out, int64_t n) { F32ThroughF64(in, out, n, TanhOp{}); }
void ErfF64Array(const double* in, double* out, int64_t n) { F64Array(in, out, n, ErfOp{}); }
void ErfcF64Array(const double* in, double* out, int64_t n) { F64Array(in, out, n, ErfcOp{}); }
void TanhF64Array(const double* in, double* out, int64_t n) { F64Array(in, out, n, TanhOp{}); }

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/runtime_internal.h"
#include "mantissa/math.h"

namespace mantissa {

HWY_EXPORT(ExpArray);
HWY_EXPORT(LogArray);
HWY_EXPORT(Exp64Array);
HWY_EXPORT(ErfF32Array);
HWY_EXPORT(TanhF32Array);
HWY_EXPORT(ErfF64Array);
HWY_EXPORT(ErfcF64Array);
HWY_EXPORT(TanhF64Array);

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

void erf_f32(const float* in, float* out, int64_t n) {
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(ErfF32Array)(in, out, n);
}

void tanh_f32(const float* in, float* out, int64_t n) {
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(TanhF32Array)(in, out, n);
}

void erf_f64(const double* in, double* out, int64_t n) {
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(ErfF64Array)(in, out, n);
}

void erfc_f64(const double* in, double* out, int64_t n) {
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(ErfcF64Array)(in, out, n);
}

void tanh_f64(const double* in, double* out, int64_t n) {
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(TanhF64Array)(in, out, n);
}

}  // namespace mantissa
#endif  // HWY_ONCE
