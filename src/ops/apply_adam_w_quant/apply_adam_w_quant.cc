// ApplyAdamWQuant: one AdamW step with 8-bit block-wise moments (CANN's aclnnApplyAdamWQuant).
// Contract and validation, then one kernel written once for every SIMD target. Blocks are
// independent: each is read twice (the first pass finds the new moments' absmax, the second
// recomputes the same lanes, updates var and stores the codes), so no scratch memory is needed
// for any block size, and a block of 256 is in L1 for the second pass.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/apply_adam_w_quant/apply_adam_w_quant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/apply_adam_w_quant/apply_adam_w_quant_kernel.h"
#include "ops/apply_adam_w_quant/quant_state-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// The per-call constants as vectors.
template <class D>
struct QuantAdamConsts {
  hn::Vec<D> gnorm_scale, beta1, one_minus_beta1, beta2, one_minus_beta2, eps_c2, step_size, decay;
  explicit QuantAdamConsts(D d, const detail::ApplyAdamWQuantKernelArgs& a)
      : gnorm_scale(hn::Set(d, a.gnorm_scale)),
        beta1(hn::Set(d, a.beta1)),
        one_minus_beta1(hn::Set(d, a.one_minus_beta1)),
        beta2(hn::Set(d, a.beta2)),
        one_minus_beta2(hn::Set(d, a.one_minus_beta2)),
        eps_c2(hn::Set(d, a.eps_c2)),
        step_size(hn::Set(d, a.step_size)),
        decay(hn::Set(d, a.decay)) {}
};

// The new moments of lanes [i, i + Lanes(d)) of a block whose absmax are am, av. The grouping is
// normative (docs/ops/apply_adam_w_quant.md): no FMA, every operation rounded once in fp32.
template <class Format, class D>
HWY_INLINE void QuantAdamMoments(D d, const detail::ApplyAdamWQuantKernelArgs& a,
                                 const QuantAdamConsts<D>& c, float am, float av, int64_t i,
                                 hn::Vec<D>& m, hn::Vec<D>& v) {
  using S = typename Format::Storage;
  // qmap[code] * absmax
  const auto m0 = hn::Mul(hn::GatherIndex(d, a.qmap_m, LoadCodes(d, a.m + i)), hn::Set(d, am));
  const auto v0 = hn::Mul(hn::GatherIndex(d, a.qmap_v, LoadCodes(d, a.v + i)), hn::Set(d, av));
  // grad * gnorm_scale
  const auto g = hn::Mul(LoadF32<Format>(d, static_cast<const S*>(a.grad) + i), c.gnorm_scale);
  // (m0 * beta1) + (g * (1 - beta1))
  m = hn::Add(hn::Mul(m0, c.beta1), hn::Mul(g, c.one_minus_beta1));
  // (v0 * beta2) + ((g * g) * (1 - beta2))
  v = hn::Add(hn::Mul(v0, c.beta2), hn::Mul(hn::Mul(g, g), c.one_minus_beta2));
}

// Blocks [b0, b1).
template <class Format>
void ApplyAdamWQuantBlocks(const detail::ApplyAdamWQuantKernelArgs& a, int64_t b0, int64_t b1) {
  using S = typename Format::Storage;
  using D = hn::ScalableTag<float>;
  using D1 = hn::CappedTag<float, 1>;
  const D d;
  const D1 d1;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const QuantAdamConsts<D> c(d, a);
  const QuantAdamConsts<D1> c1(d1, a);
  S* const var_p = static_cast<S*>(a.var);
  for (int64_t b = b0; b < b1; ++b) {
    const int64_t begin = b * a.block;
    const int64_t end = std::min(a.n, begin + a.block);
    const float am = a.absmax_m[b], av = a.absmax_v[b];
    // Pass 1: the new absmax of |m| and |v| over the block.
    auto acc_m = hn::Zero(d), acc_v = hn::Zero(d);
    int64_t i = begin;
    for (; i + lanes <= end; i += lanes) {
      hn::Vec<D> m, v;
      QuantAdamMoments<Format>(d, a, c, am, av, i, m, v);
      acc_m = MaxKeepNaN<D>(acc_m, hn::Abs(m));
      acc_v = MaxKeepNaN<D>(acc_v, hn::Abs(v));
    }
    auto tail_m = hn::Zero(d1), tail_v = hn::Zero(d1);
    for (; i < end; ++i) {
      hn::Vec<D1> m, v;
      QuantAdamMoments<Format>(d1, a, c1, am, av, i, m, v);
      tail_m = MaxKeepNaN<D1>(tail_m, hn::Abs(m));
      tail_v = MaxKeepNaN<D1>(tail_v, hn::Abs(v));
    }
    const float new_m = FinishAbsMax(d, acc_m, tail_m);
    const float new_v = FinishAbsMax(d, acc_v, tail_v);
    // Pass 2: the same moments again; var updated; each moment / absmax coded.
    const auto step = [&](auto dd, const auto& cc, int64_t j) MANTISSA_VECTOR_BODY {
      using DD = decltype(dd);
      hn::Vec<DD> m, v;
      QuantAdamMoments<Format>(dd, a, cc, am, av, j, m, v);
      // var + ((m * step_size) / (sqrt(v) + eps_c2)), then * decay where weight_decay > 0
      const auto denom = hn::Add(hn::Sqrt(v), cc.eps_c2);
      auto var = hn::Add(LoadF32<Format>(dd, var_p + j), hn::Div(hn::Mul(m, cc.step_size), denom));
      if (a.decay_on) var = hn::Mul(var, cc.decay);
      StoreResult<Format>(dd, var, var_p + j);
      const auto norm_m = hn::Div(m, hn::Set(dd, new_m));
      const auto norm_v = hn::Div(v, hn::Set(dd, new_v));
      StoreCodes(dd, FixSign(dd, a.qmap_m, norm_m, NearestCode(dd, a.qmap_m, norm_m)), a.m + j);
      StoreCodes(dd, NearestCode(dd, a.qmap_v, norm_v), a.v + j);
    };
    i = begin;
    for (; i + lanes <= end; i += lanes) step(d, c, i);
    for (; i < end; ++i) step(d1, c1, i);
    a.absmax_m[b] = new_m;
    a.absmax_v[b] = new_v;
  }
}

void ApplyAdamWQuantImpl(const detail::ApplyAdamWQuantKernelArgs& a) {
  const int64_t blocks = (a.n + a.block - 1) / a.block;
  // About kDefaultGrain elements per chunk, whole blocks only.
  const int64_t grain = std::max<int64_t>(1, detail::kDefaultGrain / a.block);
  VisitFormat(a.dtype, [&](auto format) {
    using Format = decltype(format);
    auto chunk = [&a](int64_t b0, int64_t b1) { ApplyAdamWQuantBlocks<Format>(a, b0, b1); };
    detail::parallel_for(blocks, grain, chunk);
  });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cmath>
#include <cstring>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/apply_adam_w_quant.h"
#include "ops/apply_adam_w_quant/apply_adam_w_quant_desc.h"

namespace mantissa {

HWY_EXPORT(ApplyAdamWQuantImpl);

namespace detail {

// The sizes the declaration cannot state: 256 map entries, one absmax per block, a positive
// block, a step count t = step + 1 of at least 1, the one quant mode.
Status ApplyAdamWQuantOp::check_params(const Tensors& t, const Params& p) {
  if (p.block_size <= 0) {
    return fail(StatusCode::kParamInvalid, kType, "block_size is {}, but must be positive",
                p.block_size);
  }
  if (p.quant_mode != 0) {
    return fail(StatusCode::kParamInvalid, kType,
                "quant_mode is {}, but the one mode is 0 (BLOCKWISE)", p.quant_mode);
  }
  for (const auto& [map, name] : {std::pair{&t.qmap_m, "qmap_m"}, std::pair{&t.qmap_v, "qmap_v"}}) {
    if (*map->numel() != 256) {
      return fail(StatusCode::kParamInvalid, kType, "{} has {} elements, but a code map has 256",
                  name, *map->numel());
    }
  }
  const int64_t n = *t.var.numel();
  const int64_t blocks = n / p.block_size + (n % p.block_size != 0 ? 1 : 0);
  for (const auto& [absmax, name] :
       {std::pair{&t.absmax_m, "absmax_m"}, std::pair{&t.absmax_v, "absmax_v"}}) {
    if (*absmax->numel() != blocks) {
      return fail(StatusCode::kParamInvalid, kType,
                  "{} has {} elements, but var's {} elements in blocks of {} need {}", name,
                  *absmax->numel(), n, p.block_size, blocks);
    }
  }
  if (t.step.data != nullptr) {
    int64_t step = 0;
    std::memcpy(&step, t.step.data, sizeof step);
    if (step < 0) {
      return fail(StatusCode::kParamInvalid, kType,
                  "step is {}, but t = step + 1 must be positive (step counts the steps already "
                  "taken)",
                  step);
    }
  }
  return {};
}

}  // namespace detail

// Validation is derived from the declaration (apply_adam_w_quant_desc.h). Aliasing: var, m, v,
// absmax_m and absmax_v are written in place, so none of them shares a byte with any other
// tensor of the call.
Status apply_adam_w_quant_validate(const ApplyAdamWQuantTensors& t,
                                   const ApplyAdamWQuantParams& p) {
  return detail::validate<detail::ApplyAdamWQuantOp>(t, p);
}

Status apply_adam_w_quant(const ApplyAdamWQuantTensors& t, const ApplyAdamWQuantParams& p) {
  return detail::op_entry<detail::ApplyAdamWQuantOp>(t, p, [&]() -> Status {
    const int64_t n = *t.var.numel();
    if (n == 0) return {};
    int64_t steps_taken = 0;
    std::memcpy(&steps_taken, t.step.data, sizeof steps_taken);
    // The constants of step t = step + 1, in double from the fp32 attributes, each rounded once
    // (1 - beta2^t cancels badly in fp32 for beta2 near 1).
    const double steps = static_cast<double>(steps_taken) + 1.0;
    const double lr = p.lr, beta1 = p.beta1, beta2 = p.beta2, wd = p.weight_decay, eps = p.eps;
    const double c1 = 1.0 - std::pow(beta1, steps);
    const double c2 = std::sqrt(1.0 - std::pow(beta2, steps));
    detail::ApplyAdamWQuantKernelArgs a;
    a.dtype = t.var.dtype;
    a.n = n;
    a.block = p.block_size;
    a.var = t.var.data;
    a.grad = t.grad.data;
    a.m = static_cast<uint8_t*>(t.m.data);
    a.v = static_cast<uint8_t*>(t.v.data);
    a.qmap_m = static_cast<const float*>(t.qmap_m.data);
    a.qmap_v = static_cast<const float*>(t.qmap_v.data);
    a.absmax_m = static_cast<float*>(t.absmax_m.data);
    a.absmax_v = static_cast<float*>(t.absmax_v.data);
    a.gnorm_scale = p.gnorm_scale;
    a.beta1 = p.beta1;
    a.one_minus_beta1 = static_cast<float>(1.0 - beta1);
    a.beta2 = p.beta2;
    a.one_minus_beta2 = static_cast<float>(1.0 - beta2);
    a.eps_c2 = static_cast<float>(eps * c2);
    a.step_size = static_cast<float>(-lr * c2 / c1);
    a.decay = static_cast<float>(1.0 - lr * wd);
    a.decay_on = p.weight_decay > 0.0f;
    HWY_DYNAMIC_DISPATCH(ApplyAdamWQuantImpl)(a);
    return {};
  });
}

std::array<float, 256> dynamic_quant_map(bool is_signed) {
  std::array<float, 256> map{};
  std::size_t k = 0;
  // 10^e for e = -6..0, as the nearest doubles.
  constexpr double kScale[7] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0};
  for (int e = 0; e < 7; ++e) {
    const int items = is_signed ? 1 << e : 2 << e;
    for (int j = 0; j < items; ++j) {
      // The midpoint of the j-th of `items` equal parts of [0.1, 1].
      const double mid = 0.1 + 0.9 * (2.0 * j + 1.0) / (2.0 * items);
      map[k++] = static_cast<float>(kScale[e] * mid);
      if (is_signed) map[k++] = static_cast<float>(-(kScale[e] * mid));
    }
  }
  map[k++] = 0.0f;
  map[k++] = 1.0f;
  std::sort(map.begin(), map.end());
  return map;
}

}  // namespace mantissa
#endif  // HWY_ONCE
