// Op-by-name execution internals: the objects behind the opaque aclTensorDesc, aclDataBuffer
// and aclopAttr handles, the call context handed to operator handlers, and the operator table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "acl/acl_base.h"
#include "core/op_desc.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"

// The C handles are plain structs in the global namespace (their tags are declared there by the
// C headers).
// dtype and format are kept as the integers the caller passed: a C caller may pass any int (an
// upstream format this library does not know, such as 29 for FRACTAL_NZ), which an enum-typed
// field could not hold without undefined behaviour in C++. They are checked when the operator
// runs.
struct aclTensorDesc {
  int32_t dtype;
  std::vector<int64_t> dims;  // any rank; empty means a scalar with one element
  int32_t format;
};

struct aclDataBuffer {
  void* data;   // not owned
  size_t size;  // bytes
};

namespace mantissa::compat::aclop {

// The attribute types of the operator descriptors (core/op_desc.h).
using AttrType = ::mantissa::detail::AttrType;

inline constexpr int kMaxListValues = 8;

struct AttrValue {
  AttrType type;
  bool b = false;
  int64_t i = 0;
  float f = 0.0f;
  // A list (aclopSetAttrListInt, aclopSetAttrListBool): the number of values given, the first
  // kMaxListValues of them in `values` (and the first in `i`); -1 for a single value, and
  // kOperatorDefault for a list attribute left unset (the operator's Params default stands).
  int64_t list_size = -1;
  // Set with aclopSetAttrString: the string is in aclopAttr::strings under the same name, and
  // resolves to an Int through the operator's table (AttrSpec::strings).
  bool is_string = false;
  std::array<int64_t, kMaxListValues> values{};
};
inline constexpr int64_t kOperatorDefault = -2;

const char* attr_type_name(AttrType type) noexcept;

}  // namespace mantissa::compat::aclop

struct aclopAttr {
  std::map<std::string, mantissa::compat::aclop::AttrValue, std::less<>> values;
  std::map<std::string, std::string, std::less<>> strings;  // aclopSetAttrString's values
};

namespace mantissa::compat::aclop {

// One attribute an operator understands. A required attribute has no default.
struct AttrSpec {
  const char* name;
  AttrType type;
  bool required;
  AttrValue default_value;
  bool int_list = false;  // set as a list of exactly one int (CANN's ListInt, one axis)
  // An Int the graph declares as a String: the strings it takes (aclopSetAttrString).
  std::span<const ::mantissa::detail::GraphString> strings = {};
};

class OpCall;
using Handler = Status (*)(const OpCall& call);

// One row of the operator table.
struct OpDef {
  std::string_view type;
  std::span<const char* const> inputs;  // names, in op-by-name order
  // Per input: whether the caller may leave it out, with an ACL_DT_UNDEFINED descriptor (and
  // a data buffer of no memory), as CANN's aclopCompileAndExecute takes an unused optional input.
  std::span<const bool> optional_inputs;
  std::span<const char* const> outputs;  // names, in op-by-name order
  std::span<const AttrSpec> attrs;
  Handler handler;
  // The input that is a dynamic list (CANN's DYNAMIC_INPUT: one descriptor per element, any
  // number, taking the place of inputs[dynamic_input]), or -1.
  int dynamic_input = -1;
  // Likewise the output that is a dynamic list (CANN's DYNAMIC_OUTPUT), or -1.
  int dynamic_output = -1;
};

// The operator table (aclop_ops.cc): one row per op type.
std::span<const OpDef> op_table() noexcept;

// What a handler sees: views of the inputs and outputs and the resolved attributes (defaults
// filled in; names and types already checked against the operator's AttrSpec list).
class OpCall {
 public:
  OpCall(const OpDef& def, std::span<const char* const> input_names,
         std::span<const bool> input_optional, std::span<aclTensorDesc* const> input_desc,
         std::span<aclDataBuffer* const> inputs, std::span<const char* const> output_names,
         std::span<aclTensorDesc* const> output_desc, std::span<aclDataBuffer* const> outputs,
         std::map<std::string_view, AttrValue> attrs);

  TensorView in(int i) const;
  TensorView out(int i) const;
  int num_inputs() const { return static_cast<int>(input_desc_.size()); }
  int num_outputs() const { return static_cast<int>(output_desc_.size()); }
  // The value of input i as a host scalar (AttrType::kScalar): one element of FLOAT, DOUBLE or
  // INT64 in a buffer that holds it (161002 otherwise; a null buffer: 161001).
  Status scalar_in(int i, double& value) const;
  // Whether input i is an optional input the caller left out.
  bool absent(int i) const;
  bool attr_bool(std::string_view name) const;
  int64_t attr_int(std::string_view name) const;
  float attr_float(std::string_view name) const;
  // A list attribute's values (bools as 0/1); false when it was left unset (the operator's
  // default stands). More than kMaxListValues values: 161002.
  Status attr_list(std::string_view name, std::vector<int64_t>& values, bool& set) const;
  // The values of input i as a list of ints (AttrType::kIntList): a rank-1 (or scalar) INT32 or
  // INT64 tensor in a buffer that holds it (161002 otherwise; a null buffer: 161001).
  Status int_list_in(int i, std::vector<int64_t>& values) const;

  // Runs the operator's own validation (its status codes win), then checks that every data
  // buffer holds what its descriptor needs, then runs the operator.
  template <class Tensors, class Params>
  Status execute(const Tensors& t, const Params& p,
                 Status (*validate)(const Tensors&, const Params&),
                 Status (*run)(const Tensors&, const Params&)) const {
    if (Status s = validate(t, p); !s.ok()) return s;
    if (Status s = check_buffer_sizes(); !s.ok()) return s;
    return run(t, p);
  }

 private:
  Status check_buffer_sizes() const;
  const AttrValue& attr(std::string_view name, AttrType type) const;

  const OpDef& def_;
  std::span<const char* const> input_names_;   // one per input descriptor (a list's repeated)
  std::span<const bool> input_optional_;       // likewise: whether each may be left out
  std::span<const char* const> output_names_;  // one per output descriptor (a list's repeated)
  std::span<aclTensorDesc*const> input_desc_, output_desc_;
  std::span<aclDataBuffer*const> inputs_, outputs_;
  std::map<std::string_view, AttrValue> attrs_;
};

}  // namespace mantissa::compat::aclop
