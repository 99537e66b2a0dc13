// The op-by-name operator table, derived from the operator declarations (ops/all_ops.h): for
// each op type its inputs (the read and in/out arguments), outputs and attributes, under CANN's
// graph names, and a handler that turns descriptors, buffers and attributes into a C++ API call.
// An operator added to the list gets its row here with no further code.
#include <array>
#include <cstddef>
#include <vector>

#include "compat/aclop_internal.h"
#include "compat/op_binding.h"
#include "mantissa/workspace.h"
#include "ops/all_ops.h"

namespace mantissa::compat::aclop {
namespace {

using detail::AllOps;
using detail::kNumArgs;
using detail::kNumAttrs;
using detail::Role;

// One op-by-name input: a tensor argument, or an attribute given as an input tensor.
struct GraphInput {
  bool is_attr = false;
  std::size_t index = 0;  // into Op::kArgs or Op::kAttrs
};

template <class Op>
struct Row {
  static constexpr std::size_t kTensorInputs = compat::count_graph_inputs<Op>();
  static constexpr std::size_t kOutputs = kNumArgs<Op> - compat::count_inputs<Op>();
  // Attributes given as input tensors (host scalars, int lists) and attributes the graph lacks
  // (derived by AclHooks::params_by_name).
  static constexpr bool by_input(const detail::AttrSpec& a) {
    return detail::is_input_attr(a.type) && a.graph_input_before != detail::kNotInGraph;
  }
  static constexpr bool by_attr(const detail::AttrSpec& a) {
    return !detail::is_input_attr(a.type) && a.graph_input_before != detail::kNotInGraph;
  }
  static constexpr std::size_t kInputAttrs = [] {
    std::size_t n = 0;
    for (const auto& a : Op::kAttrs) n += by_input(a);
    return n;
  }();
  static constexpr std::size_t kAttrs = [] {
    std::size_t n = 0;
    for (const auto& a : Op::kAttrs) n += by_attr(a);
    return n;
  }();
  static constexpr std::size_t kInputs = kTensorInputs + kInputAttrs;

  // The inputs in the graph definition's order: the tensor inputs (detail::graph_inputs), each
  // preceded by the input attributes declared to come before it, then the other input
  // attributes; the outputs in declaration order.
  static constexpr std::array<GraphInput, kInputs> order = [] {
    std::array<GraphInput, kInputs> o{};
    std::size_t n = 0;
    for (std::size_t k : compat::graph_inputs<Op>()) {
      for (std::size_t a = 0; a < kNumAttrs<Op>; ++a) {
        if (by_input(Op::kAttrs[a]) && Op::kAttrs[a].graph_input_before == static_cast<int>(k)) {
          o[n++] = {true, a};
        }
      }
      o[n++] = {false, k};
    }
    for (std::size_t a = 0; a < kNumAttrs<Op>; ++a) {
      if (by_input(Op::kAttrs[a]) && Op::kAttrs[a].graph_input_before < 0) o[n++] = {true, a};
    }
    return o;
  }();
  static constexpr const char* attr_graph_name(const detail::AttrSpec& a) {
    return a.graph_name.empty() ? a.name.data() : a.graph_name.data();
  }
  static constexpr std::array<const char*, kInputs> inputs = [] {
    std::array<const char*, kInputs> names{};
    for (std::size_t i = 0; i < kInputs; ++i) {
      names[i] = order[i].is_attr ? attr_graph_name(Op::kAttrs[order[i].index])
                                  : Op::kArgs[order[i].index].graph_name.data();
    }
    return names;
  }();
  static constexpr std::array<bool, kInputs> optional_inputs = [] {
    std::array<bool, kInputs> optional{};
    for (std::size_t i = 0; i < kInputs; ++i) {
      optional[i] = !order[i].is_attr && Op::kArgs[order[i].index].optional &&
                    !Op::kArgs[order[i].index].graph_required;
    }
    return optional;
  }();
  static constexpr std::array<const char*, kOutputs> outputs = [] {
    std::array<const char*, kOutputs> names{};
    std::size_t i = 0;
    for (const auto& a : Op::kArgs) {
      if (a.role == Role::kOut) names[i++] = a.graph_name.data();
    }
    return names;
  }();
  // The attributes set with aclopSetAttr*.
  static constexpr std::array<std::size_t, kAttrs> attr_index = [] {
    std::array<std::size_t, kAttrs> index{};
    std::size_t n = 0;
    for (std::size_t i = 0; i < kNumAttrs<Op>; ++i) {
      if (by_attr(Op::kAttrs[i])) index[n++] = i;
    }
    return index;
  }();
  static constexpr std::array<AttrSpec, kAttrs> attrs = [] {
    std::array<AttrSpec, kAttrs> specs{};
    for (std::size_t i = 0; i < kAttrs; ++i) {
      const detail::AttrSpec& a = Op::kAttrs[attr_index[i]];
      AttrValue v{a.type};
      v.b = a.default_value != 0.0;
      v.i = static_cast<int64_t>(a.default_value);
      v.f = static_cast<float>(a.default_value);
      // Op-by-name may know the attribute under another name, as a one-element list.
      if (a.graph_int_list) v.list_size = 1;
      // A list attribute left unset keeps the operator's default.
      if (a.type == AttrType::kBoolList) v.list_size = kOperatorDefault;
      specs[i] = {attr_graph_name(a), a.type,         a.required_by_name, v,
                  a.graph_int_list,   a.graph_strings};
    }
    return specs;
  }();

  static Status validate(const typename Op::Tensors& t, const typename Op::Params& p) {
    return detail::validate<Op>(t, p);
  }

  // Outputs are always given: the input's buffer (in place) or another one, in which case the
  // input is left unchanged. In/out arguments are updated through their input buffers. An
  // optional input left out is absent from the C++ call; a list argument is a dynamic input
  // whose elements are consecutive input descriptors.
  static constexpr int dynamic_input = [] {
    for (std::size_t i = 0; i < kInputs; ++i) {
      if (!order[i].is_attr && Op::kArgs[order[i].index].is_list) return static_cast<int>(i);
    }
    return -1;
  }();
  // An output list is a dynamic output likewise.
  static constexpr int dynamic_output = [] {
    int o = 0;
    for (const auto& a : Op::kArgs) {
      if (a.role != Role::kOut) continue;
      if (a.is_list) return o;
      ++o;
    }
    return -1;
  }();

  static Status handler(const OpCall& c) {
    std::array<TensorView, kNumArgs<Op>> v;
    std::array<bool, kNumArgs<Op>> present;
    present.fill(false);
    for (std::size_t k = 0; k < kNumArgs<Op>; ++k) present[k] = Op::kArgs[k].role == Role::kOut;
    std::vector<TensorView> list, out_list;  // the dynamic input's and output's elements
    const int listed = c.num_inputs() - static_cast<int>(kInputs) + 1;
    const int listed_out = c.num_outputs() - static_cast<int>(kOutputs) + 1;
    typename Op::Params p{};
    int in = 0;
    for (const GraphInput& g : order) {
      if (g.is_attr) {
        if (Op::kAttrs[g.index].type == AttrType::kScalar) {
          double value = 0.0;
          MANTISSA_RETURN_IF_ERROR(c.scalar_in(in++, value));
          detail::set_attr<Op>(p, g.index, value);
        } else {
          std::vector<int64_t> values;
          MANTISSA_RETURN_IF_ERROR(c.int_list_in(in++, values));
          MANTISSA_RETURN_IF_ERROR(detail::set_list_attr<Op>(p, g.index, values));
        }
        continue;
      }
      const std::size_t k = g.index;
      if (Op::kArgs[k].is_list) {
        for (int e = 0; e < listed; ++e) list.push_back(c.in(in++));
        present[k] = true;
        continue;
      }
      present[k] = !c.absent(in);
      if (present[k]) v[k] = c.in(in);
      ++in;
    }
    int out = 0;
    for (std::size_t k = 0; k < kNumArgs<Op>; ++k) {
      if (Op::kArgs[k].role != Role::kOut) continue;
      if (!Op::kArgs[k].is_list) {
        v[k] = c.out(out++);
        continue;
      }
      for (int e = 0; e < listed_out; ++e) out_list.push_back(c.out(out++));
    }
    typename Op::Tensors t = detail::tensors_from<Op>(v, present);
    for (std::size_t k = 0; k < kNumArgs<Op>; ++k) {
      if (Op::kArgs[k].is_list) {
        detail::set_list<Op>(t, k, Op::kArgs[k].role == Role::kOut ? out_list : list);
      }
    }
    for (std::size_t i = 0; i < kAttrs; ++i) {
      const std::size_t a = attr_index[i];
      const std::string_view name = attrs[i].name;
      switch (Op::kAttrs[a].type) {
        case AttrType::kBool: detail::set_attr<Op>(p, a, c.attr_bool(name)); break;
        case AttrType::kInt: detail::set_attr<Op>(p, a, c.attr_int(name)); break;
        case AttrType::kFloat: detail::set_attr<Op>(p, a, c.attr_float(name)); break;
        case AttrType::kBoolList: {
          std::vector<int64_t> values;
          bool set = false;
          MANTISSA_RETURN_IF_ERROR(c.attr_list(name, values, set));
          if (set) MANTISSA_RETURN_IF_ERROR(detail::set_list_attr<Op>(p, a, values));
          break;
        }
        case AttrType::kScalar:
        case AttrType::kIntList: break;  // inputs (above)
      }
    }
    if constexpr (Op::kAclHooks.params_by_name.set) Op::kAclHooks.params_by_name.fn(t, p);
    return c.execute(t, p, validate, run);
  }

  // Op-by-name has no workspace: an operator that needs scratch memory allocates it.
  static Status run(const typename Op::Tensors& t, const typename Op::Params& p) {
    return Op::run(t, p, Workspace{});
  }

  static constexpr OpDef def() {
    return {Op::kType, inputs,  optional_inputs, outputs,
            attrs,     handler, dynamic_input,   dynamic_output};
  }
};

// The C layers' compile-time rules (compat/op_binding.h) hold for every listed operator.
template <class... Ops>
constexpr bool bindings_well_formed(detail::OpList<Ops...>*) {
  return (binding_well_formed<Ops>() && ...);
}
static_assert(bindings_well_formed(static_cast<AllOps*>(nullptr)),
              "an operator's kGraphInputs names an output, names an argument twice, or leaves "
              "out a required input");

const std::array<OpDef, AllOps::size> kOps = [] {
  std::array<OpDef, AllOps::size> ops{};
  std::size_t i = 0;
  AllOps::for_each([&](auto op) { ops[i++] = Row<typename decltype(op)::type>::def(); });
  return ops;
}();

}  // namespace

std::span<const OpDef> op_table() noexcept { return kOps; }

}  // namespace mantissa::compat::aclop
