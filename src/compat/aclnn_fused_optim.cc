// aclnnFusedAdamw and aclnnFusedSgd: CANN's list entries of torch's fused optimizer steps, over
// the C++ API (mantissa/ops/fused_adamw.h, fused_sgd.h).
//
// Their arguments are several tensor lists with element-by-element rules between them, which the
// declaration-driven entry (compat/aclnn_op.h) does not describe, so the two-phase plan is written
// here: the aclnn layer's own rules (CANN's op_api checks: list counts, one dtype per call, an
// empty optional list or tensor taken as absent), then staging of non-contiguous elements through
// the workspace (copied in before the step, written ones copied back after it succeeds), then the
// C++ API's validation of the views phase two computes on, then the aliasing rule on the caller's
// own (possibly strided) views.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_fused_adamw.h"
#include "aclnnop/aclnn_fused_sgd.h"
#include "compat/aclnn_common.h"
#include "compat/executor_internal.h"
#include "compat/list_internal.h"
#include "compat/strided.h"
#include "mantissa/ops/fused_adamw.h"
#include "mantissa/ops/fused_sgd.h"

namespace mantissa::compat {
namespace {

constexpr uint64_t kAlign = 64;

// One tensor list of the call, as the caller gave it, and where each element is computed on.
struct StagedList {
  const char* name = "";
  bool written = false;
  std::vector<TensorView> user;
  std::vector<int64_t> slot;  // workspace offset of element i's contiguous copy, or -1
};

class ListPlan {
 public:
  // Adds a list; its non-contiguous (or misaligned) elements get a slot of the workspace unless
  // `stage` is false (a list read element by element where it is: the step tensors).
  Status add(const char* name, std::vector<TensorView> views, bool written, bool stage = true) {
    StagedList l{name, written, std::move(views), {}};
    for (const TensorView& v : l.user) {
      const std::size_t size = dtype_size(v.dtype);
      const bool aligned = size <= 1 || reinterpret_cast<uintptr_t>(v.data) % size == 0;
      if (!stage || (aligned && v.is_contiguous()) || v.data == nullptr) {
        l.slot.push_back(-1);
        continue;
      }
      const uint64_t bytes = static_cast<uint64_t>(v.nbytes().value_or(0));
      const uint64_t padded = (bytes + kAlign - 1) / kAlign * kAlign;
      if (bytes > UINT64_MAX - kAlign || size_ > UINT64_MAX - padded) {
        return Status(StatusCode::kParamInvalid,
                      "the workspace for the non-contiguous tensors "
                      "overflows");
      }
      l.slot.push_back(static_cast<int64_t>(size_));
      size_ += padded;
    }
    lists_.push_back(std::move(l));
    return {};
  }
  void add_scalar(const std::optional<TensorView>& t) {
    if (t) scalars_.push_back(*t);
  }

  uint64_t workspace_size() const { return size_; }

  // List k's views with the workspace at `base`.
  std::vector<TensorView> views(std::size_t k, char* base) const {
    const StagedList& l = lists_[k];
    std::vector<TensorView> v = l.user;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (l.slot[i] >= 0) v[i] = contiguous_like(l.user[i], base + l.slot[i]);
    }
    return v;
  }

  // A workspace address range that no tensor of the call spans (never dereferenced), so that
  // phase one validates the very views phase two computes on.
  std::optional<uintptr_t> placeholder_base() const {
    uintptr_t lowest = UINTPTR_MAX, highest = 0;
    for_each_span([&](const ByteSpan& s, const StagedList*, std::size_t) {
      lowest = std::min(lowest, s.lo);
      highest = std::max(highest, s.hi);
    });
    const uintptr_t above = (std::max<uintptr_t>(highest, kAlign) + kAlign - 1) / kAlign * kAlign;
    if (above >= highest && UINTPTR_MAX - above >= size_) return above;
    if (lowest != UINTPTR_MAX && lowest > size_ + kAlign) {
      return (lowest - size_) / kAlign * kAlign;
    }
    return std::nullopt;
  }

  // The aliasing rule on the caller's views, by the bytes they span: a written element shares
  // none with any other tensor of the call and addresses no element twice; read-only tensors may
  // overlap each other. A sweep over the spans sorted by start.
  Status check_written(const char* fn) const {
    struct Entry {
      ByteSpan span;
      const StagedList* list;  // null: a scalar input
      std::size_t index;
      bool written() const { return list != nullptr && list->written; }
      std::string name() const {
        return list ? fmt::format("{}[{}]", list->name, index) : std::string("a scalar input");
      }
    };
    std::vector<Entry> entries;
    for_each_span([&](const ByteSpan& s, const StagedList* l, std::size_t i) {
      entries.push_back({s, l, i});
    });
    for (const Entry& e : entries) {
      if (e.written() && may_self_overlap(e.list->user[e.index])) {
        return Status(StatusCode::kParamInvalid,
                      fmt::format("{}: {} has strides that address some element twice; a tensor "
                                  "the step writes must not",
                                  fn, e.name()));
      }
    }
    std::sort(entries.begin(), entries.end(),
              [](const Entry& a, const Entry& b) { return a.span.lo < b.span.lo; });
    const Entry* reach_any = nullptr;
    const Entry* reach_written = nullptr;
    for (const Entry& e : entries) {
      const Entry* hit = nullptr;
      if (e.written() && reach_any && reach_any->span.hi > e.span.lo) hit = reach_any;
      if (!hit && reach_written && reach_written->span.hi > e.span.lo) hit = reach_written;
      if (hit) {
        return Status(StatusCode::kParamInvalid,
                      fmt::format("{}: {} overlaps {}; a tensor the step writes may share no byte "
                                  "with any other tensor of the call (strided views are compared "
                                  "by the bytes they span)",
                                  fn, e.name(), hit->name()));
      }
      if (!reach_any || e.span.hi > reach_any->span.hi) reach_any = &e;
      if (e.written() && (!reach_written || e.span.hi > reach_written->span.hi)) {
        reach_written = &e;
      }
    }
    return {};
  }

  // Phase two around the step: the workspace checked against the caller's tensors, the copies
  // in, step(base), and the copies back of written elements once it succeeds.
  template <class Step>
  Status run(void* workspace, const char* fn, const Step& step) const {
    char* base = static_cast<char*>(workspace);
    if (size_ != 0) {
      const auto lo = reinterpret_cast<uintptr_t>(workspace);
      const ByteSpan ws{lo, lo + size_};
      Status overlap;
      for_each_span([&](const ByteSpan& s, const StagedList* l, std::size_t i) {
        if (overlap.ok() && spans_overlap(ws, s)) {
          overlap =
              Status(StatusCode::kParamInvalid, fmt::format("{}: the workspace overlaps {}[{}]", fn,
                                                            l ? l->name : "a scalar input", i));
        }
      });
      MANTISSA_RETURN_IF_ERROR(overlap);
    }
    for (const StagedList& l : lists_) {
      for (std::size_t i = 0; i < l.user.size(); ++i) {
        if (l.slot[i] >= 0) copy_to_contiguous(l.user[i], base + l.slot[i]);
      }
    }
    MANTISSA_RETURN_IF_ERROR(step(base));
    for (const StagedList& l : lists_) {
      if (!l.written) continue;
      for (std::size_t i = 0; i < l.user.size(); ++i) {
        if (l.slot[i] >= 0) copy_from_contiguous(base + l.slot[i], l.user[i]);
      }
    }
    return {};
  }

 private:
  template <class F>
  void for_each_span(F&& f) const {
    for (const StagedList& l : lists_) {
      for (std::size_t i = 0; i < l.user.size(); ++i) {
        const ByteSpan s = byte_span(l.user[i]);
        if (!s.empty()) f(s, &l, i);
      }
    }
    for (std::size_t i = 0; i < scalars_.size(); ++i) {
      const ByteSpan s = byte_span(scalars_[i]);
      if (!s.empty()) f(s, nullptr, i);
    }
  }

  std::vector<StagedList> lists_;
  std::vector<TensorView> scalars_;
  uint64_t size_ = 0;
};

aclnnStatus invalid(const char* fn, const std::string& message) {
  set_recent_error(fmt::format("{}: {}", fn, message));
  return ACLNN_ERR_PARAM_INVALID;
}

// An optional tensor argument: null is absent; otherwise a live ND tensor. An empty one is
// absent too (CANN's rule for gradScaleOptional and foundInfOptional).
aclnnStatus optional_tensor(const char* fn, const char* name, const aclTensor* t,
                            std::optional<TensorView>& out) {
  out.reset();
  if (t == nullptr) return ACLNN_SUCCESS;
  const TensorArg arg{name, t};
  if (aclnnStatus s = check_tensor_args(fn, std::span<const TensorArg>(&arg, 1));
      s != ACLNN_SUCCESS) {
    return s;
  }
  const TensorView v = to_view(*t);
  if (v.numel().value_or(1) != 0) out = v;
  return ACLNN_SUCCESS;
}

// Every element of `lists` (each of `count` elements, or empty) has `dtype`.
aclnnStatus one_dtype(
    const char* fn, DType dtype,
    std::initializer_list<std::pair<const char*, const std::vector<TensorView>*>> lists) {
  for (const auto& [name, list] : lists) {
    for (std::size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i].dtype != dtype) {
        return invalid(fn, fmt::format("{}[{}] dtype {} differs from paramsRef[0] dtype {} (the "
                                       "call takes one dtype for every tensor)",
                                       name, i, dtype_name((*list)[i].dtype), dtype_name(dtype)));
      }
    }
  }
  return ACLNN_SUCCESS;
}

template <class Body>
aclnnStatus guarded(const char* fn, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    return report(Status(StatusCode::kInner, fmt::format("{}: {}", fn, e.what())));
  } catch (...) {
    return report(Status(StatusCode::kInner, fmt::format("{}: unknown exception", fn)));
  }
}

// The placeholder views' validation, then the caller's views' aliasing rule.
template <class Validate>
aclnnStatus validate_plan(const char* fn, const ListPlan& plan, Validate&& validate) {
  const std::optional<uintptr_t> base = plan.placeholder_base();
  if (!base) {
    return report(Status(StatusCode::kInner,
                         fmt::format("{}: no address range is free for the workspace", fn)));
  }
  if (const Status s = validate(reinterpret_cast<char*>(*base)); !s.ok()) return report(s);
  if (const Status s = plan.check_written(fn); !s.ok()) return report(s);
  return ACLNN_SUCCESS;
}

}  // namespace
}  // namespace mantissa::compat

using mantissa::DType;
using mantissa::Status;
using mantissa::TensorView;
namespace compat = mantissa::compat;

extern "C" {

aclnnStatus aclnnFusedAdamwGetWorkspaceSize(
    const aclTensorList* paramsRef, const aclTensorList* grads, const aclTensorList* expAvgsRef,
    const aclTensorList* expAvgSqsRef, const aclTensorList* maxExpAvgSqsRef,
    const aclTensorList* stateSteps, const aclTensor* gradScaleOptional,
    const aclTensor* foundInfOptional, double lr, double beta1, double beta2, double weightDecay,
    double eps, bool amsgrad, bool maximize, uint64_t* workspaceSize, aclOpExecutor** executor) {
  constexpr const char* fn = "aclnnFusedAdamwGetWorkspaceSize";
  return compat::guarded(fn, [&]() -> aclnnStatus {
    // CANN's order: the attributes, then null handles, then counts, dtypes and shapes.
    for (const auto& [name, v] :
         {std::pair{"lr", lr}, std::pair{"beta1", beta1}, std::pair{"beta2", beta2},
          std::pair{"weightDecay", weightDecay}}) {
      if (v < 0) return compat::invalid(fn, fmt::format("{} is {}, but must be >= 0", name, v));
    }
    if (amsgrad && maxExpAvgSqsRef == nullptr) {
      return compat::invalid(fn, "maxExpAvgSqsRef is null, but amsgrad is set");
    }
    for (const auto& [name, list] :
         {std::pair{"paramsRef", paramsRef}, std::pair{"grads", grads},
          std::pair{"expAvgsRef", expAvgsRef}, std::pair{"expAvgSqsRef", expAvgSqsRef},
          std::pair{"stateSteps", stateSteps}}) {
      if (aclnnStatus s = compat::check_tensor_list_arg(fn, name, list); s != ACLNN_SUCCESS) {
        return s;
      }
    }
    if (maxExpAvgSqsRef != nullptr) {
      if (aclnnStatus s = compat::check_tensor_list_arg(fn, "maxExpAvgSqsRef", maxExpAvgSqsRef);
          s != ACLNN_SUCCESS) {
        return s;
      }
    }
    std::optional<TensorView> grad_scale, found_inf;
    if (aclnnStatus s =
            compat::optional_tensor(fn, "gradScaleOptional", gradScaleOptional, grad_scale);
        s != ACLNN_SUCCESS) {
      return s;
    }
    if (aclnnStatus s =
            compat::optional_tensor(fn, "foundInfOptional", foundInfOptional, found_inf);
        s != ACLNN_SUCCESS) {
      return s;
    }
    if (aclnnStatus s = compat::check_out_pointers(fn, workspaceSize, executor);
        s != ACLNN_SUCCESS) {
      return s;
    }
    const std::vector<TensorView> params = compat::to_views(*paramsRef);
    const std::vector<TensorView> g = compat::to_views(*grads);
    const std::vector<TensorView> m = compat::to_views(*expAvgsRef);
    const std::vector<TensorView> v = compat::to_views(*expAvgSqsRef);
    // Only element 0 of a step tensor is read (CANN's kernel reads no other): each is taken as a
    // one-element view of it, wherever its other elements lie, and never staged.
    std::vector<TensorView> steps = compat::to_views(*stateSteps);
    for (TensorView& s : steps) {
      if (s.numel().value_or(0) > 0) s = TensorView(s.data, s.dtype, {1});
    }
    std::vector<TensorView> vmax;
    if (maxExpAvgSqsRef != nullptr) vmax = compat::to_views(*maxExpAvgSqsRef);
    const std::size_t n = params.size();
    if (n == 0) return compat::invalid(fn, "paramsRef is an empty list");
    for (const auto& [name, list] :
         {std::pair{"grads", &g}, std::pair{"expAvgsRef", &m}, std::pair{"expAvgSqsRef", &v},
          std::pair{"stateSteps", &std::as_const(steps)}}) {
      if (list->size() != n) {
        return compat::invalid(
            fn, fmt::format("{} has {} tensors, but paramsRef has {}", name, list->size(), n));
      }
    }
    // An empty maxExpAvgSqsRef list without amsgrad is absent (torch passes one).
    const bool with_max = maxExpAvgSqsRef != nullptr && !(vmax.empty() && !amsgrad);
    if (with_max && vmax.size() != n) {
      return compat::invalid(
          fn, fmt::format("maxExpAvgSqsRef has {} tensors, but paramsRef has {}", vmax.size(), n));
    }
    const DType dtype = params[0].dtype;
    if (!mantissa::is_training_float(dtype)) {
      return compat::invalid(fn, fmt::format("paramsRef[0] dtype {} is not supported (FLOAT, "
                                             "FLOAT16 or BFLOAT16)",
                                             mantissa::dtype_name(dtype)));
    }
    if (aclnnStatus s = compat::one_dtype(fn, dtype,
                                          {{"paramsRef", &params},
                                           {"grads", &g},
                                           {"expAvgsRef", &m},
                                           {"expAvgSqsRef", &v},
                                           {"maxExpAvgSqsRef", &vmax}});
        s != ACLNN_SUCCESS) {
      return s;
    }
    for (std::size_t i = 1; i < n; ++i) {
      if (steps[i].dtype != steps[0].dtype) {
        return compat::invalid(fn, fmt::format("stateSteps[{}] dtype {} differs from stateSteps[0] "
                                               "dtype {} (one dtype for every step tensor)",
                                               i, mantissa::dtype_name(steps[i].dtype),
                                               mantissa::dtype_name(steps[0].dtype)));
      }
    }
    mantissa::FusedAdamwParams p;
    p.lr = static_cast<float>(lr);
    p.beta1 = static_cast<float>(beta1);
    p.beta2 = static_cast<float>(beta2);
    p.weight_decay = static_cast<float>(weightDecay);
    p.eps = static_cast<float>(eps);
    p.amsgrad = amsgrad;
    p.maximize = maximize;
    p.grad_scale = grad_scale;
    p.found_inf = found_inf;
    auto plan = std::make_shared<compat::ListPlan>();
    for (const auto& [name, list, written] :
         {std::tuple{"paramsRef", &params, true}, std::tuple{"grads", &g, false},
          std::tuple{"expAvgsRef", &m, true}, std::tuple{"expAvgSqsRef", &v, true},
          std::tuple{"stateSteps", &std::as_const(steps), false},
          std::tuple{"maxExpAvgSqsRef", &std::as_const(vmax), amsgrad}}) {
      if (list == &vmax && !amsgrad) continue;  // neither read nor written
      if (const Status s = plan->add(name, *list, written, list != &steps); !s.ok()) {
        return compat::invalid(fn, std::string(s.message()));
      }
    }
    plan->add_scalar(grad_scale);
    plan->add_scalar(found_inf);
    // The C++ API's per-parameter tensors over the views computed on (workspace at `base`).
    auto call = [plan, p, n](char* base) {
      const std::vector<TensorView> pv = plan->views(0, base), gv = plan->views(1, base),
                                    mv = plan->views(2, base), vv = plan->views(3, base),
                                    sv = plan->views(4, base);
      const std::vector<TensorView> xv =
          p.amsgrad ? plan->views(5, base) : std::vector<TensorView>{};
      std::vector<mantissa::FusedAdamwParamTensors> t(n);
      for (std::size_t i = 0; i < n; ++i) {
        t[i] = {pv[i], gv[i], mv[i], vv[i], std::nullopt, sv[i]};
        if (p.amsgrad) t[i].max_exp_avg_sq = xv[i];
      }
      return t;
    };
    if (aclnnStatus s = compat::validate_plan(
            fn, *plan, [&](char* base) { return mantissa::fused_adamw_validate(call(base), p); });
        s != ACLNN_SUCCESS) {
      return s;
    }
    const uint64_t size = plan->workspace_size();
    aclOpExecutor* created =
        compat::create_executor("aclnnFusedAdamw", size, [plan, call, p](void* ws) {
          return plan->run(ws, "aclnnFusedAdamw",
                           [&](char* base) { return mantissa::fused_adamw(call(base), p); });
        });
    if (created == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    *workspaceSize = size;
    *executor = created;
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclnnFusedAdamw(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                            aclrtStream stream) {
  return compat::run_executor("aclnnFusedAdamw", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnFusedSgdGetWorkspaceSize(const aclTensorList* paramsRef,
                                          const aclTensorList* gradsRef,
                                          const aclTensorList* momentumBufferListOptionalRef,
                                          const aclTensor* gradScaleOptional, float weightDecay,
                                          float momentum, float lr, float dampening, bool nesterov,
                                          bool maximize, bool isFirstStep, uint64_t* workspaceSize,
                                          aclOpExecutor** executor) {
  constexpr const char* fn = "aclnnFusedSgdGetWorkspaceSize";
  return compat::guarded(fn, [&]() -> aclnnStatus {
    if (aclnnStatus s = compat::check_tensor_list_arg(fn, "paramsRef", paramsRef);
        s != ACLNN_SUCCESS) {
      return s;
    }
    if (aclnnStatus s = compat::check_out_pointers(fn, workspaceSize, executor);
        s != ACLNN_SUCCESS) {
      return s;
    }
    const std::vector<TensorView> params = compat::to_views(*paramsRef);
    const std::size_t n = params.size();
    if (n == 0) {
      // CANN's entry returns before any other check: an empty call does nothing.
      aclOpExecutor* created =
          compat::create_executor("aclnnFusedSgd", 0, [](void*) { return Status(); });
      if (created == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
      *workspaceSize = 0;
      *executor = created;
      return ACLNN_SUCCESS;
    }
    // An empty momentum list is absent.
    std::vector<TensorView> buffers;
    if (momentumBufferListOptionalRef != nullptr) {
      if (aclnnStatus s = compat::check_tensor_list_arg(fn, "momentumBufferListOptionalRef",
                                                        momentumBufferListOptionalRef);
          s != ACLNN_SUCCESS) {
        return s;
      }
      buffers = compat::to_views(*momentumBufferListOptionalRef);
    }
    const bool with_buffers = !buffers.empty();
    std::optional<TensorView> grad_scale;
    if (aclnnStatus s =
            compat::optional_tensor(fn, "gradScaleOptional", gradScaleOptional, grad_scale);
        s != ACLNN_SUCCESS) {
      return s;
    }
    // CANN's attribute rules come before the null, count, dtype and shape rules (the C++ API
    // repeats them).
    for (const auto& [name, v] : {std::pair{"weightDecay", weightDecay},
                                  std::pair{"momentum", momentum}, std::pair{"lr", lr}}) {
      if (v < 0) return compat::invalid(fn, fmt::format("{} is {}, but must be >= 0", name, v));
    }
    constexpr float kEps = 1e-6f;
    if (nesterov && (momentum <= 0 || std::fabs(dampening) >= kEps)) {
      return compat::invalid(fn, fmt::format("nesterov needs momentum > 0 and zero dampening "
                                             "(momentum {}, dampening {})",
                                             momentum, dampening));
    }
    if (!with_buffers && std::fabs(momentum) >= kEps) {
      return compat::invalid(fn, fmt::format("momentum is {}, but momentumBufferListOptionalRef "
                                             "is absent or empty (momentum must be 0 then)",
                                             momentum));
    }
    if (with_buffers && !(momentum >= kEps)) {
      return compat::invalid(fn, fmt::format("momentum is {}, but momentum buffers are given (it "
                                             "must be at least 1e-6 then)",
                                             momentum));
    }
    mantissa::FusedSgdParams p;
    p.weight_decay = weightDecay;
    p.momentum = momentum;
    p.lr = lr;
    p.dampening = dampening;
    p.nesterov = nesterov;
    p.maximize = maximize;
    p.is_first_step = isFirstStep;
    p.grad_scale = grad_scale;
    if (aclnnStatus s = compat::check_tensor_list_arg(fn, "gradsRef", gradsRef);
        s != ACLNN_SUCCESS) {
      return s;
    }
    const std::vector<TensorView> grads = compat::to_views(*gradsRef);
    if (grads.size() != n) {
      return compat::invalid(
          fn, fmt::format("gradsRef has {} tensors, but paramsRef has {}", grads.size(), n));
    }
    if (with_buffers && buffers.size() != n) {
      return compat::invalid(fn, fmt::format("momentumBufferListOptionalRef has {} tensors, but "
                                             "paramsRef has {}",
                                             buffers.size(), n));
    }
    const DType dtype = params[0].dtype;
    if (!mantissa::is_training_float(dtype)) {
      return compat::invalid(fn, fmt::format("paramsRef[0] dtype {} is not supported (FLOAT, "
                                             "FLOAT16 or BFLOAT16)",
                                             mantissa::dtype_name(dtype)));
    }
    if (aclnnStatus s = compat::one_dtype(fn, dtype,
                                          {{"paramsRef", &params},
                                           {"gradsRef", &grads},
                                           {"momentumBufferListOptionalRef", &buffers}});
        s != ACLNN_SUCCESS) {
      return s;
    }
    auto plan = std::make_shared<compat::ListPlan>();
    for (const auto& [name, list, written] :
         {std::tuple{"paramsRef", &params, true},
          std::tuple{"gradsRef", &grads, grad_scale.has_value()},
          std::tuple{"momentumBufferListOptionalRef", &std::as_const(buffers), true}}) {
      if (const Status s = plan->add(name, *list, written); !s.ok()) {
        return compat::invalid(fn, std::string(s.message()));
      }
    }
    plan->add_scalar(grad_scale);
    auto call = [plan, n, with_buffers](char* base) {
      const std::vector<TensorView> pv = plan->views(0, base), gv = plan->views(1, base),
                                    bv = plan->views(2, base);
      std::vector<mantissa::FusedSgdParamTensors> t(n);
      for (std::size_t i = 0; i < n; ++i) {
        t[i] = {pv[i], gv[i], std::nullopt};
        if (with_buffers) t[i].momentum_buffer = bv[i];
      }
      return t;
    };
    if (aclnnStatus s = compat::validate_plan(
            fn, *plan, [&](char* base) { return mantissa::fused_sgd_validate(call(base), p); });
        s != ACLNN_SUCCESS) {
      return s;
    }
    const uint64_t size = plan->workspace_size();
    aclOpExecutor* created =
        compat::create_executor("aclnnFusedSgd", size, [plan, call, p](void* ws) {
          return plan->run(ws, "aclnnFusedSgd",
                           [&](char* base) { return mantissa::fused_sgd(call(base), p); });
        });
    if (created == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    *workspaceSize = size;
    *executor = created;
    return ACLNN_SUCCESS;
  });
}

aclnnStatus aclnnFusedSgd(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                          aclrtStream stream) {
  return compat::run_executor("aclnnFusedSgd", workspace, workspaceSize, executor, stream);
}

}  // extern "C"
