// The bandwidth probe kernel: x_k[i] = x_k[i]*a + (y_0[i] + ...) over fp32 streams, one copy per
// SIMD target. It moves exactly the bytes an element-wise operator with the same streams moves.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "mantissa/bench_probe.cc"
// clang-format off
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cstdint>

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::bench::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <int kRmw, int kRo>
void ProbeStreams(float* const* rmw, const float* const* ro, int64_t begin, int64_t end) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto a = hn::Set(d, 0.999f);
  int64_t i = begin;
  for (; i + lanes <= end; i += lanes) {
    auto y = hn::LoadU(d, ro[0] + i);
    for (int k = 1; k < kRo; ++k) y = hn::Add(y, hn::LoadU(d, ro[k] + i));
    for (int k = 0; k < kRmw; ++k) {
      hn::StoreU(hn::Add(hn::Mul(hn::LoadU(d, rmw[k] + i), a), y), d, rmw[k] + i);
    }
  }
  for (; i < end; ++i) {
    float y = ro[0][i];
    for (int k = 1; k < kRo; ++k) y += ro[k][i];
    for (int k = 0; k < kRmw; ++k) rmw[k][i] = rmw[k][i] * 0.999f + y;
  }
}

void ProbeRange(int rmw_streams, int ro_streams, float* const* rmw, const float* const* ro,
                int64_t begin, int64_t end) {
  if (rmw_streams == 3 && ro_streams == 1) return ProbeStreams<3, 1>(rmw, ro, begin, end);
  if (rmw_streams == 3 && ro_streams == 2) return ProbeStreams<3, 2>(rmw, ro, begin, end);
  if (rmw_streams == 1 && ro_streams == 2) return ProbeStreams<1, 2>(rmw, ro, begin, end);
  if (rmw_streams == 1 && ro_streams == 3) return ProbeStreams<1, 3>(rmw, ro, begin, end);
  if (rmw_streams == 2 && ro_streams == 1) return ProbeStreams<2, 1>(rmw, ro, begin, end);
  if (rmw_streams == 2 && ro_streams == 2) return ProbeStreams<2, 2>(rmw, ro, begin, end);
  return ProbeStreams<1, 1>(rmw, ro, begin, end);
}

}  // namespace mantissa::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mantissa::bench {

HWY_EXPORT(ProbeRange);

// Declared in bench_cases.cc.
void probe_range(int rmw_streams, int ro_streams, float* const* rmw, const float* const* ro,
                 int64_t begin, int64_t end) {
  HWY_DYNAMIC_DISPATCH(ProbeRange)(rmw_streams, ro_streams, rmw, ro, begin, end);
}

}  // namespace mantissa::bench
#endif
