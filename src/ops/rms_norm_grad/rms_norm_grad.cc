// RmsNormGrad: contract and validation, then the kernels written once for every SIMD target.
// Per row of n elements, with r = rstd (fp32) and g = gamma, in this order, which is normative:
//   s    = sum of ((dy_i * g_i) * x_i) * r   terms in fp64 (dy * g exact), summed in the order of
//                                           core/reduce.h (naive method, fp64 lanes)
//   m    = s / n                               fp64
//   dx_i = ((dy_i * g_i) - ((x_i * r) * m)) * r    fp64 operations (dy * g and x * r exact),
//                                           rounded to fp32, then to dx's dtype
// dgamma_j = sum over rows of (x_ij * r) * dy_ij, terms in fp64 (x * r exact), summed in the
// order of core/rows.h's column_sum_plan (rows in order within a block, block partials along the
// pairwise tree), then rounded to fp32. NaN results are stored as the canonical quiet NaN.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/rms_norm_grad/rms_norm_grad.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/parallel.h"
#include "core/reduce-inl.h"
#include "core/rows.h"
#include "core/short_rows-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/rms_norm/rms_norm_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// ((dy * g) * x) * r in the accumulator's lanes.
template <class XF, class GF>
struct GradTerm {
  const typename XF::Storage* dy;
  const typename XF::Storage* x;
  const typename GF::Storage* g;
  double r;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    const auto dyg = hn::Mul(LoadAcc<XF>(da, dy + i), LoadAcc<GF>(da, g + i));
    return hn::Mul(hn::Mul(dyg, LoadAcc<XF>(da, x + i)), hn::Set(da, r));
  }
};

// Columns [c0, c1) of row block b: partials[b * n + j] = sum over the block's rows, in order, of
// (x * r) * dy in fp64. Each column's sum is independent of the vector width.
template <class XF>
void DgammaBlock(const detail::RmsNormGradKernelArgs& a, int64_t b, int64_t c0, int64_t c1) {
  using XS = typename XF::Storage;
  const XS* const dy_all = static_cast<const XS*>(a.dy);
  const XS* const x_all = static_cast<const XS*>(a.x);
  const int64_t n = a.n;
  const int64_t r0 = b * a.plan.rows_per_block;
  const int64_t r1 = std::min(a.rows, r0 + a.plan.rows_per_block);
  double* const acc = a.partials + b * n;
  // detail::kColumnSumVectors vectors of columns at a time: whole cache lines of each row, and
  // independent accumulation chains.
  ForEachDoubleVectorGroup<detail::kColumnSumVectors>(
      c0, c1, [&](auto dd, int64_t j, auto count) MANTISSA_VECTOR_BODY {
        constexpr size_t K = decltype(count)::value;
        const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
        hn::Vec<decltype(dd)> sum[K];
        for (size_t k = 0; k < K; ++k) sum[k] = hn::Set(dd, -0.0);  // -0: the identity of addition
        for (int64_t row = r0; row < r1; ++row) {
          const auto r = hn::Set(dd, static_cast<double>(a.rstd[row]));
#pragma GCC unroll 4
          for (size_t k = 0; k < K; ++k) {
            const int64_t at = row * n + j + static_cast<int64_t>(k) * lanes;
            const auto xr = hn::Mul(LoadAcc<XF>(dd, x_all + at), r);
            sum[k] = hn::Add(sum[k], hn::Mul(xr, LoadAcc<XF>(dd, dy_all + at)));
          }
        }
        for (size_t k = 0; k < K; ++k) {
          hn::StoreU(sum[k], dd, acc + j + static_cast<int64_t>(k) * lanes);
        }
      });
}

// Rows of kVectors fp64 vectors (one or two of the kReduceLanes-lane groups of core/reduce.h),
// rows [r0, r1), each read once: the row's vectors of dy * g and x are kept while its sum is taken
// from them in core/reduce.h's order (NaiveSumsOfVectors: ReduceRow's additions), then dx comes
// from the same vectors. With pg (the row block's dgamma partials, rows [r0, r1) being the whole
// block), the partials grow row by row, rows in order, as DgammaBlock's do. Two rows are in
// flight (ForEachRowTwoInFlight), as in LayerNormGrad's ShortRows.
template <class XF, class GF, size_t kVectors>
void ShortRows(const detail::RmsNormGradKernelArgs& a, int64_t r0, int64_t r1, double* pg) {
  using XS = typename XF::Storage;
  using GS = typename GF::Storage;
  const AccTag<double> dd;
  using V = hn::Vec<AccTag<double>>;
  static_assert(kVectors % 2 == 0);  // dx is stored two vectors at a time
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
  const int64_t n = a.n;
  // n is a power of two (kReduceLanes or twice that): s * (1 / n) is s / n, the same rounding of
  // the same real number.
  static_assert((detail::kReduceLanes & (detail::kReduceLanes - 1)) == 0);
  const double inv_n = 1.0 / static_cast<double>(n);
  const GS* const gamma = static_cast<const GS*>(a.gamma);
  if (r0 >= r1) return;
  if (pg != nullptr) {  // -0 is the identity of addition
    for (int64_t j = 0; j < n; j += lanes) hn::StoreU(hn::Set(dd, -0.0), dd, pg + j);
  }
  struct Row {
    V dyg[kVectors], x[kVectors];
    double m = 0.0, r = 0.0;
    bool no_nan = false;
  };
  // Reads the row: dy * g, x, its dgamma terms and its sum.
  const auto read = [&](int64_t row, Row& w) MANTISSA_VECTOR_BODY {
    const XS* const dy = static_cast<const XS*>(a.dy) + row * n;
    const XS* const x = static_cast<const XS*>(a.x) + row * n;
    const double r = static_cast<double>(a.rstd[row]);
    const V vr = hn::Set(dd, r);
    double sum[1];
    NaiveSumsOfVectors<double, 1, kVectors>(
        [&](size_t v, V(&terms)[1]) MANTISSA_VECTOR_BODY {
          const int64_t at = static_cast<int64_t>(v) * lanes;
          const V dyv = LoadAcc<XF>(dd, dy + at);
          w.x[v] = LoadAcc<XF>(dd, x + at);
          if (pg != nullptr) {
            const V term = hn::Mul(hn::Mul(w.x[v], vr), dyv);
            hn::StoreU(hn::Add(hn::LoadU(dd, pg + at), term), dd, pg + at);
          }
          w.dyg[v] = hn::Mul(dyv, LoadAcc<GF>(dd, gamma + at));
          terms[0] = hn::Mul(hn::Mul(w.dyg[v], w.x[v]), vr);
        },
        sum);
    w.m = sum[0] * inv_n;
    w.r = r;
    // A finite sum means every term is finite, so every x and dy * g is; with r finite too, x * r
    // is finite, and where (x * r) * m overflows r is not 0: no result is NaN. Such rows skip the
    // NaN step (the same bits).
    w.no_nan = std::isfinite(sum[0]) && std::isfinite(r);
  };
  // Stores the row's dx, two vectors per narrowing.
  const auto write = [&](int64_t row, const Row& w) MANTISSA_VECTOR_BODY {
    XS* const dx = static_cast<XS*>(a.dx) + row * n;
    const V vr = hn::Set(dd, w.r);
    const V vm = hn::Set(dd, w.m);
    const auto dx_of = [&](size_t v) MANTISSA_VECTOR_BODY {
      return hn::Mul(hn::Sub(w.dyg[v], hn::Mul(hn::Mul(w.x[v], vr), vm)), vr);
    };
    const auto pass = [&](auto nan_lanes) MANTISSA_VECTOR_BODY {
      constexpr NaNLanes kNaN = decltype(nan_lanes)::value;
#pragma GCC unroll 32
      for (size_t v = 0; v < kVectors; v += 2) {
        const V pair[2] = {dx_of(v), dx_of(v + 1)};
        StoreResults<XF, kNaN>(dd, pair, dx + static_cast<int64_t>(v) * lanes);
      }
    };
    if (w.no_nan) {
      pass(std::integral_constant<NaNLanes, kNoNaN>());
    } else {
      pass(std::integral_constant<NaNLanes, NaNLanes::kPossible>());
    }
  };
  ForEachRowTwoInFlight<Row>(r0, r1, read, write);
}

// dx row by row; with fuse_dgamma, each row block's dgamma partials right after its rows, while
// they are in cache (the blocks of the column plan are then the row blocks).
template <class XF, class GF>
void RmsNormGradDx(const detail::RmsNormGradKernelArgs& a, bool fuse_dgamma) {
  using XS = typename XF::Storage;
  using GS = typename GF::Storage;
  const XS* const dy_all = static_cast<const XS*>(a.dy);
  const XS* const x_all = static_cast<const XS*>(a.x);
  const GS* const g = static_cast<const GS*>(a.gamma);
  XS* const dx_all = static_cast<XS*>(a.dx);
  const int64_t n = a.n;
  const detail::Rows rows{a.rows, n, 1};
  detail::for_each_row_block(rows, [&](int64_t begin, int64_t end) {
    // With fuse_dgamma, [begin, end) is the column plan's block begin / rows_per_block.
    double* const pg = fuse_dgamma ? a.partials + (begin / a.plan.rows_per_block) * n : nullptr;
    const bool short_rows = WithShortRowVectors(
        n, [&](auto vectors) { ShortRows<XF, GF, decltype(vectors)::value>(a, begin, end, pg); });
    if (short_rows) return;
    // A local, kept in a register across the stores (as in ops/sgd/sgd.cc).
    const GS* const gamma = g;
    for (int64_t row = begin; row < end; ++row) {
      const XS* const dy = dy_all + row * n;
      const XS* const x = x_all + row * n;
      XS* const dx = dx_all + row * n;
      const float r = a.rstd[row];
      const double s = ReduceRow<detail::ReduceMethod::kNaive, double>(
          GradTerm<XF, GF>{dy, x, gamma, static_cast<double>(r)}, n);
      // dx in fp64 from the exact products, rounded once to fp32: (dy * g) and (x * r) * m
      // nearly cancel in rows where dy is close to x * mean, and fp32 there lost thousands of
      // ulp.
      const double m = s / static_cast<double>(n);
      auto dx_lanes = [&](auto dd, int64_t i) MANTISSA_VECTOR_BODY {
        const hn::Rebind<float, decltype(dd)> df;
        const auto vr = hn::Set(dd, static_cast<double>(r));
        const auto dyg = hn::Mul(LoadAcc<XF>(dd, dy + i), LoadAcc<GF>(dd, gamma + i));
        const auto xrm = hn::Mul(hn::Mul(LoadAcc<XF>(dd, x + i), vr), hn::Set(dd, m));
        StoreResult<XF>(df, DemoteF64ToF32(df, dd, hn::Mul(hn::Sub(dyg, xrm), vr)), dx + i);
      };
      ForEachDoubleVector(0, n, dx_lanes);
    }
    if (fuse_dgamma) DgammaBlock<XF>(a, begin / a.plan.rows_per_block, 0, n);
  });
}

// dgamma from the column partials: the partials first unless the dx pass computed them.
template <class XF>
void RmsNormGradDgamma(const detail::RmsNormGradKernelArgs& a, bool partials_done) {
  if (!partials_done) {
    detail::for_each_column_piece(
        a.plan, a.n, [&](int64_t b, int64_t c0, int64_t c1) { DgammaBlock<XF>(a, b, c0, c1); });
  }
  detail::combine_column_partials(a.plan, a.n, a.partials, AddRowInPlace,
                                  [&](int64_t c0, const double* sums, int64_t count) {
                                    StoreResultsFromF64<Fp32>(sums, count, a.dgamma + c0);
                                  });
}

template <class XF>
void RmsNormGradFormat(const detail::RmsNormGradKernelArgs& a) {
  // One pass over x and dy when the column plan's blocks are the dx pass's row blocks.
  const bool fuse = a.plan.rows_per_block == detail::rows_per_block(a.n);
  if (a.gamma_dtype == DType::kFloat32) {
    RmsNormGradDx<XF, Fp32>(a, fuse);
  } else {
    RmsNormGradDx<XF, XF>(a, fuse);
  }
  RmsNormGradDgamma<XF>(a, fuse);
}

void RmsNormGradImpl(const detail::RmsNormGradKernelArgs& a) {
  VisitFormat(a.x_dtype, [&](auto format) { RmsNormGradFormat<decltype(format)>(a); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <cstdint>
#include <memory>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "core/scratch.h"
#include "mantissa/ops/rms_norm_grad.h"
#include "ops/rms_norm_grad/rms_norm_grad_desc.h"

namespace mantissa {

HWY_EXPORT(RmsNormGradImpl);

namespace {

// Rows and row length of a call whose shapes may not be validated yet (0 rows when they do not
// make sense).
void rows_and_length(const RmsNormGradTensors& t, int64_t& rows, int64_t& n) {
  rows = 0;
  n = t.gamma.numel().value_or(0);
  const int64_t numel = t.x.numel().value_or(0);
  if (n > 0) rows = numel / n;
}

}  // namespace

uint64_t rms_norm_grad_workspace_size(const RmsNormGradTensors& t, const RmsNormGradParams&) {
  int64_t rows = 0, n = 0;
  rows_and_length(t, rows, n);
  const detail::ColumnSumPlan plan = detail::column_sum_plan(rows, n);
  return static_cast<uint64_t>(plan.blocks) * static_cast<uint64_t>(n) * sizeof(double);
}

// Validation is derived from the declaration (rms_norm_grad_desc.h): dx and dgamma share no byte
// with any other tensor of the call.
Status rms_norm_grad_validate(const RmsNormGradTensors& t, const RmsNormGradParams& p) {
  return detail::validate<detail::RmsNormGradOp>(t, p);
}

Status rms_norm_grad(const RmsNormGradTensors& t, const RmsNormGradParams& p, Workspace ws) {
  return detail::op_entry<detail::RmsNormGradOp>(t, p, [&]() -> Status {
    const int64_t n = *t.gamma.numel();
    const int64_t rows = *t.rstd.numel();
    float* const dgamma = static_cast<float*>(t.dgamma.data);
    if (n == 0) return {};  // dgamma and every row of dx are empty
    if (rows == 0) {
      std::fill(dgamma, dgamma + n, 0.0f);  // no terms: +0, an empty sum
      return {};
    }
    detail::RmsNormGradKernelArgs a;
    a.x_dtype = t.x.dtype;
    a.gamma_dtype = t.gamma.dtype;
    a.rows = rows;
    a.n = n;
    a.dy = t.dy.data;
    a.x = t.x.data;
    a.rstd = static_cast<const float*>(t.rstd.data);
    a.gamma = t.gamma.data;
    a.dx = t.dx.data;
    a.dgamma = dgamma;
    a.plan = detail::column_sum_plan(rows, n);
    const uint64_t need = rms_norm_grad_workspace_size(t, p);
    const detail::Scratch<double> partials(ws, need / sizeof(double));
    if (partials.data() == nullptr) {
      return detail::fail(
          StatusCode::kInner, detail::RmsNormGradOp::kType,
          "cannot allocate {} bytes for the column sums (lend a workspace of that size)", need);
    }
    a.partials = partials.data();
    HWY_DYNAMIC_DISPATCH(RmsNormGradImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
