// Tensor views: element counts without overflow, contiguity, overlap.
#include "mantissa/tensor.h"

#include <algorithm>
#include <cstdint>

namespace mantissa {

TensorView::TensorView(void* data_ptr, DType type, std::span<const int64_t> dims)
    : data(data_ptr), dtype(type), rank(static_cast<int>(dims.size())) {
  const int kept = std::min(rank, kMaxRank);
  std::copy_n(dims.begin(), kept, shape.begin());
  int64_t stride = 1;
  for (int i = kept - 1; i >= 0; --i) {
    strides[i] = stride;
    // Saturate instead of overflowing; such a view is rejected by numel() anyway.
    if (shape[i] > 0 && stride > INT64_MAX / shape[i])
      stride = INT64_MAX;
    else if (shape[i] > 0)
      stride *= shape[i];
  }
}

TensorView::TensorView(void* data_ptr, DType type, std::span<const int64_t> dims,
                       std::span<const int64_t> element_strides)
    : TensorView(data_ptr, type, dims) {
  const int kept = std::min({rank, kMaxRank, static_cast<int>(element_strides.size())});
  std::copy_n(element_strides.begin(), kept, strides.begin());
}

std::optional<int64_t> TensorView::nbytes() const noexcept {
  const auto count = numel();
  const auto bits = static_cast<int64_t>(dtype_bits(dtype));
  if (!count || bits == 0) return std::nullopt;
  if (bits < 8) return *count / 2 + *count % 2;  // packed: two elements per byte
  int64_t bytes = 0;
  if (__builtin_mul_overflow(*count, bits / 8, &bytes)) return std::nullopt;
  return bytes;
}

bool TensorView::is_contiguous() const noexcept {
  if (rank < 0 || rank > kMaxRank) return false;
  int64_t expected = 1;
  for (int i = rank - 1; i >= 0; --i) {
    if (shape[i] == 0) return true;  // an empty view has no elements to misplace
    if (shape[i] != 1 && strides[i] != expected) return false;
    if (__builtin_mul_overflow(expected, shape[i], &expected)) return false;
  }
  return true;
}

std::string TensorView::shape_string() const {
  std::string s = "[";
  for (int i = 0; i < std::min(rank, kMaxRank); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (rank > kMaxRank) s += ", ...";
  return s + "]";
}

Dims::Dims(std::span<const int64_t> dims) noexcept {
  // More values than a shape can have are counted, not kept: the operator rejects them.
  size =
      dims.size() > static_cast<std::size_t>(INT32_MAX) ? INT32_MAX : static_cast<int>(dims.size());
  std::copy_n(dims.begin(), std::min<std::size_t>(dims.size(), kMaxRank), values.begin());
}

std::string Dims::to_string() const {
  std::string s = "[";
  for (std::size_t i = 0; i < span().size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(values[i]);
  }
  if (size > kMaxRank) s += ", ...";
  return s + "]";
}

bool same_shape(const TensorView& a, const TensorView& b) noexcept {
  if (a.rank != b.rank || a.rank < 0 || a.rank > kMaxRank) return false;
  return std::equal(a.shape.begin(), a.shape.begin() + a.rank, b.shape.begin());
}

bool same_view(const TensorView& a, const TensorView& b) noexcept {
  return a.data == b.data && a.dtype == b.dtype && same_shape(a, b) &&
         std::equal(a.strides.begin(), a.strides.begin() + a.rank, b.strides.begin());
}

bool memory_overlaps(const TensorView& a, const TensorView& b) noexcept {
  const auto na = a.nbytes(), nb = b.nbytes();
  if (!na || !nb || *na == 0 || *nb == 0 || !a.data || !b.data) return false;
  const auto pa = reinterpret_cast<uintptr_t>(a.data), pb = reinterpret_cast<uintptr_t>(b.data);
  return pa < pb + static_cast<uintptr_t>(*nb) && pb < pa + static_cast<uintptr_t>(*na);
}

}  // namespace mantissa
