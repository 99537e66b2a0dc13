// Test support shared by every operator's tests: the scalar reference (the precision kit's
// golden32, the one hand-written fp32 formula per operator, applied in place to a call's own
// tensors), target and thread sweeps, special-value bit patterns, and bit comparison.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "mantissa/dtype.h"
#include "mantissa/tensor.h"
#include "ops/all_ops.h"
#include "precision/fp.h"
#include "precision/kit.h"
#include "precision/op_schema.h"
#include "target_support.h"

namespace mantissa::testing {

// ---- The reference --------------------------------------------------------------------------

// A host copy of a contiguous view.
inline precision::HostTensor host_copy(const TensorView& v) {
  precision::HostTensor h(v.dtype, std::vector<int64_t>(v.shape.begin(), v.shape.begin() + v.rank));
  if (!h.bytes.empty()) std::memcpy(h.data(), v.data, h.bytes.size());
  return h;
}

// The kit's inputs for a call: the read and in/out tensors (contiguous; a list's elements in
// order) copied, an optional one left out as the kit's absent tensor, the attributes.
template <class Op>
precision::OpInputs kit_inputs(const typename Op::Tensors& t, const typename Op::Params& p) {
  const auto v = detail::views<Op>(t);
  const auto l = detail::lists<Op>(t);
  precision::OpInputs in;
  for (std::size_t k = 0; k < v.size(); ++k) {
    if (Op::kArgs[k].role == detail::Role::kOut) continue;
    if (Op::kArgs[k].is_list) {
      for (const TensorView& e : l[k]) in.tensors.push_back(host_copy(e));
      in.list_sizes.push_back(static_cast<int64_t>(l[k].size()));
      continue;
    }
    if (!detail::is_set<Op>(t, k)) {
      in.tensors.push_back(precision::absent_tensor());
      continue;
    }
    in.tensors.push_back(host_copy(v[k]));
  }
  for (std::size_t i = 0; i < detail::kNumAttrs<Op>; ++i) {
    precision::AttrValue a;
    const double value = detail::get_attr<Op>(p, i);
    switch (Op::kAttrs[i].type) {
      case detail::AttrType::kBool: a.kind = precision::AttrKind::kBool, a.b = value != 0.0; break;
      case detail::AttrType::kInt:
        a.kind = precision::AttrKind::kInt, a.i = static_cast<int64_t>(value);
        break;
      case detail::AttrType::kFloat:
      case detail::AttrType::kScalar: a.kind = precision::AttrKind::kFloat, a.f = value; break;
      case detail::AttrType::kIntList:
      case detail::AttrType::kBoolList:
        a.kind = Op::kAttrs[i].type == detail::AttrType::kIntList ? precision::AttrKind::kIntList
                                                                  : precision::AttrKind::kBoolList;
        a.list = detail::get_list_attr<Op>(p, i);
        break;
    }
    in.attrs.push_back(a);
  }
  return in;
}

// Applies the kit's golden32 to the call's tensors as the operator would: every written tensor
// (an unset optional output: its paired input; a list: each element) receives the reference
// bits. Inputs must be contiguous and must not overlap the written tensors (other than in
// place).
template <class Op>
void apply_golden32(const typename Op::Tensors& t, const typename Op::Params& p) {
  const precision::OpEntry* op = precision::find_op(std::string(Op::kType));
  ASSERT_NE(op, nullptr) << Op::kType;
  const std::vector<precision::HostTensor> out = op->golden32(kit_inputs<Op>(t, p));
  const auto v = detail::views<Op>(t);
  const auto l = detail::lists<Op>(t);
  std::vector<TensorView> destinations;
  for (std::size_t k : precision::Schema<Op>::written()) {
    if (Op::kArgs[k].is_list) {
      destinations.insert(destinations.end(), l[k].begin(), l[k].end());
    } else {
      destinations.push_back(v[k]);
    }
  }
  ASSERT_EQ(out.size(), destinations.size());
  for (std::size_t j = 0; j < out.size(); ++j) {
    if (!out[j].bytes.empty())
      std::memcpy(destinations[j].data, out[j].data(), out[j].bytes.size());
  }
}

// ---- Host tensors for a call ----------------------------------------------------------------

// The byte every output starts as, so that "nothing written" can be checked.
inline constexpr uint8_t kSentinel = 0xA7;

// A tensor filled with mean + spread * N(0, 1), each value rounded once to its dtype.
inline precision::HostTensor filled(DType d, std::vector<int64_t> shape, double mean, double spread,
                                    uint32_t seed) {
  precision::HostTensor h(d, std::move(shape));
  std::mt19937 rng(seed);
  std::normal_distribution<double> nd(0.0, 1.0);
  for (int64_t i = 0; i < h.numel(); ++i) {
    h.set_bits(i, precision::round_to_bits(mean + spread * nd(rng), d));
  }
  return h;
}

inline precision::HostTensor sentinel(DType d, std::vector<int64_t> shape) {
  precision::HostTensor h(d, std::move(shape));
  std::fill(h.bytes.begin(), h.bytes.end(), kSentinel);
  return h;
}

// Runs an aclnn call's two phases: one(&size, &executor), then two(workspace, size, executor)
// with a workspace of that size (8-byte aligned). Returns the first phase's error or the second
// phase's status.
template <class PhaseOne, class PhaseTwo>
aclnnStatus run_two_phases(PhaseOne one, PhaseTwo two) {
  uint64_t size = 0;
  aclOpExecutor* exec = nullptr;
  const aclnnStatus s = one(&size, &exec);
  if (s != ACLNN_SUCCESS) return s;
  std::vector<uint64_t> ws(size / 8 + 1);
  return two(ws.data(), size, exec);
}

// Expects a and b to hold the same bytes (any dtype, packed INT4 included), naming the first
// byte that differs.
inline void expect_same_bits(const precision::HostTensor& a, const precision::HostTensor& b,
                             const std::string& what) {
  ASSERT_EQ(a.bytes.size(), b.bytes.size()) << what;
  const auto diff = std::mismatch(a.bytes.begin(), a.bytes.end(), b.bytes.begin());
  EXPECT_TRUE(diff.first == a.bytes.end())
      << what << " differs at byte " << (diff.first - a.bytes.begin());
}

// The shape of a quantized output: INT4 values packed eight to an INT32 make the last dim 8x
// shorter.
inline std::vector<int64_t> packed_shape(std::vector<int64_t> s, DType y) {
  if (y == DType::kInt32) s.back() /= 8;
  return s;
}

inline TensorView view(precision::HostTensor& h) { return precision::view_of(h); }

inline bool untouched(const precision::HostTensor& h) {
  for (uint8_t b : h.bytes) {
    if (b != kSentinel) return false;
  }
  return true;
}

// An aclTensor over a view's memory with the given strides (default: row-major) and storage
// shape (default: the view's).
inline aclTensor* acl(const TensorView& v, std::vector<int64_t> strides = {},
                      std::vector<int64_t> storage = {}) {
  std::vector<int64_t> dims(v.shape.begin(), v.shape.begin() + v.rank);
  if (strides.empty()) {
    strides.assign(dims.size(), 1);
    for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  }
  if (storage.empty()) storage = dims;
  return aclCreateTensor(dims.data(), dims.size(), static_cast<aclDataType>(v.dtype),
                         strides.data(), 0, ACL_FORMAT_ND, storage.data(), storage.size(), v.data);
}

// ---- Sweeps ---------------------------------------------------------------------------------

// The thread counts every bitwise test runs at. The sanitizer builds run two of them (one thread,
// and a count that splits the work unevenly): they look for memory and undefined-behaviour errors,
// which the thread count does not change; the Release build compares the bits of all four.
inline const std::vector<int>& sweep_thread_counts() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  static const std::vector<int> counts{1, 3};
#else
  static const std::vector<int> counts{1, 2, 3, 7};
#endif
  return counts;
}

// Calls body(target, threads) for every available SIMD target (forced) and thread count.
template <class Body>
void for_each_target_and_thread_count(Body&& body,
                                      const std::vector<int>& threads = sweep_thread_counts()) {
  ThreadCountGuard guard;
  for_each_target([&](const std::string& target) {
    for (int n : threads) {
      ASSERT_TRUE(set_num_threads(n).ok());
      SCOPED_TRACE("threads " + std::to_string(n));
      body(target, n);
    }
  });
}

// ---- Special values -------------------------------------------------------------------------

// Bit patterns of the special values of a float dtype: +-0, +-inf, quiet and signalling NaN
// with payloads, the smallest and largest subnormals and normals, and the largest finite.
inline std::vector<uint32_t> special_bits(DType d) {
  if (d == DType::kFloat32) {
    return {0x00000000u, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
            0x7F800001u, 0x00000001u, 0x807FFFFFu, 0x00800000u, 0x7F7FFFFFu, 0xFF7FFFFFu};
  }
  if (d == DType::kFloat16) {
    return {0x0000u, 0x8000u, 0x7C00u, 0xFC00u, 0x7E00u, 0xFE01u,
            0x7C01u, 0x0001u, 0x83FFu, 0x0400u, 0x7BFFu, 0xFBFFu};
  }
  return {0x0000u, 0x8000u, 0x7F80u, 0xFF80u, 0x7FC0u, 0xFFC1u,
          0x7F81u, 0x0001u, 0x807Fu, 0x0080u, 0x7F7Fu, 0xFF7Fu};
}

// ---- Bit comparison -------------------------------------------------------------------------

// Index of the first element whose bits differ between two buffers of `n` elements of `d`, or
// -1 when all are equal.
inline int64_t first_bit_difference(const void* a, const void* b, int64_t n, DType d) {
  const std::size_t size = dtype_size(d);
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(static_cast<const char*>(a) + i * size, static_cast<const char*>(b) + i * size,
                    size) != 0) {
      return i;
    }
  }
  return -1;
}

}  // namespace mantissa::testing
