// Deterministic reductions (sum, dot, sum of squares, L2 norm, max, max |x|) over a contiguous
// range of fp32/fp16/bf16 elements: the fixed order of accumulation, the scalar combination
// rules, and the dispatched entry points. Per-target kernels are in core/reduce-inl.h.
//
// The order, normative (it is what makes the bits independent of threads and targets):
// - The range [0, n) is cut into blocks of kReduceBlock elements (the last one shorter).
// - In a block, element j goes to lane j % kReduceLanes; each lane accumulates its elements in
//   increasing order (naive, Kahan, Neumaier), or, for the pairwise method, sums chunks of
//   kPairwiseChunk of its elements and combines the chunk sums along the pairwise tree below.
//   A target with N-lane vectors holds the 32 lanes in 32 / N vectors; the tail of a block
//   (fewer than 32 elements) is processed one element at a time with the same lane operations.
// - The 32 lanes of a block combine as lane[i] (+) lane[i + w] for w = 16, 8, 4, 2, 1.
// - Block partials combine along the pairwise tree: the left subtree of a node over k items is
//   the tree over its first p items, p the largest power of two below k (a binary counter;
//   see PairwiseStack). Blocks may be computed in parallel; the tree is the same.
// - (+) is one fp32/fp64 addition for naive and pairwise; for Kahan and Neumaier it combines
//   (sum, compensation) pairs: s = s1 + s2, e = TwoSum's exact error of that addition,
//   c = (c1 + c2) + e. The value of a pair is s + c (s alone when c is zero or s is not finite).
// - A compensated block whose sum or compensation is not finite (an inf or NaN element, or an
//   overflow) is recomputed with the naive method: infinities and NaNs then propagate as in a
//   plain sum instead of turning the compensation into NaN.
// - A NaN result is the positive quiet NaN. Max ignores nothing: any NaN makes the result NaN;
//   among equal values the one met first in the order above is kept (max(-0, +0) keeps -0 if
//   -0 comes first).
// No FMA anywhere (the build uses -ffp-contract=off and the kernels never call MulAdd).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "mantissa/dtype.h"
#include "mantissa/reduce.h"

namespace mantissa::detail {

using mantissa::ReduceAccumulator;
using mantissa::ReduceMethod;
using mantissa::ReduceOptions;

// Elements per block. A constant: neither the thread count nor the vector width changes it.
inline constexpr int64_t kReduceBlock = 4096;
// Interleaved partial accumulators per block, whatever the vector width (16 fp32 lanes of
// AVX-512 hold them in 2 vectors, SSE4 in 8, the scalar target in 32).
inline constexpr int kReduceLanes = 32;
// Elements per lane in one naive chunk of the pairwise method (so a chunk is 256 elements and a
// block 16 chunks).
inline constexpr int kPairwiseChunk = 8;
// Blocks per parallel piece of a range reduction (32K elements, the library's default grain).
inline constexpr int64_t kReduceBlocksPerChunk = 8;

enum class ReduceOp : int32_t { kSum, kDot, kSumSquares, kL2Norm, kMax, kMaxAbs };

struct ReduceArgs {
  ReduceOp op = ReduceOp::kSum;
  DType dtype = DType::kFloat32;  // storage of x (and y): fp32, fp16 or bf16
  const void* x = nullptr;
  const void* y = nullptr;  // second operand of kDot
  int64_t n = 0;            // elements
  ReduceOptions options;    // ignored by kMax and kMaxAbs
};

// The reduction of [0, n), blocks computed in parallel (parallel_for, kReduceBlocksPerChunk
// blocks per piece). The value is exact in double: an fp32 accumulator's result widened.
// Empty: sums +0, kMax -inf, kMaxAbs +0.
double reduce(const ReduceArgs& a);
// The same reduction, serial in the calling thread and without allocation: the same bits as
// reduce(). For scalar code inside a row loop; Highway kernels call ReduceRow in
// core/reduce-inl.h directly instead (no dispatch per row).
double reduce_row(const ReduceArgs& a);

// ---------------------------------------------------------------------------------------------
// Scalar combination rules shared by every target (plain IEEE arithmetic, same bits anywhere).

constexpr bool is_compensated(ReduceMethod m) noexcept {
  return m == ReduceMethod::kKahan || m == ReduceMethod::kNeumaier;
}

// A partial result: its value is sum + comp (comp stays -0.0 for uncompensated methods).
template <class A>
struct Partial {
  A sum = A(-0.0);
  A comp = A(-0.0);
};

// (+) for naive and pairwise partials.
template <class A>
Partial<A> merge_plain(const Partial<A>& a, const Partial<A>& b) noexcept {
  return {a.sum + b.sum, A(-0.0)};
}

// (+) for Kahan and Neumaier partials: TwoSum (Knuth; exact error, no branch) on the sums, the
// compensations added to the error. It is necessary to keep the order of the operations.
template <class A>
Partial<A> merge_compensated(const Partial<A>& a, const Partial<A>& b) noexcept {
  const A s = a.sum + b.sum;
  if (!std::isfinite(s)) return {s, A(-0.0)};  // inf or NaN carries the result alone
  const A b_virtual = s - a.sum;
  const A a_virtual = s - b_virtual;
  const A error = (a.sum - a_virtual) + (b.sum - b_virtual);
  return {s, (a.comp + b.comp) + error};
}

template <ReduceMethod M, class A>
Partial<A> merge(const Partial<A>& a, const Partial<A>& b) noexcept {
  if constexpr (is_compensated(M)) {
    return merge_compensated(a, b);
  } else {
    return merge_plain(a, b);
  }
}

// The value of a finished partial; NaN made the positive quiet NaN.
template <ReduceMethod M, class A>
A finish(const Partial<A>& p) noexcept {
  A v = p.sum;
  // Adding a zero compensation could turn a -0 sum into +0: skip it.
  if constexpr (is_compensated(M)) {
    if (std::isfinite(p.sum) && p.comp != A(0)) v = p.sum + p.comp;
  }
  return std::isnan(v) ? std::numeric_limits<A>::quiet_NaN() : v;
}

// kWidth pairwise trees (as described above) built in lockstep, one item pushed onto each per
// step, as the rows of a tile push their block partials. Each is a binary counter whose entries
// hold power-of-two runs, collapsed from the top at the end; the counters of lockstep trees are
// equal, so the run sizes are kept once. Room for kLevels levels: push m finds popcount(m - 1)
// entries and adds one before it merges, so 2^(kLevels - 1) pushes fit. Fixed size: no
// allocation.
template <class P, int kWidth, int kLevels>
class LockstepPairwiseStacks {
 public:
  // Pushes items[j] onto tree j for j in [0, width), width <= kWidth.
  template <class Merge>
  void push(const P* items, int width, Merge&& merge) {
    std::copy(items, items + width, item_[depth_]);
    size_[depth_] = 1;
    ++depth_;
    while (depth_ >= 2 && size_[depth_ - 1] == size_[depth_ - 2]) {
      merge_top(width, merge);
      size_[depth_ - 2] *= 2;
      --depth_;
    }
  }
  // Writes the combination of everything pushed onto tree j (at least one push) to out[j].
  template <class Merge>
  void collapse(P* out, int width, Merge&& merge) {
    while (depth_ >= 2) {
      merge_top(width, merge);
      --depth_;
    }
    std::copy(item_[0], item_[0] + width, out);
  }

 private:
  template <class Merge>
  void merge_top(int width, Merge& merge) {
    P* const below = item_[depth_ - 2];
    const P* const top = item_[depth_ - 1];
    for (int j = 0; j < width; ++j) below[j] = merge(below[j], top[j]);
  }

  P item_[kLevels][kWidth];
  int64_t size_[kLevels];
  int depth_ = 0;
};

// Combines items pushed in order along the pairwise tree, in O(log n) space: one tree, any count
// of items an int64 can hold.
template <class P>
class PairwiseStack {
 public:
  template <class Merge>
  void push(const P& p, Merge&& merge) {
    tree_.push(&p, 1, merge);
  }
  // The combination of everything pushed (at least one item).
  template <class Merge>
  P collapse(Merge&& merge) {
    P out;
    tree_.collapse(&out, 1, merge);
    return out;
  }

 private:
  LockstepPairwiseStacks<P, 1, 64> tree_;
};

// Levels of a tree over a row's reduction blocks: a row of a tensor has at most
// 2^63 / kReduceBlock = 2^51 blocks.
inline constexpr int kMaxBlockLevels = 52;
static_assert(int64_t{1} << (kMaxBlockLevels - 1) >=
              std::numeric_limits<int64_t>::max() / kReduceBlock + 1);

}  // namespace mantissa::detail
