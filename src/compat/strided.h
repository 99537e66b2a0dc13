// Strided views in the C layer: the bytes a view spans, whether a view writes some element
// twice, and element copies between strided views and contiguous buffers. Data movement only.
#pragma once

#include <cstdint>

#include "mantissa/tensor.h"

namespace mantissa::compat {

// The byte range [lo, hi) holding a view's elements; empty (lo == hi == 0) for a view without
// elements or with an invalid shape. Requires rank <= kMaxRank for a non-empty result.
struct ByteSpan {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
  bool empty() const noexcept { return lo >= hi; }
};
ByteSpan byte_span(const TensorView& view) noexcept;
bool spans_overlap(const ByteSpan& a, const ByteSpan& b) noexcept;

// True when two distinct indices of the view may address the same element (a zero stride on a
// dim of size > 1, or strides that interleave). Conservative: false means certainly disjoint.
bool may_self_overlap(const TensorView& view) noexcept;

// `view` with row-major strides over `data` (same dtype, rank and shape).
TensorView contiguous_like(const TensorView& view, void* data) noexcept;

// Copies the elements of `src` in row-major order into the contiguous buffer `dst`, and back.
// The views must be valid (rank <= kMaxRank, fp/int elements of a known size).
void copy_to_contiguous(const TensorView& src, void* dst) noexcept;
void copy_from_contiguous(const void* src, const TensorView& dst) noexcept;

}  // namespace mantissa::compat
