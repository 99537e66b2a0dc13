// The kit's view of an operator declaration (ops/all_ops.h): its schema (inputs, attributes,
// outputs) and a backend that runs it through the C++ API, derived from the descriptor. The
// goldens are not derived: each operator's fp64 golden and golden32 are written by hand, on
// purpose, in src/precision/op_<name>.cc.
//
// Kit inputs are the read and in/out arguments in declaration order; kit outputs are the written
// arguments, each run in place on the input it updates (its counterpart), in counterpart order,
// then the outputs that update no input (a norm's y and rstd), new tensors in declaration order;
// an output list of new tensors (ForeachNorm's out) is one new output per element of its input
// list, named "<name>[i]".
// Dtype rules map to slots: a training float is a float slot of its own dtype, "dtype of k" a
// float slot tied to k's, a dtype set a kOneOf slot; rules across arguments that the descriptor
// leaves to check_params are the operator's to report (a kit error row).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "mantissa/workspace.h"
#include "ops/all_ops.h"
#include "precision/kit.h"
#include "precision/ops_common.h"

namespace mantissa::precision {

// The hand-written part of an operator's entry: golden, golden32 and the default standard.
// Each op_<name>.cc defines goldens<ItsOp>(); an operator without one does not link.
struct Goldens {
  GoldenFn golden;
  Golden32Fn golden32;
  StandardKind default_standard = StandardKind::kBitwise;
};
template <class Op>
Goldens goldens();

template <class Op>
struct Schema {
  static constexpr std::size_t kN = detail::kNumArgs<Op>;

  // Descriptor index -> kit input index (-1 for outputs).
  static constexpr std::array<int, kN> input_index = [] {
    std::array<int, kN> index{};
    int next = 0;
    for (std::size_t k = 0; k < kN; ++k) {
      index[k] = Op::kArgs[k].role == detail::Role::kOut ? -1 : next++;
    }
    return index;
  }();

  // An output that updates no input: a new tensor.
  static constexpr bool is_new(std::size_t k) {
    return Op::kArgs[k].role == detail::Role::kOut && Op::kArgs[k].paired < 0;
  }

  // The kit input a written argument updates, or -1 for a new tensor.
  static int counterpart(std::size_t k) {
    const detail::ArgSpec& a = Op::kArgs[k];
    if (is_new(k)) return -1;
    return input_index[a.role == detail::Role::kOut ? static_cast<std::size_t>(a.paired) : k];
  }

  // Written arguments in kit output order (by counterpart, then declaration; new tensors last).
  static std::vector<std::size_t> written() {
    std::vector<std::size_t> w;
    for (std::size_t k = 0; k < kN; ++k) {
      if (Op::kArgs[k].written()) w.push_back(k);
    }
    const auto key = [](std::size_t k) {
      return is_new(k) ? static_cast<int>(kN + k) : counterpart(k);
    };
    std::stable_sort(w.begin(), w.end(),
                     [&](std::size_t a, std::size_t b) { return key(a) < key(b); });
    return w;
  }

  // The inputs as the operator's Tensors (read only: for shape rules), outputs unset.
  static typename Op::Tensors input_tensors(const OpInputs& in, std::vector<TensorView>& views) {
    const Layout l = layout(in);
    typename Op::Tensors t{};
    views.clear();
    for (const HostTensor& h : in.tensors) views.push_back(view_of(const_cast<HostTensor&>(h)));
    for (std::size_t k = 0; k < kN; ++k) {
      const detail::ArgSpec& a = Op::kArgs[k];
      if (a.role == detail::Role::kOut) continue;
      if (a.is_list) {
        detail::set_list<Op>(t, k, TensorList(views).subspan(l.first[k], l.count[k]));
      } else if (!absent(in.tensors[l.first[k]])) {
        detail::set_view<Op>(t, k, views[l.first[k]]);
      }
    }
    return t;
  }

  // Element i of a new output list (zeros): dtype and shape from its rules and element i of its
  // input list (one element: shape [1]).
  static HostTensor new_list_element(std::size_t k, const OpInputs& in, std::size_t i) {
    const detail::ArgSpec& a = Op::kArgs[k];
    const Layout l = layout(in);
    auto element = [&](int ref) -> const HostTensor& {
      const auto r = static_cast<std::size_t>(ref);
      return in.tensors[l.first[r] + (Op::kArgs[r].is_list ? i : 0)];
    };
    DType dtype = DType::kFloat32;
    if (a.dtype == detail::DtypeRule::kSameAs) dtype = element(a.dtype_ref).dtype;
    std::vector<int64_t> shape{1};
    if (a.shape == detail::ShapeRule::kSameAs) shape = element(a.shape_ref).shape;
    return HostTensor(dtype, shape);
  }

  // A new output tensor (zeros): dtype and shape from its rules and the inputs.
  static HostTensor new_output(std::size_t k, const OpInputs& in) {
    const detail::ArgSpec& a = Op::kArgs[k];
    const Layout l = layout(in);
    // An output without a shape rule (DynamicQuant's y, whose packed INT32 form shortens the
    // last dim) starts from the first input's shape; infer_output says the rest.
    const HostTensor& ref = in.tensors[l.first[static_cast<std::size_t>(std::max(a.shape_ref, 0))]];
    DType dtype = ref.dtype;
    if (a.dtype == detail::DtypeRule::kFloat32) dtype = DType::kFloat32;
    if (a.dtype == detail::DtypeRule::kSameAs) {
      dtype = in.tensors[l.first[static_cast<std::size_t>(a.dtype_ref)]].dtype;
    }
    std::vector<int64_t> shape = ref.shape;
    if (a.shape == detail::ShapeRule::kReducedOf) {
      std::vector<TensorView> views;
      const int dims = detail::normalized_dims_of<Op>(input_tensors(in, views), params(in));
      const auto rank = static_cast<int>(shape.size());
      for (int i = rank - std::clamp(dims, 0, rank); i < rank; ++i) shape[i] = 1;
    }
    // Where the rules leave the dtype or shape open (LayerNormGrad's dweight: weight's dtype,
    // normalized_shape), the operator says.
    if constexpr (Op::kHooks.infer_output.set) {
      std::vector<TensorView> views;
      Op::kHooks.infer_output.fn(k, input_tensors(in, views), params(in), dtype, shape);
    }
    return HostTensor(dtype, shape);
  }

  static AttrKind attr_kind(detail::AttrType t) {
    switch (t) {
      case detail::AttrType::kBool: return AttrKind::kBool;
      case detail::AttrType::kInt: return AttrKind::kInt;
      case detail::AttrType::kIntList: return AttrKind::kIntList;
      case detail::AttrType::kBoolList: return AttrKind::kBoolList;
      case detail::AttrType::kFloat:
      case detail::AttrType::kScalar: break;
    }
    return AttrKind::kFloat;
  }

  // Where each argument's tensors are in a case's flat inputs: a list argument has
  // in.list_sizes[j] of them, an output the place of the input it updates; new outputs (an
  // output list: one per element of its input list) follow the inputs.
  struct Layout {
    std::array<std::size_t, kN> first{}, count{};
  };
  static Layout layout(const OpInputs& in) {
    Layout l;
    std::size_t next = 0, list = 0;
    std::size_t fresh = in.tensors.size();  // new outputs follow the inputs
    for (std::size_t k = 0; k < kN; ++k) {
      if (Op::kArgs[k].role == detail::Role::kOut) continue;
      l.first[k] = next;
      l.count[k] = Op::kArgs[k].is_list ? static_cast<std::size_t>(in.list_sizes.at(list++)) : 1;
      next += l.count[k];
    }
    for (std::size_t k = 0; k < kN; ++k) {
      if (Op::kArgs[k].role != detail::Role::kOut) continue;
      const detail::ArgSpec& a = Op::kArgs[k];
      l.count[k] = a.is_list ? l.count[static_cast<std::size_t>(a.list_ref)] : 1;
      l.first[k] = is_new(k) ? fresh : l.first[static_cast<std::size_t>(a.paired)];
      if (is_new(k)) fresh += l.count[k];
    }
    return l;
  }

  // A list attr of the wrong length for its member (an output mask of 2) leaves the default:
  // the case's own check reports it (check_list_attrs).
  static typename Op::Params params(const OpInputs& in) {
    typename Op::Params p{};
    for (std::size_t i = 0; i < detail::kNumAttrs<Op>; ++i) {
      const AttrValue& v = in.attrs[i];
      switch (Op::kAttrs[i].type) {
        case detail::AttrType::kBool: detail::set_attr<Op>(p, i, v.b); break;
        case detail::AttrType::kInt: detail::set_attr<Op>(p, i, v.i); break;
        case detail::AttrType::kFloat:
        case detail::AttrType::kScalar: detail::set_attr<Op>(p, i, v.f); break;
        case detail::AttrType::kIntList:
        case detail::AttrType::kBoolList: (void)detail::set_list_attr<Op>(p, i, v.list); break;
      }
    }
    return p;
  }

  // Copies of the inputs followed by the new outputs: what a backend computes on.
  static std::vector<HostTensor> working_tensors(const OpInputs& in) {
    std::vector<HostTensor> w = in.tensors;
    const Layout l = layout(in);
    for (std::size_t k = 0; k < kN; ++k) {
      if (!is_new(k)) continue;
      if (!Op::kArgs[k].is_list) {
        w.push_back(new_output(k, in));
        continue;
      }
      for (std::size_t i = 0; i < l.count[k]; ++i) w.push_back(new_list_element(k, in, i));
    }
    return w;
  }

  // The "kernel" backend: the C++ API, in place on copies of the inputs (optional outputs
  // unset, required ones given as their paired input; new outputs on tensors of their own).
  static std::string run_kernel(const OpInputs& in, std::vector<HostTensor>& out) {
    std::vector<HostTensor> w = working_tensors(in);
    const Layout l = layout(in);
    typename Op::Tensors t{};
    std::array<std::vector<TensorView>, kN> lists;
    for (std::size_t k = 0; k < kN; ++k) {
      const detail::ArgSpec& a = Op::kArgs[k];
      if (a.is_list) {
        for (std::size_t i = 0; i < l.count[k]; ++i) lists[k].push_back(view_of(w[l.first[k] + i]));
        detail::set_list<Op>(t, k, lists[k]);
      } else if (a.role != detail::Role::kOut) {
        HostTensor& h = w[l.first[k]];
        if (!absent(h)) detail::set_view<Op>(t, k, view_of(h));
      } else if (!a.optional || is_new(k)) {  // optional results are computed too
        detail::set_view<Op>(t, k, view_of(w[l.first[k]]));
      }
    }
    const Status st = Op::run(t, params(in), Workspace{});
    if (!st.ok()) return st.message();
    out = written_tensors(in, w);
    return "";
  }

  // The written tensors of a call in the kit's output order.
  static std::vector<HostTensor> written_tensors(const OpInputs& in,
                                                 const std::vector<HostTensor>& w) {
    const Layout l = layout(in);
    std::vector<HostTensor> out;
    for (std::size_t k : written()) {
      for (std::size_t i = 0; i < l.count[k]; ++i) out.push_back(w[l.first[k] + i]);
    }
    return out;
  }

  static OpEntry entry() {
    OpEntry e;
    e.name = std::string(Op::kType);
    for (std::size_t k = 0; k < kN; ++k) {
      const detail::ArgSpec& a = Op::kArgs[k];
      if (a.role == detail::Role::kOut) continue;
      TensorSlot s;
      s.name = std::string(a.name);
      switch (a.dtype) {
        case detail::DtypeRule::kTrainingFloat: s.kind = TensorSlot::Kind::kFloat; break;
        case detail::DtypeRule::kSameAs:
          s.kind = TensorSlot::Kind::kFloat;
          s.dtype_like = std::string(Op::kArgs[static_cast<std::size_t>(a.dtype_ref)].name);
          break;
        case detail::DtypeRule::kInt32: s.kind = TensorSlot::Kind::kInt32; break;
        case detail::DtypeRule::kFloat32:
          s.kind = TensorSlot::Kind::kOneOf;
          s.dtypes = detail::dtype_bit(DType::kFloat32);
          break;
        case detail::DtypeRule::kOneOf:
          s.kind = TensorSlot::Kind::kOneOf;
          s.dtypes = a.dtype_set;
          break;
      }
      s.optional = a.optional;
      s.list = a.is_list;
      switch (a.shape) {
        // Row-wise shape rules are checked by the operator's validation.
        case detail::ShapeRule::kTrailingOf:
        case detail::ShapeRule::kReducedOf:
        case detail::ShapeRule::kAny: s.shape = TensorSlot::Shape::kAny; break;
        case detail::ShapeRule::kOneElement: s.shape = TensorSlot::Shape::kOneElement; break;
        case detail::ShapeRule::kSameAs:
          s.shape = TensorSlot::Shape::kLike;
          s.like = std::string(Op::kArgs[static_cast<std::size_t>(a.shape_ref)].name);
          break;
      }
      s.min_rank = a.min_rank >= 0 ? a.min_rank : 0;
      s.max_rank = a.max_rank >= 0 ? a.max_rank : kMaxRank;
      e.inputs.push_back(s);
    }
    for (std::size_t i = 0; i < detail::kNumAttrs<Op>; ++i) {
      const detail::AttrSpec& a = Op::kAttrs[i];
      AttrValue d;
      d.kind = attr_kind(a.type);
      // A list's default is the Params default (LayerNormGrad's output_mask: all true).
      if (detail::is_list_attr(a.type))
        d.list = detail::get_list_attr<Op>(typename Op::Params{}, i);
      if (d.kind == AttrKind::kBool) d.b = a.default_value != 0.0;
      if (d.kind == AttrKind::kInt) d.i = static_cast<int64_t>(a.default_value);
      if (d.kind == AttrKind::kFloat) d.f = a.default_value;
      e.attrs.push_back({std::string(a.name), d.kind, d, a.required_by_name});
    }
    for (std::size_t k : written()) {
      const detail::ArgSpec& a = Op::kArgs[k];
      if (a.is_list && is_new(k)) {  // one output per element of its input list: "out[i]"
        OutputSlot o{std::string(a.name), -1, {}};
        o.list_of = input_index[static_cast<std::size_t>(a.list_ref)];
        o.make_element = [k](const OpInputs& in, std::size_t i) {
          return new_list_element(k, in, i);
        };
        e.outputs.push_back(o);
        continue;
      }
      const std::string_view name = a.role == detail::Role::kOut ? a.graph_name : a.name;
      std::function<HostTensor(const OpInputs&)> make;
      if (is_new(k)) make = [k](const OpInputs& in) { return new_output(k, in); };
      e.outputs.push_back({std::string(name), counterpart(k), make});
    }
    const Goldens g = goldens<Op>();
    e.golden = g.golden;
    e.golden32 = g.golden32;
    e.default_standard = g.default_standard;
    e.backends[Backend::kKernel] = run_kernel;
    return e;
  }
};

}  // namespace mantissa::precision
