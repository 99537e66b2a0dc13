// The aclnn two-phase entry of any operator, derived from its declaration (core/op_desc.h).
//
// Phase one (aclnnXxxGetWorkspaceSize) checks the handles, plans the workspace, validates the
// very views phase two will compute on, and records a one-shot executor; phase two (aclnnXxx)
// runs it. The C++ operators take contiguous tensors only, so non-contiguous tensors go through
// the workspace: every non-contiguous input gets a contiguous slot it is copied into, every
// non-contiguous separate output a slot it is copied back from after the operator succeeds, and
// an in-place pair (an output that is the very same tensor as its input) shares its input's
// slot. Contiguous tensors are used where they are, so an all-contiguous call needs no staging.
// The operator's own scratch memory (Op::workspace_size) follows the slots.
//
// No exception crosses the C boundary: anything thrown becomes ACLNN_ERR_INNER with a message.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compat/aclnn_common.h"
#include "compat/executor_internal.h"
#include "compat/list_internal.h"
#include "compat/strided.h"
#include "core/op_desc.h"
#include "mantissa/workspace.h"

namespace mantissa::compat {

inline constexpr uint64_t kSlotAlignment = 64;

// One argument of an aclnn call: a tensor or a tensor list handle (null for an absent optional
// input), so an entry point passes its C parameters in declaration order.
struct AclnnArg {
  AclnnArg() = default;
  AclnnArg(const aclTensor* t) : tensor(t) {}    // NOLINT: implicit by design
  AclnnArg(const aclTensorList* l) : list(l) {}  // NOLINT: implicit by design
  AclnnArg(std::nullptr_t) {}                    // NOLINT: implicit by design
  const aclTensor* tensor = nullptr;
  const aclTensorList* list = nullptr;
};

namespace aclnn_internal {
void aclnn_handles_named_unlike_the_declared_arguments();
}  // namespace aclnn_internal

// The names of an entry point's handles as written at the call ("x, gamma, yOut, rstdOut"),
// checked at compile time against the declaration's aclnn names, in order.
template <class Op>
struct AclnnHandleNames {
  consteval AclnnHandleNames(const char* written) {  // NOLINT: implicit by design
    const std::string_view list(written);
    for (std::size_t k = 0; k < detail::kNumArgs<Op>; ++k) {
      if (detail::op_desc_internal::nth_name(list, k) != Op::kArgs[k].acl_name) {
        aclnn_internal::aclnn_handles_named_unlike_the_declared_arguments();
      }
    }
    if (!detail::op_desc_internal::nth_name(list, detail::kNumArgs<Op>).empty()) {
      aclnn_internal::aclnn_handles_named_unlike_the_declared_arguments();
    }
  }
};

// An entry point's tensor and tensor-list handles, one per declared argument in declaration
// order, given as MANTISSA_ACLNN_HANDLES(x, gamma, yOut, rstdOut): a handle left out, an extra
// one or two in the wrong order fails to compile.
template <class Op>
struct AclnnHandles {
  template <class... H>
  AclnnHandles(AclnnHandleNames<Op>, H... h) : handles{AclnnArg(h)...} {  // NOLINT: implicit
    static_assert(sizeof...(H) == detail::kNumArgs<Op>, "one handle per declared argument");
  }
  std::array<AclnnArg, detail::kNumArgs<Op>> handles;
};
#define MANTISSA_ACLNN_HANDLES(...) \
  { #__VA_ARGS__, __VA_ARGS__ }

template <class Op>
class AclnnPlan {
 public:
  static constexpr std::size_t kN = detail::kNumArgs<Op>;

  static const std::string& phase_one() {
    // Appended in place: `std::string(...) + "..."` trips GCC 12's -Warray-bounds (a false
    // positive in the inlined move of the temporary).
    static const std::string name = [] {
      std::string s(Op::kAclnn);
      s.append("GetWorkspaceSize");
      return s;
    }();
    return name;
  }
  static const char* phase_two() { return Op::kAclnn.data(); }

  // Plans the slots for the caller's tensors (already checked to be live handles). List
  // elements are used where they are: the operators take contiguous lists.
  Status make(const std::array<AclnnArg, kN>& handles, const typename Op::Params& p) {
    params_ = p;
    std::array<const aclTensor*, kN> tensors{};
    for (std::size_t k = 0; k < kN; ++k) {
      tensors[k] = handles[k].tensor;
      if (Op::kArgs[k].is_list) {
        list_views_[k] = to_views(*handles[k].list);
        present_[k] = true;
        continue;
      }
      present_[k] = tensors[k] != nullptr;  // only an optional input or in/out may be null here
      if (present_[k]) user_[k] = to_view(*tensors[k]);
    }
    slot_of_.fill(-1);
    for (std::size_t k = 0; k < kN; ++k) {
      const detail::ArgSpec& a = Op::kArgs[k];
      if (a.role != detail::Role::kOut || a.is_list || a.paired < 0) continue;  // lists: new
      const auto j = static_cast<std::size_t>(a.paired);
      in_place_[k] = tensors[k] == tensors[j] || same_view(user_[k], user_[j]);
    }
    // Inputs: a slot when non-contiguous, copied back when written (in/out, or an input whose
    // output is in place).
    for (std::size_t k = 0; k < kN; ++k) {
      const detail::ArgSpec& a = Op::kArgs[k];
      if (a.role == detail::Role::kOut || a.is_list || !present_[k] || computable_in_place(k)) {
        continue;
      }
      bool written = a.role == detail::Role::kInOut;
      for (std::size_t o = 0; o < kN; ++o) {
        written |= in_place_[o] && Op::kArgs[o].paired == static_cast<int>(k);
      }
      MANTISSA_RETURN_IF_ERROR(add_slot(k, true, written));
    }
    for (std::size_t k = 0; k < kN; ++k) {
      if (Op::kArgs[k].role != detail::Role::kOut || Op::kArgs[k].is_list) continue;
      if (in_place_[k]) {
        slot_of_[k] = slot_of_[static_cast<std::size_t>(Op::kArgs[k].paired)];
      } else if (!computable_in_place(k)) {
        MANTISSA_RETURN_IF_ERROR(add_slot(k, false, true));
      }
    }
    // The operator's own scratch memory, after the slots (sized on the caller's views: the
    // operator's views differ only in strides and addresses).
    own_offset_ = workspace_size_;
    own_size_ = Op::workspace_size(with_lists(detail::tensors_from<Op>(user_, present_)), params_);
    if (own_size_ > UINT64_MAX - kSlotAlignment - workspace_size_) {
      return invalid("the workspace overflows");
    }
    workspace_size_ += (own_size_ + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
    return {};
  }

  // Validates the views phase two will compute on (slots placed where no tensor is), then the
  // aliasing rule on the caller's own (possibly strided) views.
  Status validate() const {
    const std::optional<uintptr_t> base = placeholder_base();
    if (!base) {
      return Status(StatusCode::kInner,
                    fmt::format("{}: no address range is free for the workspace", phase_one()));
    }
    const typename Op::Tensors t = operator_tensors(reinterpret_cast<char*>(*base));
    // Upstream's aclnn rules that come before the common validation's dtype and rank rules
    // (ForeachNorm's lists of one dtype and rank <= 8: 561002 before the 161002 of out[i]
    // having x[i]'s dtype or of the rank range).
    if constexpr (Op::kAclHooks.check_aclnn_early.set) {
      MANTISSA_RETURN_IF_ERROR(Op::kAclHooks.check_aclnn_early.fn(t, params_));
    }
    MANTISSA_RETURN_IF_ERROR(detail::validate<Op>(t, params_));
    // Upstream's aclnn limits where they are narrower than the C++ API's.
    if constexpr (Op::kAclHooks.check_aclnn.set) {
      MANTISSA_RETURN_IF_ERROR(Op::kAclHooks.check_aclnn.fn(t, params_));
    }
    return check_written();
  }

  uint64_t workspace_size() const { return workspace_size_; }

  Status run(void* workspace) const {
    char* base = static_cast<char*>(workspace);
    if (workspace_size_ != 0) {
      // The copies must not land in the caller's tensors.
      const auto lo = reinterpret_cast<uintptr_t>(workspace);
      const ByteSpan ws{lo, lo + workspace_size_};
      for (std::size_t k = 0; k < kN; ++k) {
        if (spans_overlap(ws, byte_span(user_[k]))) {
          return Status(StatusCode::kParamInvalid,
                        fmt::format("{}: the workspace overlaps {}", phase_two(), name(k)));
        }
      }
    }
    for (const Slot& s : slots_) {
      if (s.copy_in) copy_to_contiguous(user_[s.tensor], base + s.offset);
    }
    const Workspace own{own_size_ == 0 ? nullptr : base + own_offset_, own_size_};
    MANTISSA_RETURN_IF_ERROR(Op::run(operator_tensors(base), params_, own));
    for (const Slot& s : slots_) {
      if (s.copy_out) copy_from_contiguous(base + s.offset, user_[s.tensor]);
    }
    return {};
  }

 private:
  struct Slot {
    std::size_t tensor;  // whose contiguous copy this is
    uint64_t offset;     // bytes from the workspace start
    bool copy_in;        // filled from the tensor before the operator runs
    bool copy_out;       // written back to the tensor after it succeeds
  };

  static const char* name(std::size_t k) { return Op::kArgs[k].acl_name.data(); }

  // Contiguous (for an argument read through its strides: no negative stride) and aligned to its
  // element size: the operator computes on the caller's memory. Otherwise the tensor goes through
  // a (64-byte aligned) slot of the workspace.
  bool computable_in_place(std::size_t k) const {
    const TensorView& v = user_[k];
    const std::size_t size = dtype_size(v.dtype);
    if (size > 1 && reinterpret_cast<uintptr_t>(v.data) % size != 0) return false;
    if (!Op::kArgs[k].strided) return v.is_contiguous();
    for (int i = 0; i < v.rank && i < kMaxRank; ++i) {
      if (v.shape[i] > 1 && v.strides[i] < 0) return false;
    }
    return true;
  }

  Status invalid(const std::string& message) const {
    return Status(StatusCode::kParamInvalid, fmt::format("{}: {}", phase_one(), message));
  }

  // Sizes of views that validation will reject count as 0.
  Status add_slot(std::size_t k, bool copy_in, bool copy_out) {
    const uint64_t bytes = static_cast<uint64_t>(user_[k].nbytes().value_or(0));
    const uint64_t padded = (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
    if (bytes > UINT64_MAX - kSlotAlignment || workspace_size_ > UINT64_MAX - padded) {
      return invalid("the workspace for the non-contiguous tensors overflows");
    }
    slot_of_[k] = static_cast<int>(slots_.size());
    slots_.push_back({k, workspace_size_, copy_in, copy_out});
    workspace_size_ += padded;
    return {};
  }

  // The views the C++ operator gets, with the workspace at `base`.
  typename Op::Tensors operator_tensors(char* base) const {
    std::array<TensorView, kN> v = user_;
    for (std::size_t k = 0; k < kN; ++k) {
      if (slot_of_[k] < 0) continue;
      // A null tensor pointer stays null so the operator reports it (161001).
      void* data = user_[k].data == nullptr ? nullptr : base + slots_[slot_of_[k]].offset;
      v[k] = contiguous_like(user_[k], data);
    }
    return with_lists(detail::tensors_from<Op>(v, present_));
  }

  typename Op::Tensors with_lists(typename Op::Tensors t) const {
    for (std::size_t k = 0; k < kN; ++k) {
      if (Op::kArgs[k].is_list) detail::set_list<Op>(t, k, list_views_[k]);
    }
    return t;
  }

  // The aliasing rule on the caller's views, comparing the byte ranges they span: a written
  // tensor is the very same view as its paired input or shares no byte of span with it, and
  // shares none with any other tensor (unless its rule lets it share with inputs); it never
  // addresses one element twice. On contiguous views this is exactly the C++ operator's rule.
  Status check_written() const {
    // An argument, or element `index` of a list argument; named only in an error message.
    struct Entry {
      std::size_t arg;
      std::ptrdiff_t index;  // -1: a plain argument
      const TensorView* view;
      ByteSpan span;
      std::string name() const {
        return index < 0 ? std::string(Op::kArgs[arg].acl_name)
                         : fmt::format("{}[{}]", Op::kArgs[arg].acl_name, index);
      }
    };
    // A fixed array when the operator has no list argument: no allocation per call.
    constexpr bool kLists = detail::has_list_args<Op>();
    std::array<Entry, kN> fixed{};
    std::vector<Entry> dynamic;
    std::size_t count = 0;
    auto add = [&](const Entry& e) {
      if constexpr (kLists) {
        dynamic.push_back(e);
      } else {
        fixed[count] = e;
      }
      ++count;
    };
    for (std::size_t k = 0; k < kN; ++k) {
      if (!present_[k]) continue;
      if (!Op::kArgs[k].is_list) {
        add({k, -1, &user_[k], byte_span(user_[k])});
        continue;
      }
      for (std::size_t i = 0; i < list_views_[k].size(); ++i) {
        add({k, static_cast<std::ptrdiff_t>(i), &list_views_[k][i], byte_span(list_views_[k][i])});
      }
    }
    const std::span<const Entry> entries =
        kLists ? std::span<const Entry>(dynamic) : std::span<const Entry>(fixed.data(), count);
    for (const Entry& w : entries) {
      const detail::ArgSpec& a = Op::kArgs[w.arg];
      if (!a.written()) continue;
      if (may_self_overlap(*w.view)) {
        return invalid(fmt::format(
            "{} (shape {}) has strides that address some element twice; an output must not",
            w.name(), w.view->shape_string()));
      }
      for (const Entry& x : entries) {
        if (&x == &w) continue;
        if (a.role == detail::Role::kOut && static_cast<int>(x.arg) == a.paired &&
            in_place_[w.arg]) {
          continue;
        }
        if (a.alias == detail::AliasRule::kAnyInput &&
            Op::kArgs[x.arg].role != detail::Role::kOut) {
          continue;
        }
        if (spans_overlap(w.span, x.span)) {
          return invalid(fmt::format(
              "{} overlaps {} (an output must be the very same view as its input, or share no "
              "byte with it nor with any other tensor; strided views are compared by the bytes "
              "they span)",
              w.name(), x.name()));
        }
      }
    }
    return {};
  }

  // An address range for the workspace that no tensor of the call spans, so phase one can
  // validate the very views phase two will compute on. Never dereferenced.
  std::optional<uintptr_t> placeholder_base() const {
    uintptr_t lowest = UINTPTR_MAX, highest = 0;
    auto cover = [&](const TensorView& v) {
      const ByteSpan s = byte_span(v);
      if (s.empty()) return;
      lowest = std::min(lowest, s.lo);
      highest = std::max(highest, s.hi);
    };
    for (const TensorView& v : user_) cover(v);
    for (const auto& list : list_views_) {
      for (const TensorView& v : list) cover(v);
    }
    const uintptr_t above = (std::max<uintptr_t>(highest, kSlotAlignment) + kSlotAlignment - 1) /
                            kSlotAlignment * kSlotAlignment;
    if (above >= highest && UINTPTR_MAX - above >= workspace_size_) return above;
    if (lowest != UINTPTR_MAX && lowest > workspace_size_ + kSlotAlignment) {
      return (lowest - workspace_size_) / kSlotAlignment * kSlotAlignment;
    }
    return std::nullopt;
  }

  std::array<TensorView, kN> user_{};  // the caller's views (possibly strided)
  std::array<int, kN> slot_of_{};      // slot computed on, or -1: the caller's own memory
  std::array<bool, kN> in_place_{};    // output k is the very same tensor as its paired input
  std::array<bool, kN> present_{};     // false for an optional input the caller left out
  std::array<std::vector<TensorView>, kN> list_views_{};  // the elements of list arguments
  std::vector<Slot> slots_;
  uint64_t workspace_size_ = 0, own_offset_ = 0, own_size_ = 0;
  typename Op::Params params_{};
};

// The aclScalar handles of Op's host-scalar attributes (AttrType::kScalar), in attribute order.
template <class Op>
using AclnnScalars = std::array<const aclScalar*, detail::count_scalar_attrs<Op>()>;

// Checks the aclScalar handles (null: 161001; not live: 161002) and sets their attributes in
// `params` (FLOAT, DOUBLE or INT64; any other dtype: 161002).
template <class Op>
aclnnStatus read_scalars(const char* fn, const AclnnScalars<Op>& scalars,
                         typename Op::Params& params) {
  auto name = [](std::size_t j) {
    const detail::AttrSpec& a = Op::kAttrs[detail::scalar_attr_index<Op>(j)];
    return a.graph_name.empty() ? a.name : a.graph_name;
  };
  for (std::size_t j = 0; j < scalars.size(); ++j) {
    if (scalars[j] == nullptr) {
      set_recent_error(fmt::format("{}: {} is null", fn, name(j)));
      return ACLNN_ERR_PARAM_NULLPTR;
    }
  }
  for (std::size_t j = 0; j < scalars.size(); ++j) {
    if (!scalar_is_live(scalars[j])) {
      set_recent_error(fmt::format("{}: {} ({}) is not a live aclScalar", fn, name(j),
                                   static_cast<const void*>(scalars[j])));
      return ACLNN_ERR_PARAM_INVALID;
    }
    const DType d = scalar_dtype(*scalars[j]);
    if (d != DType::kFloat32 && d != DType::kFloat64 && d != DType::kInt64) {
      set_recent_error(fmt::format("{}: {} dtype {} is not supported (FLOAT, DOUBLE or INT64)", fn,
                                   name(j), dtype_name(d)));
      return ACLNN_ERR_PARAM_INVALID;
    }
    detail::set_attr<Op>(params, detail::scalar_attr_index<Op>(j), scalar_as_double(*scalars[j]));
  }
  return ACLNN_SUCCESS;
}

// One list attribute of an aclnn call: an aclIntArray (AttrType::kIntList) or an aclBoolArray
// (AttrType::kBoolList).
struct AclnnListAttr {
  AclnnListAttr() = default;
  AclnnListAttr(const aclIntArray* a) : ints(a) {}    // NOLINT: implicit by design
  AclnnListAttr(const aclBoolArray* a) : bools(a) {}  // NOLINT: implicit by design
  const aclIntArray* ints = nullptr;
  const aclBoolArray* bools = nullptr;
};

template <class Op>
constexpr std::size_t count_list_attrs() {
  std::size_t n = 0;
  for (const detail::AttrSpec& a : Op::kAttrs) n += detail::is_list_attr(a.type);
  return n;
}
template <class Op>
constexpr std::size_t list_attr_index(std::size_t j) {
  for (std::size_t i = 0; i < detail::kNumAttrs<Op>; ++i) {
    if (detail::is_list_attr(Op::kAttrs[i].type) && j-- == 0) return i;
  }
  return detail::kNumAttrs<Op>;
}

// The handles of Op's list attributes, in attribute order.
template <class Op>
using AclnnLists = std::array<AclnnListAttr, count_list_attrs<Op>()>;

// An attribute's aclnn parameter name: its name in camelCase (normalized_shape: normalizedShape).
inline std::string acl_attr_name(std::string_view name) {
  std::string s;
  bool upper = false;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    s += upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    upper = false;
  }
  return s;
}

// Whether `acl` is the aclnn parameter name of attribute name `name` (acl_attr_name's rule).
constexpr bool is_acl_attr_name(std::string_view name, std::string_view acl) {
  std::size_t j = 0;
  bool upper = false;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    const char want = upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
    if (j >= acl.size() || acl[j++] != want) return false;
    upper = false;
  }
  return j == acl.size();
}

// Reached only in a constant evaluation that fails: the message the compiler prints.
inline void aclnn_signature_names_no_attribute_of_the_declaration() {}

// The index of the attribute whose aclnn name is `acl`, for the entries generated from a
// declaration's kAclnnSignature: a parameter that names no attribute does not compile.
template <class Op>
consteval std::size_t acl_attr_index(std::string_view acl) {
  for (std::size_t i = 0; i < detail::kNumAttrs<Op>; ++i) {
    if (is_acl_attr_name(Op::kAttrs[i].name, acl)) return i;
  }
  aclnn_signature_names_no_attribute_of_the_declaration();
  return 0;
}

// Checks the list handles (null: 161001; not live: 161002) and sets their attributes in
// `params` (a list of the wrong length for its attribute: 161002).
template <class Op>
aclnnStatus read_lists(const char* fn, const AclnnLists<Op>& lists, typename Op::Params& params) {
  for (std::size_t j = 0; j < lists.size(); ++j) {
    const std::size_t i = list_attr_index<Op>(j);
    const std::string name = acl_attr_name(Op::kAttrs[i].name);
    const bool ints = Op::kAttrs[i].type == detail::AttrType::kIntList;
    const void* handle =
        ints ? static_cast<const void*>(lists[j].ints) : static_cast<const void*>(lists[j].bools);
    if (handle == nullptr) {
      set_recent_error(fmt::format("{}: {} is null", fn, name));
      return ACLNN_ERR_PARAM_NULLPTR;
    }
    const bool live = ints ? int_array_is_live(lists[j].ints) : bool_array_is_live(lists[j].bools);
    if (!live) {
      set_recent_error(fmt::format("{}: {} ({}) is not a live {}", fn, name, handle,
                                   ints ? "aclIntArray" : "aclBoolArray"));
      return ACLNN_ERR_PARAM_INVALID;
    }
    std::vector<int64_t> values;
    if (ints) {
      const std::span<const int64_t> v = int_array_values(*lists[j].ints);
      values.assign(v.begin(), v.end());
    } else {
      for (bool b : bool_array_values(*lists[j].bools)) values.push_back(b ? 1 : 0);
    }
    if (const Status s = detail::set_list_attr<Op>(params, i, values); !s.ok()) {
      set_recent_error(fmt::format("{}: {}", fn, s.message()));
      return ACLNN_ERR_PARAM_INVALID;
    }
  }
  return ACLNN_SUCCESS;
}

// Phase one of Op's aclnn entry: tensors and tensor lists in the declaration's order (outputs
// included), the aclScalar handles of its host-scalar attributes and the array handles of its
// list attributes (whose values replace those in `params`).
template <class Op>
aclnnStatus aclnn_prepare(const AclnnHandles<Op>& named_handles,
                          const typename Op::Params& params_in, uint64_t* workspace_size,
                          aclOpExecutor** executor, const AclnnScalars<Op>& scalars = {},
                          const AclnnLists<Op>& lists = {}) noexcept {
  using Plan = AclnnPlan<Op>;
  const char* fn = Plan::phase_one().c_str();
  const std::array<AclnnArg, detail::kNumArgs<Op>>& handles = named_handles.handles;
  try {
    typename Op::Params params = params_in;
    // List attributes first: they decide which optional outputs are required (an output mask).
    if (aclnnStatus s = read_lists<Op>(fn, lists, params); s != ACLNN_SUCCESS) return s;
    // A null optional input or in/out argument is absent, unless the attributes require it;
    // every other null is 161001. Lists are checked after the tensors, in the same way (null,
    // not live, an element not live or not ND).
    std::array<TensorArg, detail::kNumArgs<Op>> args{};
    std::size_t checked = 0;
    for (std::size_t k = 0; k < handles.size(); ++k) {
      const detail::ArgSpec& a = Op::kArgs[k];
      if (a.is_list) continue;
      // An optional input, or an optional output that is a result of its own (not computed).
      const bool may_be_null = a.optional && (a.role != detail::Role::kOut || a.paired < 0);
      if (handles[k].tensor == nullptr && may_be_null &&
          detail::required_by<Op>(params, k) == nullptr) {
        continue;
      }
      args[checked++] = {a.acl_name.data(), handles[k].tensor};
    }
    if (aclnnStatus s = check_tensor_args(fn, std::span<const TensorArg>(args.data(), checked));
        s != ACLNN_SUCCESS) {
      return s;
    }
    for (std::size_t k = 0; k < handles.size(); ++k) {
      if (!Op::kArgs[k].is_list) continue;
      if (aclnnStatus s = check_tensor_list_arg(fn, Op::kArgs[k].acl_name.data(), handles[k].list);
          s != ACLNN_SUCCESS) {
        return s;
      }
    }
    if (aclnnStatus s = read_scalars<Op>(fn, scalars, params); s != ACLNN_SUCCESS) return s;
    if (aclnnStatus s = check_out_pointers(fn, workspace_size, executor); s != ACLNN_SUCCESS) {
      return s;
    }
    Plan plan;
    if (const Status s = plan.make(handles, params); !s.ok()) return report(s);
    if (const Status s = plan.validate(); !s.ok()) return report(s);
    const uint64_t size = plan.workspace_size();
    aclOpExecutor* created = create_executor(
        Plan::phase_two(), size, [plan = std::move(plan)](void* ws) { return plan.run(ws); });
    if (created == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
    *workspace_size = size;
    *executor = created;
    return ACLNN_SUCCESS;
  } catch (const std::exception& e) {
    return report(Status(StatusCode::kInner, fmt::format("{}: {}", fn, e.what())));
  } catch (...) {
    return report(Status(StatusCode::kInner, fmt::format("{}: unknown exception", fn)));
  }
}

// Phase two of Op's aclnn entry.
template <class Op>
aclnnStatus aclnn_execute(void* workspace, uint64_t workspace_size, aclOpExecutor* executor,
                          aclrtStream stream) noexcept {
  return run_executor(AclnnPlan<Op>::phase_two(), workspace, workspace_size, executor, stream);
}

}  // namespace mantissa::compat
