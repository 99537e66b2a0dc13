// Symmetric INT8 quantize and dequantize, written once for every SIMD target:
//   q = clamp(round_half_even(x / scale), lo, 127)    (NaN -> 0)
//   x = q * scale                                     (one fp32 product, rounded to the dtype)
// Division and rounding are exact IEEE operations, so every target gives the same bits.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "calib/int8.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cstdint>

#include "calib/int8.h"
#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

template <class Format>
void QuantizeRows(const detail::Int8KernelArgs& a) {
  using S = typename Format::Storage;
  // Rows of `inner` elements sharing one scale, cut into chunks of rows.
  const int64_t rows = a.outer * a.channels;
  auto chunk = [&a](int64_t begin, int64_t end) {
    // Locals of the chunk, not reads through `a` or captures: an int8 store may alias any memory
    // the closure reaches, so those would be read again after every store (see ops/sgd/sgd.cc).
    const S* const x = static_cast<const S*>(a.x);
    int8_t* const q = static_cast<int8_t*>(a.q);
    const float* const scales = a.scales;
    const int64_t n = a.inner, channels = a.channels;
    const float lo = static_cast<float>(a.lo);
    for (int64_t r = begin; r < end; ++r) {
      const float scale = scales[r % channels];
      ForEachVector(r * n, (r + 1) * n, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
        const hn::RebindToSigned<decltype(d)> di;
        const hn::Rebind<int16_t, decltype(d)> d16;
        const hn::Rebind<int8_t, decltype(d)> d8;
        const auto v = LoadF32<Format>(d, x + i);
        auto t = hn::Round(hn::Div(v, hn::Set(d, scale)));  // ties to even
        t = hn::Min(hn::Max(t, hn::Set(d, lo)), hn::Set(d, 127.0f));
        t = hn::IfThenZeroElse(hn::IsNaN(v), t);
        const auto i32 = hn::ConvertTo(di, t);  // exact: an integer in [-128, 127]
        hn::StoreU(hn::DemoteTo(d8, hn::DemoteTo(d16, i32)), d8, q + i);
      });
    }
  };
  detail::parallel_for(
      rows, std::max<int64_t>(1, detail::kDefaultGrain / std::max<int64_t>(1, a.inner)), chunk);
}

template <class Format>
void DequantizeRows(const detail::Int8KernelArgs& a) {
  using S = typename Format::Storage;
  const int64_t rows = a.outer * a.channels;
  auto chunk = [&a](int64_t begin, int64_t end) {
    // Locals of the chunk, as in QuantizeRows.
    const int8_t* const q = static_cast<const int8_t*>(a.q);
    S* const y = static_cast<S*>(a.y);
    const float* const scales = a.scales;
    const int64_t n = a.inner, channels = a.channels;
    for (int64_t r = begin; r < end; ++r) {
      const float scale = scales[r % channels];
      ForEachVector(r * n, (r + 1) * n, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
        const hn::RebindToSigned<decltype(d)> di;
        const hn::Rebind<int16_t, decltype(d)> d16;
        const hn::Rebind<int8_t, decltype(d)> d8;
        const auto i32 = hn::PromoteTo(di, hn::PromoteTo(d16, hn::LoadU(d8, q + i)));
        StoreResult<Format>(d, hn::Mul(hn::ConvertTo(d, i32), hn::Set(d, scale)), y + i);
      });
    }
  };
  detail::parallel_for(
      rows, std::max<int64_t>(1, detail::kDefaultGrain / std::max<int64_t>(1, a.inner)), chunk);
}

void QuantizeImpl(const detail::Int8KernelArgs& a) {
  VisitFormat(a.dtype, [&](auto format) { QuantizeRows<decltype(format)>(a); });
}
void DequantizeImpl(const detail::Int8KernelArgs& a) {
  VisitFormat(a.dtype, [&](auto format) { DequantizeRows<decltype(format)>(a); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/runtime_internal.h"

namespace mantissa::detail {

HWY_EXPORT(QuantizeImpl);
HWY_EXPORT(DequantizeImpl);

void quantize_int8_kernel(const Int8KernelArgs& a) {
  ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(QuantizeImpl)(a);
}
void dequantize_int8_kernel(const Int8KernelArgs& a) {
  ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(DequantizeImpl)(a);
}

}  // namespace mantissa::detail
#endif  // HWY_ONCE
