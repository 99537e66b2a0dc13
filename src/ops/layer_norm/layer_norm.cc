// LayerNorm: contract and validation, then the row kernel written once for every SIMD target.
// Per row of n elements (the trailing dims normalized_shape names), in this order, which is
// normative:
//   s    = sum of x_i                  widened to fp64, summed in the order of core/reduce.h
//                                      (naive method, fp64 lanes)
//   mean = s / n                       fp64
//   q    = sum of (x_i - mean)^2       fp64 terms, the same order (centred: two passes)
//   rstd = 1 / sqrt(q / n + eps)       each step one fp64 operation
//   out_i = ((x_i - mean) * rstd) * w_i + b_i   fp64 operations, rounded to fp32, then to out's
//                                      dtype (no weight: no multiplication; no bias: + 0)
//   the stored mean and rstd: rounded to fp32, then to their dtype
// NaN results (from NaN or inf inputs, or n == 0: 0 / 0) are stored as the canonical quiet NaN.
// Traffic: x read once from memory; rows of up to 4096 elements are widened to fp64 by the first
// pass, into a buffer that the later passes read (longer rows are read three times, the later
// passes usually from cache); weight and bias read per row (cached; fp64 copies where they fit in
// L1 with the row); out written once. While a row's elementwise pass runs, the next row is
// fetched into cache.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/layer_norm/layer_norm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cmath>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#include "core/reduce-inl.h"
#include "core/rows.h"
#include "core/simd-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/layer_norm/layer_norm_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Lanes [i, i + Lanes(dd)) of p as fp64: widened from Format's storage, or an fp64 copy as is.
template <class Format, class DD, class T>
HWY_INLINE hn::Vec<DD> LoadF64(DD dd, const T* HWY_RESTRICT p) {
  if constexpr (std::is_same_v<T, double>) {
    return hn::LoadU(dd, p);
  } else {
    return LoadAcc<Format>(dd, p);
  }
}

// p[0, count) widened exactly to fp64 at to.
template <class Format>
void WidenToF64(const typename Format::Storage* HWY_RESTRICT p, int64_t count,
                double* HWY_RESTRICT to) {
  const hn::ScalableTag<double> dd;
  const int64_t step = static_cast<int64_t>(hn::Lanes(dd));
  int64_t i = 0;
  for (; i + step <= count; i += step) hn::StoreU(LoadAcc<Format>(dd, p + i), dd, to + i);
  const hn::CappedTag<double, 1> d1;
  for (; i < count; ++i) hn::StoreU(LoadAcc<Format>(d1, p + i), d1, to + i);
}

// Element i of a row for its first pass, widened to fp64: with kWiden also stored at to + i for
// the later passes, which then read it there (LoadKept); otherwise they read xs again.
template <class Format, bool kWiden, class DD>
HWY_INLINE hn::Vec<DD> LoadAndKeep(DD dd, const typename Format::Storage* HWY_RESTRICT xs,
                                   double* HWY_RESTRICT to, int64_t i) {
  const auto v = LoadAcc<Format>(dd, xs + i);
  if constexpr (kWiden) hn::StoreU(v, dd, to + i);
  return v;
}

template <class Format, bool kWiden, class DD>
HWY_INLINE hn::Vec<DD> LoadKept(DD dd, const typename Format::Storage* HWY_RESTRICT xs,
                                const double* HWY_RESTRICT to, int64_t i) {
  if constexpr (kWiden) {
    return hn::LoadU(dd, to + i);
  } else {
    return LoadAcc<Format>(dd, xs + i);
  }
}

// A row's mean and centred sum of squares (the normative order above), its n elements at xs in
// Format's storage. With kWiden the first pass also stores them widened exactly to fp64 at `to`
// and the second reads them there (the sum reads each element once, so the buffer is written as
// it goes instead of in a pass of its own); otherwise both passes read xs.
template <class Format, bool kWiden>
HWY_NOINLINE void RowSums(const typename Format::Storage* HWY_RESTRICT xs, int64_t n,
                          double* HWY_RESTRICT to, double& mean, double& q) {
  // It's necessary to keep the order of the operations (fp64, each step rounded once).
  const double s = ReduceRow<detail::ReduceMethod::kNaive, double>(
      [xs, to](auto da, int64_t i) { return LoadAndKeep<Format, kWiden>(da, xs, to, i); }, n);
  mean = s / static_cast<double>(n);
  const double m = mean;
  q = ReduceRow<detail::ReduceMethod::kNaive, double>(
      [xs, to, m](auto da, int64_t i) {
        const auto c = hn::Sub(LoadKept<Format, kWiden>(da, xs, to, i), hn::Set(da, m));
        return hn::Mul(c, c);
      },
      n);
}

// out[k] = a[k] / b for R rows, several per vector: the same bits as one division per row (an IEEE
// division is correctly rounded however it is issued), without R chains of scalar latency.
template <size_t R>
HWY_INLINE void Quotients(const double* HWY_RESTRICT a, double b, double* HWY_RESTRICT out) {
  const hn::CappedTag<double, R> d;
  for (size_t k = 0; k < R; k += hn::Lanes(d)) {
    hn::StoreU(hn::Div(hn::LoadU(d, a + k), hn::Set(d, b)), d, out + k);
  }
}

// rstd = 1 / sqrt(q / n + eps) of R rows, each step one fp64 operation (correctly rounded, so the
// same bits as a row at a time), several rows per vector.
template <size_t R>
HWY_INLINE void Rstds(const double* HWY_RESTRICT q, int64_t n, double eps,
                      double* HWY_RESTRICT rstd) {
  const hn::CappedTag<double, R> d;
  for (size_t k = 0; k < R; k += hn::Lanes(d)) {
    const auto var = hn::Div(hn::LoadU(d, q + k), hn::Set(d, static_cast<double>(n)));
    hn::StoreU(hn::Div(hn::Set(d, 1.0), hn::Sqrt(hn::Add(var, hn::Set(d, eps)))), d, rstd + k);
  }
}

// The first sums (s) of R rows of n elements at xs (row k at xs + k * n and, with kWiden, at
// to + k * n; n at most kReduceBlock), their reductions interleaved: the same sums as ReduceRow's.
// The sums are written where the caller keeps them (a copy through a local array became one
// vector load of four scalar stores, which waits for them to reach the cache).
template <class Format, size_t R, bool kWiden>
HWY_NOINLINE void GroupFirstSums(const typename Format::Storage* HWY_RESTRICT xs, int64_t n,
                                 double* HWY_RESTRICT to, double (&s)[R]) {
  BlockSums<detail::ReduceMethod::kNaive, double, R>(
      [&](size_t k, auto da, int64_t i) {
        return LoadAndKeep<Format, kWiden>(da, xs, to, static_cast<int64_t>(k) * n + i);
      },
      n, s);
}

// The centred sums of squares (q) of the same R rows, given their means.
template <class Format, size_t R, bool kWiden>
HWY_NOINLINE void GroupSquares(const typename Format::Storage* HWY_RESTRICT xs, int64_t n,
                               const double* HWY_RESTRICT to, const double (&mean)[R],
                               double (&q)[R]) {
  BlockSums<detail::ReduceMethod::kNaive, double, R>(
      [&](size_t k, auto da, int64_t i) {
        const int64_t at = static_cast<int64_t>(k) * n + i;
        const auto c = hn::Sub(LoadKept<Format, kWiden>(da, xs, to, at), hn::Set(da, mean[k]));
        return hn::Mul(c, c);
      },
      n, q);
}

// Entries [g * R, (g + 1) * R) of a per-row array, as the array of R that BlockSums fills.
template <size_t R, size_t N>
HWY_INLINE double (&Slice(double (&a)[N], size_t g))[R] {
  return *reinterpret_cast<double(*)[R]>(a + g * R);
}

// RowSums of R rows at once: GroupFirstSums, the means, GroupSquares.
template <class Format, size_t R, bool kWiden>
HWY_INLINE void GroupSums(const typename Format::Storage* HWY_RESTRICT xs, int64_t n,
                          double* HWY_RESTRICT to, double (&mean)[R], double (&q)[R]) {
  double s[R];
  GroupFirstSums<Format, R, kWiden>(xs, n, to, s);
  Quotients<R>(s, static_cast<double>(n), mean);
  GroupSquares<Format, R, kWiden>(xs, n, to, mean, q);
}

// A per-row statistic rounded to fp32 (canonical NaN), then to the statistics' dtype.
inline void StoreStat(DType dtype, void* p, int64_t row, double v) {
  float f = static_cast<float>(v);
  if (std::isnan(f)) f = std::numeric_limits<float>::quiet_NaN();
  store_from_float(dtype, p, static_cast<std::size_t>(row), f);
}

template <class XF, class PF, bool kWeight, bool kBias>
class LayerNormRows {
 public:
  using XS = typename XF::Storage;
  using PS = typename PF::Storage;

  explicit LayerNormRows(const detail::LayerNormKernelArgs& a)
      : a_(a),
        x_(static_cast<const XS*>(a.x)),
        w_(static_cast<const PS*>(a.weight)),
        b_(static_cast<const PS*>(a.bias)),
        out_(static_cast<XS*>(a.out)),
        n_(a.n) {}

  void Run() {
    // Rows of at most kMaxWidened elements are widened exactly to fp64 by their first pass, into
    // a buffer on the stack that the two later passes read (the widening being most of their
    // cost). Weight and bias are widened once per call where their fp64 copies stay in L1 with
    // the row's buffer (rows of at most kMaxWidenedParams; fp32 rows always, since their longer
    // rows are read as they are, a group at a time), and read as they are otherwise or when the
    // allocation fails. Longer rows widen as they go.
    if (n_ >= 1 && n_ <= kMaxWidened && a_.rows >= 2) {
      if ((kWeight || kBias) && (n_ <= kMaxWidenedParams || std::is_same_v<XF, Fp32>)) {
        params_.reset(new (std::nothrow) double[static_cast<std::size_t>(2 * n_)]);
        if (params_ != nullptr) {
          if constexpr (kWeight) WidenToF64<PF>(w_, n_, params_.get());
          if constexpr (kBias) WidenToF64<PF>(b_, n_, params_.get() + n_);
        }
      }
      widened_ = true;
    }
    params_finite_ = (!kWeight || AllFinite<PF>(w_, n_)) && (!kBias || AllFinite<PF>(b_, n_));
    const detail::Rows rows{a_.rows, n_, 1};
    detail::for_each_row_block(rows, [this](int64_t begin, int64_t end) { Block(begin, end); });
  }

 private:
  static constexpr int64_t kMaxWidened = 4096;        // 32 KiB of fp64: stays in L1 with the row
  static constexpr int64_t kMaxWidenedParams = 2048;  // row and fp64 weight and bias: 48 KiB

  // Short rows kR at a time (their reductions interleave), with the same sums as ReduceRow's.
  static constexpr size_t kR = kRowsAtOnce<detail::ReduceMethod::kNaive, double>;
  static constexpr int64_t kGroup = static_cast<int64_t>(kR);
  // Groups of short rows whose rstds are computed together (see WidenedGroups).
  static constexpr size_t kBatch = 4;

  void Block(int64_t begin, int64_t end) const {
    const int64_t n = n_;
    int64_t r = begin;
    if (!widened_) {
      for (; r < end; ++r) Row(r, x_ + r * n, w_, b_);
      return;
    }
    HWY_ALIGN double buffer[kMaxWidened];
    if ((kWeight || kBias) && params_ == nullptr) {
      // Long rows: weight and bias read as they are (fp64 copies would not stay in L1 with the
      // row's buffer).
      for (; r < end; ++r) WidenedRow(r, buffer, w_, b_);
      return;
    }
    const double* const w = params_.get();
    const double* const b = w != nullptr ? w + n : nullptr;
    if (kR > 1 && kBatch * kGroup * n <= kMaxWidened) {
      for (; r + kBatch * kGroup <= end; r += kBatch * kGroup) {
        WidenedGroups<kBatch>(r, buffer, w, b);
      }
    }
    if (kR > 1 && kGroup * n <= kMaxWidened) {
      for (; r + kGroup <= end; r += kGroup) WidenedGroups<1>(r, buffer, w, b);
    } else if constexpr (std::is_same_v<XF, Fp32>) {
      // fp32 rows too long to widen a group at a time: groups read x, weight and bias as they
      // are (their widening is one conversion each; interleaving the rows' sums, and weight and
      // bias at half the size in L1, are worth more than saving it).
      if (kR > 1) {
        for (; r + kGroup <= end; r += kGroup) Group(r, x_ + r * n, w_, b_);
      }
    }
    for (; r < end; ++r) WidenedRow(r, buffer, w, b);
  }

  // Rows [r, r + kR) read as they are (row k at xs + k * n), weight and bias at w and b.
  template <class PT>
  void Group(int64_t r, const XS* xs, const PT* w, const PT* b) const {
    double mean[kR], q[kR], rstd[kR];
    GroupSums<XF, kR, false>(xs, n_, nullptr, mean, q);
    Rstds<kR>(q, n_, a_.eps, rstd);
    StoreStats<kR>(r, mean, rstd);
    for (size_t k = 0; k < kR; ++k) {
      const int64_t row = r + static_cast<int64_t>(k);
      Finish(row, mean[k], rstd[k], xs + static_cast<int64_t>(k) * n_, w, b, kGroup);
    }
  }

  // Row r (any length) read as it is, weight and bias at w and b.
  template <class PT>
  void Row(int64_t r, const XS* xs, const PT* w, const PT* b) const {
    double mean[1], q[1], rstd[1];
    RowSums<XF, false>(xs, n_, nullptr, mean[0], q[0]);
    Rstds<1>(q, n_, a_.eps, rstd);
    StoreStats<1>(r, mean, rstd);
    Finish(r, mean[0], rstd[0], xs, w, b, 1);
  }

  // Rows [r, r + G * kR) widened into buffer by their first pass, the later passes reading it.
  // Each step runs for all G groups before the next: their first sums, then all the means (one
  // vector division for up to G * kR rows), their centred sums, then all the rstds (one vector
  // chain of division, square root and division). The groups' sums are independent of one
  // another, so a core overlaps them; the latencies of the means and rstds, which each group's
  // later steps wait on, are paid once per batch, not per group.
  template <size_t G, class PT>
  void WidenedGroups(int64_t r, double* buffer, const PT* w, const PT* b) const {
    constexpr size_t kRows = G * kR;
    double s[kRows], mean[kRows], q[kRows], rstd[kRows];
    const XS* const xs = x_ + r * n_;
    for (size_t g = 0; g < G; ++g) {
      const int64_t at = static_cast<int64_t>(g * kR) * n_;
      GroupFirstSums<XF, kR, true>(xs + at, n_, buffer + at, Slice<kR>(s, g));
    }
    Quotients<kRows>(s, static_cast<double>(n_), mean);
    for (size_t g = 0; g < G; ++g) {
      const int64_t at = static_cast<int64_t>(g * kR) * n_;
      GroupSquares<XF, kR, true>(xs + at, n_, buffer + at, Slice<kR>(mean, g), Slice<kR>(q, g));
    }
    Rstds<kRows>(q, n_, a_.eps, rstd);
    StoreStats<kRows>(r, mean, rstd);
    for (size_t k = 0; k < kRows; ++k) {
      const int64_t at = static_cast<int64_t>(k) * n_;
      Finish(r + static_cast<int64_t>(k), mean[k], rstd[k], static_cast<const double*>(buffer + at),
             w, b, static_cast<int64_t>(kRows));
    }
  }

  // Row r widened into buffer by its first pass, the later passes reading the buffer.
  template <class PT>
  void WidenedRow(int64_t r, double* buffer, const PT* w, const PT* b) const {
    double mean[1], q[1], rstd[1];
    RowSums<XF, true>(x_ + r * n_, n_, buffer, mean[0], q[0]);
    Rstds<1>(q, n_, a_.eps, rstd);
    StoreStats<1>(r, mean, rstd);
    Finish(r, mean[0], rstd[0], static_cast<const double*>(buffer), w, b, 1);
  }

  // The statistics of rows [r, r + R), rounded to fp32 (canonical NaN), then to their dtype:
  // fp32 ones a vector of rows at a time.
  template <size_t R>
  void StoreStats(int64_t r, const double* HWY_RESTRICT mean,
                  const double* HWY_RESTRICT rstd) const {
    const hn::CappedTag<double, R> d;
    const hn::Rebind<float, decltype(d)> df;
    for (auto [to, from] : {std::pair{a_.mean, mean}, std::pair{a_.rstd, rstd}}) {
      if (to == nullptr) continue;
      if (a_.stats_dtype == DType::kFloat32) {
        float* const p = static_cast<float*>(to) + r;
        for (size_t k = 0; k < R; k += hn::Lanes(d)) {
          hn::StoreU(CanonicalNaN(df, DemoteF64ToF32(df, d, hn::LoadU(d, from + k))), df, p + k);
        }
      } else {
        for (size_t k = 0; k < R; ++k) {
          StoreStat(a_.stats_dtype, to, r + static_cast<int64_t>(k), from[k]);
        }
      }
    }
  }

  // Row r's elementwise pass from x's elements at x (fp64, or x's storage). Meanwhile row
  // r + ahead, the next one to be read, is fetched into cache: the sums read a row from memory
  // and this pass only computes, so memory would otherwise sit idle here and the sums wait on it.
  template <class XT, class PT>
  HWY_INLINE void Finish(int64_t r, double mean, double rstd, const XT* HWY_RESTRICT x,
                         const PT* HWY_RESTRICT w, const PT* HWY_RESTRICT b, int64_t ahead) const {
    const int64_t n = n_;  // locals: a 16-bit store may alias any member, which would reload it
    XS* const HWY_RESTRICT out = out_ + r * n;
    // ((x - mean) * rstd) * w + b in fp64 lanes.
    auto affine = [&](auto dd, int64_t i) MANTISSA_VECTOR_BODY {
      auto v = hn::Mul(hn::Sub(LoadF64<XF>(dd, x + i), hn::Set(dd, mean)), hn::Set(dd, rstd));
      if constexpr (kWeight) v = hn::Mul(v, LoadF64<PF>(dd, w + i));
      return hn::Add(v, kBias ? LoadF64<PF>(dd, b + i) : hn::Zero(dd));
    };
    // Two fp64 vectors per store (StoreResultPair). The prefetch of the next row (rows up to
    // kPrefetchedRowBytes) costs one instruction per 2 * Lanes(dd) elements (a line holds 16 to
    // 32 of them).
    //
    // No result can be NaN where mean and rstd are finite and so are weight and bias: a finite
    // mean means a finite sum, so every x is finite; x - mean (below 2^129) times rstd (below
    // 2^538) times a finite weight is finite in fp64, plus a finite bias. Such rows skip the NaN
    // step (the same bits).
    const XS* const next = detail::row_to_fetch(x_, n, r + ahead, a_.rows);
    const auto pass = [&](auto nan_lanes) MANTISSA_VECTOR_BODY {
      constexpr NaNLanes kNaN = decltype(nan_lanes)::value;
      const hn::ScalableTag<double> dd;
      const int64_t step = static_cast<int64_t>(hn::Lanes(dd));
      int64_t i = 0;
      for (; i + 2 * step <= n; i += 2 * step) {
        if (next != nullptr) hwy::Prefetch(next + i);
        StoreResultPair<XF, kNaN>(dd, affine(dd, i), affine(dd, i + step), out + i);
      }
      const hn::CappedTag<double, 1> d1;
      const hn::Rebind<float, decltype(d1)> df1;
      for (; i < n; ++i) {
        StoreResult<XF, kNaN>(df1, DemoteF64ToF32(df1, d1, affine(d1, i)), out + i);
      }
    };
    if (params_finite_ && std::isfinite(mean) && std::isfinite(rstd)) {
      pass(std::integral_constant<NaNLanes, kNoNaN>());
    } else {
      pass(std::integral_constant<NaNLanes, NaNLanes::kPossible>());
    }
  }

  const detail::LayerNormKernelArgs& a_;
  const XS* const x_;
  const PS* const w_;
  const PS* const b_;
  XS* const out_;
  const int64_t n_;
  std::unique_ptr<double[]> params_;  // weight then bias in fp64, or null
  bool widened_ = false;              // rows are widened to fp64 before their passes
  bool params_finite_ = false;        // weight and bias (where given) are finite
};

template <class XF, class PF>
void LayerNormAffine(const detail::LayerNormKernelArgs& a) {
  const bool w = a.weight != nullptr, b = a.bias != nullptr;
  if (w && b) {
    LayerNormRows<XF, PF, true, true>(a).Run();
  } else if (w) {
    LayerNormRows<XF, PF, true, false>(a).Run();
  } else if (b) {
    LayerNormRows<XF, PF, false, true>(a).Run();
  } else {
    LayerNormRows<XF, PF, false, false>(a).Run();
  }
}

template <class XF>
void LayerNormFormat(const detail::LayerNormKernelArgs& a) {
  if (a.param_dtype == DType::kFloat32) {
    LayerNormAffine<XF, Fp32>(a);
  } else {
    LayerNormAffine<XF, XF>(a);
  }
}

void LayerNormImpl(const detail::LayerNormKernelArgs& a) {
  VisitFormat(a.x_dtype, [&](auto format) { LayerNormFormat<decltype(format)>(a); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/layer_norm.h"
#include "ops/layer_norm/layer_norm_desc.h"

namespace mantissa {

HWY_EXPORT(LayerNormImpl);

namespace detail {

Status check_normalized_shape(std::string_view op, const char* x_name, const TensorView& x,
                              const Dims& shape) {
  if (x.rank < 1 || x.rank > kMaxRank) return {};  // the rank rule reports it
  bool ok = shape.size >= 1 && shape.size <= x.rank;
  for (int i = 0; ok && i < shape.size; ++i) {
    ok = shape.values[i] == x.shape[x.rank - shape.size + i];
  }
  if (!ok) {
    return fail(StatusCode::kParamInvalid, op,
                "normalized_shape {} must be 1 to {} trailing dims of {} shape {}",
                shape.to_string(), x.rank, x_name, x.shape_string());
  }
  return {};
}

Status check_norm_params(std::string_view op, const TensorView& x, const Dims& shape,
                         const TensorView* weight, const TensorView* bias) {
  const std::span<const int64_t> dims = shape.span();
  for (auto [name, t] : {std::pair{"weight", weight}, std::pair{"bias", bias}}) {
    if (t == nullptr) continue;
    if (!std::equal(dims.begin(), dims.end(), t->shape.begin(), t->shape.begin() + t->rank) ||
        t->rank != shape.size) {
      return fail(StatusCode::kParamInvalid, op, "{} shape {} must be normalized_shape {}", name,
                  t->shape_string(), shape.to_string());
    }
    if (t->dtype != x.dtype && t->dtype != DType::kFloat32) {
      return fail(StatusCode::kParamInvalid, op,
                  "{} dtype {} does not go with x dtype {} (x's dtype or FLOAT)", name,
                  dtype_name(t->dtype), dtype_name(x.dtype));
    }
  }
  if (weight != nullptr && bias != nullptr && weight->dtype != bias->dtype) {
    return fail(StatusCode::kParamInvalid, op, "weight dtype {} and bias dtype {} differ",
                dtype_name(weight->dtype), dtype_name(bias->dtype));
  }
  return {};
}

Status check_norm_stats(std::string_view op, const TensorView& x, const TensorView* mean,
                        const TensorView* rstd) {
  for (auto [name, t] : {std::pair{"mean", mean}, std::pair{"rstd", rstd}}) {
    if (t != nullptr && t->dtype != x.dtype && t->dtype != DType::kFloat32) {
      return fail(StatusCode::kParamInvalid, op,
                  "{} dtype {} does not go with x dtype {} (x's dtype or FLOAT)", name,
                  dtype_name(t->dtype), dtype_name(x.dtype));
    }
  }
  if (mean != nullptr && rstd != nullptr && mean->dtype != rstd->dtype) {
    return fail(StatusCode::kParamInvalid, op, "mean dtype {} and rstd dtype {} differ",
                dtype_name(mean->dtype), dtype_name(rstd->dtype));
  }
  return {};
}

}  // namespace detail

// Validation is derived from the declaration (layer_norm_desc.h): out, mean and rstd share no
// byte with any other tensor of the call.
Status layer_norm_validate(const LayerNormTensors& t, const LayerNormParams& p) {
  return detail::validate<detail::LayerNormOp>(t, p);
}

Status layer_norm(const LayerNormTensors& t, const LayerNormParams& p, Workspace /*ws*/) {
  return detail::op_entry<detail::LayerNormOp>(t, p, [&]() -> Status {
    int64_t n = 1;
    for (int64_t d : p.normalized_shape.span()) n *= d;  // fits: x's size was validated
    const int64_t numel = *t.input.numel();
    // Rows of 0 elements still get their mean and rstd (NaN: the mean of nothing).
    int64_t rows = n == 0 ? 1 : numel / n;
    for (int i = 0; n == 0 && i < t.input.rank - p.normalized_shape.size; ++i) {
      rows *= t.input.shape[i];
    }
    if (rows == 0) return {};
    detail::LayerNormKernelArgs a;
    a.x_dtype = t.input.dtype;
    a.param_dtype = t.weight ? t.weight->dtype : (t.bias ? t.bias->dtype : t.input.dtype);
    a.stats_dtype = t.mean ? t.mean->dtype : (t.rstd ? t.rstd->dtype : DType::kFloat32);
    a.rows = rows;
    a.n = n;
    a.x = t.input.data;
    a.weight = t.weight ? t.weight->data : nullptr;
    a.bias = t.bias ? t.bias->data : nullptr;
    a.out = t.out.data;
    a.mean = t.mean ? t.mean->data : nullptr;
    a.rstd = t.rstd ? t.rstd->data : nullptr;
    a.eps = p.eps;
    HWY_DYNAMIC_DISPATCH(LayerNormImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
