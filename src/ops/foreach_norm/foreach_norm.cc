// ForeachNorm: the p-norm of every tensor of a list in one parallel pass. Each tensor is cut
// into blocks of kReduceBlock elements (core/reduce.h); the blocks of the whole list are
// numbered end to end and claimed in pieces of a fixed size (not per tensor, not per thread),
// so 300 small tensors keep both threads as busy as one large one. Each block's partial is the
// deterministic reduction's block value (naive method, fp64 accumulator; max |x| for p = inf);
// each tensor's partials then combine along the documented pairwise tree, which gives the bits
// of detail::reduce over that tensor whatever the thread count or SIMD target.
//
// Memory traffic per element: one read.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/foreach_norm/foreach_norm.cc"
// clang-format off: foreach_target.h must come first; it re-includes this file once per target.
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/parallel.h"
#include "core/reduce-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "mantissa/tensor.h"
#include "ops/foreach_norm/foreach_norm_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// |x| widened exactly to the accumulator's lanes.
template <class Format>
struct AbsTerm {
  const typename Format::Storage* x;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    return hn::Abs(LoadAcc<Format>(da, x + i));
  }
};

// The partial of elements [begin, begin + len) of one tensor: a naive fp64 block sum, or the
// block's max |x| (NaN when the block holds one).
template <class Format>
double BlockPartial(const void* data, int64_t begin, int64_t len, detail::NormKind kind) {
  const auto* x = static_cast<const typename Format::Storage*>(data);
  constexpr auto kNaive = detail::ReduceMethod::kNaive;
  switch (kind) {
    case detail::NormKind::kL2:
      return ReduceBlock<kNaive, double>(SquareTerm<Format>{x}, begin, len).sum;
    case detail::NormKind::kL1:
      return ReduceBlock<kNaive, double>(AbsTerm<Format>{x}, begin, len).sum;
    case detail::NormKind::kInf: break;
  }
  const MaxPartial m = MaxBlock(MaxTerm<Format, true>{x}, begin, len);
  return m.nan ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(m.value);
}

void NormBlocks(const detail::ForeachNormKernelArgs& a) {
  auto chunk = [&](int64_t begin, int64_t end) {
    // The tensor holding block `begin` (the first with blocks past it), then onwards.
    auto it = std::upper_bound(a.first_block.begin(), a.first_block.end(), begin);
    std::size_t i = static_cast<std::size_t>(it - a.first_block.begin()) - 1;
    for (int64_t b = begin; b < end; ++b) {
      while (a.first_block[i + 1] <= b) ++i;  // skips empty tensors
      const TensorView& t = a.x[i];
      const int64_t start = (b - a.first_block[i]) * detail::kReduceBlock;
      const int64_t len = std::min(detail::kReduceBlock, *t.numel() - start);
      double v;
      switch (t.dtype) {
        case DType::kFloat16: v = BlockPartial<Fp16>(t.data, start, len, a.kind); break;
        case DType::kBFloat16: v = BlockPartial<Bf16>(t.data, start, len, a.kind); break;
        default: v = BlockPartial<Fp32>(t.data, start, len, a.kind); break;
      }
      a.partials[b] = v;
    }
  };
  detail::parallel_for(a.first_block.back(), detail::kReduceBlocksPerChunk, chunk);
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/op_entry.h"
#include "core/reduce.h"
#include "core/runtime_internal.h"
#include "ops/foreach_norm/foreach_norm_desc.h"

namespace mantissa {

HWY_EXPORT(NormBlocks);

namespace {

int64_t blocks_of(const TensorView& x) {
  const int64_t n = x.numel().value_or(0);
  return (n + detail::kReduceBlock - 1) / detail::kReduceBlock;
}

// v rounded once to `dtype` (RNE), NaN canonical. fp16 and bf16 go through fp32 rounded to odd
// (truncated, the last bit set when inexact): fp32 keeps more than two bits beyond their
// significands at every exponent they reach, so the second rounding (RNE) gives the bits of a
// single rounding of v.
void store_rounded(const TensorView& out, double v) {
  if (std::isnan(v)) {
    const uint32_t nan = out.dtype == DType::kFloat32   ? 0x7FC00000u
                         : out.dtype == DType::kFloat16 ? 0x7E00u
                                                        : 0x7FC0u;
    if (out.dtype == DType::kFloat32) {
      std::memcpy(out.data, &nan, 4);
    } else {
      const auto h = static_cast<uint16_t>(nan);
      std::memcpy(out.data, &h, 2);
    }
    return;
  }
  float f = static_cast<float>(v);  // RNE
  if (out.dtype != DType::kFloat32 && static_cast<double>(f) != v) {
    // Round to odd: the fp32 value truncated toward zero, its last bit set.
    if (std::isinf(f) || std::fabs(static_cast<double>(f)) > std::fabs(v)) {
      f = std::isinf(f) ? std::copysign(std::numeric_limits<float>::max(), f)
                        : std::nextafter(f, 0.0f);
    }
    f = std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
  }
  store_from_float(out.dtype, out.data, 0, f);
}

}  // namespace

Status detail::ForeachNormOp::check_params(const Tensors&, const Params& p) {
  if (p.p == 2.0 || p.p == 1.0 || p.p == std::numeric_limits<double>::infinity()) return {};
  return fail(StatusCode::kParamInvalid, kType, "p is {} (the norm's order must be 2, 1 or inf)",
              p.p);
}

uint64_t foreach_norm_workspace_size(const ForeachNormTensors& t, const ForeachNormParams&) {
  uint64_t blocks = 0;
  for (const TensorView& x : t.x) blocks += static_cast<uint64_t>(blocks_of(x));
  return (blocks + t.x.size() + 2) * sizeof(double);  // one more: room to align to 8 bytes
}

Status foreach_norm_validate(const ForeachNormTensors& t, const ForeachNormParams& p) {
  return detail::validate<detail::ForeachNormOp>(t, p);
}

Status foreach_norm(const ForeachNormTensors& t, const ForeachNormParams& p, Workspace ws) {
  return detail::op_entry<detail::ForeachNormOp>(t, p, [&]() -> Status {
    const std::size_t n = t.x.size();
    // Block starts (n + 1 int64) then the block partials (doubles): in the caller's workspace when
    // it is large enough (aligned to 8 bytes inside it), else allocated here.
    uint64_t blocks = 0;
    for (const TensorView& x : t.x) blocks += static_cast<uint64_t>(blocks_of(x));
    std::vector<int64_t> own_first;
    std::vector<double> own_partials;
    int64_t* first_block = nullptr;
    double* partials = nullptr;
    const auto lent = reinterpret_cast<uintptr_t>(ws.data);
    const uint64_t skip = (8 - lent % 8) % 8;
    if (ws.data != nullptr && ws.size >= skip + (blocks + n + 1) * sizeof(double)) {
      first_block = reinterpret_cast<int64_t*>(static_cast<char*>(ws.data) + skip);
      partials = reinterpret_cast<double*>(first_block + n + 1);
    } else {
      own_first.resize(n + 1);
      own_partials.resize(blocks);
      first_block = own_first.data();
      partials = own_partials.data();
    }
    first_block[0] = 0;
    for (std::size_t i = 0; i < n; ++i) first_block[i + 1] = first_block[i] + blocks_of(t.x[i]);
    detail::ForeachNormKernelArgs a;
    a.x = t.x;
    a.first_block = std::span<const int64_t>(first_block, n + 1);
    a.partials = partials;
    a.kind = p.p == 2.0   ? detail::NormKind::kL2
             : p.p == 1.0 ? detail::NormKind::kL1
                          : detail::NormKind::kInf;
    if (first_block[n] > 0) HWY_DYNAMIC_DISPATCH(NormBlocks)(a);
    using Partial = detail::Partial<double>;
    const auto merge = [](const Partial& x, const Partial& y) { return detail::merge_plain(x, y); };
    for (std::size_t i = 0; i < n; ++i) {
      double v = 0.0;  // an empty tensor
      const int64_t lo = first_block[i], hi = first_block[i + 1];
      if (hi > lo && a.kind == detail::NormKind::kInf) {
        // Exact values: only NaN needs a rule (any NaN block makes the result NaN).
        v = partials[lo];
        for (int64_t b = lo + 1; b < hi && !std::isnan(v); ++b) {
          v = std::isnan(partials[b]) || partials[b] > v ? partials[b] : v;
        }
      } else if (hi > lo) {
        detail::PairwiseStack<Partial> stack;
        for (int64_t b = lo; b < hi; ++b) stack.push(Partial{partials[b], -0.0}, merge);
        v = detail::finish<detail::ReduceMethod::kNaive>(stack.collapse(merge));
        if (a.kind == detail::NormKind::kL2) v = std::sqrt(v);
      }
      store_rounded(t.out[i], v);
    }
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
