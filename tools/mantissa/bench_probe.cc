// The bandwidth probe kernel: x_k[i] = x_k[i]*a + (c + y_0[i] + ...) over fp32 streams, one copy
// per SIMD target. It moves exactly the bytes an element-wise operator with the same streams moves.
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

// kRo read-only streams summed into y; each of kRmw streams does x = x*a + y. With no stream to
// write, y is folded into a sink written once, so the reads cannot be optimised away.
template <int kRmw, int kRo>
void ProbeStreams(float* const* rmw, const float* const* ro, float* sink, int64_t begin,
                  int64_t end) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const auto a = hn::Set(d, 0.999f);
  auto acc = hn::Zero(d);
  int64_t i = begin;
  for (; i + lanes <= end; i += lanes) {
    auto y = hn::Set(d, 0.001f);
    for (int k = 0; k < kRo; ++k) y = hn::Add(y, hn::LoadU(d, ro[k] + i));
    for (int k = 0; k < kRmw; ++k) {
      hn::StoreU(hn::Add(hn::Mul(hn::LoadU(d, rmw[k] + i), a), y), d, rmw[k] + i);
    }
    if constexpr (kRmw == 0) acc = hn::Add(acc, y);
  }
  float tail = 0.0f;
  for (; i < end; ++i) {
    float y = 0.001f;
    for (int k = 0; k < kRo; ++k) y += ro[k][i];
    for (int k = 0; k < kRmw; ++k) rmw[k][i] = rmw[k][i] * 0.999f + y;
    tail += y;
  }
  if constexpr (kRmw == 0) *sink = hn::GetLane(hn::SumOfLanes(d, acc)) + tail;
}

// Every pattern of 0..5 read-modify-write and 0..4 read-only streams (4-bit moments' step:
// 5 + 4 streams of one byte).
void ProbeRange(int rmw_streams, int ro_streams, float* const* rmw, const float* const* ro,
                float* sink, int64_t begin, int64_t end) {
  using Fn = void (*)(float* const*, const float* const*, float*, int64_t, int64_t);
  static constexpr Fn kTable[6][5] = {
      {ProbeStreams<0, 0>, ProbeStreams<0, 1>, ProbeStreams<0, 2>, ProbeStreams<0, 3>,
       ProbeStreams<0, 4>},
      {ProbeStreams<1, 0>, ProbeStreams<1, 1>, ProbeStreams<1, 2>, ProbeStreams<1, 3>,
       ProbeStreams<1, 4>},
      {ProbeStreams<2, 0>, ProbeStreams<2, 1>, ProbeStreams<2, 2>, ProbeStreams<2, 3>,
       ProbeStreams<2, 4>},
      {ProbeStreams<3, 0>, ProbeStreams<3, 1>, ProbeStreams<3, 2>, ProbeStreams<3, 3>,
       ProbeStreams<3, 4>},
      {ProbeStreams<4, 0>, ProbeStreams<4, 1>, ProbeStreams<4, 2>, ProbeStreams<4, 3>,
       ProbeStreams<4, 4>},
      {ProbeStreams<5, 0>, ProbeStreams<5, 1>, ProbeStreams<5, 2>, ProbeStreams<5, 3>,
       ProbeStreams<5, 4>},
  };
  kTable[rmw_streams][ro_streams](rmw, ro, sink, begin, end);
}

}  // namespace mantissa::bench::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mantissa::bench {

HWY_EXPORT(ProbeRange);

// Declared in bench_cases.cc.
void probe_range(int rmw_streams, int ro_streams, float* const* rmw, const float* const* ro,
                 float* sink, int64_t begin, int64_t end) {
  HWY_DYNAMIC_DISPATCH(ProbeRange)(rmw_streams, ro_streams, rmw, ro, sink, begin, end);
}

}  // namespace mantissa::bench
#endif
