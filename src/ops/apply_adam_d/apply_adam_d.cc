// ApplyAdamD: one Adam step with the bias correction folded into the learning rate (TensorFlow's
// ApplyAdam). Contract and validation, then one element-wise kernel written once for every SIMD
// target: a single pass that reads var, m, v, grad and writes var, m, v.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/apply_adam_d/apply_adam_d.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include "core/parallel.h"
#include "core/prefetch.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/apply_adam_d/apply_adam_d-inl.h"
#include "ops/apply_adam_d/apply_adam_d_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Elements [begin, end) of one step. The grouping below is normative (see the operator's spec)
// and must not be reordered: no FMA, every operation rounded once in fp32. m_new and v_new feed
// the var update as fp32 values, before they are rounded to the storage format.
// kPrefetch: the streams read are fetched ahead (a 16-bit call out of cache: core/prefetch.h).
template <class Format, bool kNesterov, bool kPrefetch>
void ApplyAdamDRange(const detail::ApplyAdamDKernelArgs& a) {
  using S = typename Format::Storage;
  auto chunk = [&a](int64_t begin, int64_t end) {
    // Locals of the chunk, kept in registers across the stores (as in ops/sgd/sgd.cc).
    const S* const var_in = static_cast<const S*>(a.var);
    const S* const m_in = static_cast<const S*>(a.m);
    const S* const v_in = static_cast<const S*>(a.v);
    const S* const grad_in = static_cast<const S*>(a.grad);
    S* const var_out = static_cast<S*>(a.var_out);
    S* const m_out = static_cast<S*>(a.m_out);
    S* const v_out = static_cast<S*>(a.v_out);
    const auto c = a.c;
    auto fetch = [&](int64_t i) MANTISSA_VECTOR_BODY {
      if constexpr (kPrefetch) detail::prefetch_ahead_each(i, var_in, m_in, v_in, grad_in);
    };
    ForEachVectorSet<Format>(
        begin, end,
        [&](auto d, auto set, int64_t i) MANTISSA_VECTOR_BODY {
          // Every input element is loaded before any output element of the same index is stored,
          // so in-place outputs (the same buffer as their input) are safe.
          const auto var = set.Load(d, var_in + i);
          const auto m = set.Load(d, m_in + i);
          const auto v = set.Load(d, v_in + i);
          const auto grad = set.Load(d, grad_in + i);
          auto var_new = var, m_new = m, v_new = v;
          ForEachOfSet<set.kCount>([&](auto k) MANTISSA_VECTOR_BODY {
            // The normative grouping, shared with the multi-tensor step (apply_adam_d-inl.h).
            const auto r = AdamDMath(d, c, kNesterov, var[k], m[k], v[k], grad[k]);
            var_new[k] = r.var;
            m_new[k] = r.m;
            v_new[k] = r.v;
          });
          // m_new and v_new reach var_new through NaN-propagating arithmetic: a set whose new
          // var holds no NaN stores no NaN at all (StoreSet).
          using Set = decltype(set);
          StoreSet<Set>(d, var_new, [&](auto nan) MANTISSA_VECTOR_BODY {
            constexpr NaNLanes kNaN = decltype(nan)::value;
            Set::template StoreResult<kNaN>(d, var_new, var_out + i);
            Set::template StoreResult<kNaN>(d, m_new, m_out + i);
            Set::template StoreResult<kNaN>(d, v_new, v_out + i);
          });
        },
        fetch);
  };
  detail::parallel_for(a.n, detail::kDefaultGrain, chunk);
}

template <class Format, bool kPrefetch>
void ApplyAdamDFormat(const detail::ApplyAdamDKernelArgs& a) {
  if (a.use_nesterov) {
    ApplyAdamDRange<Format, true, kPrefetch>(a);
  } else {
    ApplyAdamDRange<Format, false, kPrefetch>(a);
  }
}

void ApplyAdamDImpl(const detail::ApplyAdamDKernelArgs& a) {
  VisitFormat(a.dtype, [&](auto format) {
    using Format = decltype(format);
    // Four input streams: var, m, v, grad.
    detail::visit_prefetch<typename Format::Storage>(
        a.n, 4, [&](auto prefetch) { ApplyAdamDFormat<Format, decltype(prefetch)::value>(a); });
  });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cmath>

#include "core/op_entry.h"
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
  return detail::op_entry<detail::ApplyAdamDOp>(t, p, [&]() -> Status {
    const int64_t n = *t.var.numel();
    if (n == 0) return {};  // empty var: nothing to read or write

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
    a.c = detail::adam_d_constants(beta1_power, beta2_power, lr, beta1, beta2, epsilon);
    HWY_DYNAMIC_DISPATCH(ApplyAdamDImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
