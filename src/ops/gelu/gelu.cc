// Gelu and GeluV2: validation, and one kernel written once for every SIMD target.
//
// The tanh form (Gelu; GeluV2 with approximate tanh, the same bits). Per element, in fp64 from the
// widened input (exact), each operation rounded once to fp64, in this order (the fp32 reference of
// the kit, precision/op_gelu.cc, repeats it):
//   x3 = (x * x) * x
//   s  = sqrt(8 / pi) * (x + 0.044715 * x3)          s = 2u, u the argument of tanh
//   e  = Exp64(-|s|)                                 core/math-inl.h's fp64 exp, in (0, 1]
//   y  = x / (1 + e)             where s >= 0        0.5 (1 + tanh(u)) = 1 / (1 + exp(-2u))
//   y  = (x * e) / (1 + e)       where s < 0         the same fraction times exp(2u) / exp(2u)
// then rounded to fp32 and from there to out's dtype (StoreResult). Exp's argument is never
// positive, so nothing overflows; -inf gives -0 (the limit: x * e would be -inf * 0), +inf gives
// +inf, NaN the canonical NaN.
//
// The erf form (GeluV2 with approximate none), x Phi(x) with Phi(x) = erfc(-x / sqrt 2) / 2:
//   a   = x * fp64(1 / sqrt(2))
//   c   = ErfcNonNegative64(|a|)                     core/math-inl.h, relative error ~1e-15
//   h   = 0.5 * c                                    (exact)
//   Phi = h where x < 0, else 1 - h                  (no cancellation on either side)
//   y   = x * Phi                                    (Phi == 0, x <= -38.6 or -inf: -0)
// then rounded as above. +inf gives +inf, -inf -0, NaN the canonical NaN.
//
// Traffic: one read and one write per element.
#ifndef MANTISSA_OPS_GELU_ARGS_
#define MANTISSA_OPS_GELU_ARGS_
#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {
struct GeluKernelArgs {
  DType dtype = DType::kFloat32;
  int64_t n = 0;
  const void* self = nullptr;
  void* out = nullptr;
  bool erf = false;  // the erf form (GeluV2 with approximate none); otherwise the tanh form
};
}  // namespace mantissa::detail
#endif  // MANTISSA_OPS_GELU_ARGS_

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gelu/gelu.cc"
// clang-format off: foreach_target.h must come first; it re-includes this file once per target.
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cstddef>
#include <numeric>
#include <type_traits>
#include <vector>

#include "core/math-inl.h"
#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// GELU of K fp64 vectors in place (the steps above, each applied to all K before the next).
template <size_t K, class D>
HWY_INLINE void GeluF64(D d, hn::Vec<D> (&x)[K]) {
  const auto c = hn::Set(d, 0.044715);
  const auto k = hn::Set(d, 0x1.9884533d43651p+0);  // sqrt(8 / pi) rounded to fp64
  const auto one = hn::Set(d, 1.0);
  const auto zero = hn::Zero(d);
  const auto neg_zero = hn::Set(d, -0.0);
  hn::Vec<D> s[K], e[K];
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) {
    const auto x3 = hn::Mul(hn::Mul(x[j], x[j]), x[j]);
    s[j] = hn::Mul(k, hn::Add(x[j], hn::Mul(c, x3)));
    e[j] = hn::Neg(hn::Abs(s[j]));
  }
  Exp64(d, e);
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) {
    // x * e where s < 0, with e == 0 giving -0 (x is then negative or -inf).
    const auto scaled = hn::IfThenElse(hn::Eq(e[j], zero), neg_zero, hn::Mul(x[j], e[j]));
    const auto num = hn::IfThenElse(hn::Lt(s[j], zero), scaled, x[j]);
    x[j] = hn::Div(num, hn::Add(one, e[j]));
  }
}

// The erf form of GELU of K fp64 vectors in place (the steps above).
template <size_t K, class D>
HWY_INLINE void GeluErfF64(D d, hn::Vec<D> (&x)[K]) {
  const auto inv_sqrt2 = hn::Set(d, 0x1.6a09e667f3bcdp-1);  // 1 / sqrt(2) rounded to fp64
  const auto half = hn::Set(d, 0.5), one = hn::Set(d, 1.0);
  const auto zero = hn::Zero(d), neg_zero = hn::Set(d, -0.0);
  hn::Vec<D> c[K];
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) c[j] = hn::Abs(hn::Mul(x[j], inv_sqrt2));
  ErfcNonNegative64(d, c);
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) {
    const auto h = hn::Mul(half, c[j]);
    const auto phi = hn::IfThenElse(hn::Lt(x[j], zero), h, hn::Sub(one, h));
    x[j] = hn::IfThenElse(hn::Eq(phi, zero), neg_zero, hn::Mul(x[j], phi));
  }
}

// The tanh form (kErf false) or the erf form (kErf true) of K vectors in place.
template <bool kErf, size_t K, class D>
HWY_INLINE void GeluForm(D d, hn::Vec<D> (&x)[K]) {
  if constexpr (kErf) {
    GeluErfF64(d, x);
  } else {
    GeluF64(d, x);
  }
}

// GELU of every value a 16-bit format holds (65536 fp64 values, 512 KiB, indexed by the bits),
// computed on first use by this target's own steps and kept for the process: one gather then
// gives each fp16 or bf16 element the same fp64 value the steps give (rounded the same way
// afterwards; the bitwise tests run every bit pattern through every target). Key: Fp16 or Bf16
// (the bf16 formats widen alike).
template <class Key, bool kErf>
const double* GeluTable() {
  static const std::vector<double> table = [] {
    constexpr std::size_t kSize = std::size_t{1} << 16;
    std::vector<uint16_t> bits(kSize);
    std::iota(bits.begin(), bits.end(), uint16_t{0});
    std::vector<double> t(kSize);
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const std::size_t lanes = hn::Lanes(dd);
    for (std::size_t i = 0; i < kSize; i += lanes) {
      hn::Vec<decltype(dd)> v[1] = {hn::PromoteTo(dd, LoadF32<Key>(dh, bits.data() + i))};
      GeluForm<kErf>(dd, v);
      hn::StoreU(v[0], dd, t.data() + i);
    }
    return t;
  }();
  return table.data();
}

// The 16-bit patterns at p (lanes of dd, as int64): indices into a table of 65536 entries.
template <class DD>
HWY_INLINE hn::Vec<hn::RebindToSigned<DD>> BitsIndex(DD, const uint16_t* p) {
  const hn::Rebind<uint16_t, DD> d16;
  const hn::Rebind<uint32_t, DD> d32;
  const hn::Rebind<uint64_t, DD> d64;
  const hn::RebindToSigned<DD> di;
  return hn::BitCast(di, hn::PromoteTo(d64, hn::PromoteTo(d32, hn::LoadU(d16, p))));
}

template <class Format, bool kErf>
void GeluFormat(const detail::GeluKernelArgs& args) {
  using T = typename Format::Storage;
  if constexpr (!std::is_same_v<Format, Fp32>) {
    const double* table = GeluTable<std::conditional_t<kIsBf16<Format>, Bf16, Format>, kErf>();
    auto chunk = [&args, table](int64_t begin, int64_t end) {
      const T* const in = static_cast<const T*>(args.self);
      T* const out = static_cast<T*>(args.out);
      const hn::ScalableTag<double> dd;
      constexpr size_t K = 4;
      const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
      int64_t i = begin;
      for (; i + static_cast<int64_t>(K) * lanes <= end; i += static_cast<int64_t>(K) * lanes) {
        hn::Vec<decltype(dd)> v[K];
#pragma GCC unroll 8
        for (size_t j = 0; j < K; ++j) {
          v[j] =
              hn::GatherIndex(dd, table, BitsIndex(dd, in + i + static_cast<int64_t>(j) * lanes));
        }
        StoreResults<Format>(dd, v, out + i);
      }
      const hn::CappedTag<double, 1> d1;
      const hn::Rebind<float, decltype(d1)> df1;
      for (; i < end; ++i) {
        StoreResult<Format>(df1, DemoteF64ToF32(df1, d1, hn::Set(d1, table[in[i]])), out + i);
      }
    };
    detail::parallel_for(args.n, detail::kDefaultGrain, chunk);
    return;
  }
  auto chunk = [&args](int64_t begin, int64_t end) {
    // Locals of the chunk: a vector store may alias anything the closure reaches.
    const T* const in = static_cast<const T*>(args.self);
    T* const out = static_cast<T*>(args.out);
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    constexpr size_t K = 4;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
    int64_t i = begin;
    for (; i + static_cast<int64_t>(K) * lanes <= end; i += static_cast<int64_t>(K) * lanes) {
      // Every input of these elements is loaded before any store, so in place is safe.
      hn::Vec<decltype(dd)> v[K];
#pragma GCC unroll 8
      for (size_t j = 0; j < K; ++j) {
        v[j] = hn::PromoteTo(dd, LoadF32<Format>(dh, in + i + static_cast<int64_t>(j) * lanes));
      }
      GeluForm<kErf>(dd, v);
      StoreResults<Format>(dd, v, out + i);
    }
    // The tail one lane at a time: the same operations on a one-lane vector.
    const hn::CappedTag<double, 1> d1;
    const hn::Rebind<float, decltype(d1)> df1;
    for (; i < end; ++i) {
      hn::Vec<decltype(d1)> v[1] = {hn::PromoteTo(d1, LoadF32<Format>(df1, in + i))};
      GeluForm<kErf>(d1, v);
      StoreResult<Format>(df1, DemoteF64ToF32(df1, d1, v[0]), out + i);
    }
  };
  detail::parallel_for(args.n, detail::kDefaultGrain, chunk);
}

void GeluImpl(const detail::GeluKernelArgs& args) {
  VisitFormat(args.dtype, [&](auto format) {
    if (args.erf) {
      GeluFormat<decltype(format), true>(args);
    } else {
      GeluFormat<decltype(format), false>(args);
    }
  });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/gelu.h"
#include "ops/gelu/gelu_desc.h"
#include "ops/gelu/gelu_v2_desc.h"

namespace mantissa {

HWY_EXPORT(GeluImpl);

// Validation is derived from the declaration (gelu_desc.h): out is self's shape and dtype, and
// either self's very buffer or sharing no byte with it.
Status gelu_validate(const GeluTensors& t, const GeluParams& p) {
  return detail::validate<detail::GeluOp>(t, p);
}

Status gelu(const GeluTensors& t, const GeluParams& p) {
  return detail::op_entry<detail::GeluOp>(t, p, [&]() -> Status {
    detail::GeluKernelArgs args;
    args.dtype = t.self.dtype;
    args.n = *t.self.numel();
    args.self = t.self.data;
    args.out = t.out.data;
    HWY_DYNAMIC_DISPATCH(GeluImpl)(args);
    return {};
  });
}

// GeluV2: the declaration's rules (gelu_v2_desc.h), then the erf form unless approximate is tanh
// (upstream maps every other value to none).
Status gelu_v2_validate(const GeluV2Tensors& t, const GeluV2Params& p) {
  return detail::validate<detail::GeluV2Op>(t, p);
}

Status gelu_v2(const GeluV2Tensors& t, const GeluV2Params& p) {
  return detail::op_entry<detail::GeluV2Op>(t, p, [&]() -> Status {
    detail::GeluKernelArgs args;
    args.dtype = t.x.dtype;
    args.n = *t.x.numel();
    args.self = t.x.data;
    args.out = t.y.data;
    args.erf = p.approximate != GeluApproximate::kTanh;
    HWY_DYNAMIC_DISPATCH(GeluImpl)(args);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
