// The objects behind the opaque aclTensorList, aclScalar, aclIntArray, aclBoolArray and
// aclScalarList handles, their registries of live handles, and what operators read from them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "aclnn/acl_meta.h"
#include "compat/tensor_internal.h"
#include "mantissa/dtype.h"
#include "mantissa/tensor.h"

namespace mantissa::compat {

// A handle held by a list, with the serial number its registry gave it when the list was made:
// a handle destroyed on its own and a new one at the same address are told apart.
template <class T>
struct ListedHandle {
  const T* handle = nullptr;
  uint64_t serial = 0;
};

}  // namespace mantissa::compat

// The C handles are plain structs in the global namespace (their tags are declared there by the
// C header). Each is made by its aclCreate* function and freed by its aclDestroy* function.

// Owns its tensors: aclDestroyTensorList destroys them.
struct aclTensorList {
  std::vector<mantissa::compat::ListedHandle<aclTensor>> elements;
};

// A copy of the caller's host value, as its bytes (dtype_size(dtype) of them, the rest zero).
struct aclScalar {
  int32_t dtype = ACL_DT_UNDEFINED;  // a DType with a non-zero size
  alignas(8) std::byte bytes[8] = {};
};

struct aclIntArray {
  std::vector<int64_t> values;
};

struct aclBoolArray {
  std::unique_ptr<bool[]> values;  // not std::vector<bool>, which cannot give a span
  std::size_t size = 0;
};

// Owns its scalars: aclDestroyScalarList destroys them.
struct aclScalarList {
  std::vector<mantissa::compat::ListedHandle<aclScalar>> elements;
};

namespace mantissa::compat {

// Whether a handle came from its aclCreate* function and was not destroyed. Looked up, not
// dereferenced, so any pointer may be passed.
bool tensor_list_is_live(const aclTensorList* list);
bool scalar_is_live(const aclScalar* scalar);
bool int_array_is_live(const aclIntArray* array);
bool bool_array_is_live(const aclBoolArray* array);
bool scalar_list_is_live(const aclScalarList* list);

// The index of the first element that is no longer the live handle the list was made with (the
// caller destroyed it on its own, or it was destroyed with another list); nullopt when all are.
// A list whose elements are not all live must not be read further.
std::optional<std::size_t> first_dead_element(const aclTensorList& list);
std::optional<std::size_t> first_dead_element(const aclScalarList& list);

// Checks a tensor-list argument of an aclnn function, named as in the C signature: null (161001),
// not a live list (161002), an element no longer live (161002), an element whose format is not
// ND (161002). Returns ACLNN_SUCCESS or the failing code, with the reason recorded.
aclnnStatus check_tensor_list_arg(const char* fn, const char* name, const aclTensorList* list);

// One view per element, in order, each through to_view. The elements must be live (see
// first_dead_element). Throws std::bad_alloc.
std::vector<TensorView> to_views(const aclTensorList& list);

// The scalar's dtype and its value's bytes (dtype_size(dtype) of them, in host byte order).
inline DType scalar_dtype(const aclScalar& scalar) { return static_cast<DType>(scalar.dtype); }
inline std::span<const std::byte> scalar_bytes(const aclScalar& scalar) {
  return {scalar.bytes, dtype_size(scalar_dtype(scalar))};
}
// The scalar's value as a double: exact for every dtype except INT64 and UINT64 magnitudes above
// 2^53, which round to nearest even. fp16 and bf16 are widened exactly; BOOL is 0 or 1 (any
// non-zero byte is true).
double scalar_as_double(const aclScalar& scalar);

inline std::span<const int64_t> int_array_values(const aclIntArray& array) { return array.values; }
inline std::span<const bool> bool_array_values(const aclBoolArray& array) {
  return {array.values.get(), array.size};
}

}  // namespace mantissa::compat
