// What only the C layers derive from a declaration: op-by-name's input order (CANN's graph
// definition, where it differs from the aclnn signature's), and its compile-time check. The
// names and flags a declaration writes for the C layers (ArgSpec::acl_name and graph_name,
// AttrSpec's graph_* fields, kGraphInputs, AclHooks) are plain data in core/op_desc.h's types,
// interpreted only here, in compat/aclop_ops.cc and in compat/aclnn_op.h.
#pragma once

#include <array>
#include <cstddef>

#include "core/op_desc.h"

namespace mantissa::compat {

template <class Op>
constexpr std::size_t count_inputs() {
  std::size_t n = 0;
  for (const detail::ArgSpec& a : Op::kArgs) n += a.role != detail::Role::kOut;
  return n;
}

// The number of op-by-name tensor inputs: Op::kGraphInputs' where declared, else every read and
// in/out argument.
template <class Op>
constexpr std::size_t count_graph_inputs() {
  if constexpr (requires { Op::kGraphInputs; }) {
    return Op::kGraphInputs.size();
  } else {
    return count_inputs<Op>();
  }
}

// The op-by-name inputs (the read and in/out arguments) as argument indices, in the order of
// CANN's graph definition: Op::kGraphInputs where the operator declares it (its graph orders
// them unlike its aclnn signature, or lacks an optional one), else declaration order.
template <class Op>
constexpr std::array<std::size_t, count_graph_inputs<Op>()> graph_inputs() {
  std::array<std::size_t, count_graph_inputs<Op>()> order{};
  if constexpr (requires { Op::kGraphInputs; }) {
    for (std::size_t i = 0; i < order.size(); ++i) {
      order[i] = static_cast<std::size_t>(Op::kGraphInputs[i]);
    }
  } else {
    std::size_t i = 0;
    for (std::size_t k = 0; k < detail::kNumArgs<Op>; ++k) {
      if (Op::kArgs[k].role != detail::Role::kOut) order[i++] = k;
    }
  }
  return order;
}

// A declared graph order names every read and in/out argument at most once, and every one that
// is not optional (an optional input the graph lacks is always absent by name).
template <class Op>
constexpr bool graph_order_valid() {
  if constexpr (requires { Op::kGraphInputs; }) {
    std::array<bool, detail::kNumArgs<Op>> seen{};
    for (auto k : Op::kGraphInputs) {
      const auto i = static_cast<std::size_t>(k);
      if (i >= detail::kNumArgs<Op> || seen[i] || Op::kArgs[i].role == detail::Role::kOut)
        return false;
      seen[i] = true;
    }
    for (std::size_t k = 0; k < detail::kNumArgs<Op>; ++k) {
      if (Op::kArgs[k].role != detail::Role::kOut && !Op::kArgs[k].optional && !seen[k])
        return false;
    }
  }
  return true;
}

// The C layers' rules about a declaration, checked at compile time for every listed operator
// (compat/aclop_ops.cc).
template <class Op>
constexpr bool binding_well_formed() {
  return graph_order_valid<Op>();
}

}  // namespace mantissa::compat
