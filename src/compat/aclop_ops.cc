// The op-by-name operator table, derived from the operator declarations (ops/all_ops.h): for
// each op type its inputs (the read and in/out arguments), outputs and attributes, under CANN's
// graph names, and a handler that turns descriptors, buffers and attributes into a C++ API call.
// An operator added to the list gets its row here with no further code.
#include <array>
#include <cstddef>
#include <vector>

#include "compat/aclop_internal.h"
#include "mantissa/workspace.h"
#include "ops/all_ops.h"

namespace mantissa::compat::aclop {
namespace {

using detail::AllOps;
using detail::kNumArgs;
using detail::kNumAttrs;
using detail::Role;

template <class Op>
constexpr std::size_t count_outputs() {
  std::size_t n = 0;
  for (const auto& a : Op::kArgs) n += a.role == Role::kOut;
  return n;
}

template <class Op>
struct Row {
  static constexpr std::size_t kOutputs = count_outputs<Op>();
  static constexpr std::size_t kInputs = kNumArgs<Op> - kOutputs;

  // Graph names, inputs (kIn and kInOut) and outputs each in declaration order.
  static constexpr std::array<const char*, kInputs> inputs = [] {
    std::array<const char*, kInputs> names{};
    std::size_t i = 0;
    for (const auto& a : Op::kArgs) {
      if (a.role != Role::kOut) names[i++] = a.graph_name.data();
    }
    return names;
  }();
  static constexpr std::array<const char*, kOutputs> outputs = [] {
    std::array<const char*, kOutputs> names{};
    std::size_t i = 0;
    for (const auto& a : Op::kArgs) {
      if (a.role == Role::kOut) names[i++] = a.graph_name.data();
    }
    return names;
  }();
  static constexpr std::array<AttrSpec, kNumAttrs<Op>> attrs = [] {
    std::array<AttrSpec, kNumAttrs<Op>> specs{};
    for (std::size_t i = 0; i < kNumAttrs<Op>; ++i) {
      const detail::AttrSpec& a = Op::kAttrs[i];
      AttrValue v{a.type};
      v.b = a.default_value != 0.0;
      v.i = static_cast<int64_t>(a.default_value);
      v.f = static_cast<float>(a.default_value);
      // Op-by-name may know the attribute under another name, as a one-element list.
      if (a.graph_int_list) v.list_size = 1;
      specs[i] = {a.graph_name.empty() ? a.name.data() : a.graph_name.data(), a.type,
                  a.required_by_name, v, a.graph_int_list};
    }
    return specs;
  }();

  static Status validate(const typename Op::Tensors& t, const typename Op::Params& p) {
    return detail::validate<Op>(t, p);
  }

  // Outputs are always given: the input's buffer (in place) or another one, in which case the
  // input is left unchanged. In/out arguments are updated through their input buffers.
  // The input index of the list argument, or -1.
  static constexpr int dynamic_input = [] {
    int index = -1, i = 0;
    for (const auto& a : Op::kArgs) {
      if (a.role == Role::kOut) continue;
      if (a.is_list) index = i;
      ++i;
    }
    return index;
  }();

  static Status handler(const OpCall& c) {
    std::array<TensorView, kNumArgs<Op>> v;
    std::vector<TensorView> list;  // the dynamic input's elements
    const int listed = c.num_inputs() - static_cast<int>(kInputs) + 1;
    int in = 0, out = 0;
    for (std::size_t k = 0; k < kNumArgs<Op>; ++k) {
      if (Op::kArgs[k].is_list) {
        for (int i = 0; i < listed; ++i) list.push_back(c.in(in++));
      } else {
        v[k] = Op::kArgs[k].role == Role::kOut ? c.out(out++) : c.in(in++);
      }
    }
    typename Op::Tensors t = detail::tensors_from<Op>(v);
    for (std::size_t k = 0; k < kNumArgs<Op>; ++k) {
      if (Op::kArgs[k].is_list) detail::set_list<Op>(t, k, list);
    }
    typename Op::Params p{};
    for (std::size_t i = 0; i < kNumAttrs<Op>; ++i) {
      const detail::AttrSpec& a = Op::kAttrs[i];
      const std::string_view name = attrs[i].name;
      switch (a.type) {
        case AttrType::kBool: detail::set_attr<Op>(p, i, c.attr_bool(name)); break;
        case AttrType::kInt: detail::set_attr<Op>(p, i, c.attr_int(name)); break;
        case AttrType::kFloat: detail::set_attr<Op>(p, i, c.attr_float(name)); break;
      }
    }
    return c.execute(t, p, validate, run);
  }

  // Op-by-name has no workspace: an operator that needs scratch memory allocates it.
  static Status run(const typename Op::Tensors& t, const typename Op::Params& p) {
    return Op::run(t, p, Workspace{});
  }

  static constexpr OpDef def() {
    return {Op::kType, inputs, outputs, attrs, handler, dynamic_input};
  }
};

const std::array<OpDef, AllOps::size> kOps = [] {
  std::array<OpDef, AllOps::size> ops{};
  std::size_t i = 0;
  AllOps::for_each([&](auto op) { ops[i++] = Row<typename decltype(op)::type>::def(); });
  return ops;
}();

}  // namespace

std::span<const OpDef> op_table() noexcept { return kOps; }

}  // namespace mantissa::compat::aclop
