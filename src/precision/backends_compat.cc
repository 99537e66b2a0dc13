// The C API backends, derived from the operator declarations: "aclnn" (two-phase calls, for the
// operators CANN defines one for) and "aclop" (op-by-name execution, every operator). Each runs
// in place on copies of the generated inputs, as programs written for CANN do.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_op_compiler.h"
#include "aclnn/acl_meta.h"
#define MANTISSA_ACLNN_HEADERS
#include "aclnn_backends.inc"  // generated: every aclnn header
#undef MANTISSA_ACLNN_HEADERS
#include "aclnnop/aclnn_fused_adamw.h"
#include "aclnnop/aclnn_fused_sgd.h"
#include "compat/op_binding.h"
#include "precision/op_defs.h"
#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

aclDataType acl_dtype(DType d) { return static_cast<aclDataType>(static_cast<int32_t>(d)); }

std::string acl_error(const char* what, int code) {
  const char* msg = aclGetRecentErrMsg();
  return fmt::format("{} returned {}: {}", what, code, msg ? msg : "");
}

// ---- aclnn ----------------------------------------------------------------------------------

struct TensorDeleter {
  void operator()(aclTensor* t) const { aclDestroyTensor(t); }
};
using TensorPtr = std::unique_ptr<aclTensor, TensorDeleter>;
struct TensorListDeleter {
  void operator()(aclTensorList* l) const { aclDestroyTensorList(l); }
};
using TensorListPtr = std::unique_ptr<aclTensorList, TensorListDeleter>;
struct ScalarDeleter {
  void operator()(aclScalar* s) const { aclDestroyScalar(s); }
};
using ScalarPtr = std::unique_ptr<aclScalar, ScalarDeleter>;
struct IntArrayDeleter {
  void operator()(aclIntArray* a) const { aclDestroyIntArray(a); }
};
using IntArrayPtr = std::unique_ptr<aclIntArray, IntArrayDeleter>;
struct BoolArrayDeleter {
  void operator()(aclBoolArray* a) const { aclDestroyBoolArray(a); }
};
using BoolArrayPtr = std::unique_ptr<aclBoolArray, BoolArrayDeleter>;

// A host scalar's value as CANN callers pass it: FLOAT when fp32 holds it exactly, else DOUBLE.
HostTensor scalar_tensor(double v) {
  const bool as_float = static_cast<double>(static_cast<float>(v)) == v || std::isnan(v);
  HostTensor t(as_float ? DType::kFloat32 : DType::kFloat64, {1});
  if (as_float) {
    const float f = static_cast<float>(v);
    std::memcpy(t.data(), &f, sizeof(f));
  } else {
    std::memcpy(t.data(), &v, sizeof(v));
  }
  return t;
}

// A contiguous ND aclTensor over a host tensor.
// A contiguous tensor, or (transposed) the view of it with its last two dims and their strides
// swapped.
TensorPtr make_tensor(HostTensor& t, bool transposed = false) {
  std::vector<int64_t> strides(t.shape.size(), 1);
  for (std::size_t i = t.shape.size(); i-- > 1;) strides[i - 1] = strides[i] * t.shape[i];
  std::vector<int64_t> shape = t.shape;
  if (transposed && shape.size() >= 2) {
    std::swap(shape[shape.size() - 1], shape[shape.size() - 2]);
    std::swap(strides[strides.size() - 1], strides[strides.size() - 2]);
  }
  return TensorPtr(aclCreateTensor(shape.data(), shape.size(), acl_dtype(t.dtype), strides.data(),
                                   0, ACL_FORMAT_ND, t.shape.data(), t.shape.size(),
                                   data_or_dummy(t)));
}

// Phase two of a two-phase call, with a workspace of the reported size.
template <class PhaseTwo>
std::string run_phase_two(const char* name, uint64_t workspace_size, aclOpExecutor* executor,
                          PhaseTwo phase_two) {
  std::vector<uint64_t> workspace((workspace_size + 7) / 8);
  const aclnnStatus s =
      phase_two(workspace.empty() ? nullptr : workspace.data(), workspace_size, executor, nullptr);
  return s == ACLNN_SUCCESS ? "" : acl_error(name, s);
}

// The aclnn backend of Op through its two C entry points. The phase-one signature is walked
// parameter by parameter: tensor handles take the declaration's tensors in order (an output the
// tensor of the input it updates: in place), scalars and aclScalar handles take the attributes
// in order.
template <class Op, class... P>
std::string aclnn_backend(aclnnStatus (*phase_one)(P...),
                          aclnnStatus (*phase_two)(void*, uint64_t, aclOpExecutor*, aclrtStream),
                          const OpInputs& in, std::vector<HostTensor>& out) {
  using S = Schema<Op>;
  std::vector<HostTensor> w = S::working_tensors(in);
  const typename S::Layout l = S::layout(in);
  // The views aclnn takes where the graph's attributes transpose an argument.
  std::vector<bool> transposed(w.size(), false);
  if constexpr (Op::kAclHooks.aclnn_transposed.set) {
    const typename Op::Params p = S::params(in);
    for (std::size_t k = 0; k < S::kN; ++k) {
      if (!Op::kArgs[k].is_list && Op::kAclHooks.aclnn_transposed.fn(k, p)) {
        transposed[l.first[k]] = true;
      }
    }
  }
  std::vector<TensorPtr> handles;
  for (std::size_t i = 0; i < w.size(); ++i) {
    HostTensor& h = w[i];
    if (absent(h)) {  // an optional tensor the case leaves out: a null handle
      handles.emplace_back();
      continue;
    }
    handles.push_back(make_tensor(h, transposed[i]));
    if (!handles.back()) return acl_error("aclCreateTensor", -1);
  }
  // A list argument becomes an aclTensorList owning its element tensors.
  std::vector<TensorListPtr> lists;
  std::array<void*, S::kN> handle_of{};
  for (std::size_t k = 0; k < S::kN; ++k) {
    if (!Op::kArgs[k].is_list) {
      handle_of[k] = handles[l.first[k]].get();
      continue;
    }
    std::vector<const aclTensor*> elements;
    for (std::size_t i = 0; i < l.count[k]; ++i) elements.push_back(handles[l.first[k] + i].get());
    lists.emplace_back(aclCreateTensorList(elements.data(), elements.size()));
    if (!lists.back()) return acl_error("aclCreateTensorList", -1);
    for (std::size_t i = 0; i < l.count[k]; ++i) (void)handles[l.first[k] + i].release();
    handle_of[k] = lists.back().get();
  }
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  std::size_t next_tensor = 0, next_attr = 0;
  std::vector<ScalarPtr> scalars;
  std::vector<IntArrayPtr> int_arrays;
  std::vector<BoolArrayPtr> bool_arrays;
  auto arg = [&]<class T>(std::type_identity<T>) -> T {
    if constexpr (std::is_same_v<T, const aclIntArray*>) {
      const std::vector<int64_t>& v = in.attrs[next_attr++].list;
      int_arrays.emplace_back(aclCreateIntArray(v.data(), v.size()));
      return int_arrays.back().get();
    } else if constexpr (std::is_same_v<T, const aclBoolArray*>) {
      const std::vector<int64_t>& v = in.attrs[next_attr++].list;
      const std::unique_ptr<bool[]> b(new bool[v.size() + 1]);
      for (std::size_t j = 0; j < v.size(); ++j) b[j] = v[j] != 0;
      bool_arrays.emplace_back(aclCreateBoolArray(b.get(), v.size()));
      return bool_arrays.back().get();
    } else if constexpr (std::is_same_v<T, const aclScalar*>) {
      HostTensor v = scalar_tensor(in.attrs[next_attr++].f);
      scalars.emplace_back(aclCreateScalar(v.data(), acl_dtype(v.dtype)));
      return scalars.back().get();
    } else if constexpr (std::is_same_v<T, const char*> ||
                         std::is_same_v<T, char*>) {  // an enumerated string attribute
                                                      // (GeluBackwardV2's is a char*)
      const std::size_t i = next_attr++;
      // Op named through T, so that clang 14 (the fuzz build) checks this only where the branch
      // is taken (it evaluates the non-dependent parts of discarded branches).
      using DependentOp = std::enable_if_t<sizeof(T) != 0, Op>;
      static_assert(DependentOp::kAclHooks.aclnn_string.set,
                    "a string attribute in the aclnn signature needs kAclHooks.aclnn_string");
      return const_cast<T>(DependentOp::kAclHooks.aclnn_string.fn(i, in.attrs[i].i));
    } else if constexpr (std::is_same_v<T, uint64_t*>) {
      return &size;
    } else if constexpr (std::is_same_v<T, aclOpExecutor**>) {
      return &executor;
    } else if constexpr (std::is_pointer_v<T>) {
      return static_cast<T>(handle_of[next_tensor++]);
    } else if constexpr (std::is_same_v<T, bool>) {
      return in.attrs[next_attr++].b;
    } else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>) {  // aclDataType: an enum
      return static_cast<T>(in.attrs[next_attr++].i);
    } else {
      return static_cast<T>(in.attrs[next_attr++].f);
    }
  };
  // A braced list is evaluated left to right, so the parameters are filled in order.
  const std::tuple<P...> args{arg(std::type_identity<P>{})...};
  const std::string one = std::string(Op::kAclnn) + "GetWorkspaceSize";
  if (const aclnnStatus s = std::apply(phase_one, args); s != ACLNN_SUCCESS) {
    return acl_error(one.c_str(), s);
  }
  if (std::string e = run_phase_two(Op::kAclnn.data(), size, executor, phase_two); !e.empty()) {
    return e;
  }
  out = S::written_tensors(in, w);
  return "";
}

// ---- aclop (op by name) ---------------------------------------------------------------------

// Descriptors, buffers and attributes of one op-by-name call, destroyed together.
class AclopCall {
 public:
  ~AclopCall() {
    for (auto* d : descs_) aclDestroyTensorDesc(d);
    for (auto* b : buffers_) aclDestroyDataBuffer(b);
    if (attr_) aclopDestroyAttr(attr_);
  }
  void add_input(HostTensor& t) { add(t, in_desc_, in_buf_); }
  // An optional input left out, in CANN's form: an ACL_DT_UNDEFINED descriptor, a data buffer of
  // no memory.
  void add_absent_input() {
    aclTensorDesc* d = aclCreateTensorDesc(ACL_DT_UNDEFINED, 0, nullptr, ACL_FORMAT_UNDEFINED);
    aclDataBuffer* b = aclCreateDataBuffer(nullptr, 0);
    descs_.push_back(d);
    buffers_.push_back(b);
    in_desc_.push_back(d);
    in_buf_.push_back(b);
  }
  void add_output(HostTensor& t) { add(t, out_desc_, out_buf_); }
  aclopAttr* attr() {
    if (!attr_) attr_ = aclopCreateAttr();
    return attr_;
  }
  std::string execute(const char* op_type) {
    for (auto* d : descs_) {
      if (!d) return acl_error("aclCreateTensorDesc", -1);
    }
    for (auto* b : buffers_) {
      if (!b) return acl_error("aclCreateDataBuffer", -1);
    }
    const aclError e = aclopCompileAndExecuteV2(
        op_type, static_cast<int>(in_desc_.size()), in_desc_.data(), in_buf_.data(),
        static_cast<int>(out_desc_.size()), out_desc_.data(), out_buf_.data(), attr(),
        ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr);
    return e == ACL_SUCCESS ? "" : acl_error("aclopCompileAndExecuteV2", e);
  }

 private:
  void add(HostTensor& t, std::vector<aclTensorDesc*>& descs, std::vector<aclDataBuffer*>& bufs) {
    aclTensorDesc* d = aclCreateTensorDesc(acl_dtype(t.dtype), static_cast<int>(t.shape.size()),
                                           t.shape.data(), ACL_FORMAT_ND);
    aclDataBuffer* b = aclCreateDataBuffer(data_or_dummy(t), t.bytes.size());
    descs_.push_back(d);
    buffers_.push_back(b);
    descs.push_back(d);
    bufs.push_back(b);
  }
  std::vector<aclTensorDesc*> descs_, in_desc_, out_desc_;
  std::vector<aclDataBuffer*> buffers_, in_buf_, out_buf_;
  aclopAttr* attr_ = nullptr;
};

// The op-by-name backend of Op: the read and in/out tensors as inputs in the graph's order, each
// output on the buffer of the input it updates (in place), the attributes by name and type.
template <class Op>
std::string aclop_backend(const OpInputs& in, std::vector<HostTensor>& out) {
  using S = Schema<Op>;
  std::vector<HostTensor> w = S::working_tensors(in);
  const typename S::Layout l = S::layout(in);
  AclopCall call;
  // In the graph's order; a list's elements in order, as a dynamic input. New outputs follow
  // the inputs in w and are not inputs. Attributes given as inputs come where the graph declares
  // them (before a tensor input, or after all of them).
  std::vector<HostTensor> attr_inputs;
  attr_inputs.reserve(detail::kNumAttrs<Op>);
  auto add_attr_input = [&](std::size_t i) {
    if (Op::kAttrs[i].type == detail::AttrType::kScalar) {
      attr_inputs.push_back(scalar_tensor(in.attrs[i].f));
    } else {
      const std::vector<int64_t>& v = in.attrs[i].list;
      attr_inputs.emplace_back(DType::kInt64, std::vector<int64_t>{static_cast<int64_t>(v.size())});
      if (!v.empty()) std::memcpy(attr_inputs.back().data(), v.data(), v.size() * sizeof(int64_t));
    }
    call.add_input(attr_inputs.back());
  };
  auto input_attr_before = [](std::size_t i, int k) {
    return detail::is_input_attr(Op::kAttrs[i].type) && Op::kAttrs[i].graph_input_before == k;
  };
  for (std::size_t k : compat::graph_inputs<Op>()) {
    for (std::size_t i = 0; i < detail::kNumAttrs<Op>; ++i) {
      if (input_attr_before(i, static_cast<int>(k))) add_attr_input(i);
    }
    for (std::size_t i = 0; i < l.count[k]; ++i) {
      HostTensor& t = w[l.first[k] + i];
      if (absent(t)) {
        call.add_absent_input();
      } else {
        call.add_input(t);
      }
    }
  }
  for (std::size_t i = 0; i < detail::kNumAttrs<Op>; ++i) {
    if (input_attr_before(i, -1)) add_attr_input(i);
  }
  for (std::size_t k = 0; k < S::kN; ++k) {
    if (Op::kArgs[k].role != detail::Role::kOut) continue;
    for (std::size_t i = 0; i < l.count[k]; ++i) call.add_output(w[l.first[k] + i]);
  }
  for (std::size_t i = 0; i < detail::kNumAttrs<Op>; ++i) {
    // Under the graph's name (op-by-name may call an attribute differently).
    const std::string name(Op::kAttrs[i].graph_name.empty() ? Op::kAttrs[i].name
                                                            : Op::kAttrs[i].graph_name);
    switch (Op::kAttrs[i].type) {
      case detail::AttrType::kBool:
        aclopSetAttrBool(call.attr(), name.c_str(), in.attrs[i].b);
        break;
      case detail::AttrType::kInt:
        if (Op::kAttrs[i].graph_int_list) {
          aclopSetAttrListInt(call.attr(), name.c_str(), 1, &in.attrs[i].i);
          break;
        }
        // An Int the graph declares as a String goes by its string (CANN's form) when it has one.
        if (const auto& strings = Op::kAttrs[i].graph_strings; !strings.empty()) {
          const auto it = std::find_if(strings.begin(), strings.end(),
                                       [&](const auto& g) { return g.value == in.attrs[i].i; });
          if (it != strings.end()) {
            aclopSetAttrString(call.attr(), name.c_str(), std::string(it->name).c_str());
            break;
          }
        }
        aclopSetAttrInt(call.attr(), name.c_str(), in.attrs[i].i);
        break;
      case detail::AttrType::kFloat:
        aclopSetAttrFloat(call.attr(), name.c_str(), static_cast<float>(in.attrs[i].f));
        break;
      case detail::AttrType::kBoolList:
        if (Op::kAttrs[i].graph_input_before != detail::kNotInGraph) {
          std::vector<uint8_t> b(in.attrs[i].list.begin(), in.attrs[i].list.end());
          aclopSetAttrListBool(call.attr(), name.c_str(), static_cast<int>(b.size()), b.data());
        }
        break;
      case detail::AttrType::kScalar:
      case detail::AttrType::kIntList: break;  // inputs (above), or not in the graph
    }
  }
  if (std::string e = call.execute(std::string(Op::kType).c_str()); !e.empty()) return e;
  out = S::written_tensors(in, w);
  return "";
}

template <class Op, class PhaseOne, class PhaseTwo>
void add_aclnn(std::map<std::string, OpEntry>& ops, PhaseOne one, PhaseTwo two) {
  static_assert(!Op::kAclnn.empty(), "the operator has no aclnn entry");
  ops.at(std::string(Op::kType)).backends[Backend::kAclnn] =
      [one, two](const OpInputs& in, std::vector<HostTensor>& out) {
        return aclnn_backend<Op>(one, two, in, out);
      };
}

// ---- FusedAdamw and FusedSgd: several lists, written by hand ---------------------------------

// The aclTensorLists of a case's first `n_lists` list slots (in.list_sizes), over w.
struct CaseLists {
  std::vector<TensorPtr> tensors;
  std::vector<TensorListPtr> lists;
  std::size_t after = 0;  // the first tensor after the lists
  std::string error;
  CaseLists(std::vector<HostTensor>& w, const OpInputs& in, std::size_t n_lists) {
    for (std::size_t k = 0; k < n_lists; ++k) {
      std::vector<aclTensor*> elements;
      for (int64_t i = 0; i < in.list_sizes.at(k); ++i) {
        tensors.push_back(make_tensor(w[after++]));
        if (!tensors.back()) error = acl_error("aclCreateTensor", -1);
        elements.push_back(tensors.back().get());
      }
      lists.emplace_back(aclCreateTensorList(elements.data(), elements.size()));
      if (!lists.back()) error = acl_error("aclCreateTensorList", -1);
    }
  }
  // An optional scalar tensor: null when the case leaves it out.
  aclTensor* optional(std::vector<HostTensor>& w, std::size_t i) {
    if (absent(w[i])) return nullptr;
    tensors.push_back(make_tensor(w[i]));
    return tensors.back().get();
  }
};

std::string fused_adamw_aclnn(const OpInputs& in, std::vector<HostTensor>& out) {
  std::vector<HostTensor> w = in.tensors;
  CaseLists c(w, in, 6);
  if (!c.error.empty()) return c.error;
  aclTensor* grad_scale = c.optional(w, c.after);
  aclTensor* found_inf = c.optional(w, c.after + 1);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const auto& a = in.attrs;
  const aclnnStatus s = aclnnFusedAdamwGetWorkspaceSize(
      c.lists[0].get(), c.lists[1].get(), c.lists[2].get(), c.lists[3].get(), c.lists[4].get(),
      c.lists[5].get(), grad_scale, found_inf, a[0].f, a[1].f, a[2].f, a[3].f, a[4].f, a[5].b,
      a[6].b, &size, &executor);
  if (s != ACLNN_SUCCESS) return acl_error("aclnnFusedAdamwGetWorkspaceSize", s);
  if (std::string e = run_phase_two("aclnnFusedAdamw", size, executor, aclnnFusedAdamw);
      !e.empty()) {
    return e;
  }
  out = fused_optim_written("FusedAdamw", in, std::move(w));
  return "";
}

std::string fused_sgd_aclnn(const OpInputs& in, std::vector<HostTensor>& out) {
  std::vector<HostTensor> w = in.tensors;
  CaseLists c(w, in, 3);
  if (!c.error.empty()) return c.error;
  aclTensor* grad_scale = c.optional(w, c.after);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const auto& a = in.attrs;
  auto f = [&](int k) { return static_cast<float>(a[k].f); };
  // momentumBufferListOptionalRef: a null list where the case gives no buffers.
  const aclnnStatus s = aclnnFusedSgdGetWorkspaceSize(
      c.lists[0].get(), c.lists[1].get(), in.list_sizes.at(2) > 0 ? c.lists[2].get() : nullptr,
      grad_scale, f(0), f(1), f(2), f(3), a[4].b, a[5].b, a[6].b, &size, &executor);
  if (s != ACLNN_SUCCESS) return acl_error("aclnnFusedSgdGetWorkspaceSize", s);
  if (std::string e = run_phase_two("aclnnFusedSgd", size, executor, aclnnFusedSgd); !e.empty()) {
    return e;
  }
  out = fused_optim_written("FusedSgd", in, std::move(w));
  return "";
}

}  // namespace

void add_compat_backends(std::map<std::string, OpEntry>& ops) {
  if (auto it = ops.find("FusedAdamw"); it != ops.end()) {
    it->second.backends[Backend::kAclnn] = fused_adamw_aclnn;
  }
  if (auto it = ops.find("FusedSgd"); it != ops.end()) {
    it->second.backends[Backend::kAclnn] = fused_sgd_aclnn;
  }
  detail::AllOps::for_each([&](auto op) {
    using Op = typename decltype(op)::type;
    ops.at(std::string(Op::kType)).backends[Backend::kAclop] = aclop_backend<Op>;
  });
  // The C entry points of every operator with an aclnn name (generated from the declarations;
  // the registry test checks that each has its backend).
#include "aclnn_backends.inc"
}

}  // namespace mantissa::precision
