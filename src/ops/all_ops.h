// The list of operators. Every consumer (op-by-name, the precision kit, the benchmarks, the
// registry test) iterates this list, so an operator declared here and missing from a consumer
// fails a test rather than being silently absent.
#pragma once

#include <type_traits>

#include "ops/amp_update_scale/amp_update_scale_desc.h"
#include "ops/apply_adam_d/apply_adam_d_desc.h"
#include "ops/apply_adam_w_v2/apply_adam_w_v2_desc.h"
#include "ops/ascend_quant_v3/ascend_quant_v3_desc.h"
#include "ops/dynamic_quant/dynamic_quant_desc.h"
#include "ops/foreach_non_finite_check_and_unscale/foreach_non_finite_check_and_unscale_desc.h"
#include "ops/foreach_norm/foreach_norm_desc.h"
#include "ops/layer_norm/layer_norm_desc.h"
#include "ops/layer_norm_grad/layer_norm_grad_desc.h"
#include "ops/quantize/quantize_desc.h"
#include "ops/rms_norm/rms_norm_desc.h"
#include "ops/rms_norm_grad/rms_norm_grad_desc.h"
#include "ops/sgd/sgd_desc.h"
#include "ops/softmax/softmax_desc.h"
#include "ops/softmax_cross_entropy_with_logits/softmax_cross_entropy_with_logits_desc.h"
#include "ops/softmax_grad/softmax_grad_desc.h"

namespace mantissa::detail {

template <class... Ops>
struct OpList {
  static constexpr int size = sizeof...(Ops);
  // Calls f(std::type_identity<Op>{}) for each operator, in order.
  template <class F>
  static void for_each(F&& f) {
    (f(std::type_identity<Ops>{}), ...);
  }
};

using AllOps =
    OpList<AmpUpdateScaleOp, SgdOp, ApplyAdamDOp, ApplyAdamWV2Op, SoftmaxOp, LogSoftmaxOp,
           SoftmaxGradOp, LogSoftmaxGradOp, RmsNormOp, RmsNormGradOp,
           ForeachNonFiniteCheckAndUnscaleOp, ForeachNormOp, SoftmaxCrossEntropyWithLogitsOp,
           LayerNormOp, LayerNormGradOp, QuantizeOp, DynamicQuantOp, AscendQuantV3Op>;

}  // namespace mantissa::detail
