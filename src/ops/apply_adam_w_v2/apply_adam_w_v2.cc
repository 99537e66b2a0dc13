// ApplyAdamWV2: one AdamW step (PyTorch's AdamW, CANN's ApplyAdamWV2). Contract and validation,
// then one element-wise kernel written once for every SIMD target: a single pass that reads var,
// m, v, grad (and max_grad_norm) and writes var, m, v (and max_grad_norm) in place.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/apply_adam_w_v2/apply_adam_w_v2.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/apply_adam_w_v2/apply_adam_w_v2-inl.h"
#include "ops/apply_adam_w_v2/apply_adam_w_v2_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Elements [begin, end) of one step. State is the storage format of var, m, v and
// max_grad_norm, Grad that of grad (fp16/bf16 with fp32 state: the master-weight form). The
// grouping is normative (the operator's spec) and must not be reordered: no FMA, every operation
// rounded once in fp32; m_new, v_new and vmax feed the var update as fp32 values, before they
// are rounded to the storage format.
template <class State, class Grad, bool kAmsgrad, bool kMaximize>
void ApplyAdamWV2Range(const detail::ApplyAdamWV2KernelArgs& a) {
  using S = typename State::Storage;
  using G = typename Grad::Storage;
  auto chunk = [&a](int64_t begin, int64_t end) {
    // Locals of the chunk, kept in registers across the stores (as in ops/sgd/sgd.cc).
    S* const var_p = static_cast<S*>(a.var);
    S* const m_p = static_cast<S*>(a.m);
    S* const v_p = static_cast<S*>(a.v);
    S* const max_p = static_cast<S*>(a.max_grad_norm);
    const G* const grad_p = static_cast<const G*>(a.grad);
    const auto c = a.c;
    ForEachVector(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      // Every element is loaded before any of the same index is stored (in place).
      const auto var = LoadF32<State>(d, var_p + i);
      const auto m = LoadF32<State>(d, m_p + i);
      const auto v = LoadF32<State>(d, v_p + i);
      const auto g = LoadF32<Grad>(d, grad_p + i);
      auto old_max = hn::Zero(d);
      if constexpr (kAmsgrad) old_max = LoadF32<State>(d, max_p + i);
      // The normative grouping, shared with the multi-tensor step (apply_adam_w_v2-inl.h).
      const auto r = AdamWMath(d, c, kAmsgrad, kMaximize, var, m, v, g, old_max);
      StoreResult<State>(d, r.var, var_p + i);
      StoreResult<State>(d, r.m, m_p + i);
      StoreResult<State>(d, r.v, v_p + i);
      if constexpr (kAmsgrad) StoreResult<State>(d, r.vmax, max_p + i);
    });
  };
  detail::parallel_for(a.n, detail::kDefaultGrain, chunk);
}

template <class State, class Grad>
void ApplyAdamWV2Formats(const detail::ApplyAdamWV2KernelArgs& a) {
  if (a.amsgrad) {
    if (a.maximize) {
      ApplyAdamWV2Range<State, Grad, true, true>(a);
    } else {
      ApplyAdamWV2Range<State, Grad, true, false>(a);
    }
  } else if (a.maximize) {
    ApplyAdamWV2Range<State, Grad, false, true>(a);
  } else {
    ApplyAdamWV2Range<State, Grad, false, false>(a);
  }
}

void ApplyAdamWV2Impl(const detail::ApplyAdamWV2KernelArgs& a) {
  // f32 state with f16/bf16 grad (master weight), or one dtype throughout.
  if (a.state_dtype == DType::kFloat32 && a.grad_dtype == DType::kFloat16) {
    ApplyAdamWV2Formats<Fp32, Fp16>(a);
  } else if (a.state_dtype == DType::kFloat32 && a.grad_dtype == DType::kBFloat16) {
    ApplyAdamWV2Formats<Fp32, Bf16>(a);
  } else if (a.state_dtype == DType::kFloat16) {
    ApplyAdamWV2Formats<Fp16, Fp16>(a);
  } else if (a.state_dtype == DType::kBFloat16) {
    // The runtime's bf16 narrowing (AVX512-BF16 where chosen: the same bits).
    VisitBf16([&](auto bf16) { ApplyAdamWV2Formats<decltype(bf16), decltype(bf16)>(a); });
  } else {
    ApplyAdamWV2Formats<Fp32, Fp32>(a);
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cmath>
#include <cstring>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/apply_adam_w_v2.h"
#include "ops/apply_adam_w_v2/apply_adam_w_v2_desc.h"

namespace mantissa {

HWY_EXPORT(ApplyAdamWV2Impl);

namespace detail {

// grad has var's dtype, or is fp16/bf16 with fp32 state (the master-weight form). (That var, m,
// v and max_grad_norm share one dtype, and every dtype is a training float, the declaration has
// checked already.)
Status ApplyAdamWV2Op::check_params(const Tensors& t, const Params&) {
  if (t.grad.dtype != t.var.dtype && t.var.dtype != DType::kFloat32) {
    return fail(StatusCode::kParamInvalid, kType,
                "grad dtype {} differs from var dtype {} (a different grad dtype needs FLOAT "
                "state: FLOAT16 or BFLOAT16 grad with FLOAT var, m, v)",
                dtype_name(t.grad.dtype), dtype_name(t.var.dtype));
  }
  // step counts the steps already taken: t = step + 1 must be positive (t = 0 divides by
  // 1 - beta1^0 = 0, a negative t turns the step around); NaN is no count. (A fractional fp32
  // step is accepted, as upstream computes with it.)
  if (t.step.data != nullptr) {
    const double step =
        t.step.dtype == DType::kInt64
            ? static_cast<double>(*static_cast<const int64_t*>(t.step.data))
            : static_cast<double>(load_as_float(DType::kFloat32, t.step.data, 0));
    if (!(step > -1.0)) {
      return fail(StatusCode::kParamInvalid, kType,
                  "step is {}, but t = step + 1 must be positive (step counts the steps already "
                  "taken)",
                  step);
    }
  }
  return {};
}

}  // namespace detail

// Validation is derived from the declaration (apply_adam_w_v2_desc.h). Aliasing: var, m, v and
// max_grad_norm are written in place, so none of them shares a byte with any other tensor of the
// call; grad and step may overlap each other.
Status apply_adam_w_v2_validate(const ApplyAdamWV2Tensors& t, const ApplyAdamWV2Params& p) {
  return detail::validate<detail::ApplyAdamWV2Op>(t, p);
}

Status apply_adam_w_v2(const ApplyAdamWV2Tensors& t, const ApplyAdamWV2Params& p) {
  return detail::op_entry<detail::ApplyAdamWV2Op>(t, p, [&]() -> Status {
    const int64_t n = *t.var.numel();
    if (n == 0) return {};  // empty var: nothing to read or write

    // The step count t = step + 1 (step counts the steps already taken), in double: an int64 step
    // converted (exact up to 2^53), an fp32 one widened exactly.
    double step = 0.0;
    if (t.step.dtype == DType::kInt64) {
      int64_t s;
      std::memcpy(&s, t.step.data, sizeof s);
      step = static_cast<double>(s);
    } else {
      step = static_cast<double>(load_as_float(DType::kFloat32, t.step.data, 0));
    }
    detail::ApplyAdamWV2KernelArgs a;
    a.state_dtype = t.var.dtype;
    a.grad_dtype = t.grad.dtype;
    a.amsgrad = p.amsgrad;
    a.maximize = p.maximize;
    a.n = n;
    a.var = t.var.data;
    a.m = t.m.data;
    a.v = t.v.data;
    a.max_grad_norm = p.amsgrad ? t.max_grad_norm->data : nullptr;
    a.grad = t.grad.data;
    a.c = detail::adam_w_constants(step, p.lr, p.beta1, p.beta2, p.weight_decay, p.eps);
    HWY_DYNAMIC_DISPATCH(ApplyAdamWV2Impl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
