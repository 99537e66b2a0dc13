// The list of operators: every struct <Name>Op in src/ops/*/*_desc.h, collected by the build
// (cmake/operators.cmake), so a declaration is listed by existing. Every consumer (op-by-name, the
// precision kit, the benchmarks, the Python module's generic bindings, the registry test) iterates
// this list, so an operator missing from a consumer fails a test rather than being silently
// absent.
#pragma once

#include <type_traits>

#include "ops/all_ops_list.h"  // generated: every src/ops/*/*_desc.h (cmake/operators.cmake)

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

using AllOps = OpList<MANTISSA_ALL_OPS>;

}  // namespace mantissa::detail
