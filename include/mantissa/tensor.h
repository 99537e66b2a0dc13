// Non-owning tensor views: dtype, shape (rank 0..8), strides in elements, data pointer.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>

#include "mantissa/dtype.h"
#include "mantissa/export.h"

namespace mantissa {

inline constexpr int kMaxRank = 8;

// A short list of dimension sizes held by value, as an operator's attribute (LayerNorm's
// normalized_shape). Like a view's rank, `size` may record more than kMaxRank values (only the
// first kMaxRank are kept) so that the operator can reject it with a proper status.
struct MANTISSA_API Dims {
  std::array<int64_t, kMaxRank> values{};
  int size = 0;

  Dims() = default;
  Dims(std::span<const int64_t> dims) noexcept;  // NOLINT: implicit, as from a braced list
  Dims(std::initializer_list<int64_t> dims) noexcept
      : Dims(std::span<const int64_t>(dims.begin(), dims.size())) {}
  // The values kept (at most kMaxRank).
  std::span<const int64_t> span() const noexcept {
    return {values.data(), static_cast<std::size_t>(size < 0 ? 0 : std::min(size, kMaxRank))};
  }
  // "[4, 16]"
  std::string to_string() const;
};

// A view of memory owned elsewhere. A view may record a rank above kMaxRank (only the first
// kMaxRank dims are kept) so that it can be rejected by operators with a proper status.
struct MANTISSA_API TensorView {
  void* data = nullptr;
  DType dtype = DType::kFloat32;
  int rank = 0;
  std::array<int64_t, kMaxRank> shape{};
  std::array<int64_t, kMaxRank> strides{};  // in elements

  TensorView() = default;
  // A contiguous (row-major) view.
  TensorView(void* data_ptr, DType type, std::span<const int64_t> dims);
  TensorView(void* data_ptr, DType type, std::initializer_list<int64_t> dims)
      : TensorView(data_ptr, type, std::span<const int64_t>(dims.begin(), dims.size())) {}
  // A strided view.
  TensorView(void* data_ptr, DType type, std::span<const int64_t> dims,
             std::span<const int64_t> element_strides);

  // Element count, or nullopt when a dim is negative, the rank is out of range, or the count
  // overflows int64.
  std::optional<int64_t> numel() const noexcept {  // inline: validation asks for it often
    if (rank < 0 || rank > kMaxRank) return std::nullopt;
    int64_t count = 1;
    for (int i = 0; i < rank; ++i) {
      if (shape[i] < 0) return std::nullopt;
      if (shape[i] == 0) count = 0;
    }
    if (count == 0) return 0;
    for (int i = 0; i < rank; ++i) {
      if (__builtin_mul_overflow(count, shape[i], &count)) return std::nullopt;
    }
    return count;
  }
  // Byte size of the elements (numel * dtype size), nullopt on overflow or a bad view.
  std::optional<int64_t> nbytes() const noexcept;
  // True when the strides are the row-major strides of the shape (dims of size 1 ignored).
  bool is_contiguous() const noexcept;
  // "[4, 16]"
  std::string shape_string() const;
};

// A list of tensors, e.g. the parameters of a multi-tensor optimizer step: one view per tensor,
// each with its own shape and strides (and dtype, where the operator allows mixed dtypes). The
// views, and the memory they describe, are owned elsewhere.
using TensorList = std::span<const TensorView>;

MANTISSA_API bool same_shape(const TensorView& a, const TensorView& b) noexcept;
// The same memory, dtype, shape and strides.
MANTISSA_API bool same_view(const TensorView& a, const TensorView& b) noexcept;
// Whether the byte ranges spanned by two contiguous views intersect.
MANTISSA_API bool memory_overlaps(const TensorView& a, const TensorView& b) noexcept;

}  // namespace mantissa
