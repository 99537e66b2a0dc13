// LayerNormGrad: contract and validation, then the kernels written once for every SIMD target.
// Per row of n elements, with mean and rstd read from the forward's (widened exactly to fp64) and
// w = weight (1 when absent), in this order, which is normative:
//   xhat_i = (x_i - mean) * rstd             fp64
//   g_i    = dy_i * w_i                      fp64 (exact)
//   s1 = sum of g_i, s2 = sum of g_i * xhat_i   fp64 terms, each summed in the order of
//                                            core/reduce.h (naive method, fp64 lanes)
//   dx_i   = (g_i - (s1 / n + xhat_i * (s2 / n))) * rstd   fp64 operations, rounded to fp32,
//                                            then to dx's dtype
// dweight_j = sum over rows of dy_ij * xhat_ij, dbias_j = sum over rows of dy_ij: fp64 terms
// summed in the order of core/rows.h's column_sum_plan (rows in order within a block, block
// partials along the pairwise tree), rounded to fp32, then to their dtype. NaN results are
// stored as the canonical quiet NaN.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/layer_norm_grad/layer_norm_grad.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/parallel.h"
#include "core/reduce-inl.h"
#include "core/rows.h"
#include "core/runtime_internal.h"
#include "core/short_rows-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/layer_norm/layer_norm_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// The row's statistics, widened exactly to fp64.
struct RowStats {
  double mean, rstd;
};
inline RowStats LoadStats(const detail::LayerNormGradKernelArgs& a, int64_t row) {
  const auto r = static_cast<std::size_t>(row);
  return {load_as_float(a.stats_dtype, a.mean, r), load_as_float(a.stats_dtype, a.rstd, r)};
}

// g = dy * w in the accumulator's lanes (fp64).
template <class XF, class PF, bool kWeight, class DA>
HWY_INLINE hn::Vec<DA> LoadG(DA da, const typename XF::Storage* dy, const typename PF::Storage* w,
                             int64_t i) {
  const auto v = LoadAcc<XF>(da, dy + i);
  if constexpr (kWeight) {
    return hn::Mul(v, LoadAcc<PF>(da, w + i));
  } else {
    return v;
  }
}

template <class XF, class DA>
HWY_INLINE hn::Vec<DA> LoadXhat(DA da, const typename XF::Storage* x, RowStats st, int64_t i) {
  return hn::Mul(hn::Sub(LoadAcc<XF>(da, x + i), hn::Set(da, st.mean)), hn::Set(da, st.rstd));
}

template <class XF, class PF, bool kWeight>
struct GTerm {
  const typename XF::Storage* dy;
  const typename PF::Storage* w;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    return LoadG<XF, PF, kWeight>(da, dy, w, i);
  }
};

template <class XF, class PF, bool kWeight>
struct GXhatTerm {
  const typename XF::Storage* dy;
  const typename XF::Storage* x;
  const typename PF::Storage* w;
  RowStats st;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    return hn::Mul(LoadG<XF, PF, kWeight>(da, dy, w, i), LoadXhat<XF>(da, x, st, i));
  }
};

// The dx terms of a row: m1 = s1 / n, m2 = s2 / n; no_nan where the row's dx cannot be NaN.
//
// Why: s1 and s2 finite mean every g and every g * xhat is finite (an infinite or NaN term makes
// an fp64 sum so, and these cannot overflow it), so every g and xhat is finite; with rstd finite,
// g - (m1 + xhat * m2) is finite or +-inf (the product may overflow only for a large xhat, whose
// rstd is then not 0), and so is its product with rstd. Such rows skip the NaN step (same bits).
struct RowTerms {
  double m1, m2;
  bool no_nan;
};
template <class XF, class PF, bool kWeight>
RowTerms RowTermsOf(const typename XF::Storage* dy, const typename XF::Storage* x,
                    const typename PF::Storage* w, RowStats st, int64_t n) {
  const GTerm<XF, PF, kWeight> g_term{dy, w};
  const GXhatTerm<XF, PF, kWeight> gxhat_term{dy, x, w, st};
  double s1, s2;
  if (kRowsAtOnce<detail::ReduceMethod::kNaive, double> >= 2) {
    // Both sums in one pass over the row, their accumulation chains interleaved (the same
    // additions as ReduceRow's).
    double sums[2];
    ReduceRows<detail::ReduceMethod::kNaive, double, 2>(
        [&](size_t k, auto da, int64_t i) { return k == 0 ? g_term(da, i) : gxhat_term(da, i); }, n,
        sums);
    s1 = sums[0];
    s2 = sums[1];
  } else {
    s1 = ReduceRow<detail::ReduceMethod::kNaive, double>(g_term, n);
    s2 = ReduceRow<detail::ReduceMethod::kNaive, double>(gxhat_term, n);
  }
  const auto nd = static_cast<double>(n);
  return {s1 / nd, s2 / nd, std::isfinite(s1) && std::isfinite(s2) && std::isfinite(st.rstd)};
}

// dx of one vector of row elements from its g and xhat, in fp64 (before the rounding to fp32).
template <class DD>
HWY_INLINE hn::Vec<DD> DxOf(DD dd, hn::Vec<DD> g, hn::Vec<DD> xhat, RowTerms t, double rstd) {
  const auto inner = hn::Add(hn::Set(dd, t.m1), hn::Mul(xhat, hn::Set(dd, t.m2)));
  return hn::Mul(hn::Sub(g, inner), hn::Set(dd, rstd));
}

// Columns [c0, c1) of row block b: the block's partial sums of dy * xhat (into pw) and of dy
// (into pb), rows in order, fp64. Each column's sum is independent of the vector width. With
// kDx (whole rows only: c0 = 0, c1 = n), also dx of the block's rows, in the same pass over x
// and dy: each row's sums first, then dx and the column sums together, column group by column
// group.
template <class XF, class PF, bool kWeight, bool kDx>
void ColumnBlock(const detail::LayerNormGradKernelArgs& a, int64_t b, int64_t c0, int64_t c1,
                 double* pw, double* pb) {
  using XS = typename XF::Storage;
  using PS = typename PF::Storage;
  const XS* const dy_all = static_cast<const XS*>(a.dy);
  const XS* const x_all = static_cast<const XS*>(a.x);
  const PS* const w = static_cast<const PS*>(a.weight);
  XS* const dx_all = static_cast<XS*>(a.dx);
  const int64_t n = a.n;
  const int64_t r0 = b * a.plan.rows_per_block;
  const int64_t r1 = std::min(a.rows, r0 + a.plan.rows_per_block);
  const bool xhat_wanted = kDx || pw != nullptr;
  // The rows go in chunks whose statistics (and dx terms) are computed once; each column's sums
  // continue from chunk to chunk in the partials, rows in increasing order.
  constexpr int64_t kChunk = 256;
  RowStats stats[kChunk];
  RowTerms terms[kChunk];
  for (int64_t q0 = r0; q0 < r1; q0 += kChunk) {
    const int64_t q1 = std::min(r1, q0 + kChunk);
    for (int64_t row = q0; xhat_wanted && row < q1; ++row) stats[row - q0] = LoadStats(a, row);
    if constexpr (kDx) {
      for (int64_t row = q0; row < q1; ++row) {
        terms[row - q0] =
            RowTermsOf<XF, PF, kWeight>(dy_all + row * n, x_all + row * n, w, stats[row - q0], n);
      }
    }
    // detail::kColumnSumVectors vectors of columns at a time: whole cache lines of each row, and
    // independent accumulation chains.
    ForEachDoubleVectorGroup<detail::kColumnSumVectors>(
        c0, c1, [&](auto dd, int64_t j, auto count) MANTISSA_VECTOR_BODY {
          constexpr size_t K = decltype(count)::value;
          const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
          using V = hn::Vec<decltype(dd)>;
          V sw[K], sb[K], wk[K];
          for (size_t k = 0; k < K; ++k) {  // -0 is the identity of addition
            const int64_t col = j + static_cast<int64_t>(k) * lanes;
            sw[k] = pw != nullptr && q0 != r0 ? hn::LoadU(dd, pw + b * n + col) : hn::Set(dd, -0.0);
            sb[k] = pb != nullptr && q0 != r0 ? hn::LoadU(dd, pb + b * n + col) : hn::Set(dd, -0.0);
            if constexpr (kDx && kWeight) wk[k] = LoadAcc<PF>(dd, w + col);
          }
          // One row's vectors; the row's NaN case chosen once per row, not per vector. An even
          // group stores its dx two vectors at a time (StoreResults: one narrowing per pair).
          const auto one_row = [&](int64_t row, auto nan_lanes) MANTISSA_VECTOR_BODY {
            constexpr NaNLanes kNaN = decltype(nan_lanes)::value;
            V dxk[K];
#pragma GCC unroll 4
            for (size_t k = 0; k < K; ++k) {
              const int64_t col = j + static_cast<int64_t>(k) * lanes;
              const auto dy = LoadAcc<XF>(dd, dy_all + row * n + col);
              if (xhat_wanted) {
                const RowStats st = stats[row - q0];
                const auto xhat = LoadXhat<XF>(dd, x_all + row * n, st, col);
                if constexpr (kDx) {
                  const auto g = kWeight ? hn::Mul(dy, wk[k]) : dy;
                  dxk[k] = DxOf(dd, g, xhat, terms[row - q0], st.rstd);
                }
                if (pw != nullptr) sw[k] = hn::Add(sw[k], hn::Mul(dy, xhat));
              }
              sb[k] = hn::Add(sb[k], dy);
            }
            if constexpr (kDx) StoreResults<XF, kNaN>(dd, dxk, dx_all + row * n + j);
          };
          for (int64_t row = q0; row < q1; ++row) {
            if (!kDx || terms[row - q0].no_nan) {
              one_row(row, std::integral_constant<NaNLanes, kNoNaN>());
            } else {
              one_row(row, std::integral_constant<NaNLanes, NaNLanes::kPossible>());
            }
          }
          for (size_t k = 0; k < K; ++k) {
            const int64_t at = b * n + j + static_cast<int64_t>(k) * lanes;
            if (pw != nullptr) hn::StoreU(sw[k], dd, pw + at);
            if (pb != nullptr) hn::StoreU(sb[k], dd, pb + at);
          }
        });
  }
}

// Rows of kVectors fp64 vectors (one or two of the kReduceLanes-lane groups of core/reduce.h), rows
// [r0, r1) of the block whose column partials are pw and pb (rows of n doubles; null when not
// wanted): each row read once. Its vectors of g and xhat are kept while its two sums are taken from
// them in core/reduce.h's order (NaiveSumsOfVectors: ReduceRow's additions, as RowTermsOf takes
// them), then dx comes from the same vectors. The rows are software-pipelined
// (ForEachRowTwoInFlight): the next row is read and summed before this row's dx is stored, so that
// the latency of one row's sums (a chain of dependent additions ending in the division) overlaps
// the other row's work. The column partials grow row by row, rows in order, as ColumnBlock's do.
template <class XF, class PF, bool kWeight, size_t kVectors>
void ShortRows(const detail::LayerNormGradKernelArgs& a, int64_t r0, int64_t r1, double* pw,
               double* pb) {
  using XS = typename XF::Storage;
  using PS = typename PF::Storage;
  const AccTag<double> dd;
  using V = hn::Vec<AccTag<double>>;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
  const int64_t n = a.n;
  // n is a power of two (kReduceLanes or twice that): s * (1 / n) is s / n, the same rounding of
  // the same real number.
  static_assert((detail::kReduceLanes & (detail::kReduceLanes - 1)) == 0);
  const double inv_n = 1.0 / static_cast<double>(n);
  const PS* const w = static_cast<const PS*>(a.weight);
  if (r0 >= r1) return;
  for (int64_t j = 0; j < n; j += lanes) {  // -0 is the identity of addition
    if (pw != nullptr) hn::StoreU(hn::Set(dd, -0.0), dd, pw + j);
    if (pb != nullptr) hn::StoreU(hn::Set(dd, -0.0), dd, pb + j);
  }
  struct Row {
    V g[kVectors], xhat[kVectors];
    RowTerms t{};
    double rstd = 0.0;
  };
  // Reads the row: g, xhat, its column terms and its sums.
  const auto read = [&](int64_t row, Row& r) MANTISSA_VECTOR_BODY {
    const XS* const dy = static_cast<const XS*>(a.dy) + row * n;
    const XS* const x = static_cast<const XS*>(a.x) + row * n;
    const RowStats st = LoadStats(a, row);
    double sums[2];
    NaiveSumsOfVectors<double, 2, kVectors>(
        [&](size_t v, V(&terms)[2]) MANTISSA_VECTOR_BODY {
          const int64_t at = static_cast<int64_t>(v) * lanes;
          const V dyv = LoadAcc<XF>(dd, dy + at);
          r.xhat[v] = LoadXhat<XF>(dd, x, st, at);
          if (pw != nullptr) {
            hn::StoreU(hn::Add(hn::LoadU(dd, pw + at), hn::Mul(dyv, r.xhat[v])), dd, pw + at);
          }
          if (pb != nullptr) hn::StoreU(hn::Add(hn::LoadU(dd, pb + at), dyv), dd, pb + at);
          r.g[v] = kWeight ? hn::Mul(dyv, LoadAcc<PF>(dd, w + at)) : dyv;
          terms[0] = r.g[v];
          terms[1] = hn::Mul(r.g[v], r.xhat[v]);
        },
        sums);
    r.t = {sums[0] * inv_n, sums[1] * inv_n,
           std::isfinite(sums[0]) && std::isfinite(sums[1]) && std::isfinite(st.rstd)};
    r.rstd = st.rstd;
  };
  // Stores the row's dx, two vectors per narrowing.
  const auto write = [&](int64_t row, const Row& r) MANTISSA_VECTOR_BODY {
    XS* const dx = static_cast<XS*>(a.dx) + row * n;
    const auto pass = [&](auto nan_lanes) MANTISSA_VECTOR_BODY {
      constexpr NaNLanes kNaN = decltype(nan_lanes)::value;
#pragma GCC unroll 32
      for (size_t v = 0; v < kVectors; v += 2) {
        const V pair[2] = {DxOf(dd, r.g[v], r.xhat[v], r.t, r.rstd),
                           DxOf(dd, r.g[v + 1], r.xhat[v + 1], r.t, r.rstd)};
        StoreResults<XF, kNaN>(dd, pair, dx + static_cast<int64_t>(v) * lanes);
      }
    };
    if (r.t.no_nan) {
      pass(std::integral_constant<NaNLanes, kNoNaN>());
    } else {
      pass(std::integral_constant<NaNLanes, NaNLanes::kPossible>());
    }
  };
  ForEachRowTwoInFlight<Row>(r0, r1, read, write);
}

// The column partials of dweight and dbias (null when that output is not wanted).
struct ColumnPartials {
  double* weight;
  double* bias;
};
inline ColumnPartials column_partials(const detail::LayerNormGradKernelArgs& a) {
  double* const pw = a.dweight != nullptr ? a.partials : nullptr;
  double* const pb =
      a.dbias != nullptr ? a.partials + (pw != nullptr ? a.plan.blocks * a.n : 0) : nullptr;
  return {pw, pb};
}

// dx row by row (no column sums wanted, or too few column blocks to share among the threads).
template <class XF, class PF, bool kWeight>
void LayerNormGradDx(const detail::LayerNormGradKernelArgs& a) {
  using XS = typename XF::Storage;
  using PS = typename PF::Storage;
  const XS* const dy_all = static_cast<const XS*>(a.dy);
  const XS* const x_all = static_cast<const XS*>(a.x);
  const PS* const w = static_cast<const PS*>(a.weight);
  XS* const dx_all = static_cast<XS*>(a.dx);
  const int64_t n = a.n;
  const detail::Rows rows{a.rows, n, 1};
  detail::for_each_row_block(rows, [&](int64_t begin, int64_t end) {
    const bool short_rows = WithShortRowVectors(n, [&](auto vectors) {
      ShortRows<XF, PF, kWeight, decltype(vectors)::value>(a, begin, end, nullptr, nullptr);
    });
    if (short_rows) return;
    for (int64_t row = begin; row < end; ++row) {
      const XS* dy = dy_all + row * n;
      const XS* x = x_all + row * n;
      XS* dx = dx_all + row * n;
      const RowStats st = LoadStats(a, row);
      const RowTerms t = RowTermsOf<XF, PF, kWeight>(dy, x, w, st, n);
      // Two fp64 vectors per store where they fit (StoreResults), as in ColumnBlock.
      const auto pass = [&](auto nan_lanes) MANTISSA_VECTOR_BODY {
        constexpr NaNLanes kNaN = decltype(nan_lanes)::value;
        ForEachDoubleVectorGroup<2>(0, n, [&](auto dd, int64_t i, auto count) MANTISSA_VECTOR_BODY {
          constexpr size_t K = decltype(count)::value;
          const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
          hn::Vec<decltype(dd)> v[K];
          for (size_t k = 0; k < K; ++k) {
            const int64_t at = i + static_cast<int64_t>(k) * lanes;
            v[k] = DxOf(dd, LoadG<XF, PF, kWeight>(dd, dy, w, at), LoadXhat<XF>(dd, x, st, at), t,
                        st.rstd);
          }
          StoreResults<XF, kNaN>(dd, v, dx + i);
        });
      };
      if (t.no_nan) {
        pass(std::integral_constant<NaNLanes, kNoNaN>());
      } else {
        pass(std::integral_constant<NaNLanes, NaNLanes::kPossible>());
      }
    }
  });
}

// dx and the column partials in one pass over x and dy, one column block at a time.
template <class XF, class PF, bool kWeight>
void LayerNormGradDxAndPartials(const detail::LayerNormGradKernelArgs& a) {
  const ColumnPartials p = column_partials(a);
  auto blocks = [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t r0 = b * a.plan.rows_per_block;
      const int64_t r1 = std::min(a.rows, r0 + a.plan.rows_per_block);
      const auto at = [&](double* partials) {
        return partials != nullptr ? partials + b * a.n : nullptr;
      };
      const bool short_rows = WithShortRowVectors(a.n, [&](auto vectors) {
        ShortRows<XF, PF, kWeight, decltype(vectors)::value>(a, r0, r1, at(p.weight), at(p.bias));
      });
      if (!short_rows) ColumnBlock<XF, PF, kWeight, true>(a, b, 0, a.n, p.weight, p.bias);
    }
  };
  detail::parallel_for(a.plan.blocks, 1, blocks);
}

// dweight and dbias from the column partials: the partials first unless the dx pass computed
// them.
template <class XF>
void LayerNormGradColumns(const detail::LayerNormGradKernelArgs& a, bool partials_done) {
  const int64_t n = a.n;
  const ColumnPartials p = column_partials(a);
  if (!partials_done) {
    detail::for_each_column_piece(a.plan, n, [&](int64_t b, int64_t c0, int64_t c1) {
      ColumnBlock<XF, XF, false, false>(a, b, c0, c1, p.weight, p.bias);
    });
  }
  // A pair, not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
  for (const auto& partials_out : {std::pair{p.weight, a.dweight}, std::pair{p.bias, a.dbias}}) {
    double* const partials = partials_out.first;
    void* const out = partials_out.second;
    if (partials == nullptr) continue;
    detail::combine_column_partials(
        a.plan, n, partials, AddRowInPlace, [&](int64_t c0, const double* sums, int64_t count) {
          const auto store = [&](auto format) {
            using PS = typename decltype(format)::Storage;
            StoreResultsFromF64<decltype(format)>(sums, count, static_cast<PS*>(out) + c0);
          };
          a.param_dtype == DType::kFloat32 ? store(Fp32{}) : store(XF{});
        });
  }
}

// dx, with the column partials in the same pass where `with_partials`.
template <class XF, class PF>
void LayerNormGradDxOf(const detail::LayerNormGradKernelArgs& a, bool with_partials) {
  if (a.weight != nullptr) {
    with_partials ? LayerNormGradDxAndPartials<XF, PF, true>(a) : LayerNormGradDx<XF, PF, true>(a);
  } else {
    with_partials ? LayerNormGradDxAndPartials<XF, PF, false>(a)
                  : LayerNormGradDx<XF, PF, false>(a);
  }
}

template <class XF>
void LayerNormGradFormat(const detail::LayerNormGradKernelArgs& a) {
  const bool columns = a.dweight != nullptr || a.dbias != nullptr;
  // One pass over x and dy for dx and the column partials, unless the column plan has too few
  // blocks to keep every thread busy (rows of about a million elements): then dx row by row and
  // the partials in column pieces. Both give the same bits.
  const bool one_pass =
      a.dx != nullptr && columns && a.plan.blocks >= 2 * int64_t{detail::configured_threads()};
  if (a.dx != nullptr) {
    if (a.param_dtype == DType::kFloat32) {
      LayerNormGradDxOf<XF, Fp32>(a, one_pass);
    } else {
      LayerNormGradDxOf<XF, XF>(a, one_pass);
    }
  }
  if (columns) LayerNormGradColumns<XF>(a, one_pass);
}

void LayerNormGradImpl(const detail::LayerNormGradKernelArgs& a) {
  VisitFormat(a.x_dtype, [&](auto format) { LayerNormGradFormat<decltype(format)>(a); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstdint>
#include <memory>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "core/scratch.h"
#include "mantissa/ops/layer_norm_grad.h"
#include "ops/layer_norm_grad/layer_norm_grad_desc.h"

namespace mantissa {

HWY_EXPORT(LayerNormGradImpl);

namespace {

// Rows and row length of a call whose shapes may not be validated yet (0 rows when they do not
// make sense).
void rows_and_length(const LayerNormGradTensors& t, const LayerNormGradParams& p, int64_t& rows,
                     int64_t& n) {
  rows = 0;
  n = 1;
  for (int64_t d : p.normalized_shape.span()) {
    if (d < 0 || __builtin_mul_overflow(n, d, &n)) n = 0;
  }
  const int64_t numel = t.dy.numel().value_or(0);
  if (n > 0) rows = numel / n;
}

// The column sums asked for (dweight, dbias).
int column_sums(const LayerNormGradParams& p) { return p.output_mask[1] + p.output_mask[2]; }

}  // namespace

uint64_t layer_norm_grad_workspace_size(const LayerNormGradTensors& t,
                                        const LayerNormGradParams& p) {
  int64_t rows = 0, n = 0;
  rows_and_length(t, p, rows, n);
  const detail::ColumnSumPlan plan = detail::column_sum_plan(rows, n);
  return static_cast<uint64_t>(plan.blocks) * static_cast<uint64_t>(n) * sizeof(double) *
         static_cast<uint64_t>(column_sums(p));
}

namespace detail {

Status LayerNormGradOp::check_params(const Tensors& t, const Params& p) {
  MANTISSA_RETURN_IF_ERROR(check_norm_params(kType, t.dy, p.normalized_shape,
                                             t.weight ? &*t.weight : nullptr,
                                             t.bias ? &*t.bias : nullptr));
  // dweight and dbias: normalized_shape, in weight's dtype (dy's without a weight).
  const DType want = t.weight ? t.weight->dtype : t.dy.dtype;
  const std::span<const int64_t> dims = p.normalized_shape.span();
  for (auto [name, o] : {std::pair{"dweight", &t.dweight}, std::pair{"dbias", &t.dbias}}) {
    if (!o->has_value()) continue;
    const TensorView& v = **o;
    if (v.rank != p.normalized_shape.size ||
        !std::equal(dims.begin(), dims.end(), v.shape.begin(), v.shape.begin() + v.rank)) {
      return fail(StatusCode::kParamInvalid, kType, "{} shape {} must be normalized_shape {}", name,
                  v.shape_string(), p.normalized_shape.to_string());
    }
    if (v.dtype != want) {
      return fail(StatusCode::kParamInvalid, kType, "{} dtype {} must be {} ({})", name,
                  dtype_name(v.dtype), dtype_name(want),
                  t.weight ? "weight's dtype" : "dy's dtype, without a weight");
    }
  }
  return {};
}

}  // namespace detail

// Validation is derived from the declaration (layer_norm_grad_desc.h): dx, dweight and dbias
// share no byte with any other tensor of the call.
Status layer_norm_grad_validate(const LayerNormGradTensors& t, const LayerNormGradParams& p) {
  return detail::validate<detail::LayerNormGradOp>(t, p);
}

Status layer_norm_grad(const LayerNormGradTensors& t, const LayerNormGradParams& p, Workspace ws) {
  return detail::op_entry<detail::LayerNormGradOp>(t, p, [&]() -> Status {
    int64_t rows = 0, n = 0;
    rows_and_length(t, p, rows, n);
    void* const dweight = p.output_mask[1] ? t.dweight->data : nullptr;
    void* const dbias = p.output_mask[2] ? t.dbias->data : nullptr;
    const DType param_dtype = t.weight ? t.weight->dtype : t.dy.dtype;
    if (n == 0) return {};  // every output is empty
    if (rows == 0) {
      // No terms: +0, an empty sum.
      for (void* o : {dweight, dbias}) {
        for (int64_t j = 0; o != nullptr && j < n; ++j) {
          store_from_float(param_dtype, o, static_cast<std::size_t>(j), 0.0f);
        }
      }
      return {};
    }
    detail::LayerNormGradKernelArgs a;
    a.x_dtype = t.dy.dtype;
    a.param_dtype = param_dtype;
    a.stats_dtype = t.mean.dtype;
    a.rows = rows;
    a.n = n;
    a.dy = t.dy.data;
    a.x = t.input.data;
    a.mean = t.mean.data;
    a.rstd = t.rstd.data;
    a.weight = t.weight ? t.weight->data : nullptr;
    a.dx = p.output_mask[0] ? t.dx->data : nullptr;
    a.dweight = dweight;
    a.dbias = dbias;
    a.plan = detail::column_sum_plan(rows, n);
    const uint64_t need = layer_norm_grad_workspace_size(t, p);
    const detail::Scratch<double> partials(ws, need / sizeof(double));
    if (need > 0 && partials.data() == nullptr) {
      return detail::fail(
          StatusCode::kInner, detail::LayerNormGradOp::kType,
          "cannot allocate {} bytes for the column sums (lend a workspace of that size)", need);
    }
    a.partials = partials.data();
    HWY_DYNAMIC_DISPATCH(LayerNormGradImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
