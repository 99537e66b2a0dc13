// Declarations that must not compile: each CASE breaks one rule of core/op_desc.h or
// compat/aclnn_op.h, and tests/compile_fail/run.sh checks that the compiler refuses it with the
// rule's name. CASE 0 is the well-formed declaration they all start from, which must compile.
#include <optional>

#include "aclnnop/aclnn_rms_norm.h"  // the aclnn types, as an entry point includes them
#include "compat/aclnn_op.h"
#include "core/op_desc.h"

namespace probe {

using mantissa::Status;
using mantissa::TensorView;
using mantissa::Workspace;
namespace d = mantissa::detail;

struct Tensors {
  TensorView x;
#if CASE == 2
  TensorView y;  // declared before gamma: not the arguments' order
  TensorView gamma;
#else
  TensorView gamma;
#if CASE == 4
  TensorView y;  // y is an optional output: std::optional<TensorView>
#else
  std::optional<TensorView> y;
#endif
#endif
#if CASE == 3
  TensorView scratch;  // a member the declaration does not list
#endif
};

struct Params {
  double epsilon = 1e-6;
#if CASE == 5
  bool fast = true;  // the declaration says false
#else
  bool fast = false;
#endif
};

struct ProbeOp {
  using Tensors = probe::Tensors;
  using Params = probe::Params;
  static constexpr std::string_view kType = "Probe";
  static constexpr std::string_view kAclnn = "aclnnProbe";
  enum Arg { kX, kGamma, kY };
  static constexpr std::array kArgs{
      d::In("x", "self").training_float(),
      d::In("gamma", "gamma").dtype_of(kX).trailing_of(kX),
      d::Out("y", "out", "y").like(kX).in_place_of(kX).optional_output(),
  };
#if CASE == 1
  MANTISSA_TENSOR_MEMBERS(x, y, gamma);  // listed out of order
#else
  MANTISSA_TENSOR_MEMBERS(x, gamma, y);
#endif
  static constexpr std::array kAttrs{
      d::AttrSpec{"epsilon", d::AttrType::kFloat, false, 1e-6},
      d::AttrSpec{"fast", d::AttrType::kBool, false, 0.0},
  };
#if CASE == 6
  MANTISSA_ATTR_MEMBERS(fast, epsilon);  // listed out of order
#else
  MANTISSA_ATTR_MEMBERS(epsilon, fast);
#endif
  static int normalized_dims(const Tensors& t, const Params&) { return t.gamma.rank; }
#if CASE == 7
  static constexpr d::OpHooks<Tensors, Params> kHooks{.normalised_dims = &normalized_dims};
#elif CASE == 8
  static constexpr d::OpHooks<Tensors, Params> kHooks{};  // normalized_dims left out
#else
  static constexpr d::OpHooks<Tensors, Params> kHooks{.normalized_dims = &normalized_dims};
#endif
  static constexpr d::AclHooks<Tensors, Params> kAclHooks{};
  static Status check_params(const Tensors&, const Params&) { return {}; }
  static uint64_t workspace_size(const Tensors&, const Params&) { return 0; }
  static Status run(const Tensors&, const Params&, Workspace = {}) { return {}; }
};
static_assert(d::well_formed<ProbeOp>());

aclnnStatus prepare(const aclTensor* self, const aclTensor* gamma, const aclTensor* out,
                    uint64_t* size, aclOpExecutor** executor) {
#if CASE == 9
  return mantissa::compat::aclnn_prepare<ProbeOp>(MANTISSA_ACLNN_HANDLES(self, out, gamma), {},
                                                  size, executor);
#elif CASE == 10
  return mantissa::compat::aclnn_prepare<ProbeOp>(MANTISSA_ACLNN_HANDLES(self, gamma), {}, size,
                                                  executor);
#else
  return mantissa::compat::aclnn_prepare<ProbeOp>(MANTISSA_ACLNN_HANDLES(self, gamma, out), {},
                                                  size, executor);
#endif
}

}  // namespace probe
