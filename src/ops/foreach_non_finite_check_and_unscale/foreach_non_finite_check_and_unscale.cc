// ForeachNonFiniteCheckAndUnscale: one pass over a whole list of gradients. The list's elements
// are laid end to end and cut into chunks of a fixed grain (not per tensor, not per thread), so
// 300 small tensors keep both threads as busy as one large tensor; a chunk may span tensors.
//
// Memory traffic per element: unscale reads and writes the gradient (2E); with inv_scale == 1
// the pass only reads it (E).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE \
  "ops/foreach_non_finite_check_and_unscale/foreach_non_finite_check_and_unscale.cc"
// clang-format off: foreach_target.h must come first; it re-includes this file once per target.
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <span>

#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "mantissa/tensor.h"
#include "ops/foreach_non_finite_check_and_unscale/foreach_non_finite_check_and_unscale_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Elements [begin, end) of one tensor: returns true when an input element is non-finite.
template <class Format, bool kWrite>
bool UnscaleRange(void* data, int64_t begin, int64_t end, float inv_scale) {
  using S = typename Format::Storage;
  S* const g = static_cast<S*>(data);
  bool non_finite = false;
  ForEachVector(begin, end, [&](auto d, int64_t i) {
    const auto x = LoadF32<Format>(d, g + i);
    // Judged on the input: a product that overflows to inf does not count.
    if (!hn::AllTrue(d, hn::IsFinite(x))) non_finite = true;
    if constexpr (kWrite) StoreResult<Format>(d, hn::Mul(x, hn::Set(d, inv_scale)), g + i);
  });
  return non_finite;
}

template <bool kWrite>
bool UnscalePiece(const TensorView& t, int64_t begin, int64_t end, float inv_scale) {
  switch (t.dtype) {
    case DType::kFloat16: return UnscaleRange<Fp16, kWrite>(t.data, begin, end, inv_scale);
    case DType::kBFloat16: return UnscaleRange<Bf16, kWrite>(t.data, begin, end, inv_scale);
    default: return UnscaleRange<Fp32, kWrite>(t.data, begin, end, inv_scale);
  }
}

// Returns whether any input element of the list is non-finite.
bool UnscaleImpl(const detail::UnscaleArgs& a) {
  std::atomic<bool> found{false};
  const int64_t total = a.offsets.back();
  auto chunk = [&](int64_t begin, int64_t end) {
    // The first tensor holding element `begin`, then each tensor the chunk touches.
    auto it = std::upper_bound(a.offsets.begin(), a.offsets.end(), begin);
    std::size_t i = static_cast<std::size_t>(it - a.offsets.begin()) - 1;
    bool bad = false;
    for (int64_t pos = begin; pos < end; ++i) {
      const int64_t first = a.offsets[i], last = a.offsets[i + 1];
      if (last <= pos) continue;  // empty tensors
      const int64_t stop = std::min(end, last);
      bad |= a.write ? UnscalePiece<true>(a.grads[i], pos - first, stop - first, a.inv_scale)
                     : UnscalePiece<false>(a.grads[i], pos - first, stop - first, a.inv_scale);
      pos = stop;
    }
    if (bad) found.store(true, std::memory_order_relaxed);
  };
  detail::parallel_for(total, detail::kDefaultGrain, chunk);
  return found.load(std::memory_order_relaxed);
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstring>
#include <vector>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"
#include "ops/foreach_non_finite_check_and_unscale/foreach_non_finite_check_and_unscale_desc.h"

namespace mantissa {

HWY_EXPORT(UnscaleImpl);

// The list's total element count must fit int64 (each tensor's already does).
Status detail::ForeachNonFiniteCheckAndUnscaleOp::check_params(const Tensors& t, const Params&) {
  int64_t total = 0;
  for (const TensorView& g : t.scaled_grads) {
    if (__builtin_add_overflow(total, g.numel().value_or(0), &total)) {
      return fail(StatusCode::kParamInvalid, kType,
                  "the {} tensors of scaled_grads hold more than 2^63 - 1 elements together",
                  t.scaled_grads.size());
    }
  }
  return {};
}

Status foreach_non_finite_check_and_unscale_validate(
    const ForeachNonFiniteCheckAndUnscaleTensors& t,
    const ForeachNonFiniteCheckAndUnscaleParams& p) {
  return detail::validate<detail::ForeachNonFiniteCheckAndUnscaleOp>(t, p);
}

Status foreach_non_finite_check_and_unscale(const ForeachNonFiniteCheckAndUnscaleTensors& t,
                                            const ForeachNonFiniteCheckAndUnscaleParams& p) {
  return detail::op_entry<detail::ForeachNonFiniteCheckAndUnscaleOp>(t, p, [&]() -> Status {
    std::vector<int64_t> offsets(t.scaled_grads.size() + 1, 0);
    for (std::size_t i = 0; i < t.scaled_grads.size(); ++i) {
      offsets[i + 1] =
          offsets[i] + *t.scaled_grads[i].numel();  // validated: no overflow per tensor
    }
    float inv_scale;
    std::memcpy(&inv_scale, t.inv_scale.data, sizeof(inv_scale));
    detail::UnscaleArgs a;
    a.grads = t.scaled_grads;
    a.offsets = offsets;
    a.inv_scale = inv_scale;
    a.write = inv_scale != 1.0f;
    const bool found = offsets.back() > 0 && HWY_DYNAMIC_DISPATCH(UnscaleImpl)(a);
    if (found) {
      const float one = 1.0f;
      std::memcpy(t.found_inf.data, &one, sizeof(one));
    }
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
