// aclnnForeachNorm's own rules (its entry points are generated from the declaration).
#include "compat/aclnn_op.h"
#include "ops/foreach_norm/foreach_norm_desc.h"

// The aclnn call's own limits (AclHooks::check_aclnn_early), before the kernel is reached.
namespace mantissa {

Status detail::ForeachNormOp::check_aclnn_early(const Tensors& t, const Params&) {
  for (const TensorList* list : {&t.x, &t.out}) {
    for (const TensorView& v : *list) {
      if (v.data == nullptr || !is_training_float(v.dtype)) return {};  // the common rules
    }
  }
  for (const TensorList* list : {&t.x, &t.out}) {
    const char* name = list == &t.x ? "x" : "out";
    for (std::size_t i = 1; i < list->size(); ++i) {
      if ((*list)[i].dtype != (*list)[0].dtype) {
        return fail(StatusCode::kTiling, kType,
                    "{}[{}] dtype {} differs from {}[0] dtype {} (the aclnn call takes one dtype)",
                    name, i, dtype_name((*list)[i].dtype), name, dtype_name((*list)[0].dtype));
      }
    }
  }
  for (const TensorList* list : {&t.x, &t.out}) {
    const char* name = list == &t.x ? "x" : "out";
    for (std::size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i].rank > kMaxRank) {
        return fail(StatusCode::kTiling, kType, "{}[{}] rank {} is above {} (shape {})", name, i,
                    (*list)[i].rank, kMaxRank, (*list)[i].shape_string());
      }
    }
  }
  return {};
}

}  // namespace mantissa
