// aclTensorList, aclScalar, aclIntArray, aclBoolArray and aclScalarList: creation with argument
// checks, destruction through registries of live handles (a list destroys the handles it owns),
// the size accessors, and what operators read from them.
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compat/compat_internal.h"
#include "compat/handle_registry.h"
#include "compat/list_internal.h"
#include "mantissa/dtype.h"

namespace mantissa::compat {
namespace {

// Never destroyed: usable during teardown.
template <class T>
HandleRegistry<T>& registry() {
  static auto* r = new HandleRegistry<T>;
  return *r;
}

const void* address(const void* p) { return p; }

// Records "fn: message"; a failure to record it (out of memory) leaves the previous message.
template <class... Args>
void record(const char* fn, fmt::format_string<Args...> format, Args&&... args) noexcept {
  try {
    set_recent_error(fmt::format("{}: ", fn) + fmt::format(format, std::forward<Args>(args)...));
  } catch (...) {
  }
}

// Runs `body`; an exception (out of memory, a length error) becomes `on_failure` with the
// reason recorded, so none crosses the C boundary.
template <class R, class F>
R guarded(const char* fn, R on_failure, F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    record(fn, "out of memory");
  } catch (const std::exception& e) {
    record(fn, "{}", e.what());
  } catch (...) {
    record(fn, "unknown exception");
  }
  return on_failure;
}

// Creates the object `T` with `fill`, registers it, and returns it; nullptr (reason recorded) if
// `fill` rejects the arguments or memory runs out.
template <class T, class Fill>
T* create(const char* fn, Fill&& fill) noexcept {
  return guarded<T*>(fn, nullptr, [&]() -> T* {
    auto object = std::make_unique<T>();
    if (!fill(*object)) return nullptr;
    registry<T>().add(object.get());
    return object.release();
  });
}

// Destroys a live handle; 161002 (reason recorded) for any other pointer, which is never
// dereferenced. NULL is a no-op, like free(NULL).
template <class T>
aclnnStatus destroy(const char* fn, const char* kind, const T* handle) noexcept {
  if (handle == nullptr) return ACLNN_SUCCESS;
  if (!registry<T>().remove(handle)) {
    record(fn, "{} is not a live {}", address(handle), kind);
    return ACLNN_ERR_PARAM_INVALID;
  }
  delete handle;
  return ACLNN_SUCCESS;
}

// The size accessors: 161001 for null arguments (as CANN), 161002 for a handle that is not live.
template <class T, class Size>
aclnnStatus get_size(const char* fn, const char* arg, const char* kind, const T* handle,
                     uint64_t* size, Size&& size_of) noexcept {
  if (handle == nullptr || size == nullptr) {
    record(fn, "{} is null", handle == nullptr ? arg : "size");
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  if (!registry<T>().is_live(handle)) {
    record(fn, "{} ({}) is not a live {}", arg, address(handle), kind);
    return ACLNN_ERR_PARAM_INVALID;
  }
  *size = static_cast<uint64_t>(size_of(*handle));
  return ACLNN_SUCCESS;
}

// A null `value` is allowed only for an empty list or array. Sizes no allocation could hold
// (elements are at most 16 bytes) are refused before any is tried.
bool check_value(const char* fn, const void* value, uint64_t size) {
  if (value == nullptr && size != 0) {
    record(fn, "value is null but size is {}", size);
    return false;
  }
  if (size > static_cast<uint64_t>(PTRDIFF_MAX) / 16) {
    record(fn, "size {} is too large", size);
    return false;
  }
  return true;
}

// Copies the elements of `value` into `elements` with their serial numbers; false (reason
// recorded) on a null or non-live element.
template <class T>
bool fill_list(const char* fn, const char* kind, const T* const* value, uint64_t size,
               uint64_t (*serial_of)(const T*), std::vector<ListedHandle<T>>* elements) {
  if (!check_value(fn, value, size)) return false;
  elements->reserve(size);
  for (uint64_t i = 0; i < size; ++i) {
    const T* handle = value[i];
    if (handle == nullptr) {
      record(fn, "value[{}] is null", i);
      return false;
    }
    const uint64_t serial = serial_of(handle);
    if (serial == 0) {
      record(fn, "value[{}] ({}) is not a live {}", i, address(handle), kind);
      return false;
    }
    elements->push_back({handle, serial});
  }
  return true;
}

uint64_t scalar_serial(const aclScalar* scalar) { return registry<aclScalar>().serial(scalar); }

bool destroy_scalar_listed(const aclScalar* scalar, uint64_t serial) {
  if (!registry<aclScalar>().remove(scalar, serial)) return false;
  delete scalar;
  return true;
}

// Destroys the list (which must be live) and the elements it owns. An element listed twice is
// destroyed once. An element that is no longer the handle the list was made with (destroyed on
// its own, or with another list) is skipped, never dereferenced, and makes the call return
// 161002 once the list and its other elements are freed.
template <class List, class T>
aclnnStatus destroy_list(const char* fn, const char* kind, const char* element_kind,
                         const List* list, bool (*destroy_element)(const T*, uint64_t)) noexcept {
  if (list == nullptr) return ACLNN_SUCCESS;
  if (!registry<List>().remove(list)) {
    record(fn, "{} is not a live {}", address(list), kind);
    return ACLNN_ERR_PARAM_INVALID;
  }
  const auto& elements = list->elements;
  std::optional<std::size_t> dead;
  for (std::size_t i = 0; i < elements.size(); ++i) {
    if (destroy_element(elements[i].handle, elements[i].serial)) continue;
    bool listed_before = false;  // then it was destroyed just now, by this loop
    for (std::size_t j = 0; j < i && !listed_before; ++j) {
      listed_before =
          elements[j].handle == elements[i].handle && elements[j].serial == elements[i].serial;
    }
    if (!listed_before && !dead) dead = i;
  }
  if (dead) {
    record(fn, "element {} ({}) was already destroyed: the {} owns its {}s and destroys them",
           *dead, address(elements[*dead].handle), kind, element_kind);
  }
  delete list;
  return dead ? ACLNN_ERR_PARAM_INVALID : ACLNN_SUCCESS;
}

template <class T>
T load(const aclScalar& scalar) {
  T value;
  std::memcpy(&value, scalar.bytes, sizeof value);
  return value;
}

}  // namespace

bool tensor_list_is_live(const aclTensorList* list) {
  return registry<aclTensorList>().is_live(list);
}
bool scalar_is_live(const aclScalar* scalar) { return registry<aclScalar>().is_live(scalar); }
bool int_array_is_live(const aclIntArray* array) { return registry<aclIntArray>().is_live(array); }
bool bool_array_is_live(const aclBoolArray* array) {
  return registry<aclBoolArray>().is_live(array);
}
bool scalar_list_is_live(const aclScalarList* list) {
  return registry<aclScalarList>().is_live(list);
}

std::optional<std::size_t> first_dead_element(const aclTensorList& list) {
  for (std::size_t i = 0; i < list.elements.size(); ++i) {
    if (tensor_serial(list.elements[i].handle) != list.elements[i].serial) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> first_dead_element(const aclScalarList& list) {
  for (std::size_t i = 0; i < list.elements.size(); ++i) {
    if (scalar_serial(list.elements[i].handle) != list.elements[i].serial) return i;
  }
  return std::nullopt;
}

aclnnStatus check_tensor_list_arg(const char* fn, const char* name, const aclTensorList* list) {
  if (list == nullptr) {
    set_recent_error(fmt::format("{}: {} is null", fn, name));
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  if (!tensor_list_is_live(list)) {
    set_recent_error(
        fmt::format("{}: {} ({}) is not a live aclTensorList", fn, name, address(list)));
    return ACLNN_ERR_PARAM_INVALID;
  }
  if (const auto dead = first_dead_element(*list)) {
    set_recent_error(fmt::format("{}: {}[{}] ({}) is no longer a live aclTensor", fn, name, *dead,
                                 address(list->elements[*dead].handle)));
    return ACLNN_ERR_PARAM_INVALID;
  }
  for (std::size_t i = 0; i < list->elements.size(); ++i) {
    const int32_t format = list->elements[i].handle->format;
    if (format != ACL_FORMAT_ND) {
      set_recent_error(fmt::format("{}: {}[{}] format {} is not supported (expected ND, {})", fn,
                                   name, i, format, static_cast<int>(ACL_FORMAT_ND)));
      return ACLNN_ERR_PARAM_INVALID;
    }
  }
  return ACLNN_SUCCESS;
}

std::vector<TensorView> to_views(const aclTensorList& list) {
  std::vector<TensorView> views;
  views.reserve(list.elements.size());
  for (const auto& element : list.elements) views.push_back(to_view(*element.handle));
  return views;
}

double scalar_as_double(const aclScalar& scalar) {
  switch (scalar_dtype(scalar)) {
    case DType::kFloat32: return load<float>(scalar);
    case DType::kFloat16: return fp16_bits_to_float(load<uint16_t>(scalar));
    case DType::kBFloat16: return bf16_bits_to_float(load<uint16_t>(scalar));
    case DType::kFloat64: return load<double>(scalar);
    case DType::kInt8: return load<int8_t>(scalar);
    case DType::kInt16: return load<int16_t>(scalar);
    case DType::kInt32: return load<int32_t>(scalar);
    case DType::kInt64: return static_cast<double>(load<int64_t>(scalar));
    case DType::kUInt8: return load<uint8_t>(scalar);
    case DType::kUInt16: return load<uint16_t>(scalar);
    case DType::kUInt32: return load<uint32_t>(scalar);
    case DType::kUInt64: return static_cast<double>(load<uint64_t>(scalar));
    case DType::kBool: return load<uint8_t>(scalar) != 0 ? 1.0 : 0.0;
    case DType::kUndefined:
    case DType::kInt4:
    case DType::kHiFloat8:
    case DType::kFloat8E5M2:
    case DType::kFloat8E4M3FN:
    case DType::kFloat8E8M0:
    case DType::kFloat6E3M2:
    case DType::kFloat6E2M3:
    case DType::kFloat4E2M1:
    case DType::kFloat4E1M2: break;
  }
  return 0.0;  // unreachable: aclCreateScalar accepts only the dtypes above
}

}  // namespace mantissa::compat

using mantissa::compat::check_value;
using mantissa::compat::create;
using mantissa::compat::destroy;
using mantissa::compat::destroy_list;
using mantissa::compat::get_size;
using mantissa::compat::record;

extern "C" {

aclTensorList* aclCreateTensorList(const aclTensor* const* value, uint64_t size) {
  constexpr const char* fn = "aclCreateTensorList";
  return create<aclTensorList>(fn, [&](aclTensorList& list) {
    return mantissa::compat::fill_list(fn, "aclTensor", value, size,
                                       mantissa::compat::tensor_serial, &list.elements);
  });
}

aclScalar* aclCreateScalar(void* value, aclDataType dataType) {
  constexpr const char* fn = "aclCreateScalar";
  // Read the enum as an integer: a C caller may pass any int (see aclTensor).
  static_assert(sizeof(aclDataType) == sizeof(int32_t));
  int32_t dtype = 0;
  std::memcpy(&dtype, &dataType, sizeof dtype);
  return create<aclScalar>(fn, [&](aclScalar& scalar) {
    if (value == nullptr) {
      record(fn, "value is null");
      return false;
    }
    // Low-precision formats (INT4 and up: FP8, FP6, FP4, HiFloat8) are not scalar types.
    const std::size_t bytes = dtype >= static_cast<int32_t>(mantissa::DType::kInt4)
                                  ? 0
                                  : mantissa::dtype_size(static_cast<mantissa::DType>(dtype));
    if (bytes == 0 || bytes > sizeof scalar.bytes) {
      record(fn,
             "dataType {} is not supported (supported: FLOAT, FLOAT16, BF16, DOUBLE, INT8, "
             "INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64, BOOL)",
             dtype);
      return false;
    }
    scalar.dtype = dtype;
    std::memcpy(scalar.bytes, value, bytes);  // a copy: later changes to *value are not seen
    return true;
  });
}

aclIntArray* aclCreateIntArray(const int64_t* value, uint64_t size) {
  constexpr const char* fn = "aclCreateIntArray";
  return create<aclIntArray>(fn, [&](aclIntArray& array) {
    if (!check_value(fn, value, size)) return false;
    if (size != 0) array.values.assign(value, value + size);
    return true;
  });
}

aclBoolArray* aclCreateBoolArray(const bool* value, uint64_t size) {
  constexpr const char* fn = "aclCreateBoolArray";
  return create<aclBoolArray>(fn, [&](aclBoolArray& array) {
    if (!check_value(fn, value, size)) return false;
    array.values = std::make_unique_for_overwrite<bool[]>(size);
    if (size != 0) std::memcpy(array.values.get(), value, size * sizeof(bool));
    array.size = size;
    return true;
  });
}

aclScalarList* aclCreateScalarList(const aclScalar* const* value, uint64_t size) {
  constexpr const char* fn = "aclCreateScalarList";
  return create<aclScalarList>(fn, [&](aclScalarList& list) {
    return mantissa::compat::fill_list(fn, "aclScalar", value, size,
                                       mantissa::compat::scalar_serial, &list.elements);
  });
}

aclnnStatus aclDestroyTensorList(const aclTensorList* array) {
  return destroy_list("aclDestroyTensorList", "aclTensorList", "aclTensor", array,
                      mantissa::compat::destroy_tensor);
}

aclnnStatus aclDestroyScalar(const aclScalar* scalar) {
  return destroy("aclDestroyScalar", "aclScalar", scalar);
}

aclnnStatus aclDestroyIntArray(const aclIntArray* array) {
  return destroy("aclDestroyIntArray", "aclIntArray", array);
}

aclnnStatus aclDestroyBoolArray(const aclBoolArray* array) {
  return destroy("aclDestroyBoolArray", "aclBoolArray", array);
}

aclnnStatus aclDestroyScalarList(const aclScalarList* array) {
  return destroy_list("aclDestroyScalarList", "aclScalarList", "aclScalar", array,
                      mantissa::compat::destroy_scalar_listed);
}

aclnnStatus aclGetIntArraySize(const aclIntArray* array, uint64_t* size) {
  return get_size("aclGetIntArraySize", "array", "aclIntArray", array, size,
                  [](const aclIntArray& a) { return a.values.size(); });
}

aclnnStatus aclGetBoolArraySize(const aclBoolArray* array, uint64_t* size) {
  return get_size("aclGetBoolArraySize", "array", "aclBoolArray", array, size,
                  [](const aclBoolArray& a) { return a.size; });
}

aclnnStatus aclGetTensorListSize(const aclTensorList* tensorList, uint64_t* size) {
  return get_size("aclGetTensorListSize", "tensorList", "aclTensorList", tensorList, size,
                  [](const aclTensorList& l) { return l.elements.size(); });
}

aclnnStatus aclGetScalarListSize(const aclScalarList* scalarList, uint64_t* size) {
  return get_size("aclGetScalarListSize", "scalarList", "aclScalarList", scalarList, size,
                  [](const aclScalarList& l) { return l.elements.size(); });
}

}  // extern "C"
