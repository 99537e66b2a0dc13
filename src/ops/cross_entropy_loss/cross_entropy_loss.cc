// CrossEntropyLoss: contract and validation, the targets' check, one kernel written once for every
// SIMD target, then the reductions over rows. Per row of C logits x (widened exactly to fp32),
// target t, weights w (1 when absent), eps = label_smoothing; the order is normative
// (docs/ops/cross_entropy_loss.md):
//   m     = max_j x_j                       exact; a NaN makes it NaN
//   S     = sum_j exp(x_j - m)              x_j - m and the library's Exp in fp32; each term
//                                           widened to fp64 (exact) and summed in fp64 by
//                                           core/reduce.h's naive order (32 lanes, blocks of 4096,
//                                           the pairwise tree over blocks)
//   L     = log(hi) + (S - hi) / hi         hi = fp32(S); the library's Log of hi in fp32, the
//                                           correction and the sum in fp64, rounded to fp32
//   lse   = m + L                           fp32
//   lp_j  = (x_j - m) - L                   fp32, stored rounded once to the dtype (log_prob)
//   SW    = sum_j w_j * lp_j                eps > 0 only: products exact in fp64, summed as S
//   ce    = w_t * -lp_t                     fp64, eps = 0 (lp_t the fp32 value above)
//         = (1 - eps) * (w_t * -lp_t) + (eps / C) * -SW                fp64, in that order
//   ce = +0 on an ignored row (nothing of it is read for the loss).
// Then over rows, in fp64 (each sum in core/reduce.h's naive order over the rows in order):
//   z_i   = s * (lse_i * lse_i)             fp64 from the fp32 lse; +0 on an ignored row
//   none  loss_i = ce_i + z_i (s != 0) or ce_i; zloss_i = z_i
//   sum   loss = CE + Z (s != 0) or CE;  zloss = Z            CE = sum ce_i, Z = sum z_i
//   mean  loss = CE / W + Z / K (s != 0) or CE / W; zloss = Z / K
//         W = sum of the targets' weights over rows not ignored, K = their count
// each result rounded once from fp64 to the dtype; lse_for_zloss_i = lse_i rounded to the dtype.
//
// Traffic: a row is read from memory once. The max pass brings it into cache and the sum and
// output passes read it there (a row of a vocabulary fits in L2); log_prob is written once. Rows
// run in parallel; when there are few rows, long ones are cut into pieces of 16 blocks whose
// passes run in parallel (cross_entropy_split): the same block partials along the same tree, so
// the same bits, whatever the thread count.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/cross_entropy_loss/cross_entropy_loss.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/math-inl.h"
#include "core/parallel.h"
#include "core/reduce-inl.h"
#include "core/rows.h"
#include "core/simd-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/cross_entropy_loss/cross_entropy_loss_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

constexpr auto kNaive = detail::ReduceMethod::kNaive;

// exp(x_j - m) in fp32, widened to fp64: the terms of S. `next` (or null) is the next row, whose
// elements at the same offsets are fetched meanwhile: the sum is the row's compute-bound pass (it
// reads the row from cache), so memory brings in the next row instead of waiting for its max pass.
template <class Format>
struct ExpTerm {
  const typename Format::Storage* x;
  float max;
  const typename Format::Storage* next = nullptr;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    if (next != nullptr) hwy::Prefetch(next + i);
    const hn::Rebind<float, DA> df;
    return hn::PromoteTo(da, Exp(df, hn::Sub(LoadF32<Format>(df, x + i), hn::Set(df, max))));
  }
#if HWY_TARGET != HWY_SCALAR  // one lane: no pairs
  // Elements [i, i + 2 Lanes(da)) from one fp32 vector of twice the lanes (one Exp per pair; Exp
  // gives each lane's bits whatever the vector).
  template <class DA>
  HWY_INLINE void Pair(DA da, int64_t i, hn::Vec<DA>& lo, hn::Vec<DA>& hi) const {
    if (next != nullptr) hwy::Prefetch(next + i);
    const hn::Repartition<float, DA> df;
    const hn::Half<decltype(df)> dh;
    const auto e = Exp(df, hn::Sub(LoadF32<Format>(df, x + i), hn::Set(df, max)));
    lo = hn::PromoteTo(da, hn::LowerHalf(dh, e));
    hi = hn::PromoteTo(da, hn::UpperHalf(dh, e));
  }
#endif
};

// lp_j = (x_j - m) - L, in fp32 lanes.
template <class Format, class DF>
HWY_INLINE hn::Vec<DF> LogProb(DF df, const typename Format::Storage* HWY_RESTRICT x, float max,
                               float log_sum) {
  return hn::Sub(hn::Sub(LoadF32<Format>(df, x), hn::Set(df, max)), hn::Set(df, log_sum));
}

// The output pass with label smoothing, as the terms of SW: stores lp_j rounded to the dtype and
// gives w_j * lp_j in fp64 (exact). The naive sum calls it once per element.
template <class Format, bool kWeighted>
struct LogProbTerm {
  using S = typename Format::Storage;
  const S* x;
  S* y;
  const float* w;
  float max, log_sum;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    const hn::Rebind<float, DA> df;
    const auto lp = LogProb<Format>(df, x + i, max, log_sum);
    StoreResult<Format>(df, lp, y + i);
    if constexpr (kWeighted) {
      return hn::Mul(hn::PromoteTo(da, hn::LoadU(df, w + i)), hn::PromoteTo(da, lp));
    } else {
      return hn::PromoteTo(da, lp);
    }
  }
#if HWY_TARGET != HWY_SCALAR
  template <class DA>
  HWY_INLINE void Pair(DA da, int64_t i, hn::Vec<DA>& lo, hn::Vec<DA>& hi) const {
    const hn::Repartition<float, DA> df;
    const hn::Half<decltype(df)> dh;
    const auto lp = LogProb<Format>(df, x + i, max, log_sum);
    StoreResult<Format>(df, lp, y + i);
    lo = hn::PromoteTo(da, hn::LowerHalf(dh, lp));
    hi = hn::PromoteTo(da, hn::UpperHalf(dh, lp));
    if constexpr (kWeighted) {
      const auto wv = hn::LoadU(df, w + i);
      lo = hn::Mul(hn::PromoteTo(da, hn::LowerHalf(dh, wv)), lo);
      hi = hn::Mul(hn::PromoteTo(da, hn::UpperHalf(dh, wv)), hi);
    }
  }
#endif
};

// The output pass without label smoothing over elements [begin, end) of one row; row x_next (or
// null) is fetched meanwhile.
template <class Format>
HWY_INLINE void StoreLogProbs(const typename Format::Storage* HWY_RESTRICT x,
                              typename Format::Storage* HWY_RESTRICT y, int64_t begin, int64_t end,
                              float max, float log_sum,
                              const typename Format::Storage* HWY_RESTRICT x_next) {
  ForEachVector(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
    if (x_next != nullptr) hwy::Prefetch(x_next + i);
    StoreResult<Format>(d, LogProb<Format>(d, x + i, max, log_sum), y + i);
  });
}

// L = log(S) as log(hi) + (S - hi) / hi, hi = fp32(S): the library's Log of hi in fp32, widened,
// plus the correction in fp64 (the first term of log1p((S - hi) / hi); the next is below 2^-49
// relative), the sum rounded once to fp32. Without the correction a row whose target dominates
// (S = 1 + tiny) would lose the tiny part to hi's rounding: log(hi) alone is off by up to 2^-24
// absolute, thousands of ulp of such an L. S is NaN or in [1, C] (the max's own term is
// exp(0) = 1), so hi is exact in range and at least 1.
HWY_INLINE float LogOfSum(double sum) {
  const hn::CappedTag<float, 1> d1;
  const auto hi = static_cast<float>(sum);
  const float log_hi = hn::GetLane(Log(d1, hn::Set(d1, hi)));
  if (!(hi < HUGE_VALF)) return log_hi;  // NaN (or inf): no correction
  const double correction = (sum - static_cast<double>(hi)) / static_cast<double>(hi);
  return static_cast<float>(static_cast<double>(log_hi) + correction);
}

// Row r's per-row values from its statistics: lse_r, and ce_r from lp_t (computed as the output
// pass computes it) and SW.
template <class Format>
HWY_INLINE void FinishRow(const detail::CrossEntropyLossKernelArgs& a, int64_t r, float max,
                          float log_sum, double wsum) {
  a.lse[r] = max + log_sum;
  const int64_t t = a.column[r];
  if (t < 0) {
    a.ce[r] = 0.0;
    return;
  }
  const auto* const x = static_cast<const typename Format::Storage*>(a.input) + r * a.classes;
  const hn::CappedTag<float, 1> d1;
  const float lp = hn::GetLane(LogProb<Format>(d1, x + t, max, log_sum));
  const double w = a.weight != nullptr ? static_cast<double>(a.weight[t]) : 1.0;
  const double nll = w * -static_cast<double>(lp);
  a.ce[r] = a.label_smoothing > 0.0 ? a.smooth_keep * nll + a.smooth_share * -wsum : nll;
}

// Rows [begin, end), each whole: max (from memory), sum and output (from cache).
template <class Format, bool kSmooth, bool kWeighted>
void WholeRows(const detail::CrossEntropyLossKernelArgs& a, int64_t begin, int64_t end) {
  using S = typename Format::Storage;
  const int64_t n = a.classes;
  const S* const x_all = static_cast<const S*>(a.input);
  S* const y_all = static_cast<S*>(a.log_prob);
  const float* const w = a.weight;
  const int64_t fetched_row_bytes = a.fetched_row_bytes;
  for (int64_t r = begin; r < end; ++r) {
    const S* const x = x_all + r * n;
    S* const y = y_all + r * n;
    const float max = MaxRow(MaxTerm<Format, false>{x}, n, -std::numeric_limits<float>::infinity());
    // The next row (of this block) is fetched during the sum when the three rows in flight (this
    // one, the next, and this one's log_prob) fit in L2 (a prefetched row would otherwise push
    // out the one being read).
    const S* const next =
        r + 1 < end && n * static_cast<int64_t>(sizeof(S)) <= fetched_row_bytes ? x + n : nullptr;
    const float log_sum = LogOfSum(ReduceRow<kNaive, double>(ExpTerm<Format>{x, max, next}, n));
    double wsum = 0.0;
    if constexpr (kSmooth) {
      wsum = ReduceRow<kNaive, double>(LogProbTerm<Format, kWeighted>{x, y, w, max, log_sum}, n);
    } else {
      StoreLogProbs<Format>(x, y, 0, n, max, log_sum, nullptr);
    }
    FinishRow<Format>(a, r, max, log_sum, wsum);
  }
}

static_assert(sizeof(MaxPartial) <= 8, "the workspace keeps 8 bytes per block max");

// Few rows, long ones: every pass cut into pieces of kCrossEntropyPieceBlocks blocks run in
// parallel, each storing its blocks' partials; each row's partials then combine along the tree
// MaxRow and ReduceRow use (PairwiseStack over the blocks in order), so the values are those of
// WholeRows.
template <class Format, bool kSmooth, bool kWeighted>
void SplitRows(const detail::CrossEntropyLossKernelArgs& a) {
  using S = typename Format::Storage;
  constexpr int64_t kBlock = detail::kReduceBlock;
  const int64_t n = a.classes, rows = a.rows;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  const int64_t pieces =
      (blocks + detail::kCrossEntropyPieceBlocks - 1) / detail::kCrossEntropyPieceBlocks;
  const S* const x_all = static_cast<const S*>(a.input);
  S* const y_all = static_cast<S*>(a.log_prob);
  auto* const block_max = static_cast<MaxPartial*>(a.block_max);
  double* const block_sum = a.block_sum;
  double* const block_wsum = a.block_wsum;
  // fn(r, b) for every block b of every row r, pieces in parallel.
  auto for_each_block = [&](auto&& fn) {
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t r = task / pieces;
        const int64_t b0 = (task % pieces) * detail::kCrossEntropyPieceBlocks;
        const int64_t b1 = std::min(blocks, b0 + detail::kCrossEntropyPieceBlocks);
        for (int64_t b = b0; b < b1; ++b) fn(r, b);
      }
    };
    detail::parallel_for(rows * pieces, 1, body);
  };
  auto len_of = [&](int64_t b) { return std::min(kBlock, n - b * kBlock); };
  float max[detail::kCrossEntropySplitRowsBelow], log_sum[detail::kCrossEntropySplitRowsBelow];

  for_each_block([&](int64_t r, int64_t b) {
    block_max[r * blocks + b] =
        MaxBlock(MaxTerm<Format, false>{x_all + r * n}, b * kBlock, len_of(b));
  });
  for (int64_t r = 0; r < rows; ++r) {
    detail::PairwiseStack<MaxPartial> stack;
    for (int64_t b = 0; b < blocks; ++b) stack.push(block_max[r * blocks + b], MergeMax);
    max[r] = MaxValue(stack.collapse(MergeMax));
  }

  const auto merge = [](const detail::Partial<double>& p, const detail::Partial<double>& q) {
    return detail::merge<kNaive>(p, q);
  };
  // The row's total of block partials `parts`, as ReduceRow finishes it.
  auto row_total = [&](const double* parts) {
    detail::PairwiseStack<detail::Partial<double>> stack;
    for (int64_t b = 0; b < blocks; ++b) stack.push(detail::Partial<double>{parts[b], -0.0}, merge);
    return detail::finish<kNaive>(stack.collapse(merge));
  };

  for_each_block([&](int64_t r, int64_t b) {
    block_sum[r * blocks + b] =
        ReduceBlock<kNaive, double>(ExpTerm<Format>{x_all + r * n, max[r]}, b * kBlock, len_of(b))
            .sum;
  });
  for (int64_t r = 0; r < rows; ++r) log_sum[r] = LogOfSum(row_total(block_sum + r * blocks));

  const float* const w = a.weight;
  for_each_block([&](int64_t r, int64_t b) {
    const S* const x = x_all + r * n;
    S* const y = y_all + r * n;
    if constexpr (kSmooth) {
      block_wsum[r * blocks + b] =
          ReduceBlock<kNaive, double>(LogProbTerm<Format, kWeighted>{x, y, w, max[r], log_sum[r]},
                                      b * kBlock, len_of(b))
              .sum;
    } else {
      StoreLogProbs<Format>(x, y, b * kBlock, b * kBlock + len_of(b), max[r], log_sum[r], nullptr);
    }
  });
  for (int64_t r = 0; r < rows; ++r) {
    FinishRow<Format>(a, r, max[r], log_sum[r], kSmooth ? row_total(block_wsum + r * blocks) : 0.0);
  }
}

template <class Format, bool kSmooth, bool kWeighted>
void CrossEntropyLossFormat(const detail::CrossEntropyLossKernelArgs& a) {
  if (detail::cross_entropy_split(a.rows, a.classes)) {
    SplitRows<Format, kSmooth, kWeighted>(a);
    return;
  }
  detail::for_each_row_block(detail::Rows{a.rows, a.classes, 1}, [&](int64_t begin, int64_t end) {
    WholeRows<Format, kSmooth, kWeighted>(a, begin, end);
  });
}

void CrossEntropyLossImpl(const detail::CrossEntropyLossKernelArgs& a) {
  VisitFormat(a.dtype, [&](auto format) {
    using F = decltype(format);
    if (a.label_smoothing <= 0.0) {
      CrossEntropyLossFormat<F, false, false>(a);
    } else if (a.weight != nullptr) {
      CrossEntropyLossFormat<F, true, true>(a);
    } else {
      CrossEntropyLossFormat<F, true, false>(a);
    }
  });
}

// The naive fp64 sum of v[0, n) in core/reduce.h's order.
double SumF64Impl(const double* v, int64_t n) {
  return ReduceRow<kNaive, double>([v](auto da, int64_t i) { return hn::LoadU(da, v + i); }, n);
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <unistd.h>

#include <bit>
#include <cmath>
#include <optional>
#include <string_view>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "ops/cross_entropy_loss/cross_entropy_loss_desc.h"

namespace mantissa {

HWY_EXPORT(CrossEntropyLossImpl);
HWY_EXPORT(SumF64Impl);

bool loss_reduction_from_name(const char* name, LossReduction& reduction) noexcept {
  if (name == nullptr) return false;
  for (const detail::GraphString& s : detail::kLossReductionStrings) {
    if (std::string_view(name) == s.name) {
      reduction = static_cast<LossReduction>(s.value);
      return true;
    }
  }
  return false;
}

const char* loss_reduction_name(LossReduction reduction) noexcept {
  for (const detail::GraphString& s : detail::kLossReductionStrings) {
    if (static_cast<int64_t>(reduction) == s.value) return s.name.data();
  }
  return nullptr;
}

namespace detail {

int64_t cross_entropy_fetched_row_bytes() {
  static const int64_t bytes = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return static_cast<int64_t>(l2 > 0 ? l2 : 256 * 1024) / 3;
  }();
  return bytes;
}

double documented_sum_f64(const double* v, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(SumF64Impl)(v, n);
}

float to_f32(double v) noexcept {
  // Beyond FLT_MAX and half its ulp the value rounds to inf (a cast would be undefined there).
  if (std::fabs(v) >= 0x1.ffffffp+127) return v > 0 ? HUGE_VALF : -HUGE_VALF;
  return static_cast<float>(v);
}

void store_rounded_once(DType dtype, void* data, std::size_t i, double v) noexcept {
  if (std::isnan(v)) {
    store_from_float(dtype, data, i, std::numeric_limits<float>::quiet_NaN());  // canonical
    return;
  }
  float f = to_f32(v);
  if (dtype != DType::kFloat32 && std::isfinite(f) && static_cast<double>(f) != v) {
    // Round to odd: of the two fp32 neighbours of v, the one whose last bit is 1. fp32 keeps at
    // least 13 more bits than fp16 or bf16, so rounding that to nearest even rounds v once.
    uint32_t bits = std::bit_cast<uint32_t>(f);
    if ((bits & 1u) == 0) {
      bits = std::fabs(v) > std::fabs(static_cast<double>(f)) ? bits + 1u : bits - 1u;
      f = std::bit_cast<float>(bits);
    }
  }
  store_from_float(dtype, data, i, f);
}

Status read_targets(std::string_view op, const TensorView& target, int64_t classes,
                    int64_t ignore_index, const float* weight, int64_t* column, double* weight_of,
                    int64_t& kept) {
  const int64_t rows = target.shape[0];
  const bool wide = target.dtype == DType::kInt64;
  kept = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t v = wide ? static_cast<const int64_t*>(target.data)[i]
                           : int64_t{static_cast<const int32_t*>(target.data)[i]};
    if (v == ignore_index) {
      column[i] = -1;
      weight_of[i] = 0.0;
      continue;
    }
    if (v < 0 || v >= classes) {
      return fail(StatusCode::kParamInvalid, op,
                  "target[{}] = {} is outside [0, {}) (the classes of input) and is not "
                  "ignore_index ({})",
                  i, v, classes, ignore_index);
    }
    column[i] = v;
    weight_of[i] = weight != nullptr ? static_cast<double>(weight[v]) : 1.0;
    ++kept;
  }
  return {};
}

Status check_cross_entropy_loss_params(const CrossEntropyLossTensors& t,
                                       const CrossEntropyLossParams& p) {
  constexpr std::string_view op = CrossEntropyLossOp::kType;
  if (loss_reduction_name(p.reduction) == nullptr) {
    return fail(StatusCode::kParamInvalid, op, "reduction {} is not 0 (none), 1 (mean) or 2 (sum)",
                static_cast<int64_t>(p.reduction));
  }
  if (!(p.label_smoothing >= 0.0 && p.label_smoothing <= 1.0)) {
    return fail(StatusCode::kParamInvalid, op, "label_smoothing {} is outside [0, 1]",
                p.label_smoothing);
  }
  if (!(p.lse_square_scale_for_zloss >= 0.0 && p.lse_square_scale_for_zloss < 1.0)) {
    return fail(StatusCode::kParamInvalid, op, "lse_square_scale_for_zloss {} is outside [0, 1)",
                p.lse_square_scale_for_zloss);
  }
  const int64_t rows = t.input.shape[0], classes = t.input.shape[1];
  if (classes < 1) {
    return fail(StatusCode::kParamInvalid, op, "input {} has no classes (C must be at least 1)",
                t.input.shape_string());
  }
  if (t.target.shape[0] != rows) {
    return fail(StatusCode::kParamInvalid, op,
                "target {} does not hold one class per row of input {}", t.target.shape_string(),
                t.input.shape_string());
  }
  if (t.weight && t.weight->shape[0] != classes) {
    return fail(StatusCode::kParamInvalid, op,
                "weight {} does not hold one value per class of input {}", t.weight->shape_string(),
                t.input.shape_string());
  }
  const char* reduction = loss_reduction_name(p.reduction);
  for (const TensorView* v : {&t.loss, &t.zloss}) {
    const char* name = v == &t.loss ? "loss" : "zloss";
    if (p.reduction == LossReduction::kNone) {
      if (v->rank != 1 || v->shape[0] != rows) {
        return fail(StatusCode::kParamInvalid, op,
                    "{} {} must be [{}] with reduction none (one value per row of input {})", name,
                    v->shape_string(), rows, t.input.shape_string());
      }
    } else if (v->numel().value_or(0) != 1) {
      return fail(StatusCode::kParamInvalid, op, "{} {} must hold one element with reduction {}",
                  name, v->shape_string(), reduction);
    }
  }
  return {};
}

}  // namespace detail

namespace {

// The call's workspace: per row its class (int64), its target's weight, ce (fp64), lse (fp32),
// z (fp64); for split rows the block partials of the three passes.
struct ForwardLayout {
  uint64_t column = 0, weight_of = 0, ce = 0, z = 0, lse = 0, block_max = 0, block_sum = 0,
           block_wsum = 0, bytes = 0;
};

std::optional<ForwardLayout> forward_layout(int64_t rows, int64_t classes) {
  if (rows < 0 || classes < 0) return std::nullopt;
  const auto r = static_cast<uint64_t>(rows);
  if (r > (uint64_t{1} << 56)) return std::nullopt;
  ForwardLayout l;
  uint64_t at = 0;
  auto take = [&](uint64_t& field, uint64_t bytes) {
    field = at;
    at += (bytes + 63) / 64 * 64;
  };
  take(l.column, r * 8);
  take(l.weight_of, r * 8);
  take(l.ce, r * 8);
  take(l.z, r * 8);
  take(l.lse, r * 4);
  if (detail::cross_entropy_split(rows, classes)) {
    const auto blocks =
        static_cast<uint64_t>((classes + detail::kReduceBlock - 1) / detail::kReduceBlock);
    take(l.block_max, r * blocks * 8);
    take(l.block_sum, r * blocks * 8);
    take(l.block_wsum, r * blocks * 8);
  }
  l.bytes = at;
  return l;
}

}  // namespace

uint64_t cross_entropy_loss_workspace_size(const CrossEntropyLossTensors& t,
                                           const CrossEntropyLossParams&) {
  if (t.input.rank != 2) return 0;
  const std::optional<ForwardLayout> l = forward_layout(t.input.shape[0], t.input.shape[1]);
  return l && l->bytes != 0 ? l->bytes + 64 : 0;  // + 64: room to align a lent workspace
}

// Validation is derived from the declaration (cross_entropy_loss_desc.h): the outputs share no
// byte with any other tensor of the call.
Status cross_entropy_loss_validate(const CrossEntropyLossTensors& t,
                                   const CrossEntropyLossParams& p) {
  return detail::validate<detail::CrossEntropyLossOp>(t, p);
}

Status cross_entropy_loss(const CrossEntropyLossTensors& t, const CrossEntropyLossParams& p,
                          Workspace ws) {
  using Op = detail::CrossEntropyLossOp;
  return detail::op_entry<Op>(t, p, [&]() -> Status {
    const int64_t rows = t.input.shape[0], classes = t.input.shape[1];
    const std::optional<ForwardLayout> layout = forward_layout(rows, classes);
    if (!layout) {
      return detail::fail(StatusCode::kInner, Op::kType,
                          "{} rows need more per-row workspace than can be addressed", rows);
    }
    const ForwardLayout& l = *layout;
    const detail::AlignedScratch scratch(ws, l.bytes);
    if (l.bytes != 0 && scratch.data() == nullptr) {
      return detail::fail(StatusCode::kInner, Op::kType,
                          "cannot allocate {} bytes for the per-row values (lend a workspace of "
                          "cross_entropy_loss_workspace_size bytes)",
                          l.bytes);
    }
    const float* const weight =
        t.weight ? static_cast<const float*>(t.weight->data) : static_cast<const float*>(nullptr);
    int64_t* const column = scratch.at<int64_t>(l.column);
    double* const weight_of = scratch.at<double>(l.weight_of);
    int64_t kept = 0;
    // Every target is read before anything is written.
    MANTISSA_RETURN_IF_ERROR(detail::read_targets(Op::kType, t.target, classes, p.ignore_index,
                                                  weight, column, weight_of, kept));
    // The attributes enter as their fp32 values (CANN's graph attributes are Float), so every
    // path, aclnn's doubles and op-by-name's floats, computes the same bits.
    const double eps = detail::to_f32(p.label_smoothing);
    const double s = detail::to_f32(p.lse_square_scale_for_zloss);
    double* const ce = scratch.at<double>(l.ce);
    double* const z = scratch.at<double>(l.z);
    float* const lse = scratch.at<float>(l.lse);
    if (rows > 0) {
      detail::CrossEntropyLossKernelArgs a;
      a.dtype = t.input.dtype;
      a.rows = rows;
      a.classes = classes;
      a.input = t.input.data;
      a.log_prob = t.log_prob.data;
      a.weight = weight;
      a.column = column;
      a.label_smoothing = eps;
      a.smooth_keep = 1.0 - eps;
      a.smooth_share = eps / static_cast<double>(classes);
      a.ce = ce;
      a.lse = lse;
      a.fetched_row_bytes = detail::cross_entropy_fetched_row_bytes();
      if (detail::cross_entropy_split(rows, classes)) {
        a.block_max = scratch.data() + l.block_max;
        a.block_sum = scratch.at<double>(l.block_sum);
        a.block_wsum = scratch.at<double>(l.block_wsum);
      }
      HWY_DYNAMIC_DISPATCH(CrossEntropyLossImpl)(a);
    }
    const DType dtype = t.input.dtype;
    const bool with_z = s != 0.0;
    for (int64_t i = 0; i < rows; ++i) {
      const auto at = static_cast<std::size_t>(i);
      detail::store_rounded_once(dtype, t.lse_for_zloss.data, at, static_cast<double>(lse[i]));
      const double l_i = static_cast<double>(lse[i]);
      z[i] = with_z && column[i] >= 0 ? s * (l_i * l_i) : 0.0;
    }
    switch (p.reduction) {
      case LossReduction::kNone:
        for (int64_t i = 0; i < rows; ++i) {
          const auto at = static_cast<std::size_t>(i);
          detail::store_rounded_once(dtype, t.loss.data, at, with_z ? ce[i] + z[i] : ce[i]);
          detail::store_rounded_once(dtype, t.zloss.data, at, z[i]);
        }
        break;
      case LossReduction::kSum: {
        const double total = detail::documented_sum_f64(ce, rows);
        const double z_total = detail::documented_sum_f64(z, rows);
        detail::store_rounded_once(dtype, t.loss.data, 0, with_z ? total + z_total : total);
        detail::store_rounded_once(dtype, t.zloss.data, 0, z_total);
        break;
      }
      case LossReduction::kMean: {
        const double total = detail::documented_sum_f64(ce, rows);
        const double weight_sum = detail::documented_sum_f64(weight_of, rows);
        const double z_mean = detail::documented_sum_f64(z, rows) / static_cast<double>(kept);
        const double mean = total / weight_sum;  // 0 / 0: NaN when every target is ignored
        detail::store_rounded_once(dtype, t.loss.data, 0, with_z ? mean + z_mean : mean);
        detail::store_rounded_once(dtype, t.zloss.data, 0, z_mean);
        break;
      }
    }
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
