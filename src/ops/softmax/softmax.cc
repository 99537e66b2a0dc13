// Softmax and LogSoftmax over one dimension: contract and validation, then one kernel written
// once for every SIMD target. Each row is read three times (max, sum of exp(x - max), output)
// and written once; every output is rounded once from fp32.
//
// The order of every rounding is fixed by the row alone: the max is exact; the sum of
// exp(x - max) is core/reduce.h's Kahan sum in fp32 (32 interleaved lanes, blocks of 4096, the
// pairwise block tree) over the row's elements in axis order, whatever the layout; Exp and Log
// are core/math-inl.h's. So a row gives the same bits on every target, for any thread count,
// and whether the axis is the last one (rows vectorised along the row) or not (inner-contiguous
// tiles vectorised across rows, never gathering a strided row). A bf16 softmax along the last
// axis multiplies by the reciprocal of the sum where that provably gives the division's bits
// (StoreQuotient).
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/softmax/softmax.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <new>
#include <optional>

#include "core/math-inl.h"
#include "core/reduce-inl.h"
#include "core/rows.h"
#include "core/simd-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/softmax/softmax-inl.h"
#include "ops/softmax/softmax_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

constexpr auto kSumMethod = kSoftmaxSumMethod;

// The outputs of a row from x - max: (x - max) - log(sum), or exp(x - max) / sum.
template <bool kLog, class D>
HWY_INLINE hn::Vec<D> RowOutput(D d, hn::Vec<D> shifted, hn::Vec<D> sum_or_log) {
  if constexpr (kLog) {
    return hn::Sub(shifted, sum_or_log);
  } else {
    return hn::Div(Exp(d, shifted), sum_or_log);  // correctly rounded on every target
  }
}

// Softmax with a bf16 output stores e / sum as fp32(e * fp32(1 / sum)) where that gives the
// division's bf16 (a multiplication and a test instead of a division per element): the reciprocal
// and the product each err by at most 2^-24 relative, so the product is within 2^-23 (2 fp32
// steps) of e / sum and the correctly rounded quotient within half a step: as bit patterns at
// most 3 apart, 6 across a power of two (a subnormal quotient: closer; a NaN is NaN either way;
// sum >= 1 for a row without NaN, so the reciprocal is normal). A vector with a lane within 16
// patterns of a bf16 rounding midpoint (NearBf16Midpoint; about 1 vector in 120) is divided.
template <class Format, class D>
HWY_INLINE void StoreQuotient(D d, hn::Vec<D> e, float sum, float reciprocal,
                              typename Format::Storage* HWY_RESTRICT y) {
  if constexpr (kIsBf16<Format>) {
    const auto o = hn::Mul(e, hn::Set(d, reciprocal));
    if (HWY_LIKELY(hn::AllFalse(hn::RebindToSigned<D>(), NearBf16Midpoint(d, o)))) {
      StoreResult<Format>(d, o, y);
      return;
    }
  }
  StoreResult<Format>(d, hn::Div(e, hn::Set(d, sum)), y);
}

// The value the output pass needs, per lane: log(sum) for log-softmax, the sum for softmax.
template <bool kLog, class D>
HWY_INLINE hn::Vec<D> SumOrLog(D d, hn::Vec<D> sum) {
  if constexpr (kLog) {
    return Log(d, sum);
  } else {
    (void)d;
    return sum;
  }
}

// The same for one row's sum.
template <bool kLog>
float SumOrLog(float sum) {
  const hn::CappedTag<float, 1> d1;
  return hn::GetLane(SumOrLog<kLog>(d1, hn::Set(d1, sum)));
}

// This thread's buffer for exponentials (a tile's, or a long row's), at least `count` floats
// (kept between calls); null if it cannot be allocated (the kernel then computes them again). No
// exception: this runs on the pool's workers.
inline float* ExpsBuffer(std::size_t count) {
  thread_local std::unique_ptr<float[]> buffer;
  thread_local std::size_t size = 0;
  if (size < count) {
    buffer.reset(new (std::nothrow) float[count]);
    size = buffer != nullptr ? count : 0;
  }
  return buffer.get();
}

// The longest softmax row whose exponentials are kept for the output pass (16 MiB of fp32).
inline constexpr int64_t kMaxKeptExps = int64_t{1} << 22;

// Last axis: each row contiguous. While a row's output pass runs (from cache: its statistics have
// just read it), the next row to be read is fetched (rows up to kPrefetchedRowBytes), so that
// memory is not idle in one pass and awaited in the other (the max pass is the first to touch a
// row).
template <class Format, bool kLog>
void LastAxisRows(const detail::SoftmaxKernelArgs& a, int64_t begin, int64_t end) {
  using S = typename Format::Storage;
  const int64_t n = a.rows.axis;
  const S* const x_all = static_cast<const S*>(a.x);
  S* const y_all = static_cast<S*>(a.y);
  // Softmax over rows of one reduction block keeps the exponentials its sum computed and divides
  // them (the same values: Exp gives each lane's bits whatever the vector); two such rows at once.
  HWY_ALIGN float exps[2 * detail::kReduceBlock];
  // Only a bf16 softmax multiplies by the reciprocal of the sum (StoreQuotient); the others divide.
  constexpr bool kReciprocal = !kLog && kIsBf16<Format>;
  // The outputs of row r from its statistics (sum_or_log = SumOrLog(sum), reciprocal = 1 / sum
  // where kReciprocal); exps (or null) holds its exponentials. Row `next` is fetched meanwhile if
  // it is in [begin, end).
  auto finish_row = [&](int64_t r, float max, float sum, float sum_or_log, float reciprocal,
                        const float* row_exps, int64_t next) MANTISSA_VECTOR_BODY {
    const S* const x = x_all + r * n;
    S* const y = y_all + r * n;
    const S* const x_next = detail::row_to_fetch(x_all, n, next, end);
    auto fetch = [&](int64_t i) MANTISSA_VECTOR_BODY {
      if (x_next != nullptr) hwy::Prefetch(x_next + i);
    };
    // In place is safe: element i is read before it is written, and never read again.
    if (row_exps != nullptr) {
      ForEachVector(0, n, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
        fetch(i);
        StoreQuotient<Format>(d, hn::LoadU(d, row_exps + i), sum, reciprocal, y + i);
      });
    } else {
      ForEachVector(0, n, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
        fetch(i);
        const auto shifted = hn::Sub(LoadF32<Format>(d, x + i), hn::Set(d, max));
        if constexpr (kLog) {
          StoreResult<Format>(d, RowOutput<kLog>(d, shifted, hn::Set(d, sum_or_log)), y + i);
        } else {
          StoreQuotient<Format>(d, Exp(d, shifted), sum, reciprocal, y + i);
        }
      });
    }
  };
  auto finish_row_from = [&](int64_t r, SoftmaxRowStats stats, const float* row_exps,
                             int64_t next) {
    finish_row(r, stats.max, stats.sum, SumOrLog<kLog>(stats.sum),
               kReciprocal ? 1.0f / stats.sum : 0.0f, row_exps, next);
  };
  int64_t r = begin;
  // Short rows, one per lane at once (BatchStats), and the values every row's output pass needs
  // computed for all of them in one vector.
  constexpr int64_t kB = static_cast<int64_t>(kSoftmaxBatchRows);
  if (kB > 1 && n >= 1 && n * kB <= detail::kReduceBlock) {
    const AccTag<float> d;
    for (; r + kB <= end; r += kB) {
      HWY_ALIGN float max[kB], sum[kB], sum_or_log[kB], reciprocal[kB];
      BatchStats<Format>(x_all + r * n, n, exps, max, sum);
      const auto sums = hn::Load(d, sum);
      hn::Store(SumOrLog<kLog>(d, sums), d, sum_or_log);
      hn::Store(kReciprocal ? hn::Div(hn::Set(d, 1.0f), sums) : hn::Zero(d), d, reciprocal);
      for (int64_t k = 0; k < kB; ++k) {
        finish_row(r + k, max[k], sum[k], sum_or_log[k], reciprocal[k],
                   kLog ? nullptr : exps + k * n, r + kB + k);
      }
    }
  }
  // Longer short rows, several at once: the same statistics, the rows' chains interleaved.
  constexpr int64_t kR = static_cast<int64_t>(kSoftmaxRowsAtOnce);
  if (kR > 1 && n >= 1 && n * kR <= detail::kReduceBlock) {
    float* const kept = kLog ? nullptr : exps;
    for (; r + kR <= end; r += kR) {
      SoftmaxRowStats stats[kR];
      RowsStats<Format, kR>(x_all + r * n, n, kept, stats);
      for (int64_t k = 0; k < kR; ++k) {
        finish_row_from(r + k, stats[k], kLog ? nullptr : kept + k * n, r + kR + k);
      }
    }
  }
  // Rows of one reduction block too long for the above, two at a time: each row's max and
  // exponentials as RowStats computes them, then both rows' Kahan sums in one loop (BlockSums:
  // the same sums as ReduceRow's), whose dependent chains (four operations per lane vector and
  // element) would otherwise bound the pass.
  if (n <= detail::kReduceBlock) {
    for (; r + 2 <= end; r += 2) {
      float max[2], sum[2];
      for (int64_t k = 0; k < 2; ++k) {
        const S* const x = x_all + (r + k) * n;
        max[k] = RowMax<Format>(x, n);
        StoreExpShifted<Format>(x, n, max[k], exps + k * n);
      }
      const float* const kept = exps;
      BlockSums<kSoftmaxSumMethod, float, 2>(
          [kept, n](size_t k, auto d, int64_t i) {
            return hn::LoadU(d, kept + static_cast<int64_t>(k) * n + i);
          },
          n, sum);
      for (int64_t k = 0; k < 2; ++k) {
        finish_row_from(r + k, SoftmaxRowStats{max[k], sum[k]}, kLog ? nullptr : exps + k * n,
                        r + 2 + k);
      }
    }
  }
  // Each row has its exponentials computed into a buffer before the sum reads them (RowStats):
  // computed four vectors at a time, they cost less than inside the sum's loop, and softmax
  // divides them instead of computing them again. Rows of one reduction block use exps, longer
  // softmax rows (up to kMaxKeptExps elements) this thread's heap buffer; longer log-softmax rows
  // compute their exponentials inside the sum, and so do softmax rows whose buffer could not be
  // allocated (then again in the output pass).
  float* kept = nullptr;
  if (n <= detail::kReduceBlock) {
    kept = exps;
  } else if (!kLog && n <= kMaxKeptExps) {
    kept = ExpsBuffer(static_cast<std::size_t>(n));
  }
  for (; r < end; ++r) {
    // A struct, not a structured binding: clang 14 (the fuzz build) cannot capture one in a lambda.
    const SoftmaxRowStats stats = RowStats<Format>(x_all + r * n, n, kept);
    finish_row_from(r, stats, kLog ? nullptr : kept, r + 1);
  }
}

// A non-last axis: one tile of up to kTileWidth rows, element (k, j) at offset + k * stride + j.
// The sum replays core/reduce.h's order per row: axis element k of block b goes to lane
// (k - b) % 32 of that row's lane sums.
template <class Format, bool kLog>
void Tile(const detail::SoftmaxKernelArgs& a, const detail::Tile& t) {
  using S = typename Format::Storage;
  constexpr int kW = static_cast<int>(detail::kTileWidth);
  constexpr int kL = detail::kReduceLanes;
  const S* x = static_cast<const S*>(a.x) + t.offset;
  S* y = static_cast<S*>(a.y) + t.offset;
  const int64_t n = a.rows.axis, stride = t.stride;
  const int64_t w = t.i1 - t.i0;
  const float kNegInf = -std::numeric_limits<float>::infinity();

  // Max per row; a NaN anywhere makes the row's max NaN (then every output is NaN).
  HWY_ALIGN float max[kW];
  HWY_ALIGN float nan[kW];
  std::fill(max, max + kW, kNegInf);
  std::fill(nan, nan + kW, 0.0f);
  for (int64_t k = 0; k < n; ++k) {
    ForEachVector(0, w, [&](auto d, int64_t j) MANTISSA_VECTOR_BODY {
      const auto v = LoadF32<Format>(d, x + k * stride + j);
      hn::StoreU(MaxVectors<decltype(d)>(hn::LoadU(d, max + j), v), d, max + j);
      const auto flag = hn::IfThenElse(hn::IsNaN(v), hn::Set(d, 1.0f), hn::LoadU(d, nan + j));
      hn::StoreU(flag, d, nan + j);
    });
  }
  for (int64_t j = 0; j < w; ++j) {
    if (nan[j] != 0.0f) max[j] = std::numeric_limits<float>::quiet_NaN();
  }

  // Sum of exp(x - max), block by block. Softmax over an axis of one reduction block keeps the
  // exponentials the sum computes (n x kW floats, at most 1 MiB, this thread's buffer) and the
  // output pass divides them instead of computing them again: the same values (Exp gives each
  // lane's bits whatever the vector).
  auto term = [&](auto d, int64_t k, int64_t j) {
    return Exp(d, hn::Sub(LoadF32<Format>(d, x + k * stride + j), hn::LoadU(d, max + j)));
  };
  float* const exps =
      !kLog && n <= detail::kReduceBlock ? ExpsBuffer(static_cast<std::size_t>(n) * kW) : nullptr;
  const bool keep = exps != nullptr;
  HWY_ALIGN float s[kL][kW];
  HWY_ALIGN float c[kL][kW];
  HWY_ALIGN float sum[kW];
  using P = detail::Partial<float>;
  const auto merge = [](const P& p, const P& q) { return detail::merge<kSumMethod>(p, q); };
  // Several blocks per row: their partials combine along the pairwise tree, kept on this stack
  // (constructed only then: it is kMaxBlockLevels x kW partials).
  std::optional<detail::LockstepPairwiseStacks<P, kW, detail::kMaxBlockLevels>> stacks;
  if (n > detail::kReduceBlock) stacks.emplace();
  P partial[kW];  // a block's partial per row; each row's total after the collapse
  for (int64_t b = 0; b < n; b += detail::kReduceBlock) {
    const int64_t len = std::min(detail::kReduceBlock, n - b);
    for (int l = 0; l < kL; ++l) {
      std::fill(s[l], s[l] + kW, -0.0f);
      std::fill(c[l], c[l] + kW, -0.0f);
    }
    for (int64_t k = 0; k < len; ++k) {
      float* sl = s[k % kL];
      float* cl = c[k % kL];
      float* const kept = keep ? exps + (b + k) * kW : nullptr;
      ForEachVector(0, w, [&](auto d, int64_t j) MANTISSA_VECTOR_BODY {
        auto sv = hn::LoadU(d, sl + j);
        auto cv = hn::LoadU(d, cl + j);
        const auto e = term(d, b + k, j);
        if (kept != nullptr) hn::StoreU(e, d, kept + j);
        Accumulate<kSumMethod>(d, sv, cv, e);
        hn::StoreU(sv, d, sl + j);
        hn::StoreU(cv, d, cl + j);
      });
    }
    for (int64_t j = 0; j < w; ++j) {
      float sums[kL], comps[kL];
      for (int l = 0; l < kL; ++l) sums[l] = s[l][j], comps[l] = c[l][j];
      P p = CombineLanes<kSumMethod>(sums, comps);
      if (!std::isfinite(p.sum) || !std::isfinite(p.comp)) {
        // As ReduceBlock: an inf or NaN term makes the compensation meaningless; redo the block
        // of this row with the plain sum (rare: such a row's outputs are NaN).
        const hn::CappedTag<float, 1> d1;
        for (int l = 0; l < kL; ++l) sums[l] = -0.0f, comps[l] = -0.0f;
        for (int64_t k = 0; k < len; ++k) {
          sums[k % kL] = hn::GetLane(hn::Add(hn::Set(d1, sums[k % kL]), term(d1, b + k, j)));
        }
        p = CombineLanes<detail::ReduceMethod::kNaive>(sums, comps);
      }
      partial[j] = p;
    }
    if (stacks) stacks->push(partial, static_cast<int>(w), merge);
  }
  if (stacks) stacks->collapse(partial, static_cast<int>(w), merge);
  for (int64_t j = 0; j < w; ++j) sum[j] = SumOrLog<kLog>(detail::finish<kSumMethod>(partial[j]));

  if (keep) {
    for (int64_t k = 0; k < n; ++k) {
      const float* const kept = exps + k * kW;
      ForEachVector(0, w, [&](auto d, int64_t j) MANTISSA_VECTOR_BODY {
        StoreResult<Format>(d, hn::Div(hn::LoadU(d, kept + j), hn::LoadU(d, sum + j)),
                            y + k * stride + j);
      });
    }
    return;
  }
  for (int64_t k = 0; k < n; ++k) {
    ForEachVector(0, w, [&](auto d, int64_t j) MANTISSA_VECTOR_BODY {
      const auto shifted = hn::Sub(LoadF32<Format>(d, x + k * stride + j), hn::LoadU(d, max + j));
      StoreResult<Format>(d, RowOutput<kLog>(d, shifted, hn::LoadU(d, sum + j)),
                          y + k * stride + j);
    });
  }
}

template <class Format, bool kLog>
void SoftmaxFormat(const detail::SoftmaxKernelArgs& a) {
  if (a.rows.last_axis()) {
    detail::for_each_row_block(
        a.rows, [&](int64_t begin, int64_t end) { LastAxisRows<Format, kLog>(a, begin, end); });
  } else {
    detail::for_each_tile(a.rows, [&](const detail::Tile& t) { Tile<Format, kLog>(a, t); });
  }
}

void SoftmaxImpl(const detail::SoftmaxKernelArgs& a) {
  VisitFormat(a.dtype, [&](auto format) {
    if (a.log) {
      SoftmaxFormat<decltype(format), true>(a);
    } else {
      SoftmaxFormat<decltype(format), false>(a);
    }
  });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "ops/softmax/softmax_desc.h"

namespace mantissa {

HWY_EXPORT(SoftmaxImpl);

namespace {

Status run_softmax(const SoftmaxTensors& t, int64_t dim, bool log) {
  const int64_t n = *t.self.numel();
  if (n == 0) return {};  // nothing to read or write
  detail::SoftmaxKernelArgs a;
  a.dtype = t.self.dtype;
  a.rows = detail::rows_over_dim(std::span<const int64_t>(t.self.shape.data(), t.self.rank), dim);
  a.x = t.self.data;
  a.y = t.out.data;
  a.log = log;
  HWY_DYNAMIC_DISPATCH(SoftmaxImpl)(a);
  return {};
}

}  // namespace

// Validation is derived from the declaration (softmax_desc.h): out has self's dtype and shape
// and is self itself (in place) or shares no byte with it.
Status softmax_validate(const SoftmaxTensors& t, const SoftmaxParams& p) {
  return detail::validate<detail::SoftmaxOp>(t, p);
}

Status softmax(const SoftmaxTensors& t, const SoftmaxParams& p) {
  return detail::op_entry<detail::SoftmaxOp>(
      t, p, [&]() -> Status { return run_softmax(t, p.dim, false); });
}

Status log_softmax_validate(const SoftmaxTensors& t, const LogSoftmaxParams& p) {
  return detail::validate<detail::LogSoftmaxOp>(t, p);
}

Status log_softmax(const SoftmaxTensors& t, const LogSoftmaxParams& p) {
  return detail::op_entry<detail::LogSoftmaxOp>(
      t, p, [&]() -> Status { return run_softmax(t, p.dim, true); });
}

}  // namespace mantissa
#endif  // HWY_ONCE
