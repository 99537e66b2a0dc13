// aclopCompileAndExecuteV2: checks the call against the operator table's row for the op type
// (counts, handles, formats, attributes), then hands views and attributes to the handler.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl_op_compiler.h"
#include "compat/aclop_internal.h"
#include "compat/compat_internal.h"

namespace mantissa::compat::aclop {
namespace {

constexpr std::string_view kApi = "aclopCompileAndExecuteV2";

template <class... Args>
Status fail(StatusCode code, std::string_view op_type, fmt::format_string<Args...> format,
            Args&&... args) {
  return Status(code, fmt::format("{}({}): {}", kApi, op_type,
                                  fmt::format(format, std::forward<Args>(args)...)));
}

std::string dims_string(const std::vector<int64_t>& dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// Every descriptor and buffer handle of one side (inputs or outputs) is present.
Status check_handles(const OpDef& def, const char* side, std::span<const char* const> names,
                     aclTensorDesc* const* desc, aclDataBuffer* const* buffers) {
  const int n = static_cast<int>(names.size());
  if (n == 0) return {};
  if (desc == nullptr) {
    return fail(StatusCode::kParamNullptr, def.type, "{}Desc array is null ({} expected)", side, n);
  }
  if (buffers == nullptr) {
    return fail(StatusCode::kParamNullptr, def.type, "{}s array is null ({} expected)", side, n);
  }
  for (int i = 0; i < n; ++i) {
    if (desc[i] == nullptr) {
      return fail(StatusCode::kParamNullptr, def.type, "{}Desc[{}] ({}) is null", side, i,
                  names[i]);
    }
    if (buffers[i] == nullptr) {
      return fail(StatusCode::kParamNullptr, def.type, "{}s[{}] ({}) is null", side, i, names[i]);
    }
  }
  return {};
}

// An optional input the caller left out: CANN's form is a descriptor of dtype ACL_DT_UNDEFINED
// (format ACL_FORMAT_UNDEFINED, no dims) with a data buffer of no memory.
bool is_absent(std::span<const bool> optional, size_t i, const aclTensorDesc* desc) {
  return i < optional.size() && optional[i] && desc->dtype == ACL_DT_UNDEFINED;
}

// Operators take row-major ND tensors only.
Status check_formats(const OpDef& def, const char* side, std::span<const char* const> names,
                     aclTensorDesc* const* desc, std::span<const bool> optional) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (is_absent(optional, i, desc[i])) continue;
    if (desc[i]->format != ACL_FORMAT_ND) {
      return fail(StatusCode::kParamInvalid, def.type,
                  "{}Desc[{}] ({}) format is {} (only ACL_FORMAT_ND = 2 is supported)", side, i,
                  names[i], static_cast<int>(desc[i]->format));
    }
  }
  return {};
}

// Resolves the attributes against the operator's list: unknown names, wrong types and missing
// required attributes are rejected; absent optional ones take their defaults.
Status resolve_attrs(const OpDef& def, const aclopAttr* attr,
                     std::map<std::string_view, AttrValue>& resolved) {
  if (attr != nullptr) {
    for (const auto& [name, value] : attr->values) {
      const AttrSpec* spec = nullptr;
      for (const AttrSpec& s : def.attrs) {
        if (name == s.name) spec = &s;
      }
      if (spec == nullptr) {
        std::string known;
        for (const AttrSpec& s : def.attrs)
          known += fmt::format("{}{}", known.empty() ? "" : ", ", s.name);
        return fail(StatusCode::kParamInvalid, def.type,
                    "unknown attribute \"{}\" (the operator's attributes are: {})", name,
                    known.empty() ? "none" : known);
      }
      if (value.is_string) {
        // A String CANN's graph declares for an Int of this library: one of the spec's strings.
        const auto text = attr->strings.find(name);
        std::string allowed;
        for (const auto& g : spec->strings) {
          allowed += fmt::format("{}\"{}\"", allowed.empty() ? "" : ", ", g.name);
        }
        if (spec->strings.empty() || text == attr->strings.end()) {
          return fail(StatusCode::kParamInvalid, def.type,
                      "attribute \"{}\" was set as a string but must be {} (aclopSetAttr{})", name,
                      attr_type_name(spec->type),
                      spec->type == AttrType::kBool  ? "Bool"
                      : spec->type == AttrType::kInt ? "Int"
                                                     : "Float");
        }
        const auto match = std::find_if(spec->strings.begin(), spec->strings.end(),
                                        [&](const auto& g) { return g.name == text->second; });
        if (match == spec->strings.end()) {
          return fail(StatusCode::kParamInvalid, def.type,
                      "attribute \"{}\" is \"{}\", not one of {}", name, text->second, allowed);
        }
        AttrValue v{AttrType::kInt};
        v.i = match->value;
        resolved.emplace(spec->name, v);
        continue;
      }
      const bool is_list = value.list_size >= 0;
      const bool want_list = spec->int_list || spec->type == AttrType::kBoolList;
      if (value.type != spec->type || is_list != want_list) {
        return fail(StatusCode::kParamInvalid, def.type,
                    "attribute \"{}\" was set as {}{} but must be {}{} (aclopSetAttr{})", name,
                    is_list ? "list of " : "", attr_type_name(value.type),
                    want_list ? "list of " : "", attr_type_name(spec->type),
                    spec->int_list                      ? "ListInt"
                    : spec->type == AttrType::kBoolList ? "ListBool"
                    : spec->type == AttrType::kBool     ? "Bool"
                    : spec->type == AttrType::kInt      ? "Int"
                                                        : "Float");
      }
      if (spec->int_list && value.list_size != 1) {
        return fail(StatusCode::kParamInvalid, def.type,
                    "attribute \"{}\" holds {} values; exactly one axis is supported", name,
                    value.list_size);
      }
      resolved.emplace(spec->name, value);
    }
  }
  for (const AttrSpec& s : def.attrs) {
    if (resolved.count(s.name)) continue;
    if (s.required) {
      return fail(StatusCode::kParamInvalid, def.type, "required {} attribute \"{}\" is not set",
                  attr_type_name(s.type), s.name);
    }
    resolved.emplace(s.name, s.default_value);
  }
  return {};
}

// Bytes a descriptor needs, or nullopt when its dtype has no size or the count overflows.
std::optional<uint64_t> needed_bytes(const aclTensorDesc& d) {
  uint64_t count = 1;
  for (int64_t dim : d.dims) {
    if (dim == 0) return 0;
  }
  for (int64_t dim : d.dims) {
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(dim), &count)) return std::nullopt;
  }
  const uint64_t bits = dtype_bits(static_cast<DType>(d.dtype));
  if (bits == 0) return std::nullopt;
  if (bits < 8) return count / 2 + count % 2;  // packed: two elements per byte
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(count, bits / 8, &bytes)) return std::nullopt;
  return bytes;
}

Status check_side_sizes(std::string_view op_type, const char* side,
                        std::span<const char* const> names, std::span<aclTensorDesc* const> desc,
                        std::span<aclDataBuffer* const> buffers, std::span<const bool> optional) {
  for (size_t i = 0; i < desc.size(); ++i) {
    if (is_absent(optional, i, desc[i])) continue;
    const auto bytes = needed_bytes(*desc[i]);
    if (!bytes) {
      return fail(StatusCode::kParamInvalid, op_type,
                  "{}Desc[{}] ({}) dtype {} dims {}: byte size is unknown or overflows", side, i,
                  names[i], static_cast<int>(desc[i]->dtype), dims_string(desc[i]->dims));
    }
    if (buffers[i]->size < *bytes) {
      return fail(StatusCode::kParamInvalid, op_type,
                  "{}s[{}] ({}) holds {} bytes but its descriptor ({} {}) needs {}", side, i,
                  names[i], buffers[i]->size, dtype_name(static_cast<DType>(desc[i]->dtype)),
                  dims_string(desc[i]->dims), *bytes);
    }
  }
  return {};
}

const OpDef* find_op(std::string_view type) {
  for (const OpDef& def : op_table()) {
    if (def.type == type) return &def;
  }
  return nullptr;
}

std::string known_op_types() {
  std::string known;
  for (const OpDef& def : op_table())
    known += fmt::format("{}{}", known.empty() ? "" : ", ", def.type);
  return known;
}

TensorView make_view(const aclTensorDesc& d, const aclDataBuffer& b) {
  return TensorView(b.data, static_cast<DType>(d.dtype), std::span<const int64_t>(d.dims));
}

Status compile_and_execute(const char* op_type, int num_inputs, aclTensorDesc* input_desc[],
                           aclDataBuffer* inputs[], int num_outputs, aclTensorDesc* output_desc[],
                           aclDataBuffer* outputs[], const aclopAttr* attr,
                           aclopEngineType engine_type, aclopCompileType compile_type) {
  if (op_type == nullptr) {
    return Status(StatusCode::kParamNullptr, fmt::format("{}: opType is null", kApi));
  }
  const OpDef* def = find_op(op_type);
  if (def == nullptr) {
    return Status(StatusCode::kFindKernel, fmt::format("{}: unknown op type \"{}\" (known: {})",
                                                       kApi, op_type, known_op_types()));
  }
  // Every engine runs on the host CPU with the same results; only the built-in operator table
  // exists, so compiling an unregistered operator from opPath is not possible.
  if (engine_type != ACL_ENGINE_SYS && engine_type != ACL_ENGINE_AICORE &&
      engine_type != ACL_ENGINE_VECTOR) {
    return fail(StatusCode::kParamInvalid, def->type, "engineType {} is not an aclopEngineType",
                static_cast<int>(engine_type));
  }
  if (compile_type != ACL_COMPILE_SYS) {
    return fail(StatusCode::kParamInvalid, def->type,
                "compileType {} is not supported (only ACL_COMPILE_SYS = 0: operators come from "
                "the built-in table, not from opPath)",
                static_cast<int>(compile_type));
  }
  const int want_in = static_cast<int>(def->inputs.size());
  const int want_out = static_cast<int>(def->outputs.size());
  // The name of each input descriptor, and whether it may be left out: a dynamic list input
  // stands for any number of descriptors.
  std::vector<const char*> input_names;
  if (def->dynamic_input < 0) {
    if (num_inputs != want_in) {
      return fail(StatusCode::kParamInvalid, def->type, "numInputs is {} but the operator takes {}",
                  num_inputs, want_in);
    }
    input_names.assign(def->inputs.begin(), def->inputs.end());
  } else {
    const int fixed = want_in - 1;
    if (num_inputs < fixed) {
      return fail(StatusCode::kParamInvalid, def->type,
                  "numInputs is {} but the operator takes at least {} ({} then the other "
                  "inputs)",
                  num_inputs, fixed, def->inputs[static_cast<size_t>(def->dynamic_input)]);
    }
    const int listed = num_inputs - fixed;
    for (int i = 0; i < want_in; ++i) {
      const int copies = i == def->dynamic_input ? listed : 1;
      for (int c = 0; c < copies; ++c) input_names.push_back(def->inputs[static_cast<size_t>(i)]);
    }
  }
  const std::unique_ptr<bool[]> optional_storage(new bool[input_names.size() + 1]());
  const std::span<const bool> input_optional(optional_storage.get(), input_names.size());
  for (size_t i = 0, j = 0; i < def->inputs.size() && i < def->optional_inputs.size(); ++i) {
    const size_t copies =
        static_cast<int>(i) == def->dynamic_input ? input_names.size() - def->inputs.size() + 1 : 1;
    for (size_t c = 0; c < copies; ++c, ++j) optional_storage[j] = def->optional_inputs[i];
  }
  // Likewise the output names: a dynamic list output stands for any number of descriptors.
  std::vector<const char*> output_names;
  if (def->dynamic_output < 0) {
    if (num_outputs != want_out) {
      return fail(StatusCode::kParamInvalid, def->type, "numOutputs is {} but the operator has {}",
                  num_outputs, want_out);
    }
    output_names.assign(def->outputs.begin(), def->outputs.end());
  } else {
    if (num_outputs < want_out - 1) {
      return fail(StatusCode::kParamInvalid, def->type,
                  "numOutputs is {} but the operator has at least {} ({} then the other "
                  "outputs)",
                  num_outputs, want_out - 1,
                  def->outputs[static_cast<size_t>(def->dynamic_output)]);
    }
    for (int i = 0; i < want_out; ++i) {
      const int copies = i == def->dynamic_output ? num_outputs - (want_out - 1) : 1;
      for (int c = 0; c < copies; ++c) output_names.push_back(def->outputs[static_cast<size_t>(i)]);
    }
  }
  if (Status s = check_handles(*def, "input", input_names, input_desc, inputs); !s.ok()) return s;
  if (Status s = check_handles(*def, "output", output_names, output_desc, outputs); !s.ok()) {
    return s;
  }
  if (Status s = check_formats(*def, "input", input_names, input_desc, input_optional); !s.ok()) {
    return s;
  }
  if (Status s = check_formats(*def, "output", output_names, output_desc, {}); !s.ok()) return s;
  std::map<std::string_view, AttrValue> resolved;
  if (Status s = resolve_attrs(*def, attr, resolved); !s.ok()) return s;

  const OpCall call(*def, input_names, input_optional, {input_desc, input_names.size()},
                    {inputs, input_names.size()}, output_names, {output_desc, output_names.size()},
                    {outputs, output_names.size()}, std::move(resolved));
  return def->handler(call);
}

}  // namespace

OpCall::OpCall(const OpDef& def, std::span<const char* const> input_names,
               std::span<const bool> input_optional, std::span<aclTensorDesc* const> input_desc,
               std::span<aclDataBuffer* const> inputs, std::span<const char* const> output_names,
               std::span<aclTensorDesc* const> output_desc, std::span<aclDataBuffer* const> outputs,
               std::map<std::string_view, AttrValue> attrs)
    : def_(def),
      input_names_(input_names),
      input_optional_(input_optional),
      output_names_(output_names),
      input_desc_(input_desc),
      output_desc_(output_desc),
      inputs_(inputs),
      outputs_(outputs),
      attrs_(std::move(attrs)) {}

TensorView OpCall::in(int i) const { return make_view(*input_desc_[i], *inputs_[i]); }
TensorView OpCall::out(int i) const { return make_view(*output_desc_[i], *outputs_[i]); }
bool OpCall::absent(int i) const {
  return is_absent(input_optional_, static_cast<size_t>(i), input_desc_[i]);
}

const AttrValue& OpCall::attr(std::string_view name, AttrType type) const {
  static const AttrValue kNone{AttrType::kBool};
  const auto it = attrs_.find(name);
  // Names and types were resolved against the operator's list before the handler ran.
  return it != attrs_.end() && it->second.type == type ? it->second : kNone;
}

bool OpCall::attr_bool(std::string_view name) const { return attr(name, AttrType::kBool).b; }
int64_t OpCall::attr_int(std::string_view name) const { return attr(name, AttrType::kInt).i; }
float OpCall::attr_float(std::string_view name) const { return attr(name, AttrType::kFloat).f; }

Status OpCall::attr_list(std::string_view name, std::vector<int64_t>& values, bool& set) const {
  values.clear();
  const auto it = attrs_.find(name);
  set = it != attrs_.end() && it->second.list_size >= 0;
  if (!set) return {};
  const AttrValue& v = it->second;
  if (v.list_size > kMaxListValues) {
    return fail(StatusCode::kParamInvalid, def_.type,
                "attribute \"{}\" holds {} values; at most {} are supported", name, v.list_size,
                kMaxListValues);
  }
  values.assign(v.values.begin(), v.values.begin() + v.list_size);
  return {};
}

Status OpCall::int_list_in(int i, std::vector<int64_t>& values) const {
  values.clear();
  const aclTensorDesc& d = *input_desc_[i];
  const auto dtype = static_cast<DType>(d.dtype);
  if (dtype != DType::kInt32 && dtype != DType::kInt64) {
    return fail(StatusCode::kParamInvalid, def_.type,
                "inputDesc[{}] ({}) dtype {} is not supported (INT32 or INT64)", i, input_names_[i],
                dtype_name(dtype));
  }
  if (d.dims.size() > 1 || (d.dims.size() == 1 && d.dims[0] < 0)) {
    return fail(StatusCode::kParamInvalid, def_.type,
                "inputDesc[{}] ({}) dims {} are not a list (rank 1)", i, input_names_[i],
                dims_string(d.dims));
  }
  const int64_t count = d.dims.empty() ? 1 : d.dims[0];
  if (count > kMaxRank) {
    return fail(StatusCode::kParamInvalid, def_.type,
                "inputDesc[{}] ({}) holds {} values; at most {} dims can be named", i,
                input_names_[i], count, kMaxRank);
  }
  const aclDataBuffer& b = *inputs_[i];
  if (b.data == nullptr && count > 0) {
    return fail(StatusCode::kParamNullptr, def_.type, "inputs[{}] ({}) data is null", i,
                input_names_[i]);
  }
  const std::size_t size = dtype_size(dtype);
  if (b.size < static_cast<std::size_t>(count) * size) {
    return fail(StatusCode::kParamInvalid, def_.type,
                "inputs[{}] ({}) holds {} bytes but its descriptor ({} {}) needs {}", i,
                input_names_[i], b.size, dtype_name(dtype), dims_string(d.dims),
                static_cast<std::size_t>(count) * size);
  }
  for (int64_t j = 0; j < count; ++j) {
    const auto* p = static_cast<const std::byte*>(b.data) + static_cast<std::size_t>(j) * size;
    if (dtype == DType::kInt32) {
      int32_t v;
      std::memcpy(&v, p, sizeof(v));
      values.push_back(v);
    } else {
      int64_t v;
      std::memcpy(&v, p, sizeof(v));
      values.push_back(v);
    }
  }
  return {};
}

Status OpCall::check_buffer_sizes() const {
  if (Status s =
          check_side_sizes(def_.type, "input", input_names_, input_desc_, inputs_, input_optional_);
      !s.ok()) {
    return s;
  }
  return check_side_sizes(def_.type, "output", output_names_, output_desc_, outputs_, {});
}

Status OpCall::scalar_in(int i, double& value) const {
  const aclTensorDesc& d = *input_desc_[i];
  const auto dtype = static_cast<DType>(d.dtype);
  if (dtype != DType::kFloat32 && dtype != DType::kFloat64 && dtype != DType::kInt64) {
    return fail(StatusCode::kParamInvalid, def_.type,
                "inputDesc[{}] ({}) dtype {} is not supported (FLOAT, DOUBLE or INT64)", i,
                input_names_[i], dtype_name(dtype));
  }
  bool one = true;  // every dim 1 (or none: a scalar)
  for (int64_t dim : d.dims) one = one && dim == 1;
  if (!one) {
    return fail(StatusCode::kParamInvalid, def_.type,
                "inputDesc[{}] ({}) dims {} do not hold exactly one element", i, input_names_[i],
                dims_string(d.dims));
  }
  const aclDataBuffer& b = *inputs_[i];
  if (b.data == nullptr) {
    return fail(StatusCode::kParamNullptr, def_.type, "inputs[{}] ({}) data is null", i,
                input_names_[i]);
  }
  if (b.size < dtype_size(dtype)) {
    return fail(StatusCode::kParamInvalid, def_.type,
                "inputs[{}] ({}) holds {} bytes but its descriptor ({} {}) needs {}", i,
                input_names_[i], b.size, dtype_name(dtype), dims_string(d.dims), dtype_size(dtype));
  }
  if (dtype == DType::kFloat32) {
    float f;
    std::memcpy(&f, b.data, sizeof(f));
    value = f;
  } else if (dtype == DType::kFloat64) {
    std::memcpy(&value, b.data, sizeof(value));
  } else {
    int64_t v;
    std::memcpy(&v, b.data, sizeof(v));
    value = static_cast<double>(v);
  }
  return {};
}

}  // namespace mantissa::compat::aclop

extern "C" aclError aclopCompileAndExecuteV2(const char* opType, int numInputs,
                                             aclTensorDesc* inputDesc[], aclDataBuffer* inputs[],
                                             int numOutputs, aclTensorDesc* outputDesc[],
                                             aclDataBuffer* outputs[], aclopAttr* attr,
                                             aclopEngineType engineType,
                                             aclopCompileType compileType, const char* /*opPath*/,
                                             aclrtStream /*stream*/) {
  using mantissa::Status;
  using mantissa::StatusCode;
  // The C API never throws: an allocation failure becomes an inner error.
  try {
    return mantissa::compat::report(mantissa::compat::aclop::compile_and_execute(
        opType, numInputs, inputDesc, inputs, numOutputs, outputDesc, outputs, attr, engineType,
        compileType));
  } catch (const std::exception& e) {
    return mantissa::compat::report(
        Status(StatusCode::kInner, fmt::format("aclopCompileAndExecuteV2: {}", e.what())));
  }
}
