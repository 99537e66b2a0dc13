// SwiGlu and SwiGluGrad: validation, and their kernels written once for every SIMD target.
//
// Layout. x (contiguous, row-major) split along dim d is [rows, 2, half] with rows the product of
// the dims before d and half = (size along d / 2) * (product of the dims after d): row r of x is
// A's `half` elements followed by B's. SwiGlu's out row r holds `half` elements; SwiGluGrad's
// y_grad row r holds `half` and its out row r holds dA then dB, as x. So each row is element-wise
// work on contiguous stretches whatever d is. The flat range of rows * half result pairs is cut
// by parallel_for into chunks of a fixed grain; every element goes through the same operations
// wherever a chunk, a vector or the one-lane tail puts it, so neither the thread count nor the
// SIMD target changes a bit.
//
// Per element, in fp64 from the exactly widened a, b (and g = y_grad), each operation rounded
// once to fp64, in this order (the kit's golden32, precision/op_swi_glu.cc, repeats it):
//   e    = Exp64(-|a|)                       core/math-inl.h's fp64 exp, in [0, 1]
//   s    = 1 / (1 + e)        where a >= 0   sigmoid(a)
//   s    = e / (1 + e)        where a < 0    (the same fraction times exp(a) / exp(a))
//   silu = a * s                             silu = -0 where s == 0 (a < -745: the limit)
// SwiGlu:
//   y    = silu * b
// SwiGluGrad:
//   k    = 1 + a * (1 - s)
//   ds   = s * k                             silu'(a); where e == 0 (|a| > 745): 1 for a > 0,
//                                            -0 for a < 0 (the limits)
//   dA   = (g * b) * ds
//   dB   = g * silu
// then each result rounded to fp32 and from there to the dtype (StoreResult), NaN canonical.
// For fp16 and bf16, silu and ds are read from a table of these steps over all 65536 bit
// patterns of the format (SiluTable): the same bits, one gather instead of some 30 operations.
// Exp's argument is never positive and fp16/bf16/fp32 products of two or three inputs stay far
// inside fp64's range, so nothing overflows before the last rounding. The overrides change only
// a = +-inf, where the steps would give inf * 0 or 0 * inf: silu(-inf) = -0, silu(+inf) = +inf,
// silu'(+inf) = 1, silu'(-inf) = -0; the products with b and g then follow IEEE (0 * inf = NaN).
#ifndef MANTISSA_OPS_SWI_GLU_ARGS_
#define MANTISSA_OPS_SWI_GLU_ARGS_
#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {
struct SwiGluKernelArgs {
  DType dtype = DType::kFloat32;
  int64_t rows = 0;              // product of the dims before dim
  int64_t half = 0;              // elements of A (and of B) per row
  const void* y_grad = nullptr;  // SwiGluGrad: [rows, half]
  const void* x = nullptr;       // [rows, 2, half]
  void* out = nullptr;           // SwiGlu: [rows, half]; SwiGluGrad: [rows, 2, half]
};
}  // namespace mantissa::detail
#endif  // MANTISSA_OPS_SWI_GLU_ARGS_

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/swi_glu/swi_glu.cc"
// clang-format off: foreach_target.h must come first; it re-includes this file once per target.
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/math-inl.h"
#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// e = Exp64(-|a|), s = sigmoid(a) and silu = a * s of K fp64 vectors (the steps above, each
// applied to all K before the next).
template <size_t K, class D>
HWY_INLINE void SigmoidSilu(D d, const hn::Vec<D> (&a)[K], hn::Vec<D> (&e)[K], hn::Vec<D> (&s)[K],
                            hn::Vec<D> (&silu)[K]) {
  const auto one = hn::Set(d, 1.0);
  const auto zero = hn::Zero(d);
  const auto neg_zero = hn::Set(d, -0.0);
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) e[j] = hn::Neg(hn::Abs(a[j]));
  Exp64(d, e);
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) {
    const auto num = hn::IfThenElse(hn::Lt(a[j], zero), e[j], one);
    s[j] = hn::Div(num, hn::Add(one, e[j]));
    // s == 0 only where a < 0 and e underflowed to 0: a * s is -0 there, but NaN for a = -inf.
    silu[j] = hn::IfThenElse(hn::Eq(s[j], zero), neg_zero, hn::Mul(a[j], s[j]));
  }
}

// SwiGlu of K fp64 vectors: a receives silu(a) * b.
template <size_t K, class D>
HWY_INLINE void SwiGluF64(D d, hn::Vec<D> (&a)[K], const hn::Vec<D> (&b)[K]) {
  hn::Vec<D> e[K], s[K], silu[K];
  SigmoidSilu(d, a, e, s, silu);
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) a[j] = hn::Mul(silu[j], b[j]);
}

// ds = silu'(a) of K fp64 vectors from SigmoidSilu's e and s (the steps above).
template <size_t K, class D>
HWY_INLINE void DSilu(D d, const hn::Vec<D> (&a)[K], const hn::Vec<D> (&e)[K],
                      const hn::Vec<D> (&s)[K], hn::Vec<D> (&ds)[K]) {
  const auto one = hn::Set(d, 1.0);
  const auto zero = hn::Zero(d);
  const auto neg_zero = hn::Set(d, -0.0);
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) {
    // It's necessary to keep the order of the operations (the kit repeats it bit for bit).
    const auto k = hn::Add(one, hn::Mul(a[j], hn::Sub(one, s[j])));
    // e == 0: the limits, which the steps give for finite a but not for +-inf (inf * 0).
    const auto limit = hn::IfThenElse(hn::Gt(a[j], zero), one, neg_zero);
    ds[j] = hn::IfThenElse(hn::Eq(e[j], zero), limit, hn::Mul(s[j], k));
  }
}

// SwiGluGrad of K fp64 vectors from g, silu and ds: a receives dA and b receives dB.
template <size_t K, class D>
HWY_INLINE void GradFromSilu(const hn::Vec<D> (&g)[K], const hn::Vec<D> (&silu)[K],
                             const hn::Vec<D> (&ds)[K], hn::Vec<D> (&a)[K], hn::Vec<D> (&b)[K]) {
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) {
    a[j] = hn::Mul(hn::Mul(g[j], b[j]), ds[j]);
    b[j] = hn::Mul(g[j], silu[j]);
  }
}

// SwiGluGrad of K fp64 vectors: a receives dA and b receives dB.
template <size_t K, class D>
HWY_INLINE void SwiGluGradF64(D d, const hn::Vec<D> (&g)[K], hn::Vec<D> (&a)[K],
                              hn::Vec<D> (&b)[K]) {
  hn::Vec<D> e[K], s[K], silu[K], ds[K];
  SigmoidSilu(d, a, e, s, silu);
  DSilu(d, a, e, s, ds);
  GradFromSilu<K, D>(g, silu, ds, a, b);
}

// silu(a) and silu'(a) of every value a 16-bit format holds, interleaved and indexed by twice
// its bits (2 x 65536 fp64 values, 1 MiB), computed on first use by this target's own steps and
// kept for the process: an fp16 or bf16 a has at most 65536 values, so one gather replaces the
// exponential, the division and the rest with the same bits (the bitwise tests run every bit
// pattern through every target). Real activations cover a few thousand entries, which stay in
// L1/L2. Key: Fp16 or Bf16 (both bf16 narrowings widen alike).
template <class Key>
const double* SiluTable() {
  static const std::vector<double> table = [] {
    constexpr std::size_t kSize = std::size_t{1} << 16;
    std::vector<uint16_t> bits(kSize);
    std::iota(bits.begin(), bits.end(), uint16_t{0});
    std::vector<double> t(2 * kSize);
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const std::size_t lanes = hn::Lanes(dd);
    HWY_ALIGN double silu_lanes[HWY_MAX_BYTES / sizeof(double)];
    HWY_ALIGN double ds_lanes[HWY_MAX_BYTES / sizeof(double)];
    for (std::size_t i = 0; i < kSize; i += lanes) {
      const hn::Vec<decltype(dd)> a[1] = {hn::PromoteTo(dd, LoadF32<Key>(dh, bits.data() + i))};
      hn::Vec<decltype(dd)> e[1], s[1], silu[1], ds[1];
      SigmoidSilu(dd, a, e, s, silu);
      DSilu(dd, a, e, s, ds);
      hn::Store(silu[0], dd, silu_lanes);
      hn::Store(ds[0], dd, ds_lanes);
      for (std::size_t l = 0; l < lanes; ++l) {
        t[2 * (i + l)] = silu_lanes[l];
        t[2 * (i + l) + 1] = ds_lanes[l];
      }
    }
    return t;
  }();
  return table.data();
}

// The table of Format (nullptr for fp32, which computes the steps).
template <class Format>
const double* SiluTableOf() {
  if constexpr (std::is_same_v<Format, Fp32>) {
    return nullptr;
  } else {
    return SiluTable<std::conditional_t<kIsBf16<Format>, Bf16, Format>>();
  }
}

// Twice the 16-bit patterns at p (lanes of dd, as int64): the index of their silu in SiluTable.
template <class DD>
HWY_INLINE hn::Vec<hn::RebindToSigned<DD>> TableIndex(DD, const uint16_t* p) {
  const hn::Rebind<uint16_t, DD> d16;
  const hn::Rebind<uint32_t, DD> d32;
  const hn::Rebind<uint64_t, DD> d64;
  const hn::RebindToSigned<DD> di;
  const auto bits = hn::PromoteTo(d64, hn::PromoteTo(d32, hn::LoadU(d16, p)));
  return hn::BitCast(di, hn::ShiftLeft<1>(bits));
}

// SwiGlu over `count` consecutive results: out[i] from a[i] and b[i] (table: SiluTableOf).
template <class Format>
HWY_INLINE void SwiGluStretch(const double* table, const typename Format::Storage* a,
                              const typename Format::Storage* b, typename Format::Storage* out,
                              int64_t count) {
  constexpr bool kTable = !std::is_same_v<Format, Fp32>;
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dh;
  constexpr size_t K = 4;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
  const int64_t step = static_cast<int64_t>(K) * lanes;
  int64_t i = 0;
  for (; i + step <= count; i += step) {
    hn::Vec<decltype(dd)> va[K], vb[K];
#pragma GCC unroll 8
    for (size_t j = 0; j < K; ++j) {
      const int64_t at = i + static_cast<int64_t>(j) * lanes;
      if constexpr (kTable) {
        va[j] = hn::GatherIndex(dd, table, TableIndex(dd, a + at));  // silu(a)
      } else {
        va[j] = hn::PromoteTo(dd, LoadF32<Format>(dh, a + at));
      }
      vb[j] = hn::PromoteTo(dd, LoadF32<Format>(dh, b + at));
    }
    if constexpr (kTable) {
#pragma GCC unroll 8
      for (size_t j = 0; j < K; ++j) va[j] = hn::Mul(va[j], vb[j]);
    } else {
      SwiGluF64(dd, va, vb);
    }
    StoreResults<Format>(dd, va, out + i);
  }
  // The tail one lane at a time: the same operations on a one-lane vector.
  const hn::CappedTag<double, 1> d1;
  const hn::Rebind<float, decltype(d1)> df1;
  for (; i < count; ++i) {
    hn::Vec<decltype(d1)> va[1];
    const hn::Vec<decltype(d1)> vb[1] = {hn::PromoteTo(d1, LoadF32<Format>(df1, b + i))};
    if constexpr (kTable) {
      va[0] = hn::Mul(hn::Set(d1, table[2 * std::size_t{a[i]}]), vb[0]);
    } else {
      va[0] = hn::PromoteTo(d1, LoadF32<Format>(df1, a + i));
      SwiGluF64(d1, va, vb);
    }
    StoreResult<Format>(df1, DemoteF64ToF32(df1, d1, va[0]), out + i);
  }
}

// SwiGluGrad over `count` consecutive pairs: da[i], db[i] from g[i], a[i], b[i] (table:
// SiluTableOf). da and db may be a and b themselves (in place): every input of a step is loaded
// before its results are stored.
template <class Format>
HWY_INLINE void SwiGluGradStretch(const double* table, const typename Format::Storage* g,
                                  const typename Format::Storage* a,
                                  const typename Format::Storage* b, typename Format::Storage* da,
                                  typename Format::Storage* db, int64_t count) {
  constexpr bool kTable = !std::is_same_v<Format, Fp32>;
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dh;
  constexpr size_t K = 4;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
  const int64_t step = static_cast<int64_t>(K) * lanes;
  int64_t i = 0;
  for (; i + step <= count; i += step) {
    hn::Vec<decltype(dd)> vg[K], va[K], vb[K];
    [[maybe_unused]] hn::Vec<decltype(dd)> silu[K], ds[K];
#pragma GCC unroll 8
    for (size_t j = 0; j < K; ++j) {
      const int64_t at = i + static_cast<int64_t>(j) * lanes;
      vg[j] = hn::PromoteTo(dd, LoadF32<Format>(dh, g + at));
      if constexpr (kTable) {
        const auto index = TableIndex(dd, a + at);
        silu[j] = hn::GatherIndex(dd, table, index);
        ds[j] = hn::GatherIndex(dd, table + 1, index);
      } else {
        va[j] = hn::PromoteTo(dd, LoadF32<Format>(dh, a + at));
      }
      vb[j] = hn::PromoteTo(dd, LoadF32<Format>(dh, b + at));
    }
    if constexpr (kTable) {
      GradFromSilu<K, decltype(dd)>(vg, silu, ds, va, vb);
    } else {
      SwiGluGradF64(dd, vg, va, vb);
    }
    StoreResults<Format>(dd, va, da + i);
    StoreResults<Format>(dd, vb, db + i);
  }
  const hn::CappedTag<double, 1> d1;
  const hn::Rebind<float, decltype(d1)> df1;
  for (; i < count; ++i) {
    const hn::Vec<decltype(d1)> vg[1] = {hn::PromoteTo(d1, LoadF32<Format>(df1, g + i))};
    hn::Vec<decltype(d1)> va[1];
    hn::Vec<decltype(d1)> vb[1] = {hn::PromoteTo(d1, LoadF32<Format>(df1, b + i))};
    if constexpr (kTable) {
      const std::size_t at = 2 * std::size_t{a[i]};
      const hn::Vec<decltype(d1)> silu[1] = {hn::Set(d1, table[at])};
      const hn::Vec<decltype(d1)> ds[1] = {hn::Set(d1, table[at + 1])};
      GradFromSilu<1, decltype(d1)>(vg, silu, ds, va, vb);
    } else {
      va[0] = hn::PromoteTo(d1, LoadF32<Format>(df1, a + i));
      SwiGluGradF64(d1, vg, va, vb);
    }
    StoreResult<Format>(df1, DemoteF64ToF32(df1, d1, va[0]), da + i);
    StoreResult<Format>(df1, DemoteF64ToF32(df1, d1, vb[0]), db + i);
  }
}

template <class Format>
void SwiGluFormat(const detail::SwiGluKernelArgs& args) {
  using T = typename Format::Storage;
  // Made (on first use) by the calling thread, before any chunk runs.
  const double* const silu_table = SiluTableOf<Format>();
  auto chunk = [&args, silu_table](int64_t begin, int64_t end) {
    // Locals of the chunk: a vector store may alias anything the closure reaches.
    const double* const table = silu_table;
    const T* const x = static_cast<const T*>(args.x);
    T* const out = static_cast<T*>(args.out);
    const int64_t half = args.half;
    // Result i is element k of row r (i = r * half + k); a chunk may span rows.
    for (int64_t i = begin; i < end;) {
      const int64_t r = i / half, k = i - r * half;
      const int64_t count = std::min(end - i, half - k);
      const T* const a = x + r * 2 * half + k;
      SwiGluStretch<Format>(table, a, a + half, out + i, count);
      i += count;
    }
  };
  detail::parallel_for(args.rows * args.half, detail::kDefaultGrain, chunk);
}

template <class Format>
void SwiGluGradFormat(const detail::SwiGluKernelArgs& args) {
  using T = typename Format::Storage;
  const double* const silu_table = SiluTableOf<Format>();
  auto chunk = [&args, silu_table](int64_t begin, int64_t end) {
    const double* const table = silu_table;
    const T* const g = static_cast<const T*>(args.y_grad);
    const T* const x = static_cast<const T*>(args.x);
    T* const out = static_cast<T*>(args.out);
    const int64_t half = args.half;
    for (int64_t i = begin; i < end;) {
      const int64_t r = i / half, k = i - r * half;
      const int64_t count = std::min(end - i, half - k);
      const int64_t at = r * 2 * half + k;
      SwiGluGradStretch<Format>(table, g + i, x + at, x + at + half, out + at, out + at + half,
                                count);
      i += count;
    }
  };
  detail::parallel_for(args.rows * args.half, detail::kDefaultGrain, chunk);
}

void SwiGluImpl(const detail::SwiGluKernelArgs& args) {
  VisitFormat(args.dtype, [&](auto format) { SwiGluFormat<decltype(format)>(args); });
}

void SwiGluGradImpl(const detail::SwiGluKernelArgs& args) {
  VisitFormat(args.dtype, [&](auto format) { SwiGluGradFormat<decltype(format)>(args); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/op_entry.h"
#include "core/rows.h"
#include "mantissa/ops/swi_glu.h"
#include "ops/swi_glu/swi_glu_desc.h"
#include "ops/swi_glu/swi_glu_grad_desc.h"

namespace mantissa {

HWY_EXPORT(SwiGluImpl);
HWY_EXPORT(SwiGluGradImpl);

namespace {

// The kernel's view of a validated x split along dim (x not empty, so every product fits).
detail::SwiGluKernelArgs split_args(const TensorView& x, int64_t dim) {
  const detail::Rows r =
      detail::rows_over_dim(std::span<const int64_t>(x.shape.data(), x.rank), dim);
  detail::SwiGluKernelArgs args;
  args.dtype = x.dtype;
  args.rows = r.outer;
  args.half = r.axis / 2 * r.inner;
  args.x = x.data;
  return args;
}

}  // namespace

// Validation is derived from the declarations (swi_glu_desc.h, swi_glu_grad_desc.h) and their
// check_params: dim in range, an even size along it, the halved shape.
Status swi_glu_validate(const SwiGluTensors& t, const SwiGluParams& p) {
  return detail::validate<detail::SwiGluOp>(t, p);
}

Status swi_glu(const SwiGluTensors& t, const SwiGluParams& p) {
  return detail::op_entry<detail::SwiGluOp>(t, p, [&]() -> Status {
    if (*t.x.numel() == 0) return {};
    detail::SwiGluKernelArgs args = split_args(t.x, p.dim);
    args.out = t.out.data;
    HWY_DYNAMIC_DISPATCH(SwiGluImpl)(args);
    return {};
  });
}

Status swi_glu_grad_validate(const SwiGluGradTensors& t, const SwiGluGradParams& p) {
  return detail::validate<detail::SwiGluGradOp>(t, p);
}

Status swi_glu_grad(const SwiGluGradTensors& t, const SwiGluGradParams& p) {
  return detail::op_entry<detail::SwiGluGradOp>(t, p, [&]() -> Status {
    if (*t.x.numel() == 0) return {};
    detail::SwiGluKernelArgs args = split_args(t.x, p.dim);
    args.y_grad = t.y_grad.data;
    args.out = t.out.data;
    HWY_DYNAMIC_DISPATCH(SwiGluGradImpl)(args);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
