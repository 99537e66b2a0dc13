// The frame of every operator's C++ entry, from its declaration: guarded_entry (the default
// floating-point environment, the exception barrier; core/entry.h) named by Op::kFunction, the
// validation derived from the declaration (validate<Op>), the runtime's one-time setup, then the
// operator's own body. An entry is
//
//   Status rms_norm(const RmsNormTensors& t, const RmsNormParams& p, Workspace) {
//     return detail::op_entry<detail::RmsNormOp>(t, p, [&]() -> Status { ...; return {}; });
//   }
//
// and nothing it writes is touched before validation has passed.
#pragma once

#include "core/entry.h"
#include "core/op_desc.h"
#include "core/runtime_internal.h"

namespace mantissa::detail {

template <class Op, class Body>
Status op_entry(const typename Op::Tensors& t, const typename Op::Params& p, Body&& body) noexcept {
  return guarded_entry(Op::kFunction, [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(validate<Op>(t, p));
    ensure_runtime_initialized();
    return body();
  });
}

}  // namespace mantissa::detail
