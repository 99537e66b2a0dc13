// Validation helpers shared by operators: each check returns a Status whose message names the
// operator, the argument and the values involved.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "mantissa/status.h"
#include "mantissa/tensor.h"

#define MANTISSA_RETURN_IF_ERROR(expr)   \
  do {                                   \
    ::mantissa::Status status_ = (expr); \
    if (!status_.ok()) return status_;   \
  } while (0)

namespace mantissa::detail {

template <class... Args>
Status fail(StatusCode code, std::string_view op, fmt::format_string<Args...> format,
            Args&&... args) {
  return Status(code, fmt::format("{}: {}", op, fmt::format(format, std::forward<Args>(args)...)));
}

// A named tensor argument of an operator.
struct Arg {
  const char* name;
  const TensorView& t;
};

// Null data with elements to read or write: 161001.
Status check_present(std::string_view op, Arg a);
// fp32, fp16 or bf16: else 161002.
Status check_training_float(std::string_view op, Arg a);
// a's dtype equals ref's: else 161002.
Status check_same_dtype(std::string_view op, Arg a, Arg ref);
// a's dtype is `dtype`: else 161002.
Status check_dtype(std::string_view op, Arg a, DType dtype);
// a's dtype is in `dtype_bits` (bit d set for DType d): else 161002, listing the accepted ones.
Status check_dtype_in(std::string_view op, Arg a, uint64_t dtype_bits);
// Rank within [lo, hi]: else 161002.
Status check_rank(std::string_view op, Arg a, int lo, int hi);
// No dimension is 0, and none is negative: else 161002.
Status check_not_empty(std::string_view op, Arg a);
// A valid shape whose element count fits int64 and whose byte size fits size_t: else 161002.
Status check_countable(std::string_view op, Arg a);
// a's shape equals ref's (no broadcasting): else 161002.
Status check_same_shape(std::string_view op, Arg a, Arg ref);
// a's shape is the last rank(a) dims of ref's, with 1 <= rank(a) <= rank(ref): else 161002.
Status check_trailing_shape(std::string_view op, Arg a, Arg ref);
// a holds one element per row of ref over its last `dims` dims: ref's shape with those dims set
// to 1, or with them dropped: else 161002.
Status check_reduced_shape(std::string_view op, Arg a, Arg ref, int dims);
// Holds exactly one element (rank 0, [1], [1,1], ...): else `code`.
Status check_one_element(std::string_view op, Arg a, StatusCode code = StatusCode::kParamInvalid);
// Row-major contiguous, and the data aligned to the element size: else 161002.
Status check_contiguous(std::string_view op, Arg a);
// Strides not negative (dims of size 0 or 1 aside) and data aligned to the element size: an
// input read through its strides (ArgSpec::any_strides).
Status check_strided(std::string_view op, Arg a);
// An output is either the very same view as `in` or shares no byte with it: else 161002.
Status check_alias_or_disjoint(std::string_view op, Arg out, Arg in);
// An output shares no byte with `in` (for inputs it is not paired with): else 161002, with
// both byte ranges in the message.
Status check_disjoint(std::string_view op, Arg out, Arg in);

// The bytes a view spans, [begin, end); empty for a null, empty or unsized view.
struct ByteRange {
  uintptr_t begin = 0, end = 0;
  bool intersects(const ByteRange& o) const { return begin < o.end && o.begin < end; }
};
// The bytes a view spans: from its lowest to its highest element (a strided view: every byte in
// between, its gaps included).
inline ByteRange byte_range(const TensorView& t) noexcept {
  const auto n = t.nbytes();
  if (t.data == nullptr || !n || *n == 0) return {};
  const auto begin = reinterpret_cast<uintptr_t>(t.data);
  if (t.is_contiguous()) return {begin, begin + static_cast<uintptr_t>(*n)};
  int64_t lo = 0, hi = 1;  // element offsets: the lowest element, one past the highest
  bool overflow = false;
  for (int i = 0; i < t.rank && i < kMaxRank; ++i) {
    int64_t reach = 0;
    overflow |= __builtin_mul_overflow(t.shape[i] - 1, t.strides[i], &reach);
    overflow |= __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi);
  }
  const auto size = static_cast<int64_t>(dtype_size(t.dtype));
  overflow |= __builtin_mul_overflow(lo, size, &lo) || __builtin_mul_overflow(hi, size, &hi);
  if (overflow) return {0, UINTPTR_MAX};  // unrepresentable: overlaps everything
  return {begin + static_cast<uintptr_t>(lo), begin + static_cast<uintptr_t>(hi)};
}

// For each tensor, the indices (ascending) of the other tensors whose byte ranges intersect its
// own (memory_overlaps); null and empty tensors intersect nothing. O(n log n + pairs).
std::vector<std::vector<std::size_t>> intersecting_ranges(
    std::span<const TensorView* const> tensors);

}  // namespace mantissa::detail
