// Strided views in the C layer: spans, self-overlap, and copies to and from contiguous buffers.
#include "compat/strided.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "mantissa/dtype.h"

namespace mantissa::compat {

ByteSpan byte_span(const TensorView& view) noexcept {
  const auto count = view.numel();
  const auto elem = static_cast<int64_t>(dtype_size(view.dtype));
  if (!count || *count == 0 || view.data == nullptr) return {};
  // Element offsets relative to view.data; the view fits in its storage (checked when the
  // aclTensor was made), so these sums do not overflow.
  int64_t lowest = 0, highest = 0;
  for (int i = 0; i < view.rank; ++i) {
    const int64_t reach = (view.shape[i] - 1) * view.strides[i];
    (reach < 0 ? lowest : highest) += reach;
  }
  const auto base = reinterpret_cast<uintptr_t>(view.data);
  ByteSpan span;
  if (elem == 0) {  // a packed type (INT4): elements are bits/8 bytes, spans whole bytes
    const auto bits = static_cast<int64_t>(std::max<size_t>(1, dtype_bits(view.dtype)));
    span.lo = base + static_cast<uintptr_t>(lowest * bits / 8);
    span.hi = base + static_cast<uintptr_t>(((highest + 1) * bits + 7) / 8);
    return span;
  }
  span.lo = base + static_cast<uintptr_t>(lowest * elem);
  span.hi = base + static_cast<uintptr_t>((highest + 1) * elem);
  return span;
}

bool spans_overlap(const ByteSpan& a, const ByteSpan& b) noexcept {
  return !a.empty() && !b.empty() && a.lo < b.hi && b.lo < a.hi;
}

bool may_self_overlap(const TensorView& view) noexcept {
  if (view.rank < 0 || view.rank > kMaxRank) return true;
  // Dims of size > 1 sorted by |stride|: each stride must step over everything the inner dims
  // reach, or two indices can meet.
  std::array<std::pair<int64_t, int64_t>, kMaxRank> dims{};  // (|stride|, size)
  int n = 0;
  for (int i = 0; i < view.rank; ++i) {
    if (view.shape[i] == 0) return false;  // no elements at all
    if (view.shape[i] > 1) dims[n++] = {std::llabs(view.strides[i]), view.shape[i]};
  }
  for (int i = 1; i < n; ++i) {  // insertion sort: at most kMaxRank entries
    for (int j = i; j > 0 && dims[j] < dims[j - 1]; --j) std::swap(dims[j], dims[j - 1]);
  }
  int64_t reach = 1;  // elements spanned by the inner dims
  for (int i = 0; i < n; ++i) {
    if (dims[i].first < reach) return true;
    if (__builtin_mul_overflow(dims[i].first, dims[i].second, &reach)) return false;
  }
  return false;
}

TensorView contiguous_like(const TensorView& view, void* data) noexcept {
  TensorView out = view;
  out.data = data;
  const int kept = std::clamp(view.rank, 0, kMaxRank);
  int64_t stride = 1;
  for (int i = kept - 1; i >= 0; --i) {
    out.strides[i] = stride;
    if (view.shape[i] > 0 && __builtin_mul_overflow(stride, view.shape[i], &stride)) {
      stride = INT64_MAX;  // only reachable for views that validation rejects
    }
  }
  return out;
}

namespace {

// Visits the view's elements in row-major order: fn(byte offset of the element from data).
template <class Fn>
void for_each_element(const TensorView& view, Fn&& fn) {
  const auto count = view.numel();
  if (!count || *count == 0) return;
  const auto elem = static_cast<int64_t>(dtype_size(view.dtype));
  const int rank = view.rank;
  if (rank == 0) {
    fn(int64_t{0});
    return;
  }
  std::array<int64_t, kMaxRank> index{};
  int64_t offset = 0;  // in elements
  const int inner = rank - 1;
  const int64_t inner_size = view.shape[inner], inner_stride = view.strides[inner];
  for (int64_t done = 0; done < *count; done += inner_size) {
    for (int64_t j = 0; j < inner_size; ++j) fn((offset + j * inner_stride) * elem);
    // Odometer over the outer dims.
    for (int d = inner - 1; d >= 0; --d) {
      offset += view.strides[d];
      if (++index[d] < view.shape[d]) break;
      offset -= view.strides[d] * view.shape[d];
      index[d] = 0;
    }
  }
}

}  // namespace

void copy_to_contiguous(const TensorView& src, void* dst) noexcept {
  const size_t elem = dtype_size(src.dtype);
  const char* from = static_cast<const char*>(src.data);
  char* to = static_cast<char*>(dst);
  for_each_element(src, [&](int64_t byte_offset) {
    std::memcpy(to, from + byte_offset, elem);
    to += elem;
  });
}

void copy_from_contiguous(const void* src, const TensorView& dst) noexcept {
  const size_t elem = dtype_size(dst.dtype);
  const char* from = static_cast<const char*>(src);
  char* to = static_cast<char*>(dst.data);
  for_each_element(dst, [&](int64_t byte_offset) {
    std::memcpy(to + byte_offset, from, elem);
    from += elem;
  });
}

}  // namespace mantissa::compat
