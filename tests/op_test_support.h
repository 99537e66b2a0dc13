// Test support shared by every operator's tests: the scalar reference (the precision kit's
// golden32, the one hand-written fp32 formula per operator, applied in place to a call's own
// tensors), target and thread sweeps, special-value bit patterns, and bit comparison.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "mantissa/dtype.h"
#include "mantissa/tensor.h"
#include "ops/all_ops.h"
#include "precision/kit.h"
#include "precision/op_schema.h"
#include "target_sweep.h"

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

// ---- Sweeps ---------------------------------------------------------------------------------

// The thread counts every bitwise test runs at.
inline const std::vector<int>& sweep_thread_counts() {
  static const std::vector<int> counts{1, 2, 3, 7};
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
