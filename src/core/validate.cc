// Validation helpers shared by operators.
#include "core/validate.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace mantissa::detail {

Status check_present(std::string_view op, Arg a) {
  if (a.t.data != nullptr) return {};
  const auto n = a.t.numel();
  if (!n || *n != 0) {
    return fail(StatusCode::kParamNullptr, op, "{} has a null data pointer", a.name);
  }
  return {};
}

Status check_training_float(std::string_view op, Arg a) {
  if (!is_training_float(a.t.dtype)) {
    return fail(StatusCode::kParamInvalid, op,
                "{} dtype {} is not supported (expected FLOAT, FLOAT16 or BFLOAT16)", a.name,
                dtype_name(a.t.dtype));
  }
  return {};
}

Status check_same_dtype(std::string_view op, Arg a, Arg ref) {
  if (a.t.dtype != ref.t.dtype) {
    return fail(StatusCode::kParamInvalid, op, "{} dtype {} differs from {} dtype {}", a.name,
                dtype_name(a.t.dtype), ref.name, dtype_name(ref.t.dtype));
  }
  return {};
}

Status check_dtype(std::string_view op, Arg a, DType dtype) {
  if (a.t.dtype != dtype) {
    return fail(StatusCode::kParamInvalid, op, "{} dtype {} is not {}", a.name,
                dtype_name(a.t.dtype), dtype_name(dtype));
  }
  return {};
}

Status check_dtype_in(std::string_view op, Arg a, uint64_t dtype_bits) {
  const auto value = static_cast<uint32_t>(a.t.dtype);
  if (value < 64 && ((dtype_bits >> value) & 1u) != 0) return {};
  std::string expected;
  for (uint32_t d = 0; d < 64; ++d) {
    if (((dtype_bits >> d) & 1u) == 0) continue;
    expected += (expected.empty() ? "" : " or ") + std::string(dtype_name(static_cast<DType>(d)));
  }
  return fail(StatusCode::kParamInvalid, op, "{} dtype {} is not supported (expected {})", a.name,
              dtype_name(a.t.dtype), expected);
}

Status check_rank(std::string_view op, Arg a, int lo, int hi) {
  if (a.t.rank < lo || a.t.rank > hi) {
    return fail(StatusCode::kParamInvalid, op, "{} rank {} is outside [{}, {}]", a.name, a.t.rank,
                lo, hi);
  }
  return {};
}

Status check_not_empty(std::string_view op, Arg a) {
  for (int i = 0; i < a.t.rank && i < kMaxRank; ++i) {
    if (a.t.shape[i] <= 0) {
      return fail(StatusCode::kParamInvalid, op, "{} shape {} has dimension {} of size {}", a.name,
                  a.t.shape_string(), i, a.t.shape[i]);
    }
  }
  return {};
}

Status check_countable(std::string_view op, Arg a) {
  const auto bytes = a.t.nbytes();
  if (!bytes || static_cast<unsigned long long>(*bytes) >
                    static_cast<unsigned long long>(std::numeric_limits<std::size_t>::max())) {
    return fail(StatusCode::kParamInvalid, op,
                "{} shape {} is invalid or its size overflows (rank {})", a.name,
                a.t.shape_string(), a.t.rank);
  }
  return {};
}

Status check_same_shape(std::string_view op, Arg a, Arg ref) {
  if (!same_shape(a.t, ref.t)) {
    return fail(StatusCode::kParamInvalid, op, "{} shape {} differs from {} shape {}", a.name,
                a.t.shape_string(), ref.name, ref.t.shape_string());
  }
  return {};
}

Status check_trailing_shape(std::string_view op, Arg a, Arg ref) {
  bool ok = a.t.rank >= 1 && a.t.rank <= ref.t.rank;
  for (int i = 0; ok && i < a.t.rank; ++i) {
    ok = a.t.shape[i] == ref.t.shape[ref.t.rank - a.t.rank + i];
  }
  if (!ok) {
    return fail(StatusCode::kParamInvalid, op,
                "{} shape {} must be the trailing dims of {} shape {} (rank 1 to {})", a.name,
                a.t.shape_string(), ref.name, ref.t.shape_string(), ref.t.rank);
  }
  return {};
}

Status check_reduced_shape(std::string_view op, Arg a, Arg ref, int dims) {
  const int kept = ref.t.rank - std::min(std::max(dims, 0), ref.t.rank);
  // Kept as 1: ref's rank, leading dims equal, the rest 1. Dropped: the leading dims, where dims
  // of size 1 may be left out too (CANN's RmsNormGrad sample passes [2] for x [2, 1, 16]), so
  // the two agree once their 1s are removed.
  bool as_ones = a.t.rank == ref.t.rank;
  for (int i = 0; i < a.t.rank; ++i) {
    const int64_t want = i < kept ? ref.t.shape[i] : 1;
    as_ones = as_ones && a.t.shape[i] == want;
  }
  bool dropped = a.t.rank <= kept;
  int ia = 0, jr = 0;
  while (dropped) {
    while (ia < a.t.rank && a.t.shape[ia] == 1) ++ia;
    while (jr < kept && ref.t.shape[jr] == 1) ++jr;
    if (ia == a.t.rank || jr == kept) {
      dropped = ia == a.t.rank && jr == kept;
      break;
    }
    dropped = a.t.shape[ia++] == ref.t.shape[jr++];
  }
  if (!as_ones && !dropped) {
    std::string ones = "[", leading = "[";
    for (int i = 0; i < ref.t.rank; ++i) {
      const int64_t d = i < kept ? ref.t.shape[i] : 1;
      ones += (i ? ", " : "") + std::to_string(d);
      if (i < kept) leading += (i ? ", " : "") + std::to_string(d);
    }
    return fail(StatusCode::kParamInvalid, op,
                "{} shape {} must be {} or {} (dims of 1 may be left out): {} shape {} reduced "
                "over its last {} dims",
                a.name, a.t.shape_string(), ones + "]", leading + "]", ref.name,
                ref.t.shape_string(), ref.t.rank - kept);
  }
  return {};
}

Status check_one_element(std::string_view op, Arg a, StatusCode code) {
  const auto n = a.t.numel();
  if (!n || *n != 1) {
    return fail(code, op, "{} must hold exactly one element, got shape {}", a.name,
                a.t.shape_string());
  }
  return {};
}

Status check_contiguous(std::string_view op, Arg a) {
  if (!a.t.is_contiguous()) {
    std::string strides = "[";
    for (int i = 0; i < a.t.rank && i < kMaxRank; ++i) {
      strides += (i ? ", " : "") + std::to_string(a.t.strides[i]);
    }
    return fail(StatusCode::kParamInvalid, op, "{} is not contiguous (shape {}, strides {}])",
                a.name, a.t.shape_string(), strides);
  }
  // Kernels read elements through typed pointers: the data must be aligned to the element size
  // (a misaligned float pointer is undefined behaviour, and on some CPUs a fault). Empty tensors
  // are never read.
  const std::size_t size = dtype_size(a.t.dtype);
  const auto address = reinterpret_cast<uintptr_t>(a.t.data);
  if (size > 1 && address % size != 0 && a.t.numel().value_or(0) != 0) {
    return fail(StatusCode::kParamInvalid, op,
                "{} data address {} is not aligned to its {}-byte elements ({})", a.name,
                static_cast<const void*>(a.t.data), size, dtype_name(a.t.dtype));
  }
  return {};
}

Status check_strided(std::string_view op, Arg a) {
  for (int i = 0; i < a.t.rank && i < kMaxRank; ++i) {
    if (a.t.shape[i] > 1 && a.t.strides[i] < 0) {
      return fail(StatusCode::kParamInvalid, op,
                  "{} has a negative stride ({} for dim {} of shape {}); strides must be 0 or more",
                  a.name, a.t.strides[i], i, a.t.shape_string());
    }
  }
  // The highest element's byte offset must be representable.
  int64_t reach = static_cast<int64_t>(dtype_size(a.t.dtype));
  for (int i = 0; i < a.t.rank && i < kMaxRank; ++i) {
    int64_t dim = 0;
    if (a.t.shape[i] > 1 &&
        (__builtin_mul_overflow(a.t.shape[i] - 1, a.t.strides[i], &dim) ||
         __builtin_mul_overflow(dim, static_cast<int64_t>(dtype_size(a.t.dtype)), &dim) ||
         __builtin_add_overflow(reach, dim, &reach))) {
      return fail(StatusCode::kParamInvalid, op,
                  "{}'s strides reach beyond 2^63 bytes (shape {}, stride {} for dim {})", a.name,
                  a.t.shape_string(), a.t.strides[i], i);
    }
  }
  const std::size_t size = dtype_size(a.t.dtype);
  const auto address = reinterpret_cast<uintptr_t>(a.t.data);
  if (size > 1 && address % size != 0 && a.t.numel().value_or(0) != 0) {
    return fail(StatusCode::kParamInvalid, op,
                "{} data address {} is not aligned to its {}-byte elements ({})", a.name,
                static_cast<const void*>(a.t.data), size, dtype_name(a.t.dtype));
  }
  return {};
}

Status check_alias_or_disjoint(std::string_view op, Arg out, Arg in) {
  if (same_view(out.t, in.t)) return {};
  return check_disjoint(op, out, in);
}

Status check_disjoint(std::string_view op, Arg out, Arg in) {
  if (memory_overlaps(out.t, in.t)) {
    const auto range = [](const TensorView& t) {
      return fmt::format("[{}, +{} bytes)", t.data, t.nbytes().value_or(0));
    };
    return fail(StatusCode::kParamInvalid, op,
                "{} partially overlaps {} ({} and {}): a tensor the operator writes must be the "
                "very same view as its own input or share no byte with any other argument",
                out.name, in.name, range(out.t), range(in.t));
  }
  return {};
}

std::vector<std::vector<std::size_t>> intersecting_ranges(
    std::span<const TensorView* const> tensors) {
  struct Range {
    uintptr_t begin, end;
    std::size_t index;
  };
  std::vector<Range> ranges;
  ranges.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const TensorView* t = tensors[i];
    if (t == nullptr || t->data == nullptr) continue;
    const auto n = t->nbytes();
    if (!n || *n == 0) continue;
    const auto begin = reinterpret_cast<uintptr_t>(t->data);
    ranges.push_back({begin, begin + static_cast<uintptr_t>(*n), i});
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  std::vector<std::vector<std::size_t>> out(tensors.size());
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    // Every later range starting before this one ends intersects it.
    for (std::size_t j = i + 1; j < ranges.size() && ranges[j].begin < ranges[i].end; ++j) {
      out[ranges[i].index].push_back(ranges[j].index);
      out[ranges[j].index].push_back(ranges[i].index);
    }
  }
  for (auto& v : out) std::sort(v.begin(), v.end());
  return out;
}

}  // namespace mantissa::detail
