// ApplyAdamD: one Adam step with the bias correction folded into the learning rate (TensorFlow's
// ApplyAdam). Contract and validation, then one element-wise kernel written once for every SIMD
// target: a single pass that reads var, m, v, grad and writes var, m, v.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/apply_adam_d/apply_adam_d.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/apply_adam_d/apply_adam_d_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Elements [begin, end) of one step. The grouping below is normative (see the operator's spec)
// and must not be reordered: no FMA, every operation rounded once in fp32. m_new and v_new feed
// the var update as fp32 values, before they are rounded to the storage format.
template <class Format, bool kNesterov>
void ApplyAdamDRange(const detail::ApplyAdamDKernelArgs& a) {
  using S = typename Format::Storage;
  const S* var_in = static_cast<const S*>(a.var);
  const S* m_in = static_cast<const S*>(a.m);
  const S* v_in = static_cast<const S*>(a.v);
  const S* grad_in = static_cast<const S*>(a.grad);
  S* var_out = static_cast<S*>(a.var_out);
  S* m_out = static_cast<S*>(a.m_out);
  S* v_out = static_cast<S*>(a.v_out);

  auto chunk = [&](int64_t begin, int64_t end) {
    ForEachVector(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      const auto lr_t = hn::Set(d, a.lr_t);
      const auto one_minus_beta1 = hn::Set(d, a.one_minus_beta1);
      const auto one_minus_beta2 = hn::Set(d, a.one_minus_beta2);
      const auto epsilon = hn::Set(d, a.epsilon);
      // Every input element is loaded before any output element of the same index is stored,
      // so in-place outputs (the same buffer as their input) are safe.
      const auto var = LoadF32<Format>(d, var_in + i);
      const auto m = LoadF32<Format>(d, m_in + i);
      const auto v = LoadF32<Format>(d, v_in + i);
      const auto grad = LoadF32<Format>(d, grad_in + i);
      // m + ((1 - beta1) * (grad - m))
      const auto m_new = hn::Add(m, hn::Mul(one_minus_beta1, hn::Sub(grad, m)));
      // v + ((1 - beta2) * ((grad * grad) - v))
      const auto v_new = hn::Add(v, hn::Mul(one_minus_beta2, hn::Sub(hn::Mul(grad, grad), v)));
      auto numerator = m_new;
      if constexpr (kNesterov) {
        // (m_new * beta1) + ((1 - beta1) * grad)
        numerator = hn::Add(hn::Mul(m_new, hn::Set(d, a.beta1)), hn::Mul(one_minus_beta1, grad));
      }
      // var - ((lr_t * numerator) / (epsilon + sqrt(v_new))); Sqrt and Div are correctly
      // rounded on every target, so all targets give the same bits.
      const auto var_new =
          hn::Sub(var, hn::Div(hn::Mul(lr_t, numerator), hn::Add(epsilon, hn::Sqrt(v_new))));
      StoreResult<Format>(d, var_new, var_out + i);
      StoreResult<Format>(d, m_new, m_out + i);
      StoreResult<Format>(d, v_new, v_out + i);
    });
  };
  detail::parallel_for(a.n, detail::kDefaultGrain, chunk);
}

template <class Format>
void ApplyAdamDFormat(const detail::ApplyAdamDKernelArgs& a) {
  if (a.use_nesterov) {
    ApplyAdamDRange<Format, true>(a);
  } else {
    ApplyAdamDRange<Format, false>(a);
  }
}

void ApplyAdamDImpl(const detail::ApplyAdamDKernelArgs& a) {
  VisitFormat(a.dtype, [&](auto format) { ApplyAdamDFormat<decltype(format)>(a); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cmath>

#include "core/runtime_internal.h"
#include "mantissa/ops/apply_adam_d.h"
#include "ops/apply_adam_d/apply_adam_d_desc.h"

namespace mantissa {

HWY_EXPORT(ApplyAdamDImpl);

// Validation is derived from the declaration (apply_adam_d_desc.h). Aliasing: the memory
// written is exactly the three outputs; each is the very same buffer as its own input (in place)
// or shares no byte with it, nor with any other tensor of the call. Read-only inputs may overlap
// one another.
Status apply_adam_d_validate(const ApplyAdamDTensors& t, const ApplyAdamDParams& p) {
  return detail::validate<detail::ApplyAdamDOp>(t, p);
}

Status apply_adam_d(const ApplyAdamDTensors& t, const ApplyAdamDParams& p) {
  MANTISSA_RETURN_IF_ERROR(apply_adam_d_validate(t, p));
  const int64_t n = *t.var.numel();
  if (n == 0) return {};  // empty var: nothing to read or write
  detail::ensure_runtime_initialized();

  const DType dtype = t.var.dtype;
  // Scalars widened exactly to fp32; the per-call constants computed once, in this grouping.
  const float beta1_power = load_as_float(dtype, t.beta1_power.data, 0);
  const float beta2_power = load_as_float(dtype, t.beta2_power.data, 0);
  const float lr = load_as_float(dtype, t.lr.data, 0);
  const float beta1 = load_as_float(dtype, t.beta1.data, 0);
  const float beta2 = load_as_float(dtype, t.beta2.data, 0);
  const float epsilon = load_as_float(dtype, t.epsilon.data, 0);

  detail::ApplyAdamDKernelArgs a;
  a.dtype = dtype;
  a.use_nesterov = p.use_nesterov;
  a.n = n;
  a.var = t.var.data;
  a.m = t.m.data;
  a.v = t.v.data;
  a.grad = t.grad.data;
  a.var_out = (t.var_out ? *t.var_out : t.var).data;
  a.m_out = (t.m_out ? *t.m_out : t.m).data;
  a.v_out = (t.v_out ? *t.v_out : t.v).data;
  // (lr * sqrt(1 - beta2_power)) / (1 - beta1_power); std::sqrt(float) is correctly rounded.
  a.lr_t = (lr * std::sqrt(1.0f - beta2_power)) / (1.0f - beta1_power);
  a.beta1 = beta1;
  a.one_minus_beta1 = 1.0f - beta1;
  a.one_minus_beta2 = 1.0f - beta2;
  a.epsilon = epsilon;
  HWY_DYNAMIC_DISPATCH(ApplyAdamDImpl)(a);
  return {};
}

}  // namespace mantissa
#endif  // HWY_ONCE
