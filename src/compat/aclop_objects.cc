// Op-by-name handles: tensor descriptors, data buffers and named operator attributes.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

#include "compat/aclop_internal.h"
#include "compat/compat_internal.h"

namespace mantissa::compat::aclop {

const char* attr_type_name(AttrType type) noexcept {
  switch (type) {
    case AttrType::kBool: return "bool";
    case AttrType::kInt: return "int";
    case AttrType::kFloat: return "float";
    case AttrType::kScalar: return "scalar input";
    case AttrType::kIntList: return "int list input";
    case AttrType::kBoolList: return "bool";
  }
  return "unknown";
}

namespace {

// Stores `value` under `name`, replacing any earlier value of any type.
aclError set_attr(const char* function, aclopAttr* attr, const char* name, AttrValue value) {
  if (attr == nullptr || name == nullptr) {
    set_recent_error(
        fmt::format("{}: {} is null", function, attr == nullptr ? "attr" : "attrName"));
    return ACL_ERROR_INVALID_PARAM;
  }
  try {
    attr->values.insert_or_assign(std::string(name), value);
  } catch (const std::bad_alloc&) {
    set_recent_error(fmt::format("{}: out of memory storing attribute \"{}\"", function, name));
    return ACL_ERROR_BAD_ALLOC;
  }
  return ACL_SUCCESS;
}

}  // namespace
}  // namespace mantissa::compat::aclop

using mantissa::compat::set_recent_error;
using mantissa::compat::aclop::AttrType;
using mantissa::compat::aclop::AttrValue;

extern "C" {

aclTensorDesc* aclCreateTensorDesc(aclDataType dataType, int numDims, const int64_t* dims,
                                   aclFormat format) {
  // Read the enums as integers: a C caller may pass any int (see aclTensorDesc).
  static_assert(sizeof(aclDataType) == sizeof(int32_t) && sizeof(aclFormat) == sizeof(int32_t));
  int32_t dtype = 0, layout = 0;
  std::memcpy(&dtype, &dataType, sizeof dtype);
  std::memcpy(&layout, &format, sizeof layout);
  if (numDims < 0) {
    set_recent_error(fmt::format("aclCreateTensorDesc: numDims {} is negative", numDims));
    return nullptr;
  }
  if (numDims > 0 && dims == nullptr) {
    set_recent_error(fmt::format("aclCreateTensorDesc: dims is null with numDims {}", numDims));
    return nullptr;
  }
  for (int i = 0; i < numDims; ++i) {
    if (dims[i] < 0) {
      set_recent_error(
          fmt::format("aclCreateTensorDesc: dims[{}] is {} (dimensions must be >= 0)", i, dims[i]));
      return nullptr;
    }
  }
  try {
    return new aclTensorDesc{dtype, std::vector<int64_t>(dims, dims + numDims), layout};
  } catch (const std::bad_alloc&) {
    set_recent_error(fmt::format("aclCreateTensorDesc: out of memory ({} dims)", numDims));
    return nullptr;
  }
}

void aclDestroyTensorDesc(const aclTensorDesc* desc) { delete desc; }

aclDataBuffer* aclCreateDataBuffer(void* data, size_t size) {
  try {
    return new aclDataBuffer{data, size};
  } catch (const std::bad_alloc&) {
    set_recent_error("aclCreateDataBuffer: out of memory");
    return nullptr;
  }
}

aclError aclDestroyDataBuffer(const aclDataBuffer* dataBuffer) {
  if (dataBuffer == nullptr) {
    set_recent_error("aclDestroyDataBuffer: dataBuffer is null");
    return ACL_ERROR_INVALID_PARAM;
  }
  delete dataBuffer;
  return ACL_SUCCESS;
}

void* aclGetDataBufferAddr(const aclDataBuffer* dataBuffer) {
  return dataBuffer == nullptr ? nullptr : dataBuffer->data;
}

size_t aclGetDataBufferSizeV2(const aclDataBuffer* dataBuffer) {
  return dataBuffer == nullptr ? 0 : dataBuffer->size;
}

aclopAttr* aclopCreateAttr(void) {
  try {
    return new aclopAttr{};
  } catch (const std::bad_alloc&) {
    set_recent_error("aclopCreateAttr: out of memory");
    return nullptr;
  }
}

void aclopDestroyAttr(const aclopAttr* attr) { delete attr; }

aclError aclopSetAttrBool(aclopAttr* attr, const char* attrName, uint8_t attrValue) {
  AttrValue v{AttrType::kBool};
  v.b = attrValue != 0;
  return mantissa::compat::aclop::set_attr("aclopSetAttrBool", attr, attrName, v);
}

aclError aclopSetAttrInt(aclopAttr* attr, const char* attrName, int64_t attrValue) {
  AttrValue v{AttrType::kInt};
  v.i = attrValue;
  return mantissa::compat::aclop::set_attr("aclopSetAttrInt", attr, attrName, v);
}

aclError aclopSetAttrString(aclopAttr* attr, const char* attrName, const char* attrValue) {
  if (attrValue == nullptr) {
    set_recent_error(fmt::format("aclopSetAttrString: attribute \"{}\": attrValue is null",
                                 attrName == nullptr ? "(null)" : attrName));
    return ACL_ERROR_INVALID_PARAM;
  }
  AttrValue v{AttrType::kInt};
  v.is_string = true;
  const aclError e = mantissa::compat::aclop::set_attr("aclopSetAttrString", attr, attrName, v);
  if (e != ACL_SUCCESS) return e;
  try {
    attr->strings.insert_or_assign(std::string(attrName), std::string(attrValue));
  } catch (const std::bad_alloc&) {
    attr->values.erase(std::string(attrName));
    set_recent_error(fmt::format("aclopSetAttrString: out of memory storing \"{}\"", attrName));
    return ACL_ERROR_BAD_ALLOC;
  }
  return ACL_SUCCESS;
}

aclError aclopSetAttrFloat(aclopAttr* attr, const char* attrName, float attrValue) {
  AttrValue v{AttrType::kFloat};
  v.f = attrValue;
  return mantissa::compat::aclop::set_attr("aclopSetAttrFloat", attr, attrName, v);
}

aclError aclopSetAttrListInt(aclopAttr* attr, const char* attrName, int numValues,
                             const int64_t* values) {
  if (numValues < 0 || (numValues > 0 && values == nullptr)) {
    set_recent_error(fmt::format(
        "aclopSetAttrListInt: attribute \"{}\": numValues is {} and values is {}",
        attrName == nullptr ? "(null)" : attrName, numValues, values == nullptr ? "null" : "set"));
    return ACL_ERROR_INVALID_PARAM;
  }
  // The operators take one value from a list (a single axis); the count is kept so that a list
  // of another length is rejected by name when the operator runs.
  AttrValue v{AttrType::kInt};
  v.list_size = numValues;
  v.i = numValues > 0 ? values[0] : 0;
  for (int j = 0; j < std::min(numValues, mantissa::compat::aclop::kMaxListValues); ++j) {
    v.values[static_cast<std::size_t>(j)] = values[j];
  }
  return mantissa::compat::aclop::set_attr("aclopSetAttrListInt", attr, attrName, v);
}

aclError aclopSetAttrListBool(aclopAttr* attr, const char* attrName, int numValues,
                              const uint8_t* values) {
  if (numValues < 0 || (numValues > 0 && values == nullptr)) {
    set_recent_error(fmt::format(
        "aclopSetAttrListBool: attribute \"{}\": numValues is {} and values is {}",
        attrName == nullptr ? "(null)" : attrName, numValues, values == nullptr ? "null" : "set"));
    return ACL_ERROR_INVALID_PARAM;
  }
  AttrValue v{AttrType::kBoolList};
  v.list_size = numValues;
  for (int j = 0; j < std::min(numValues, mantissa::compat::aclop::kMaxListValues); ++j) {
    v.values[static_cast<std::size_t>(j)] = values[j] != 0 ? 1 : 0;
  }
  return mantissa::compat::aclop::set_attr("aclopSetAttrListBool", attr, attrName, v);
}

}  // extern "C"
