// aclnnApplyAdamD: the two-phase C entry points over mantissa::apply_adam_d.
//
// The C++ operator takes contiguous tensors only. Non-contiguous tensors go through the
// workspace: phase one gives every non-contiguous input (var, m, v, grad, and any scalar) and
// every non-contiguous separate output a contiguous slot; phase two copies the inputs into their
// slots, runs the C++ operator on the slots and the contiguous tensors, and copies the results
// from the output slots back to the strided outputs. An in-place pair (varOut the very same view
// as var) whose view is non-contiguous shares one slot: copied in, updated, copied back.
// Contiguous tensors are used where they are, so an all-contiguous call has workspace 0.
#include "aclnnop/aclnn_apply_adam_d.h"

#include <fmt/format.h>

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compat/aclnn_common.h"
#include "compat/executor_internal.h"
#include "compat/strided.h"
#include "core/validate.h"
#include "mantissa/ops/apply_adam_d.h"

namespace mantissa::compat {
namespace {

constexpr const char* kPhaseOne = "aclnnApplyAdamDGetWorkspaceSize";
constexpr const char* kPhaseTwo = "aclnnApplyAdamD";
constexpr uint64_t kSlotAlignment = 64;

// Tensor indices: the ten inputs in the operator's order, then the three outputs.
constexpr int kNumInputs = 10, kNumTensors = 13, kVarOut = 10;
constexpr std::array<const char*, kNumTensors> kNames{
    "var",   "m",       "v",    "beta1Power", "beta2Power", "lr",  "beta1",
    "beta2", "epsilon", "grad", "varOut",     "mOut",       "vOut"};

struct Slot {
  int tensor;       // whose contiguous copy this is
  uint64_t offset;  // bytes from the workspace start
  bool copy_in;     // filled from the tensor before the operator runs
  bool copy_out;    // written back to the tensor after it succeeds
};

struct Plan {
  std::array<TensorView, kNumTensors> user;  // the caller's views (possibly strided)
  std::array<int, kNumTensors> slot_of;      // slot index computed on, or -1: in place
  std::array<bool, 3> in_place{};            // output j is the very same view as input j
  std::vector<Slot> slots;
  uint64_t workspace_size = 0;
  ApplyAdamDParams params;

  // The views the C++ operator gets, with the workspace at `base`.
  ApplyAdamDTensors operator_views(char* base) const {
    std::array<TensorView, kNumTensors> v = user;
    for (int k = 0; k < kNumTensors; ++k) {
      if (slot_of[k] < 0) continue;
      // A null tensor pointer stays null so the operator reports it (161001).
      void* data = user[k].data == nullptr ? nullptr : base + slots[slot_of[k]].offset;
      v[k] = contiguous_like(user[k], data);
    }
    ApplyAdamDTensors t;
    t.var = v[0];
    t.m = v[1];
    t.v = v[2];
    t.beta1_power = v[3];
    t.beta2_power = v[4];
    t.lr = v[5];
    t.beta1 = v[6];
    t.beta2 = v[7];
    t.epsilon = v[8];
    t.grad = v[9];
    t.var_out = v[10];
    t.m_out = v[11];
    t.v_out = v[12];
    return t;
  }
};

Status invalid(std::string message) {
  return Status(StatusCode::kParamInvalid, fmt::format("{}: {}", kPhaseOne, message));
}

// Plans the slots. Sizes of views that validation will reject count as 0.
Status make_plan(Plan& plan) {
  plan.slot_of.fill(-1);
  auto add_slot = [&](int k, bool copy_in, bool copy_out) -> Status {
    const uint64_t bytes = static_cast<uint64_t>(plan.user[k].nbytes().value_or(0));
    const uint64_t padded = (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
    if (bytes > UINT64_MAX - kSlotAlignment || plan.workspace_size > UINT64_MAX - padded) {
      return invalid("the workspace for the non-contiguous tensors overflows");
    }
    plan.slot_of[k] = static_cast<int>(plan.slots.size());
    plan.slots.push_back({k, plan.workspace_size, copy_in, copy_out});
    plan.workspace_size += padded;
    return {};
  };
  for (int k = 0; k < kNumInputs; ++k) {
    if (plan.user[k].is_contiguous()) continue;
    // An in-place state tensor is also the output: its slot is copied back.
    const bool written = k < 3 && plan.in_place[k];
    MANTISSA_RETURN_IF_ERROR(add_slot(k, true, written));
  }
  for (int j = 0; j < 3; ++j) {
    const int k = kVarOut + j;
    if (plan.in_place[j]) {
      plan.slot_of[k] = plan.slot_of[j];  // same view, same storage
    } else if (!plan.user[k].is_contiguous()) {
      MANTISSA_RETURN_IF_ERROR(add_slot(k, false, true));
    }
  }
  return {};
}

// The aliasing rule of the operator, on the caller's (possibly strided) views, comparing the
// byte ranges the views span: an output is the very same view as its own input or shares no
// byte of span with it, and shares none with any other tensor; an output never writes one
// element twice. On contiguous views this is exactly the C++ operator's rule.
Status check_outputs(const Plan& plan) {
  std::array<ByteSpan, kNumTensors> spans;
  for (int k = 0; k < kNumTensors; ++k) spans[k] = byte_span(plan.user[k]);
  for (int j = 0; j < 3; ++j) {
    const int out = kVarOut + j;
    if (may_self_overlap(plan.user[out])) {
      return invalid(fmt::format(
          "{} (shape {}) has strides that address some element twice; an output must not",
          kNames[out], plan.user[out].shape_string()));
    }
    for (int k = 0; k < kNumTensors; ++k) {
      if (k == out || (k == j && plan.in_place[j])) continue;
      if (spans_overlap(spans[out], spans[k])) {
        return invalid(fmt::format(
            "{} overlaps {} (an output must be the very same view as its input, or share no "
            "byte with it nor with any other tensor; strided views are compared by the bytes "
            "they span)",
            kNames[out], kNames[k]));
      }
    }
  }
  return {};
}

// An address range for the workspace slots that no tensor of the call spans, so phase one can
// validate the very views phase two will compute on. Never dereferenced.
std::optional<uintptr_t> placeholder_base(const Plan& plan) {
  uintptr_t lowest = UINTPTR_MAX, highest = 0;
  for (const TensorView& v : plan.user) {
    const ByteSpan s = byte_span(v);
    if (s.empty()) continue;
    lowest = std::min(lowest, s.lo);
    highest = std::max(highest, s.hi);
  }
  const uintptr_t above = (std::max<uintptr_t>(highest, kSlotAlignment) + kSlotAlignment - 1) /
                          kSlotAlignment * kSlotAlignment;
  if (above >= highest && UINTPTR_MAX - above >= plan.workspace_size) return above;
  if (lowest != UINTPTR_MAX && lowest > plan.workspace_size + kSlotAlignment) {
    return (lowest - plan.workspace_size) / kSlotAlignment * kSlotAlignment;
  }
  return std::nullopt;
}

Status run_plan(const Plan& plan, void* workspace) {
  char* base = static_cast<char*>(workspace);
  if (plan.workspace_size != 0) {
    // The copies must not land in the caller's tensors.
    const auto lo = reinterpret_cast<uintptr_t>(workspace);
    const ByteSpan ws{lo, lo + plan.workspace_size};
    for (int k = 0; k < kNumTensors; ++k) {
      if (spans_overlap(ws, byte_span(plan.user[k]))) {
        return Status(StatusCode::kParamInvalid,
                      fmt::format("{}: the workspace overlaps {}", kPhaseTwo, kNames[k]));
      }
    }
  }
  for (const Slot& s : plan.slots) {
    if (s.copy_in) copy_to_contiguous(plan.user[s.tensor], base + s.offset);
  }
  MANTISSA_RETURN_IF_ERROR(apply_adam_d(plan.operator_views(base), plan.params));
  for (const Slot& s : plan.slots) {
    if (s.copy_out) copy_from_contiguous(base + s.offset, plan.user[s.tensor]);
  }
  return {};
}

}  // namespace
}  // namespace mantissa::compat

extern "C" {

aclnnStatus aclnnApplyAdamDGetWorkspaceSize(const aclTensor* var, const aclTensor* m,
                                            const aclTensor* v, const aclTensor* beta1Power,
                                            const aclTensor* beta2Power, const aclTensor* lr,
                                            const aclTensor* beta1, const aclTensor* beta2,
                                            const aclTensor* epsilon, const aclTensor* grad,
                                            bool useLocking, bool useNesterov, aclTensor* varOut,
                                            aclTensor* mOut, aclTensor* vOut,
                                            uint64_t* workspaceSize, aclOpExecutor** executor) {
  using namespace mantissa::compat;
  const std::array<const aclTensor*, kNumTensors> tensors{
      var, m, v, beta1Power, beta2Power, lr, beta1, beta2, epsilon, grad, varOut, mOut, vOut};
  std::array<TensorArg, kNumTensors> args;
  for (int k = 0; k < kNumTensors; ++k) args[k] = {kNames[k], tensors[k]};
  if (aclnnStatus s = check_tensor_args(kPhaseOne, args); s != ACLNN_SUCCESS) return s;
  if (aclnnStatus s = check_out_pointers(kPhaseOne, workspaceSize, executor); s != ACLNN_SUCCESS) {
    return s;
  }

  Plan plan;
  for (int k = 0; k < kNumTensors; ++k) plan.user[k] = to_view(*tensors[k]);
  for (int j = 0; j < 3; ++j) {
    plan.in_place[j] = tensors[kVarOut + j] == tensors[j] ||
                       mantissa::same_view(plan.user[kVarOut + j], plan.user[j]);
  }
  plan.params.use_locking = useLocking;
  plan.params.use_nesterov = useNesterov;
  if (const mantissa::Status s = make_plan(plan); !s.ok()) return report(s);

  // Validate the views the operator will get in phase two (slots placed where no tensor is),
  // then the aliasing rule on the caller's own views.
  const std::optional<uintptr_t> base = placeholder_base(plan);
  if (!base) {
    set_recent_error(fmt::format("{}: no address range is free for the workspace", kPhaseOne));
    return ACLNN_ERR_INNER;
  }
  if (const mantissa::Status s = mantissa::apply_adam_d_validate(
          plan.operator_views(reinterpret_cast<char*>(*base)), plan.params);
      !s.ok()) {
    return report(s);
  }
  if (const mantissa::Status s = check_outputs(plan); !s.ok()) return report(s);

  const uint64_t size = plan.workspace_size;
  aclOpExecutor* created = create_executor(
      kPhaseTwo, size, [plan = std::move(plan)](void* ws) { return run_plan(plan, ws); });
  if (created == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  *workspaceSize = size;
  *executor = created;
  return ACLNN_SUCCESS;
}

aclnnStatus aclnnApplyAdamD(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                            aclrtStream stream) {
  return mantissa::compat::run_executor(mantissa::compat::kPhaseTwo, workspace, workspaceSize,
                                        executor, stream);
}

}  // extern "C"
