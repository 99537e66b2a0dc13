// GeluBackward and GeluBackwardV2: validation, and one kernel written once for every SIMD target.
//
// grad_input = dy * g(x), g the derivative of GELU, per element in fp64 from the exactly widened
// dy and x, each operation rounded once to fp64, in this order:
//
// the tanh form (GeluBackward; GeluBackwardV2 with approximate tanh), with s = 2u and
// sigma(s) = 1 / (1 + exp(-s)) = 0.5 (1 + tanh(u)):
//   x3  = (x * x) * x
//   s   = k * (x + 0.044715 * x3)                    k = sqrt(8 / pi) rounded to fp64 (as Gelu)
//   ds  = k * (1 + 0.134145 * (x * x))               ds/dx; 0.134145 = 3 * 0.044715 in fp64
//   e   = Exp64(-|s|)                                in (0, 1]
//   q   = 1 + e
//   sig = 1 / q where s >= 0, e / q where s < 0      sigma(s)
//   r   = ((x * ds) * e) / (q * q)                   x sigma'(s) ds/dx; sigma' = e / (1 + e)^2
//   g   = sig + r                                    (e == 0: g = sig, 1 or 0)
//
// the erf form (GeluBackwardV2 with approximate none), g = Phi(x) + x phi(x):
//   Phi = Gelu's erf-form Phi(x) (gelu.cc: ErfcNonNegative64 of |x * fp64(1 / sqrt 2)|)
//   p   = Exp64(-(0.5 * (x * x))) * fp64(1 / sqrt(2 pi))        phi(x)
//   g   = Phi + x * p                                (p == 0: g = Phi, 1 or 0)
//
// then grad_input = dy * g, rounded to fp32 and from there to the output's dtype. The zero of g
// near x = -0.75 (where the two terms cancel) keeps its accuracy: each term is within a few fp64
// ulp, so the fp32 result is off by far less than its own ulp. Limits: g(+inf) = 1, g(-inf) = 0;
// NaN gives the canonical NaN.
//
// Broadcasting and mixed dtypes: where dy and x have grad_input's shape and one dtype with it,
// the kernel reads them where they are. Otherwise both are widened to fp32 (exact) in the
// broadcast shape, the same kernel computes fp32 results, and those are rounded to the promoted
// dtype of dy and x, then converted to grad_input's: the same bits as the direct path wherever
// both apply.
#ifndef MANTISSA_OPS_GELU_BACKWARD_ARGS_
#define MANTISSA_OPS_GELU_BACKWARD_ARGS_
#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {
struct GeluBackwardKernelArgs {
  DType dtype = DType::kFloat32;  // of dy, x and out
  int64_t n = 0;
  const void* dy = nullptr;
  const void* x = nullptr;
  void* out = nullptr;
  bool erf = false;  // the erf form; otherwise the tanh form
};
}  // namespace mantissa::detail
#endif  // MANTISSA_OPS_GELU_BACKWARD_ARGS_

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/gelu/gelu_backward.cc"
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

// g(x) of the tanh form for K fp64 vectors in place (the steps above).
template <size_t K, class D>
HWY_INLINE void GeluGradTanhF64(D d, hn::Vec<D> (&x)[K]) {
  const auto c = hn::Set(d, 0.044715);
  const auto c3 = hn::Set(d, 0.134145);
  const auto k = hn::Set(d, 0x1.9884533d43651p+0);  // sqrt(8 / pi) rounded to fp64
  const auto one = hn::Set(d, 1.0);
  const auto zero = hn::Zero(d);
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
    const auto ds = hn::Mul(k, hn::Add(one, hn::Mul(c3, hn::Mul(x[j], x[j]))));
    const auto q = hn::Add(one, e[j]);
    const auto sig = hn::Div(hn::IfThenElse(hn::Lt(s[j], zero), e[j], one), q);
    const auto r = hn::Div(hn::Mul(hn::Mul(x[j], ds), e[j]), hn::Mul(q, q));
    x[j] = hn::IfThenElse(hn::Eq(e[j], zero), sig, hn::Add(sig, r));
  }
}

// g(x) of the erf form for K fp64 vectors in place.
template <size_t K, class D>
HWY_INLINE void GeluGradErfF64(D d, hn::Vec<D> (&x)[K]) {
  const auto inv_sqrt2 = hn::Set(d, 0x1.6a09e667f3bcdp-1);    // 1 / sqrt(2) rounded to fp64
  const auto inv_sqrt2pi = hn::Set(d, 0x1.9884533d43651p-2);  // 1 / sqrt(2 pi) rounded to fp64
  const auto half = hn::Set(d, 0.5), one = hn::Set(d, 1.0);
  const auto zero = hn::Zero(d);
  hn::Vec<D> c[K], p[K];
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) {
    c[j] = hn::Abs(hn::Mul(x[j], inv_sqrt2));
    p[j] = hn::Neg(hn::Mul(half, hn::Mul(x[j], x[j])));
  }
  ErfcNonNegative64(d, c);
  Exp64(d, p);
#pragma GCC unroll 8
  for (size_t j = 0; j < K; ++j) {
    const auto h = hn::Mul(half, c[j]);
    const auto phi_big = hn::IfThenElse(hn::Lt(x[j], zero), h, hn::Sub(one, h));
    const auto density = hn::Mul(p[j], inv_sqrt2pi);
    x[j] = hn::IfThenElse(hn::Eq(density, zero), phi_big, hn::Add(phi_big, hn::Mul(x[j], density)));
  }
}

template <bool kErf, size_t K, class D>
HWY_INLINE void GeluGradForm(D d, hn::Vec<D> (&x)[K]) {
  if constexpr (kErf) {
    GeluGradErfF64(d, x);
  } else {
    GeluGradTanhF64(d, x);
  }
}

// g(x) of every value a 16-bit format holds (65536 fp64 values indexed by the bits), computed on
// first use by this target's own steps and kept for the process (as gelu.cc's table of GELU):
// dy * g then comes from one gather and one product, with the same bits. Key: Fp16 or Bf16.
template <class Key, bool kErf>
const double* GeluGradTable() {
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
      GeluGradForm<kErf>(dd, v);
      hn::StoreU(v[0], dd, t.data() + i);
    }
    return t;
  }();
  return table.data();
}

// The 16-bit patterns at p (lanes of dd, as int64): indices into a table of 65536 entries.
template <class DD>
HWY_INLINE hn::Vec<hn::RebindToSigned<DD>> GradBitsIndex(DD, const uint16_t* p) {
  const hn::Rebind<uint16_t, DD> d16;
  const hn::Rebind<uint32_t, DD> d32;
  const hn::Rebind<uint64_t, DD> d64;
  const hn::RebindToSigned<DD> di;
  return hn::BitCast(di, hn::PromoteTo(d64, hn::PromoteTo(d32, hn::LoadU(d16, p))));
}

template <class Format, bool kErf>
void GeluBackwardFormat(const detail::GeluBackwardKernelArgs& args) {
  using T = typename Format::Storage;
  if constexpr (!std::is_same_v<Format, Fp32>) {
    const double* table = GeluGradTable<std::conditional_t<kIsBf16<Format>, Bf16, Format>, kErf>();
    auto chunk = [&args, table](int64_t begin, int64_t end) {
      const T* const dy = static_cast<const T*>(args.dy);
      const T* const x = static_cast<const T*>(args.x);
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
          const int64_t at = i + static_cast<int64_t>(j) * lanes;
          v[j] = hn::Mul(hn::PromoteTo(dd, LoadF32<Format>(dh, dy + at)),
                         hn::GatherIndex(dd, table, GradBitsIndex(dd, x + at)));
        }
        StoreResults<Format>(dd, v, out + i);
      }
      const hn::CappedTag<double, 1> d1;
      const hn::Rebind<float, decltype(d1)> df1;
      for (; i < end; ++i) {
        const auto g = hn::PromoteTo(d1, LoadF32<Format>(df1, dy + i));
        StoreResult<Format>(df1, DemoteF64ToF32(df1, d1, hn::Mul(g, hn::Set(d1, table[x[i]]))),
                            out + i);
      }
    };
    detail::parallel_for(args.n, detail::kDefaultGrain, chunk);
    return;
  }
  auto chunk = [&args](int64_t begin, int64_t end) {
    // Locals of the chunk: a vector store may alias anything the closure reaches.
    const T* const dy = static_cast<const T*>(args.dy);
    const T* const x = static_cast<const T*>(args.x);
    T* const out = static_cast<T*>(args.out);
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    constexpr size_t K = 4;
    const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
    int64_t i = begin;
    for (; i + static_cast<int64_t>(K) * lanes <= end; i += static_cast<int64_t>(K) * lanes) {
      // Every input of these elements is loaded before any store, so in place is safe.
      hn::Vec<decltype(dd)> v[K], g[K];
#pragma GCC unroll 8
      for (size_t j = 0; j < K; ++j) {
        const int64_t at = i + static_cast<int64_t>(j) * lanes;
        v[j] = hn::PromoteTo(dd, LoadF32<Format>(dh, x + at));
        g[j] = hn::PromoteTo(dd, LoadF32<Format>(dh, dy + at));
      }
      GeluGradForm<kErf>(dd, v);
#pragma GCC unroll 8
      for (size_t j = 0; j < K; ++j) v[j] = hn::Mul(g[j], v[j]);
      StoreResults<Format>(dd, v, out + i);
    }
    // The tail one lane at a time: the same operations on a one-lane vector.
    const hn::CappedTag<double, 1> d1;
    const hn::Rebind<float, decltype(d1)> df1;
    for (; i < end; ++i) {
      hn::Vec<decltype(d1)> v[1] = {hn::PromoteTo(d1, LoadF32<Format>(df1, x + i))};
      const auto g = hn::PromoteTo(d1, LoadF32<Format>(df1, dy + i));
      GeluGradForm<kErf>(d1, v);
      StoreResult<Format>(df1, DemoteF64ToF32(df1, d1, hn::Mul(g, v[0])), out + i);
    }
  };
  detail::parallel_for(args.n, detail::kDefaultGrain, chunk);
}

void GeluBackwardImpl(const detail::GeluBackwardKernelArgs& args) {
  VisitFormat(args.dtype, [&](auto format) {
    if (args.erf) {
      GeluBackwardFormat<decltype(format), true>(args);
    } else {
      GeluBackwardFormat<decltype(format), false>(args);
    }
  });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <algorithm>
#include <cstring>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "core/scratch.h"
#include "core/validate.h"
#include "mantissa/convert.h"
#include "mantissa/ops/gelu.h"
#include "ops/gelu/gelu_backward_desc.h"

namespace mantissa {

HWY_EXPORT(GeluBackwardImpl);

namespace detail {
namespace {

// `in` (contiguous, broadcastable to `out`'s shape) widened to fp32 in `out`'s shape, row by row
// of out's last dim.
void widen_broadcast(const TensorView& in, const TensorView& out, float* dst) {
  const int rank = out.rank;
  const int64_t inner = rank == 0 ? 1 : out.shape[rank - 1];
  const int64_t total = *out.numel();
  if (total == 0) return;
  const int64_t rows = total / inner;
  // in's element strides in out's dims (0 where in is broadcast).
  std::array<int64_t, kMaxRank> stride{};
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int ii = in.rank - rank + i;
    const int64_t dim = ii >= 0 ? in.shape[ii] : 1;
    stride[i] = dim == 1 ? 0 : s;
    s *= ii >= 0 ? in.shape[ii] : 1;
  }
  const std::size_t esize = dtype_size(in.dtype);
  const auto* base = static_cast<const unsigned char*>(in.data);
  const DType dtype = in.dtype;
  auto chunk = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      int64_t off = 0, rest = r;
      for (int i = rank - 2; i >= 0; --i) {
        off += (rest % out.shape[i]) * stride[i];
        rest /= out.shape[i];
      }
      float* row = dst + r * inner;
      const int64_t step = rank == 0 ? 0 : stride[rank - 1];
      const unsigned char* src = base + static_cast<std::size_t>(off) * esize;
      if (step == 1) {
        switch (dtype) {
          case DType::kFloat16:
            convert_fp16_to_fp32(reinterpret_cast<const uint16_t*>(src), row,
                                 static_cast<std::size_t>(inner));
            break;
          case DType::kBFloat16:
            convert_bf16_to_fp32(reinterpret_cast<const uint16_t*>(src), row,
                                 static_cast<std::size_t>(inner));
            break;
          default: std::memcpy(row, src, static_cast<std::size_t>(inner) * sizeof(float));
        }
      } else {  // one value for the whole row
        float v;
        switch (dtype) {
          case DType::kFloat16:
            convert_fp16_to_fp32(reinterpret_cast<const uint16_t*>(src), &v, 1);
            break;
          case DType::kBFloat16:
            convert_bf16_to_fp32(reinterpret_cast<const uint16_t*>(src), &v, 1);
            break;
          default: std::memcpy(&v, src, sizeof(float));
        }
        std::fill(row, row + inner, v);
      }
    }
  };
  parallel_for(rows, std::max<int64_t>(1, kDefaultGrain / inner), chunk);
}

// fp32 values rounded to the 16-bit dtype `to` (nearest-even), into u16.
void narrow(const float* from, uint16_t* to, int64_t n, DType dtype) {
  if (dtype == DType::kFloat16) {
    convert_fp32_to_fp16(from, to, static_cast<std::size_t>(n));
  } else {
    convert_fp32_to_bf16(from, to, static_cast<std::size_t>(n));
  }
}
void widen(const uint16_t* from, float* to, int64_t n, DType dtype) {
  if (dtype == DType::kFloat16) {
    convert_fp16_to_fp32(from, to, static_cast<std::size_t>(n));
  } else {
    convert_bf16_to_fp32(from, to, static_cast<std::size_t>(n));
  }
}

template <class Op, class Tensors, class Params>
Status run_gelu_backward(const Tensors& t, const Params& p, Workspace ws, bool erf) {
  return op_entry<Op>(t, p, [&]() -> Status {
    GeluBackwardKernelArgs args;
    args.erf = erf;
    args.n = *t.grad_input.numel();
    if (gelu_backward_direct(t.grad_output, t.self, t.grad_input)) {
      args.dtype = t.grad_input.dtype;
      args.dy = t.grad_output.data;
      args.x = t.self.data;
      args.out = t.grad_input.data;
      HWY_DYNAMIC_DISPATCH(GeluBackwardImpl)(args);
      return {};
    }
    const int64_t n = args.n;
    if (n == 0) return {};
    Scratch<float> scratch(ws, 2 * static_cast<uint64_t>(n));
    if (scratch.data() == nullptr) {
      return fail(StatusCode::kInner, Op::kType,
                  "could not allocate {} bytes of scratch for broadcasting or converting",
                  2 * n * static_cast<int64_t>(sizeof(float)));
    }
    float* const dy = scratch.data();
    float* const x = dy + n;
    widen_broadcast(t.grad_output, t.grad_input, dy);
    widen_broadcast(t.self, t.grad_input, x);
    args.dtype = DType::kFloat32;
    args.dy = dy;
    args.x = x;
    args.out = dy;  // in place: fp32 results
    HWY_DYNAMIC_DISPATCH(GeluBackwardImpl)(args);
    // Rounded to the promoted dtype, then converted to grad_input's.
    const DType mid = gelu_promoted(t.grad_output.dtype, t.self.dtype);
    const DType to = t.grad_input.dtype;
    auto* const u16 = reinterpret_cast<uint16_t*>(x);  // x is no longer needed
    if (mid != DType::kFloat32) {
      narrow(dy, u16, n, mid);
      if (to == mid) {
        std::memcpy(t.grad_input.data, u16, static_cast<std::size_t>(n) * sizeof(uint16_t));
        return {};
      }
      widen(u16, dy, n, mid);  // exact
    }
    if (to == DType::kFloat32) {
      std::memcpy(t.grad_input.data, dy, static_cast<std::size_t>(n) * sizeof(float));
    } else {
      narrow(dy, static_cast<uint16_t*>(t.grad_input.data), n, to);
    }
    return {};
  });
}

}  // namespace
}  // namespace detail

Status gelu_backward_validate(const GeluBackwardTensors& t, const GeluBackwardParams& p) {
  return detail::validate<detail::GeluBackwardOp>(t, p);
}

Status gelu_backward(const GeluBackwardTensors& t, const GeluBackwardParams& p, Workspace ws) {
  return detail::run_gelu_backward<detail::GeluBackwardOp>(t, p, ws, false);
}

Status gelu_backward_v2_validate(const GeluBackwardV2Tensors& t, const GeluBackwardV2Params& p) {
  return detail::validate<detail::GeluBackwardV2Op>(t, p);
}

Status gelu_backward_v2(const GeluBackwardV2Tensors& t, const GeluBackwardV2Params& p,
                        Workspace ws) {
  return detail::run_gelu_backward<detail::GeluBackwardV2Op>(
      t, p, ws, p.approximate != GeluApproximate::kTanh);
}

}  // namespace mantissa
#endif  // HWY_ONCE
