// Operator descriptors: the one place an operator's signature is declared.
//
// Each operator declares, next to its kernel (src/ops/<op>/<op>_desc.h), a struct with
//   Tensors, Params     its public C++ API types (include/mantissa/ops/<op>.h)
//   kType               CANN's op type name ("ApplyAdamD"), used by op-by-name and the kit
//   kAclnn              the aclnn function name without "GetWorkspaceSize", or "" when CANN
//                       has no aclnn entry for the operator
//   kArgs               its tensor arguments in CANN's order (ArgSpec: names, role, dtype,
//                       shape and rank rules, in-place pairing)
//   kTensorMembers      the Tensors members in the same order (index access)
//   kGraphInputs        optional: the op-by-name inputs in CANN's graph order, where the graph
//                       definition orders them unlike the aclnn signature (compat/op_binding.h)
//   kAttrs, kAttrMembers  its attributes (name, type, default, required by op-by-name) and
//                       the Params members they fill
//   check_params()      what is truly specific to its contract (attribute ranges, ...)
//   workspace_size(), run()   scratch memory needed, and the C++ entry point
//   Variant, kVariants  the kernel variants worth timing, as a typed enum
// Every layer derives what it needs from that declaration: the common validation below, the
// op-by-name row, the aclnn two-phase entry with strided staging, the precision kit's schema and
// backends, and the benchmark cases.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/validate.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

namespace mantissa::detail {

// ---- Arguments ------------------------------------------------------------------------------

enum class Role : uint8_t {
  kIn,     // read only
  kInOut,  // read and updated through the same tensor (SGD's accum)
  kOut,    // written; may be the very same tensor as its paired input (in place)
};

enum class DtypeRule : uint8_t {
  kTrainingFloat,  // FLOAT, FLOAT16 or BFLOAT16
  kSameAs,         // the dtype of argument `dtype_ref`
  kInt32,
  kFloat32,
  kOneOf,  // one of the dtypes in `dtype_set`
};

// A set of dtypes (by CANN enum value, all below 64) for DtypeRule::kOneOf.
constexpr uint64_t dtype_bit(DType d) { return uint64_t{1} << static_cast<uint32_t>(d); }

enum class ShapeRule : uint8_t {
  kAny,         // any valid shape whose size fits (an anchor other arguments refer to)
  kSameAs,      // the shape of argument `shape_ref`, no broadcasting
  kOneElement,  // exactly one element, any rank (rank 0, [1], [1, 1], ...)
  kTrailingOf,  // the trailing dims of argument `shape_ref` (rank 1 up to shape_ref's rank)
  kReducedOf,   // argument `shape_ref`'s shape reduced over its trailing OpHooks::normalized_dims
                // dims: those dims kept as 1, or dropped (the same elements either way)
};

// How an output may share memory with the inputs of the call.
enum class AliasRule : uint8_t {
  kPairedOrDisjoint,  // the very same buffer as its paired input, or no byte shared with any
  kAnyInput,          // may share bytes with any input (all inputs are read before writing)
};

struct ArgSpec {
  std::string_view name;        // C++ API and precision kit ("var_out")
  std::string_view acl_name;    // aclnn C signature ("varOut")
  std::string_view graph_name;  // op-by-name ("var"): CANN's graph definition
  Role role = Role::kIn;
  DtypeRule dtype = DtypeRule::kTrainingFloat;
  int dtype_ref = -1;
  uint64_t dtype_set = 0;  // kOneOf: dtype_bit()s
  ShapeRule shape = ShapeRule::kAny;
  int shape_ref = -1;
  int min_rank = -1, max_rank = -1;  // -1: rank not checked on its own
  bool allow_empty = true;           // a dimension of size 0 is accepted
  StatusCode one_element_code = StatusCode::kParamInvalid;
  int paired = -1;  // kOut: the input whose buffer it may be (in place), or -1: a new
                    // tensor that may share no byte with any other (a norm's rstd)
  // kOut paired: may be left unset, meaning in place; kOut unpaired: may be left unset, meaning
  // not computed (a norm's mean); kIn, kInOut: may be absent.
  bool optional = false;
  AliasRule alias = AliasRule::kPairedOrDisjoint;
  bool graph_required = false;  // optional in aclnn, but an INPUT the graph requires by name
  bool is_list = false;         // a tensor list (TensorList in C++, aclTensorList* in aclnn)
  bool strided = false;         // read through its strides (any_strides()), not required contiguous
  int list_ref = -1;            // an output list: the input list it has one element per element of

  // A copy with f applied (defined before its users: clang evaluates the builders in constant
  // expressions while the class is being defined).
  template <class F>
  constexpr ArgSpec with(F f) const {
    ArgSpec a = *this;
    f(a);
    return a;
  }

  // Builders, so a declaration reads as a sentence.
  constexpr ArgSpec training_float() const {
    return with([](ArgSpec& a) { a.dtype = DtypeRule::kTrainingFloat; });
  }
  constexpr ArgSpec float32() const {
    return with([](ArgSpec& a) { a.dtype = DtypeRule::kFloat32; });
  }
  constexpr ArgSpec int32() const {
    return with([](ArgSpec& a) { a.dtype = DtypeRule::kInt32; });
  }
  constexpr ArgSpec dtype_in(std::initializer_list<DType> dtypes) const {
    uint64_t set = 0;
    for (DType d : dtypes) set |= dtype_bit(d);
    return with([set](ArgSpec& a) { a.dtype = DtypeRule::kOneOf, a.dtype_set = set; });
  }
  constexpr ArgSpec dtype_of(int k) const {
    return with([k](ArgSpec& a) { a.dtype = DtypeRule::kSameAs, a.dtype_ref = k; });
  }
  constexpr ArgSpec shape_of(int k) const {
    return with([k](ArgSpec& a) { a.shape = ShapeRule::kSameAs, a.shape_ref = k; });
  }
  constexpr ArgSpec like(int k) const { return dtype_of(k).shape_of(k); }
  // The normalised (trailing) dims of argument k, as a norm's gamma.
  constexpr ArgSpec trailing_of(int k) const {
    return with([k](ArgSpec& a) { a.shape = ShapeRule::kTrailingOf, a.shape_ref = k; });
  }
  // One element per row of argument k, as a norm's mean or rstd (OpHooks::normalized_dims says how
  // many trailing dims a row spans).
  constexpr ArgSpec reduced_of(int k) const {
    return with([k](ArgSpec& a) { a.shape = ShapeRule::kReducedOf, a.shape_ref = k; });
  }
  constexpr ArgSpec one_element(StatusCode code = StatusCode::kParamInvalid) const {
    return with(
        [code](ArgSpec& a) { a.shape = ShapeRule::kOneElement, a.one_element_code = code; });
  }
  constexpr ArgSpec rank(int lo, int hi) const {
    return with([lo, hi](ArgSpec& a) { a.min_rank = lo, a.max_rank = hi; });
  }
  constexpr ArgSpec not_empty() const {
    return with([](ArgSpec& a) { a.allow_empty = false; });
  }
  constexpr ArgSpec in_place_of(int k) const {
    return with([k](ArgSpec& a) { a.paired = k; });
  }
  // A paired output the caller may leave unset: the operator then writes its input in place.
  constexpr ArgSpec optional_output() const {
    return with([](ArgSpec& a) { a.optional = true; });
  }
  // A new (unpaired) output the caller may leave unset: the operator then does not compute it
  // (LayerNorm's mean and rstd; OpHooks::required_by may say when attributes require it).
  constexpr ArgSpec optional_result() const {
    return with([](ArgSpec& a) { a.optional = true; });
  }
  // An input or in/out argument the caller may leave out (an unset std::optional member, a null
  // aclTensor*, an ACL_DT_UNDEFINED descriptor by name); OpHooks::required_by or
  // check_params decides when it is required. No other argument may take its dtype or shape
  // from it.
  constexpr ArgSpec optional_input() const {
    return with([](ArgSpec& a) { a.optional = true; });
  }
  // An optional input that CANN's graph declares as a required INPUT (LayerNormGradV3's gamma):
  // op-by-name refuses to leave it out.
  constexpr ArgSpec required_by_name() const {
    return with([](ArgSpec& a) { a.graph_required = true; });
  }
  // A list of tensors, each following the argument's rules (mixed shapes; dtype rules apply
  // per element, so a list may mix dtypes where the rule allows).
  constexpr ArgSpec list() const {
    return with([](ArgSpec& a) { a.is_list = true; });
  }
  // An output list with one element per element of input list k (the same length). Its dtype
  // and shape rules may refer to k: for element i they mean element i of k (ForeachNorm's out[i]
  // takes x[i]'s dtype).
  constexpr ArgSpec per_element_of(int k) const {
    return with([k](ArgSpec& a) { a.is_list = true, a.list_ref = k; });
  }
  // The op-by-name (graph) name of an input whose graph name differs from its C++ name.
  constexpr ArgSpec graph(std::string_view name_in_graph) const {
    return with([name_in_graph](ArgSpec& a) { a.graph_name = name_in_graph; });
  }
  // An input read through its strides: any non-negative strides (a transposed or broadcast view),
  // the data aligned to its element size. The kernel reads the view where it is (MatMul's
  // operands are packed as they are read), so neither the caller nor the aclnn layer copies it.
  constexpr ArgSpec any_strides() const {
    return with([](ArgSpec& a) { a.strided = true; });
  }
  constexpr ArgSpec may_alias_any_input() const {
    return with([](ArgSpec& a) { a.alias = AliasRule::kAnyInput; });
  }
  constexpr bool written() const { return role != Role::kIn; }
};

constexpr ArgSpec In(std::string_view name, std::string_view acl_name) {
  return ArgSpec{name, acl_name, name, Role::kIn};
}
constexpr ArgSpec InOut(std::string_view name, std::string_view acl_name) {
  return ArgSpec{name, acl_name, name, Role::kInOut};
}
constexpr ArgSpec Out(std::string_view name, std::string_view acl_name,
                      std::string_view graph_name) {
  return ArgSpec{name, acl_name, graph_name, Role::kOut};
}

// ---- Attributes -----------------------------------------------------------------------------

// kScalar: a host scalar held in Params as a double. aclnn passes it as an aclScalar (FLOAT,
// DOUBLE or INT64); op-by-name as a one-element input tensor (FLOAT, DOUBLE or INT64) named
// graph_name (or name), after the tensor inputs, as CANN's graph declares ForeachNorm's p.
// kIntList: a list of int64 held in Params as Dims. aclnn passes it as an aclIntArray;
// op-by-name as a rank-1 INT32 or INT64 input tensor (LayerNormV4's normalized_shape).
// kBoolList: a fixed number of bools held in Params as std::array<bool, N>. aclnn passes it as
// an aclBoolArray; op-by-name as a ListBool attribute (LayerNormGradV3's output_mask).
enum class AttrType : uint8_t { kBool, kInt, kFloat, kScalar, kIntList, kBoolList };

// Attributes given as input tensors by name (host scalars, int lists).
constexpr bool is_input_attr(AttrType t) {
  return t == AttrType::kScalar || t == AttrType::kIntList;
}
constexpr bool is_list_attr(AttrType t) {
  return t == AttrType::kIntList || t == AttrType::kBoolList;
}

// One string an Int attribute takes by name where CANN's graph declares a String (Quantize's
// dtype "torch.qint8", AscendQuantV2's round_mode "floor"), with the value it stands for.
struct GraphString {
  std::string_view name;
  int64_t value;
};

struct AttrSpec {
  std::string_view name;
  AttrType type;
  bool required_by_name;  // op-by-name rejects a call that does not set it
  double default_value;   // the Params default (informational where required)
  // Op-by-name only: the graph's name for the attribute when it differs (empty: `name`), and
  // whether the graph declares it as a list of ints holding this one value (CANN's ListInt,
  // as SoftmaxV2's "axes" holds softmax's dim).
  std::string_view graph_name = {};
  bool graph_int_list = false;
  // Op-by-name only, for an attribute given as an input (is_input_attr): the argument it comes
  // before in the graph's input order (LayerNormV4: normalized_shape before gamma), or -1: after
  // the tensor inputs.
  int graph_input_before = -1;
  // Op-by-name only, for a kInt attribute: the strings CANN's graph takes for it (a String
  // attribute, set with aclopSetAttrString), each standing for a value; the Int is accepted too.
  std::span<const GraphString> graph_strings = {};
  // default_value is the graph's default by name, which differs from the Params default
  // (ApplyAdamWV2: the graph's 0.1, torch's AdamW defaults in Params); otherwise the two are
  // checked to be equal.
  bool graph_default = false;
};

// AttrSpec::graph_input_before for an attribute CANN's graph does not have: op-by-name derives
// it from the tensors (AclHooks::params_by_name; LayerNormGradV3's normalized_shape is gamma's
// shape).
inline constexpr int kNotInGraph = -2;

template <class T>
struct is_bool_array : std::false_type {};
template <std::size_t N>
struct is_bool_array<std::array<bool, N>> : std::true_type {};

// The attribute type of a Params member.
template <class T>
constexpr AttrType attr_type_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return AttrType::kBool;
  } else if constexpr (std::is_same_v<T, Dims>) {
    return AttrType::kIntList;
  } else if constexpr (is_bool_array<T>::value) {
    return AttrType::kBoolList;
  } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {
    return AttrType::kInt;  // an enum (Quantize's DType) is held as its integer value
  } else {
    return AttrType::kFloat;
  }
}

// ---- Optional parts -----------------------------------------------------------------------------

// One entry: a function, or unset. Whether it is set is a plain flag, not a comparison of the
// function's address with null, which GCC does not evaluate at compile time under the sanitizers
// (-fno-delete-null-pointer-checks). Callers read `.set` in `if constexpr` and call through
// `.fn`, which reads one constant: the table itself is never odr-used, so a translation unit does
// not emit every hook of the table (and reference their callees, which may be internal to the
// library).
template <class F>
struct Hook {
  F* fn = nullptr;
  bool set = false;
  constexpr Hook() = default;
  constexpr Hook(F* f) : fn(f), set(true) {}  // NOLINT: implicit, `.hook = &function`
};

// The optional parts of a declaration, each named in a table with designated initializers, so
// that a misspelt or misplaced hook does not compile. Every declaration has both tables (empty
// where it needs none); an unset entry takes the default said here. The functions are static
// members of the declaration (or free functions) declared before the table.
template <class Tensors, class Params>
struct OpHooks {
  // The trailing dims a row spans, for ShapeRule::kReducedOf. Default: 0 (no rows).
  Hook<int(const Tensors&, const Params&)> normalized_dims{};
  // The attributes that shape the other rules (LayerNorm's normalized_shape), checked right
  // after presence. Default: none.
  Hook<Status(const Tensors&, const Params&)> check_shape_params{};
  // The attribute that makes optional argument k required with these attribute values
  // (ApplyAdamWV2's max_grad_norm with amsgrad), or nullptr. Default: none.
  Hook<const char*(const Params&, std::size_t k)> required_by{};
  // A new output's dtype and shape where its rules leave them open (the precision kit makes its
  // outputs with it; quantized outputs). Default: the rules' own (like its reference argument).
  Hook<void(std::size_t k, const Tensors&, const Params&, DType& dtype,
            std::vector<int64_t>& shape)>
      infer_output{};
  // Params holds more than the attributes (an internal declaration whose Params carries the
  // call's forms, as the multi-tensor steps' per-parameter rules): its members beyond kAttrs are
  // then not checked against the declaration. Default: Params is exactly the attributes.
  bool params_beyond_attrs = false;
};

// The rules and conversions only the C layers use (compat/): aclnn's own limits and op-by-name's
// derived attributes. Kernels never call them.
template <class Tensors, class Params>
struct AclHooks {
  // Upstream's aclnn rules that come before the common validation's dtype and rank rules
  // (ForeachNorm: 561002 for lists of mixed dtype or rank above 8).
  Hook<Status(const Tensors&, const Params&)> check_aclnn_early{};
  // Upstream's aclnn limits where they are narrower than the C++ API's, after the common
  // validation.
  Hook<Status(const Tensors&, const Params&)> check_aclnn{};
  // Attributes op-by-name derives from the tensors (AttrSpec::graph_input_before kNotInGraph).
  Hook<void(const Tensors&, Params&)> params_by_name{};
  // The string an enumerated attribute takes in the aclnn signature (AscendQuantV3's roundMode),
  // for the precision kit's aclnn backend.
  Hook<const char*(std::size_t attr, int64_t value)> aclnn_string{};
  // Whether argument k goes to aclnn as a transposed view (its last two dims and their strides
  // swapped) of the tensor op-by-name takes: an attribute the graph has and the aclnn signature
  // has not (MatMulV2's transpose_x1), for the precision kit's aclnn backend.
  Hook<bool(std::size_t k, const Params&)> aclnn_transposed{};
};

// ---- Compile-time variants ------------------------------------------------------------------

// Memory streams a variant touches per element (for benchmarks and bandwidth probes). A
// write-only stream costs a read for ownership, so it counts as read-modify-write.
struct StreamTraffic {
  int rmw_streams = 0;
  int ro_streams = 0;
};

template <class Variant>
struct VariantSpec {
  Variant variant;
  std::string_view name;
  StreamTraffic traffic;
};

// ---- Members, named once ----------------------------------------------------------------------

// A declaration names the members of its Tensors and Params once, in argument order:
//   MANTISSA_TENSOR_MEMBERS(x, gamma, y, rstd);
//   MANTISSA_ATTR_MEMBERS(epsilon);
// which defines kTensorMembers / kAttrMembers (member pointers, for index access) and
// kTensorMemberList / kAttrMemberList (the names as written). well_formed() then checks, at
// compile time, each member against the argument or attribute of the same index: its name, its
// place in the struct (declaration order), its type (TensorView, std::optional<TensorView> for an
// optional argument, TensorList for a list; an attribute's type), that the struct has no other
// member, and an attribute's default against the declared one.
#define MANTISSA_PP_PARENS ()
#define MANTISSA_PP_EXPAND(...) \
  MANTISSA_PP_EXPAND3(MANTISSA_PP_EXPAND3(MANTISSA_PP_EXPAND3(MANTISSA_PP_EXPAND3(__VA_ARGS__))))
#define MANTISSA_PP_EXPAND3(...) \
  MANTISSA_PP_EXPAND2(MANTISSA_PP_EXPAND2(MANTISSA_PP_EXPAND2(MANTISSA_PP_EXPAND2(__VA_ARGS__))))
#define MANTISSA_PP_EXPAND2(...) \
  MANTISSA_PP_EXPAND1(MANTISSA_PP_EXPAND1(MANTISSA_PP_EXPAND1(MANTISSA_PP_EXPAND1(__VA_ARGS__))))
#define MANTISSA_PP_EXPAND1(...) __VA_ARGS__
// f(a1), f(a2), ... (comma-separated; nothing for an empty list).
#define MANTISSA_PP_FOR_EACH(f, ...) \
  __VA_OPT__(MANTISSA_PP_EXPAND(MANTISSA_PP_FOR_EACH_STEP(f, __VA_ARGS__)))
#define MANTISSA_PP_FOR_EACH_STEP(f, a, ...) \
  f(a) __VA_OPT__(, MANTISSA_PP_FOR_EACH_AGAIN MANTISSA_PP_PARENS(f, __VA_ARGS__))
#define MANTISSA_PP_FOR_EACH_AGAIN() MANTISSA_PP_FOR_EACH_STEP

#define MANTISSA_PP_TENSOR_MEMBER(m) &Tensors::m
#define MANTISSA_PP_ATTR_MEMBER(m) &Params::m
#define MANTISSA_TENSOR_MEMBERS(...)                                 \
  static constexpr std::tuple kTensorMembers{                        \
      MANTISSA_PP_FOR_EACH(MANTISSA_PP_TENSOR_MEMBER, __VA_ARGS__)}; \
  static constexpr std::string_view kTensorMemberList = #__VA_ARGS__
#define MANTISSA_ATTR_MEMBERS(...)                                 \
  static constexpr std::tuple kAttrMembers{                        \
      MANTISSA_PP_FOR_EACH(MANTISSA_PP_ATTR_MEMBER, __VA_ARGS__)}; \
  static constexpr std::string_view kAttrMemberList = #__VA_ARGS__

// ---- Index access ---------------------------------------------------------------------------

template <class Op>
inline constexpr std::size_t kNumArgs = std::tuple_size_v<std::decay_t<decltype(Op::kArgs)>>;
template <class Op>
inline constexpr std::size_t kNumAttrs = std::tuple_size_v<std::decay_t<decltype(Op::kAttrs)>>;

template <class M>
struct member_type;
template <class C, class T>
struct member_type<T C::*> {
  using type = T;
};

namespace op_desc_internal {

template <class Op, class F, std::size_t... I>
void for_each_member(F&& f, std::index_sequence<I...>) {
  (f(std::integral_constant<std::size_t, I>{}, std::get<I>(Op::kTensorMembers)), ...);
}

template <class Op, class F, std::size_t... I>
void for_each_attr(F&& f, std::index_sequence<I...>) {
  (f(std::integral_constant<std::size_t, I>{}, std::get<I>(Op::kAttrMembers)), ...);
}

}  // namespace op_desc_internal

// Calls f(index, member pointer) for every tensor argument, in declaration order.
template <class Op, class F>
void for_each_tensor_member(F&& f) {
  op_desc_internal::for_each_member<Op>(std::forward<F>(f),
                                        std::make_index_sequence<kNumArgs<Op>>{});
}

// Calls f(index, member pointer) for every attribute, in declaration order.
template <class Op, class F>
void for_each_attr_member(F&& f) {
  op_desc_internal::for_each_attr<Op>(std::forward<F>(f),
                                      std::make_index_sequence<kNumAttrs<Op>>{});
}

// Whether argument k was given (an optional output left unset was not, nor an optional input or
// in/out argument left out).
template <class Op>
bool is_set(const typename Op::Tensors& t, std::size_t k) {
  bool set = true;
  for_each_tensor_member<Op>([&](auto i, auto member) {
    if (i != k) return;
    if constexpr (std::is_same_v<typename member_type<decltype(member)>::type,
                                 std::optional<TensorView>>) {
      set = (t.*member).has_value();
    }
  });
  return set;
}

// The views of all arguments by index. An optional output left unset is its paired input's
// view (the operator writes in place); an optional input left out is an empty default view.
template <class Op>
std::array<TensorView, kNumArgs<Op>> views(const typename Op::Tensors& t) {
  std::array<TensorView, kNumArgs<Op>> v;
  for_each_tensor_member<Op>([&](auto i, auto member) {
    using T = typename member_type<decltype(member)>::type;
    if constexpr (std::is_same_v<T, TensorView>) {
      v[i] = t.*member;
    } else if constexpr (std::is_same_v<T, std::optional<TensorView>>) {
      if ((t.*member).has_value()) v[i] = *(t.*member);
    }
  });
  for_each_tensor_member<Op>([&](auto i, auto member) {
    if constexpr (std::is_same_v<typename member_type<decltype(member)>::type,
                                 std::optional<TensorView>>) {
      if (!(t.*member).has_value() && Op::kArgs[i].paired >= 0) {
        v[i] = v[static_cast<std::size_t>(Op::kArgs[i].paired)];
      }
    }
  });
  return v;
}

// The list arguments by index (empty spans for the others).
template <class Op>
std::array<TensorList, kNumArgs<Op>> lists(const typename Op::Tensors& t) {
  std::array<TensorList, kNumArgs<Op>> l{};
  for_each_tensor_member<Op>([&](auto i, auto member) {
    if constexpr (std::is_same_v<typename member_type<decltype(member)>::type, TensorList>) {
      l[i] = t.*member;
    }
  });
  return l;
}

// Sets argument k of `t` to `view`.
template <class Op>
void set_view(typename Op::Tensors& t, std::size_t k, const TensorView& view) {
  for_each_tensor_member<Op>([&](auto i, auto member) {
    if constexpr (!std::is_same_v<typename member_type<decltype(member)>::type, TensorList>) {
      if (i == k) t.*member = view;
    }
  });
}

// Sets list argument k of `t` to `list` (the views must outlive the use of `t`).
template <class Op>
void set_list(typename Op::Tensors& t, std::size_t k, TensorList list) {
  for_each_tensor_member<Op>([&](auto i, auto member) {
    if constexpr (std::is_same_v<typename member_type<decltype(member)>::type, TensorList>) {
      if (i == k) t.*member = list;
    }
  });
}

// Tensors from views by index: every argument set, outputs included, except those marked absent
// in `present` (optional inputs the caller left out).
template <class Op>
typename Op::Tensors tensors_from(std::span<const TensorView> v,
                                  std::span<const bool> present = {}) {
  typename Op::Tensors t{};
  for (std::size_t k = 0; k < kNumArgs<Op>; ++k) {
    if (!Op::kArgs[k].is_list && (present.empty() || present[k])) set_view<Op>(t, k, v[k]);
  }
  return t;
}

// Attribute i of `p` as a double (bool as 0/1).
template <class Op>
double get_attr(const typename Op::Params& p, std::size_t index) {
  double value = 0.0;
  for_each_attr_member<Op>([&](auto i, auto member) {
    using T = typename member_type<decltype(member)>::type;
    if constexpr (std::is_arithmetic_v<T>) {
      if (i == index) value = static_cast<double>(p.*member);
    } else if constexpr (std::is_enum_v<T>) {
      if (i == index) value = static_cast<double>(static_cast<int64_t>(p.*member));
    }
  });
  return value;
}

// List attribute i of `p` (kIntList, kBoolList) as int64 values (bools as 0/1); empty for the
// others.
template <class Op>
std::vector<int64_t> get_list_attr(const typename Op::Params& p, std::size_t index) {
  std::vector<int64_t> values;
  for_each_attr_member<Op>([&](auto i, auto member) {
    using T = typename member_type<decltype(member)>::type;
    if (i != index) return;
    if constexpr (std::is_same_v<T, Dims>) {
      const std::span<const int64_t> kept = (p.*member).span();
      values.assign(kept.begin(), kept.end());
    } else if constexpr (is_bool_array<T>::value) {
      for (bool b : p.*member) values.push_back(b ? 1 : 0);
    }
  });
  return values;
}

// Sets list attribute i of `p` from `values`. A Dims takes any count (more than kMaxRank is
// recorded for validation to reject); a std::array<bool, N> takes exactly N values: any other
// count is 161002, naming the attribute.
template <class Op>
Status set_list_attr(typename Op::Params& p, std::size_t index, std::span<const int64_t> values) {
  Status status;
  for_each_attr_member<Op>([&](auto i, auto member) {
    using T = typename member_type<decltype(member)>::type;
    if (i != index) return;
    if constexpr (std::is_same_v<T, Dims>) {
      p.*member = Dims(values);
    } else if constexpr (is_bool_array<T>::value) {
      if (values.size() != std::tuple_size_v<T>) {
        status = fail(StatusCode::kParamInvalid, Op::kType, "{} holds {} values; it takes {}",
                      Op::kAttrs[index].name, values.size(), std::tuple_size_v<T>);
        return;
      }
      for (std::size_t j = 0; j < values.size(); ++j) (p.*member)[j] = values[j] != 0;
    }
  });
  return status;
}

// Sets attribute i of `p` from `value`, converted to the member's type (no detour through
// double, so 64-bit integers stay exact).
template <class Op, class V>
void set_attr(typename Op::Params& p, std::size_t index, V value) {
  for_each_attr_member<Op>([&](auto i, auto member) {
    using T = typename member_type<decltype(member)>::type;
    if (i != index) return;
    if constexpr (std::is_same_v<T, bool>) {
      p.*member = static_cast<bool>(value);
    } else if constexpr (std::is_arithmetic_v<T>) {
      p.*member = static_cast<T>(value);
    } else if constexpr (std::is_enum_v<T>) {
      p.*member = static_cast<T>(static_cast<int64_t>(value));
    }
  });
}

// Params from the attribute values in declaration order (the aclnn signatures' order).
template <class Op, class... A>
typename Op::Params params_from(A... values) {
  static_assert(sizeof...(A) == kNumAttrs<Op>, "one value per attribute");
  typename Op::Params p{};
  std::size_t i = 0;
  (set_attr<Op>(p, i++, values), ...);
  return p;
}

// The attribute that makes optional argument k required with these attribute values
// (OpHooks::required_by, where the operator sets it: ApplyAdamWV2's max_grad_norm with amsgrad),
// or nullptr.
template <class Op>
const char* required_by(const typename Op::Params& p, std::size_t k) {
  if constexpr (Op::kHooks.required_by.set) {
    return Op::kHooks.required_by.fn(p, k);
  } else {
    return nullptr;
  }
}

// The attributes given as host scalars (AttrType::kScalar), and the index of the j-th of them.
template <class Op>
constexpr std::size_t count_scalar_attrs() {
  std::size_t n = 0;
  for (const AttrSpec& a : Op::kAttrs) n += a.type == AttrType::kScalar;
  return n;
}
template <class Op>
constexpr std::size_t scalar_attr_index(std::size_t j) {
  for (std::size_t i = 0; i < kNumAttrs<Op>; ++i) {
    if (Op::kAttrs[i].type == AttrType::kScalar && j-- == 0) return i;
  }
  return kNumAttrs<Op>;
}

// ---- Common validation ----------------------------------------------------------------------

// One tensor taking part in validation: a plain argument, or one element of a list argument
// (named "name[i]").
struct ValidationEntry {
  const char* name = nullptr;
  const TensorView* view = nullptr;
  std::size_t arg = 0;    // index in kArgs
  bool given = true;      // false: an optional argument left unset
  std::size_t index = 0;  // the element's index in its list (0 for a plain argument)
};

template <class Op>
constexpr bool has_list_args() {
  for (const ArgSpec& a : Op::kArgs) {
    if (a.is_list) return true;
  }
  return false;
}

// The entries of one call, pointing into the call's own views. An operator without list
// arguments needs no allocation: validation runs on every call, and small calls (a loss-scale
// update) are dominated by it.
template <class Op>
class ValidationEntries {
 public:
  explicit ValidationEntries(const typename Op::Tensors& t) : views_(views<Op>(t)) {
    if constexpr (!has_list_args<Op>()) {
      for (std::size_t k = 0; k < kNumArgs<Op>; ++k) {
        fixed_[k] = {Op::kArgs[k].name.data(), &views_[k], k, is_set<Op>(t, k)};
      }
    } else {
      const std::array<TensorList, kNumArgs<Op>> l = lists<Op>(t);
      std::size_t count = 0;
      for (std::size_t k = 0; k < kNumArgs<Op>; ++k) {
        count += Op::kArgs[k].is_list ? l[k].size() : 1;
      }
      names_.reserve(count);  // element names must not move
      for (std::size_t k = 0; k < kNumArgs<Op>; ++k) {
        const ArgSpec& a = Op::kArgs[k];
        if (!a.is_list) {
          dynamic_.push_back({a.name.data(), &views_[k], k, is_set<Op>(t, k)});
          continue;
        }
        for (std::size_t i = 0; i < l[k].size(); ++i) {
          names_.push_back(fmt::format("{}[{}]", a.name, i));
          dynamic_.push_back({names_.back().c_str(), &l[k][i], k, true, i});
        }
      }
    }
  }
  ValidationEntries(const ValidationEntries&) = delete;
  ValidationEntries& operator=(const ValidationEntries&) = delete;

  std::span<const ValidationEntry> entries() const {
    if constexpr (!has_list_args<Op>()) {
      return fixed_;
    } else {
      return dynamic_;
    }
  }

 private:
  std::array<TensorView, kNumArgs<Op>> views_;
  std::array<ValidationEntry, kNumArgs<Op>> fixed_{};
  std::vector<ValidationEntry> dynamic_;
  std::vector<std::string> names_;
};

// The trailing dims a row of a row-wise operator spans (0 for an operator without rows).
template <class Op>
int normalized_dims_of(const typename Op::Tensors& t, const typename Op::Params& p) {
  if constexpr (Op::kHooks.normalized_dims.set) {
    return Op::kHooks.normalized_dims.fn(t, p);
  } else {
    return 0;
  }
}

// Validation in the documented order, each step over the arguments in declaration order (the
// elements of a list in list order):
//   1 presence (161001; also an optional argument left out that the attributes require), then
//     the length of each output list against its input list (161002), then the attributes that
//     shape the other rules (OpHooks::check_shape_params, where set)
//   2 dtypes   3 ranks   4 empty dimensions   5 sizes that fit   6 shapes
//   7 one-element tensors   8 the operator's own rules (Op::check_params)   9 contiguity (for an
//   argument read through its strides: strides not negative) and alignment to the element size
//   10 aliasing
// Steps 2-10 return 161002 unless the descriptor names another code. An optional output left
// unset takes part as its paired input; an optional input or in/out argument left out takes no
// part (unless OpHooks::required_by says the attributes require it: 161001).
template <class Op>
Status validate(const typename Op::Tensors& t, const typename Op::Params& p) {
  constexpr std::string_view op = Op::kType;
  constexpr auto& spec = Op::kArgs;
  const ValidationEntries<Op> set(t);
  const std::span<const ValidationEntry> entries = set.entries();
  // The entry of a plain argument, for the rules that refer to one.
  std::array<std::size_t, kNumArgs<Op>> first{};
  for (std::size_t e = entries.size(); e-- > 0;) first[entries[e].arg] = e;
  auto arg = [&](std::size_t e) { return Arg{entries[e].name, *entries[e].view}; };
  // Argument k as entry e's rules refer to it: a list's element of e's own index (an output list
  // refers to its input list element by element), otherwise the argument itself.
  auto ref = [&](std::size_t e, int k) {
    const auto r = static_cast<std::size_t>(k);
    return arg(first[r] + (spec[r].is_list ? entries[e].index : 0));
  };
  auto each = [&](auto&& check) -> Status {
    for (std::size_t e = 0; e < entries.size(); ++e) {
      if (entries[e].given) MANTISSA_RETURN_IF_ERROR(check(e, spec[entries[e].arg]));
    }
    return {};
  };

  for (std::size_t e = 0; e < entries.size(); ++e) {
    if (entries[e].given) {
      MANTISSA_RETURN_IF_ERROR(check_present(op, arg(e)));
    } else if (const char* attr = required_by<Op>(p, entries[e].arg)) {
      return fail(StatusCode::kParamNullptr, op, "{} is required when {} is set, but was not given",
                  entries[e].name, attr);
    }
  }
  if constexpr (has_list_args<Op>()) {
    const std::array<TensorList, kNumArgs<Op>> l = lists<Op>(t);
    for (std::size_t k = 0; k < kNumArgs<Op>; ++k) {
      if (spec[k].list_ref < 0) continue;
      const auto r = static_cast<std::size_t>(spec[k].list_ref);
      if (l[k].size() != l[r].size()) {
        return fail(StatusCode::kParamInvalid, op,
                    "{} holds {} tensors but {} holds {} (one per tensor of {})", spec[k].name,
                    l[k].size(), spec[r].name, l[r].size(), spec[r].name);
      }
    }
  }
  // Attributes that shape the other rules (LayerNorm's normalized_shape), before those rules.
  if constexpr (Op::kHooks.check_shape_params.set) {
    MANTISSA_RETURN_IF_ERROR(Op::kHooks.check_shape_params.fn(t, p));
  }
  MANTISSA_RETURN_IF_ERROR(each([&](std::size_t e, const ArgSpec& a) -> Status {
    switch (a.dtype) {
      case DtypeRule::kTrainingFloat: return check_training_float(op, arg(e));
      case DtypeRule::kSameAs: return check_same_dtype(op, arg(e), ref(e, a.dtype_ref));
      case DtypeRule::kInt32: return check_dtype(op, arg(e), DType::kInt32);
      case DtypeRule::kFloat32: return check_dtype(op, arg(e), DType::kFloat32);
      case DtypeRule::kOneOf: return check_dtype_in(op, arg(e), a.dtype_set);
    }
    return {};
  }));
  MANTISSA_RETURN_IF_ERROR(each([&](std::size_t e, const ArgSpec& a) -> Status {
    return a.min_rank >= 0 ? check_rank(op, arg(e), a.min_rank, a.max_rank) : Status{};
  }));
  MANTISSA_RETURN_IF_ERROR(each([&](std::size_t e, const ArgSpec& a) -> Status {
    return a.allow_empty ? Status{} : check_not_empty(op, arg(e));
  }));
  MANTISSA_RETURN_IF_ERROR(each([&](std::size_t e, const ArgSpec& a) -> Status {
    return a.shape == ShapeRule::kAny ? check_countable(op, arg(e)) : Status{};
  }));
  MANTISSA_RETURN_IF_ERROR(each([&](std::size_t e, const ArgSpec& a) -> Status {
    switch (a.shape) {
      case ShapeRule::kSameAs: return check_same_shape(op, arg(e), ref(e, a.shape_ref));
      case ShapeRule::kTrailingOf: return check_trailing_shape(op, arg(e), ref(e, a.shape_ref));
      case ShapeRule::kReducedOf:
        return check_reduced_shape(op, arg(e), ref(e, a.shape_ref), normalized_dims_of<Op>(t, p));
      case ShapeRule::kAny:
      case ShapeRule::kOneElement: break;
    }
    return Status{};
  }));
  MANTISSA_RETURN_IF_ERROR(each([&](std::size_t e, const ArgSpec& a) -> Status {
    return a.shape == ShapeRule::kOneElement ? check_one_element(op, arg(e), a.one_element_code)
                                             : Status{};
  }));
  MANTISSA_RETURN_IF_ERROR(Op::check_params(t, p));
  MANTISSA_RETURN_IF_ERROR(each([&](std::size_t e, const ArgSpec& a) {
    return a.strided ? check_strided(op, arg(e)) : check_contiguous(op, arg(e));
  }));

  // Aliasing. The memory written is the outputs (an unset optional output: its paired input)
  // and the in/out arguments. Each written tensor shares no byte with any other tensor of the
  // call, except an output with its paired input when it is that very buffer (in place), and an
  // output whose rule lets it share bytes with any input. Read-only inputs may overlap one
  // another.
  // Only pairs whose byte ranges intersect can fail check_disjoint. A list operator finds them
  // by sorting (hundreds of tensors would otherwise cost a quadratic number of tests on every
  // call); the others compute each range once and compare them (no allocation).
  std::vector<std::vector<std::size_t>> intersecting;
  std::array<ByteRange, kNumArgs<Op>> ranges{};
  if constexpr (!has_list_args<Op>()) {
    for (std::size_t e = 0; e < entries.size(); ++e) ranges[e] = byte_range(*entries[e].view);
  } else {
    std::vector<const TensorView*> given(entries.size(), nullptr);
    for (std::size_t e = 0; e < entries.size(); ++e) {
      if (entries[e].given) given[e] = entries[e].view;
    }
    intersecting = intersecting_ranges(given);
  }
  auto check_written = [&](std::size_t w) -> Status {
    const ArgSpec& a = spec[entries[w].arg];
    const std::size_t candidates = has_list_args<Op>() ? intersecting[w].size() : entries.size();
    for (std::size_t c = 0; c < candidates; ++c) {
      const std::size_t x = has_list_args<Op>() ? intersecting[w][c] : c;
      if (x == w || !entries[x].given) continue;
      if (!has_list_args<Op>() && !ranges[w].intersects(ranges[x])) continue;
      const ArgSpec& b = spec[entries[x].arg];
      if (a.role == Role::kOut && static_cast<int>(entries[x].arg) == a.paired &&
          entries[w].view->data == entries[x].view->data) {
        continue;  // in place
      }
      if (a.role == Role::kOut && a.alias == AliasRule::kAnyInput && b.role != Role::kOut) {
        continue;
      }
      MANTISSA_RETURN_IF_ERROR(check_disjoint(op, arg(w), arg(x)));
    }
    return {};
  };
  for (Role role : {Role::kOut, Role::kInOut}) {
    for (std::size_t e = 0; e < entries.size(); ++e) {
      // An unset optional output is checked as its paired input (the buffer written).
      const bool written =
          entries[e].given || (role == Role::kOut && spec[entries[e].arg].paired >= 0);
      if (written && spec[entries[e].arg].role == role) {
        MANTISSA_RETURN_IF_ERROR(check_written(e));
      }
    }
  }
  return {};
}

// ---- Members against the declaration, checked at compile time ---------------------------------

namespace op_desc_internal {

// Called where a check fails, so that the compiler's message names the broken rule.
void tensors_member_name_differs_from_its_argument();
void tensors_member_is_not_declared_in_argument_order();
void tensors_member_type_does_not_fit_its_argument();
void tensors_struct_has_a_member_the_declaration_lacks();
void params_member_name_differs_from_its_attribute();
void params_member_is_not_declared_in_attribute_order();
void params_member_type_does_not_fit_its_attribute();
void params_member_default_differs_from_its_attribute();
void params_struct_has_a_member_the_declaration_lacks();
void hook_defined_but_not_in_kHooks();
void hook_defined_but_not_in_kAclHooks();

// Name i of a MANTISSA_*_MEMBERS list ("x, gamma, y"), or "" past its end.
constexpr std::string_view nth_name(std::string_view list, std::size_t i) {
  for (;;) {
    const std::size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (i-- == 0) return name;
    if (comma == std::string_view::npos) return {};
    list.remove_prefix(comma + 1);
  }
}

// A value of any member type that is "on" (nonzero: a view of rank 1, an engaged optional, a
// non-empty list, true, 1) exactly when I == J: aggregate-initialising a struct with
// Mark<0, J>, Mark<1, J>, ... turns on its J-th member in declaration order.
inline constexpr TensorView kOnView = [] {
  TensorView v;
  v.rank = 1;
  return v;
}();
template <std::size_t I, std::size_t J>
struct Mark {
  static constexpr bool kOn = I == J;
  template <class X>
  constexpr operator X() const {  // NOLINT: converts to any member type by design
    if constexpr (std::is_same_v<X, TensorView>) {
      return kOn ? kOnView : TensorView{};
    } else if constexpr (std::is_same_v<X, std::optional<TensorView>>) {
      return std::optional<TensorView>(kOn ? kOnView : TensorView{});
    } else if constexpr (std::is_same_v<X, TensorList>) {
      return kOn ? TensorList(&kOnView, 1) : TensorList();
    } else if constexpr (std::is_same_v<X, Dims>) {
      Dims d;
      d.size = kOn ? 1 : 0;
      return d;
    } else if constexpr (std::is_enum_v<X> || std::is_arithmetic_v<X>) {
      return static_cast<X>(kOn ? 1 : 0);
    } else {
      X x{};  // std::array<bool, N>
      x[0] = kOn;
      return x;
    }
  }
};
template <class X>
constexpr bool is_on(const X& x) {
  if constexpr (std::is_same_v<X, TensorView>) {
    return x.rank != 0;
  } else if constexpr (std::is_same_v<X, std::optional<TensorView>>) {
    return x.has_value() && x->rank != 0;
  } else if constexpr (std::is_same_v<X, TensorList>) {
    return !x.empty();
  } else if constexpr (std::is_same_v<X, Dims>) {
    return x.size != 0;
  } else if constexpr (std::is_enum_v<X> || std::is_arithmetic_v<X>) {
    return x != static_cast<X>(0);
  } else {
    return x[0];
  }
}

template <class S, std::size_t J, std::size_t... I>
constexpr S one_hot(std::index_sequence<I...>) {
  return S{Mark<I, J>{}...};
}
// S is an aggregate of exactly N members (initialisable from N values and not from N + 1).
template <class S, std::size_t... I>
constexpr bool initialisable_from(std::index_sequence<I...>) {
  return requires { S{Mark<I, 0>{}...}; };
}
template <class S, std::size_t N>
constexpr bool has_members() {
  return initialisable_from<S>(std::make_index_sequence<N>{}) &&
         !initialisable_from<S>(std::make_index_sequence<N + 1>{});
}
// Member J of the list is the J-th member the struct declares: only it is on in one_hot<J>.
template <class S, std::size_t N, std::size_t J, class M, std::size_t... K>
constexpr bool declared_at(const M& members, std::index_sequence<K...>) {
  const S s = one_hot<S, J>(std::make_index_sequence<N>{});
  return ((is_on(s.*std::get<K>(members)) == (K == J)) && ...);
}
template <class S, class M, std::size_t... J>
constexpr bool declared_in_order([[maybe_unused]] const M& members,
                                 [[maybe_unused]] std::index_sequence<J...> seq) {
  return (declared_at<S, sizeof...(J), J>(members, seq) && ...);
}

template <class Op, std::size_t... K>
constexpr void check_tensor_types(std::index_sequence<K...>) {
  [[maybe_unused]] auto fits = [](const ArgSpec& a, auto member) {
    using T = typename member_type<decltype(member)>::type;
    if (a.is_list) return std::is_same_v<T, TensorList>;
    if (a.optional) return std::is_same_v<T, std::optional<TensorView>>;
    return std::is_same_v<T, TensorView>;
  };
  if (!(fits(Op::kArgs[K], std::get<K>(Op::kTensorMembers)) && ...)) {
    tensors_member_type_does_not_fit_its_argument();
  }
}

template <class Op, std::size_t... K>
constexpr void check_attr_types(std::index_sequence<K...>) {
  [[maybe_unused]] auto fits = [](const AttrSpec& a, auto member) {
    using T = typename member_type<decltype(member)>::type;
    constexpr AttrType held = attr_type_of<T>();
    if (a.type == AttrType::kScalar) return std::is_same_v<T, double>;
    return held == a.type;
  };
  if (!(fits(Op::kAttrs[K], std::get<K>(Op::kAttrMembers)) && ...)) {
    params_member_type_does_not_fit_its_attribute();
  }
  // Scalar defaults as declared (lists have none to compare).
  [[maybe_unused]] constexpr typename Op::Params defaults{};
  [[maybe_unused]] auto same_default = [&](const AttrSpec& a, auto member) {
    using T = typename member_type<decltype(member)>::type;
    if constexpr (std::is_enum_v<T>) {
      return static_cast<double>(static_cast<int64_t>(defaults.*member)) == a.default_value;
    } else if constexpr (std::is_arithmetic_v<T>) {
      return static_cast<double>(defaults.*member) == a.default_value;
    } else {
      return true;
    }
  };
  if (!((Op::kAttrs[K].graph_default ||
         same_default(Op::kAttrs[K], std::get<K>(Op::kAttrMembers))) &&
        ...)) {
    params_member_default_differs_from_its_attribute();
  }
}

}  // namespace op_desc_internal

// A hook the declaration defines under a hook's name is the one its table names (a hook
// written but left out of the table would be silently unused).
template <class Op>
constexpr bool hooks_registered() {
  namespace in = op_desc_internal;
  constexpr auto& h = Op::kHooks;
  constexpr auto& a = Op::kAclHooks;
  if constexpr (requires { &Op::normalized_dims; }) {
    if (!h.normalized_dims.set || h.normalized_dims.fn != &Op::normalized_dims)
      in::hook_defined_but_not_in_kHooks();
  }
  if constexpr (requires { &Op::check_shape_params; }) {
    if (!h.check_shape_params.set || h.check_shape_params.fn != &Op::check_shape_params)
      in::hook_defined_but_not_in_kHooks();
  }
  if constexpr (requires { &Op::required_by; }) {
    if (!h.required_by.set || h.required_by.fn != &Op::required_by)
      in::hook_defined_but_not_in_kHooks();
  }
  if constexpr (requires { &Op::infer_output; }) {
    if (!h.infer_output.set || h.infer_output.fn != &Op::infer_output)
      in::hook_defined_but_not_in_kHooks();
  }
  if constexpr (requires { &Op::check_aclnn_early; }) {
    if (!a.check_aclnn_early.set || a.check_aclnn_early.fn != &Op::check_aclnn_early)
      in::hook_defined_but_not_in_kAclHooks();
  }
  if constexpr (requires { &Op::check_aclnn; }) {
    if (!a.check_aclnn.set || a.check_aclnn.fn != &Op::check_aclnn)
      in::hook_defined_but_not_in_kAclHooks();
  }
  if constexpr (requires { &Op::params_by_name; }) {
    if (!a.params_by_name.set || a.params_by_name.fn != &Op::params_by_name)
      in::hook_defined_but_not_in_kAclHooks();
  }
  if constexpr (requires { &Op::aclnn_string; }) {
    if (!a.aclnn_string.set || a.aclnn_string.fn != &Op::aclnn_string)
      in::hook_defined_but_not_in_kAclHooks();
  }
  if constexpr (requires { &Op::aclnn_transposed; }) {
    if (!a.aclnn_transposed.set || a.aclnn_transposed.fn != &Op::aclnn_transposed)
      in::hook_defined_but_not_in_kAclHooks();
  }
  return true;
}

template <class Op>
constexpr bool members_match() {
  namespace in = op_desc_internal;
  using Tensors = typename Op::Tensors;
  using Params = typename Op::Params;
  constexpr std::size_t n = kNumArgs<Op>;
  constexpr std::size_t na = kNumAttrs<Op>;
  for (std::size_t k = 0; k < n; ++k) {
    if (in::nth_name(Op::kTensorMemberList, k) != Op::kArgs[k].name) {
      in::tensors_member_name_differs_from_its_argument();
    }
  }
  if (!in::has_members<Tensors, n>()) in::tensors_struct_has_a_member_the_declaration_lacks();
  if (!in::declared_in_order<Tensors>(Op::kTensorMembers, std::make_index_sequence<n>{})) {
    in::tensors_member_is_not_declared_in_argument_order();
  }
  in::check_tensor_types<Op>(std::make_index_sequence<n>{});
  for (std::size_t k = 0; k < na; ++k) {
    if (in::nth_name(Op::kAttrMemberList, k) != Op::kAttrs[k].name) {
      in::params_member_name_differs_from_its_attribute();
    }
  }
  if constexpr (!Op::kHooks.params_beyond_attrs) {
    if (!in::has_members<Params, na>()) in::params_struct_has_a_member_the_declaration_lacks();
    if (!in::declared_in_order<Params>(Op::kAttrMembers, std::make_index_sequence<na>{})) {
      in::params_member_is_not_declared_in_attribute_order();
    }
  }
  in::check_attr_types<Op>(std::make_index_sequence<na>{});
  return true;
}

// ---- Descriptor sanity, checked at compile time ---------------------------------------------

template <class Op>
constexpr bool well_formed() {
  constexpr auto& spec = Op::kArgs;
  for (std::size_t k = 0; k < kNumArgs<Op>; ++k) {
    const ArgSpec& a = spec[k];
    if (a.dtype == DtypeRule::kSameAs && (a.dtype_ref < 0 || a.dtype_ref >= static_cast<int>(k))) {
      return false;
    }
    if (a.shape == ShapeRule::kSameAs && (a.shape_ref < 0 || a.shape_ref >= static_cast<int>(k))) {
      return false;
    }
    if (a.role == Role::kOut && a.paired >= 0 &&
        spec[static_cast<std::size_t>(a.paired)].role != Role::kIn) {
      return false;
    }
    // An unset unpaired output is not computed: nothing may take its dtype or shape (below).
    if ((a.shape == ShapeRule::kTrailingOf || a.shape == ShapeRule::kReducedOf) &&
        (a.shape_ref < 0 || a.shape_ref >= static_cast<int>(k) ||
         spec[static_cast<std::size_t>(a.shape_ref)].is_list)) {
      return false;
    }
    if (a.role != Role::kOut && a.paired >= 0) return false;
    // A rule may refer to a list only element by element, from an output list of that list.
    if (a.dtype == DtypeRule::kSameAs && spec[static_cast<std::size_t>(a.dtype_ref)].is_list &&
        a.list_ref != a.dtype_ref) {
      return false;
    }
    if (a.shape == ShapeRule::kSameAs && spec[static_cast<std::size_t>(a.shape_ref)].is_list &&
        a.list_ref != a.shape_ref) {
      return false;
    }
    if (a.is_list && a.optional) return false;
    // An output list is a new tensor per element of an earlier input list.
    if (a.is_list && a.role == Role::kOut &&
        (a.list_ref < 0 || a.list_ref >= static_cast<int>(k) || a.paired >= 0 ||
         !spec[static_cast<std::size_t>(a.list_ref)].is_list ||
         spec[static_cast<std::size_t>(a.list_ref)].role == Role::kOut)) {
      return false;
    }
    if (a.list_ref >= 0 && a.role != Role::kOut) return false;
    // An argument that may be absent is no reference for another's dtype or shape.
    auto may_be_absent = [&](int ref) {
      const ArgSpec& r = spec[static_cast<std::size_t>(ref)];
      return r.optional && (r.role != Role::kOut || r.paired < 0);
    };
    if (a.dtype == DtypeRule::kSameAs && may_be_absent(a.dtype_ref)) return false;
    if (a.shape == ShapeRule::kSameAs && may_be_absent(a.shape_ref)) return false;
  }
  return std::tuple_size_v<std::decay_t<decltype(Op::kTensorMembers)>> == kNumArgs<Op> &&
         std::tuple_size_v<std::decay_t<decltype(Op::kAttrMembers)>> == kNumAttrs<Op> &&
         members_match<Op>() && hooks_registered<Op>();
}

}  // namespace mantissa::detail
