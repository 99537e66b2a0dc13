// ApplyAdamD's element-wise math for one vector of lanes, shared by the single-tensor operator
// (ops/apply_adam_d/apply_adam_d.cc) and the multi-tensor step (optim/multi_tensor.cc), so both
// give the same bits by construction. The grouping is normative (docs/ops/apply_adam_d.md): each
// operation one fp32 rounding, no FMA; m_new and v_new feed the var update before rounding.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_OPS_APPLY_ADAM_D_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_OPS_APPLY_ADAM_D_INL_H_
#undef MANTISSA_OPS_APPLY_ADAM_D_INL_H_
#else
#define MANTISSA_OPS_APPLY_ADAM_D_INL_H_
#endif

#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/apply_adam_d/apply_adam_d_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

template <class D>
struct AdamDLanes {
  hn::Vec<D> var, m, v;  // fp32 results, rounded by the caller's stores
};

// One step for the lanes of var, m, v and grad with the per-call constants of
// detail::adam_d_constants.
template <class D, class V = hn::Vec<D>>
HWY_INLINE AdamDLanes<D> AdamDMath(D d, const detail::AdamDConstants& c, bool nesterov, V var, V m,
                                   V v, V grad) {
  const auto lr_t = hn::Set(d, c.lr_t);
  const auto one_minus_beta1 = hn::Set(d, c.one_minus_beta1);
  const auto one_minus_beta2 = hn::Set(d, c.one_minus_beta2);
  const auto epsilon = hn::Set(d, c.epsilon);
  // m + ((1 - beta1) * (grad - m))
  const auto m_new = hn::Add(m, hn::Mul(one_minus_beta1, hn::Sub(grad, m)));
  // v + ((1 - beta2) * ((grad * grad) - v))
  const auto v_new = hn::Add(v, hn::Mul(one_minus_beta2, hn::Sub(hn::Mul(grad, grad), v)));
  auto numerator = m_new;
  if (nesterov) {
    // (m_new * beta1) + ((1 - beta1) * grad)
    numerator = hn::Add(hn::Mul(m_new, hn::Set(d, c.beta1)), hn::Mul(one_minus_beta1, grad));
  }
  // var - ((lr_t * numerator) / (epsilon + sqrt(v_new))); Sqrt and Div are correctly rounded on
  // every target, so all targets give the same bits.
  const auto var_new =
      hn::Sub(var, hn::Div(hn::Mul(lr_t, numerator), hn::Add(epsilon, hn::Sqrt(v_new))));
  return {var_new, m_new, v_new};
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_OPS_APPLY_ADAM_D_INL_H_
