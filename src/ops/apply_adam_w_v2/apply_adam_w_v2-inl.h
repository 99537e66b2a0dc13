// ApplyAdamWV2's element-wise math for one vector of lanes, shared by the single-tensor operator
// (ops/apply_adam_w_v2/apply_adam_w_v2.cc) and the multi-tensor step (optim/multi_tensor.cc), so
// both give the same bits by construction. The grouping is normative
// (docs/ops/apply_adam_w_v2.md): no FMA, every operation rounded once in fp32; m_new, v_new and
// vmax feed the var update as fp32 values, before they are rounded to the storage format.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_OPS_APPLY_ADAM_W_V2_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_OPS_APPLY_ADAM_W_V2_INL_H_
#undef MANTISSA_OPS_APPLY_ADAM_W_V2_INL_H_
#else
#define MANTISSA_OPS_APPLY_ADAM_W_V2_INL_H_
#endif

#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/apply_adam_w_v2/apply_adam_w_v2_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

template <class D>
struct AdamWLanes {
  hn::Vec<D> var, m, v, vmax;  // fp32 results; vmax is v with amsgrad off
};

// One step for the lanes of var, m, v, grad (and old_max, read only with amsgrad) with the
// per-call constants of detail::adam_w_constants.
template <class D, class V = hn::Vec<D>>
HWY_INLINE AdamWLanes<D> AdamWMath(D d, const detail::AdamWConstants& c, bool amsgrad,
                                   bool maximize, V var, V m, V v, V g, V old_max) {
  const auto step_size = hn::Set(d, c.step_size);
  const auto inv_bc2_sqrt = hn::Set(d, c.inv_bc2_sqrt);
  const auto decay = hn::Set(d, c.decay);
  const auto one_minus_beta1 = hn::Set(d, c.one_minus_beta1);
  const auto one_minus_beta2 = hn::Set(d, c.one_minus_beta2);
  const auto beta2 = hn::Set(d, c.beta2);
  const auto eps = hn::Set(d, c.eps);
  if (maximize) g = hn::Neg(g);  // a sign flip: exact
  // var * decay: the decoupled weight decay, applied to the old var.
  const auto var1 = hn::Mul(var, decay);
  // m + ((g - m) * (1 - beta1))
  const auto m_new = hn::Add(m, hn::Mul(hn::Sub(g, m), one_minus_beta1));
  // (v * beta2) + ((g * g) * (1 - beta2))
  const auto v_new = hn::Add(hn::Mul(v, beta2), hn::Mul(hn::Mul(g, g), one_minus_beta2));
  auto vmax = v_new;
  if (amsgrad) {
    // max(max_grad_norm, v_new) with NaN from either side (torch.maximum); a tie keeps
    // max_grad_norm. Written with a comparison, not hn::Max, whose NaN and signed-zero results
    // differ between instruction sets.
    vmax = hn::IfThenElse(hn::Or(hn::Gt(v_new, old_max), hn::IsNaN(v_new)), v_new, old_max);
  }
  // (sqrt(vmax) * inv_bc2_sqrt) + eps; Sqrt and Div are correctly rounded on every target.
  const auto denom = hn::Add(hn::Mul(hn::Sqrt(vmax), inv_bc2_sqrt), eps);
  // var1 - ((m_new / denom) * step_size)
  const auto var_new = hn::Sub(var1, hn::Mul(hn::Div(m_new, denom), step_size));
  return {var_new, m_new, v_new, vmax};
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_OPS_APPLY_ADAM_W_V2_INL_H_
