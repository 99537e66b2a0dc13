// aclTensor: creation with argument checks, destruction through a registry of live tensors, and
// the conversion to the C++ API's TensorView.
#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <new>
#include <span>
#include <string>

#include "compat/compat_internal.h"
#include "compat/handle_registry.h"
#include "compat/tensor_internal.h"
#include "mantissa/dtype.h"

namespace mantissa::compat {
namespace {

HandleRegistry<aclTensor>& registry() {
  // Never destroyed: usable during teardown.
  static auto* r = new HandleRegistry<aclTensor>;
  return *r;
}

aclTensor* reject(std::string reason) {
  set_recent_error("aclCreateTensor: " + std::move(reason));
  return nullptr;
}

// Product of `dims`, or false when a dim is negative or the product overflows int64.
bool element_count(std::span<const int64_t> dims, const char* what, int64_t* count,
                   std::string* reason) {
  int64_t n = 1;
  bool empty = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      *reason = fmt::format("{}[{}] is {} (dims must not be negative)", what, i, dims[i]);
      return false;
    }
    if (dims[i] == 0) empty = true;
  }
  if (empty) {
    *count = 0;
    return true;
  }
  for (const int64_t d : dims) {
    if (__builtin_mul_overflow(n, d, &n)) {
      *reason = fmt::format("the element count of {} overflows int64", what);
      return false;
    }
  }
  *count = n;
  return true;
}

}  // namespace

bool tensor_is_live(const aclTensor* tensor) { return registry().is_live(tensor); }

uint64_t tensor_serial(const aclTensor* tensor) { return registry().serial(tensor); }

bool destroy_tensor(const aclTensor* tensor, uint64_t serial) {
  if (!registry().remove(tensor, serial)) return false;
  delete tensor;
  return true;
}

TensorView to_view(const aclTensor& tensor) {
  const auto dtype = static_cast<DType>(tensor.dtype);
  void* data = tensor.data;
  if (data != nullptr) {
    // aclCreateTensor checked that offset * element size fits the storage's byte size (a packed
    // sub-byte dtype has an even offset: two elements per byte).
    data = static_cast<char*>(data) + tensor.offset * static_cast<int64_t>(dtype_bits(dtype)) / 8;
  }
  TensorView view(data, dtype, std::span<const int64_t>(tensor.view_dims),
                  std::span<const int64_t>(tensor.strides));
  return view;
}

}  // namespace mantissa::compat

using mantissa::compat::element_count;
using mantissa::compat::reject;

extern "C" {

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t* stride, int64_t offset, aclFormat format,
                           const int64_t* storageDims, uint64_t storageDimsNum, void* tensorData) {
  // Read the enums as integers: a C caller may pass any int (see aclTensor).
  static_assert(sizeof(aclDataType) == sizeof(int32_t) && sizeof(aclFormat) == sizeof(int32_t));
  int32_t dtype = 0, layout = 0;
  std::memcpy(&dtype, &dataType, sizeof dtype);
  std::memcpy(&layout, &format, sizeof layout);
  if (viewDims == nullptr && viewDimsNum != 0) {
    return reject(fmt::format("viewDims is null but viewDimsNum is {}", viewDimsNum));
  }
  if (storageDims == nullptr && storageDimsNum != 0) {
    return reject(fmt::format("storageDims is null but storageDimsNum is {}", storageDimsNum));
  }
  if (viewDimsNum > INT_MAX || storageDimsNum > INT_MAX) {
    return reject(fmt::format("viewDimsNum {} or storageDimsNum {} is too large", viewDimsNum,
                              storageDimsNum));
  }
  if (offset < 0) return reject(fmt::format("offset {} is negative", offset));
  if (mantissa::dtype_bits(static_cast<mantissa::DType>(dtype)) == 4 && offset % 2 != 0) {
    return reject(fmt::format("offset {} is odd for a packed (two per byte) dtype", offset));
  }

  const std::span<const int64_t> view(viewDims, viewDims ? viewDimsNum : 0);
  const std::span<const int64_t> storage(storageDims, storageDims ? storageDimsNum : 0);
  std::string reason;
  int64_t view_count = 0, storage_count = 0;
  if (!element_count(view, "viewDims", &view_count, &reason)) return reject(reason);
  if (!element_count(storage, "storageDims", &storage_count, &reason)) return reject(reason);

  // A null stride pointer means row-major strides.
  std::vector<int64_t> strides;
  try {
    strides.assign(view.size(), 1);
  } catch (const std::bad_alloc&) {
    return reject("out of memory");
  }
  if (stride != nullptr) {
    std::copy(stride, stride + view.size(), strides.begin());
  } else {
    for (size_t i = view.size(); i-- > 1;) {
      // Saturating: only an empty view can have a stride product that overflows.
      if (view[i] == 0 || __builtin_mul_overflow(strides[i], view[i], &strides[i - 1])) {
        strides[i - 1] = view[i] == 0 ? strides[i] : INT64_MAX;
      }
    }
  }

  // A packed type (two elements per byte) has no byte address per element: its views are
  // row-major (strides over dims of size 1 do not matter), so no copy ever splits a byte.
  if (mantissa::dtype_bits(static_cast<mantissa::DType>(dtype)) == 4 && stride != nullptr) {
    int64_t expected = 1;
    for (size_t i = view.size(); i-- > 0;) {
      if (view[i] != 1 && strides[i] != expected) {
        return reject(
            fmt::format("a packed (two per byte) dtype takes row-major strides; dim {} "
                        "has stride {}, expected {}",
                        i, strides[i], expected));
      }
      expected *= view[i];
    }
  }

  // The view must lie inside the storage: every element index offset + sum(i_k * stride_k)
  // within [0, storage element count). 128-bit sums cannot overflow for ranks up to 2^31.
  if (view_count > 0) {
    __int128 lowest = offset, highest = offset;
    for (size_t i = 0; i < view.size(); ++i) {
      const __int128 reach = static_cast<__int128>(view[i] - 1) * strides[i];
      (reach < 0 ? lowest : highest) += reach;
    }
    if (lowest < 0 || highest >= storage_count) {
      return reject(fmt::format(
          "the view (offset {}, elements {} to {}) does not fit in the storage of {} elements",
          offset, static_cast<long long>(lowest), static_cast<long long>(highest), storage_count));
    }
  }
  // Byte offsets computed later (offset * element size, spans) must fit int64.
  const auto elem = static_cast<int64_t>(
      std::max<size_t>(1, mantissa::dtype_size(static_cast<mantissa::DType>(dtype))));
  int64_t storage_bytes = 0;
  if (__builtin_mul_overflow(std::max(storage_count, offset), elem, &storage_bytes)) {
    return reject(
        fmt::format("the storage's byte size ({} elements) overflows int64", storage_count));
  }

  auto* tensor = new (std::nothrow) aclTensor;
  if (tensor == nullptr) return reject("out of memory");
  try {
    tensor->view_dims.assign(view.begin(), view.end());
    tensor->strides = std::move(strides);
    tensor->storage_dims.assign(storage.begin(), storage.end());
    tensor->offset = offset;
    tensor->dtype = dtype;
    tensor->format = layout;
    tensor->data = tensorData;
    mantissa::compat::registry().add(tensor);
  } catch (const std::bad_alloc&) {
    delete tensor;
    return reject("out of memory");
  }
  return tensor;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  if (tensor == nullptr) return ACLNN_SUCCESS;  // like free(NULL)
  if (!mantissa::compat::destroy_tensor(tensor, 0)) {
    mantissa::compat::set_recent_error(fmt::format("aclDestroyTensor: {} is not a live aclTensor",
                                                   static_cast<const void*>(tensor)));
    return ACLNN_ERR_PARAM_INVALID;
  }
  return ACLNN_SUCCESS;
}

}  // extern "C"
