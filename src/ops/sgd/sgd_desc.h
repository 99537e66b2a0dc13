// SGD's declaration: arguments in CANN's order, attributes, variants. See core/op_desc.h.
#pragma once

#include <array>
#include <string_view>
#include <tuple>

#include "core/op_desc.h"
#include "mantissa/ops/sgd.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

struct SgdOp {
  using Tensors = SgdTensors;
  using Params = SgdParams;
  static constexpr std::string_view kType = "SGD";
  static constexpr std::string_view kFunction = "sgd";  // the C++ API's
  static constexpr std::string_view kAclnn = "";        // CANN has no aclnn entry for SGD

  enum Arg { kParameters, kGradient, kLearningRate, kAccum, kMomentum, kStat, kParametersOut };
  // parameters decides the dtype (a training float) and shape (rank 1..8, no empty dimension);
  // accum and stat are updated through their own tensors; the new parameters go to
  // parameters_out, or in place when it is unset.
  static constexpr std::array kArgs{
      In("parameters", "parameters").training_float().rank(1, 8).not_empty(),
      In("gradient", "gradient").like(kParameters),
      In("learning_rate", "learningRate").dtype_of(kParameters).one_element(),
      InOut("accum", "accum").like(kParameters),
      In("momentum", "momentum").dtype_of(kParameters).one_element(),
      InOut("stat", "stat").like(kParameters),
      Out("parameters_out", "parametersOut", "parameters")
          .like(kParameters)
          .in_place_of(kParameters)
          .optional_output(),
  };
  MANTISSA_TENSOR_MEMBERS(parameters, gradient, learning_rate, accum, momentum, stat,
                          parameters_out);

  static constexpr std::array kAttrs{
      AttrSpec{"dampening", AttrType::kFloat, false, 0.0},
      AttrSpec{"weight_decay", AttrType::kFloat, false, 0.0},
      AttrSpec{"nesterov", AttrType::kBool, false, 0.0},
  };
  MANTISSA_ATTR_MEMBERS(dampening, weight_decay, nesterov);

  // Steady-state streams: momentum != 0 reads and writes parameters and accum and reads
  // gradient and stat (stat is +0.0 after the first step and not written again); momentum == 0
  // writes parameters only and reads gradient and accum (accum * 0 may be NaN).
  enum class Variant { kMomentum, kMomentumDampeningWd, kNesterovWd, kNoMomentum };
  static constexpr std::array kVariants{
      VariantSpec<Variant>{Variant::kMomentum, "momentum", {2, 2}},
      VariantSpec<Variant>{Variant::kMomentumDampeningWd, "momentum+dampening+wd", {2, 2}},
      VariantSpec<Variant>{Variant::kNesterovWd, "nesterov+wd", {2, 2}},
      VariantSpec<Variant>{Variant::kNoMomentum, "no-momentum", {1, 2}},
  };
  static Params params_for(Variant v) {
    switch (v) {
      case Variant::kMomentumDampeningWd: return {0.1f, 1e-4f, false};
      case Variant::kNesterovWd: return {0.0f, 1e-4f, true};
      default: return {};
    }
  }

  // nesterov requires dampening 0; weight_decay >= 0 (NaN rejected). In sgd.cc.
  static Status check_params(const Tensors& t, const Params& p);
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors& t, const Params& p, Workspace = {}) { return sgd(t, p); }

  static constexpr OpHooks<Tensors, Params> kHooks{};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
};
static_assert(well_formed<SgdOp>());

}  // namespace mantissa::detail
