// The trainer's GEMM and GELU, written once for every SIMD target (see kernels.h).
//
// GEMM order, which is normative: for each element of C, acc = +0; for k = 0 .. K-1:
// acc = acc + (a[m, k] * b[k, n]), the product rounded to fp32, then the sum. Vectors run along
// n (one lane per output column), so the vector width changes which columns share a register,
// never the order of any column's sum; tiles over rows and columns and the chunks of rows given
// to threads change nothing either. No MulAdd: targets without FMA must give the same bits.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "train/kernels.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <vector>

#include "core/math-inl.h"
#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::train::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
using mantissa::HWY_NAMESPACE::Exp;
using mantissa::HWY_NAMESPACE::Fp16;
using mantissa::HWY_NAMESPACE::Fp32;
using mantissa::HWY_NAMESPACE::LoadF32;

// The finished sum of one vector of columns starting at `col`, plus the bias there (one more
// fp32 addition) when there is one.
template <class D>
HWY_INLINE hn::Vec<D> WithBias(D d, hn::Vec<D> acc, const float* bias, int64_t col) {
  return bias == nullptr ? acc : hn::Add(acc, hn::LoadU(d, bias + col));
}

// Four rows of C times two vectors of columns starting at n0: the eight partial sums stay in
// registers for the whole k loop (written out by hand: GCC keeps an array of vectors in
// memory), and each B vector loaded serves four rows.
template <class F, class D>
HWY_INLINE void Tile4x2(D d, const float* HWY_RESTRICT a, const typename F::Storage* b,
                        float* HWY_RESTRICT c, const float* bias, int64_t m0, int64_t k, int64_t n,
                        int64_t n0) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const float* a0 = a + m0 * k;
  const float* a1 = a0 + k;
  const float* a2 = a1 + k;
  const float* a3 = a2 + k;
  auto c00 = hn::Zero(d), c01 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  auto c20 = hn::Zero(d), c21 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d);
  const typename F::Storage* bp = b + n0;
  for (int64_t kk = 0; kk < k; ++kk, bp += n) {
    const auto b0 = LoadF32<F>(d, bp);
    const auto b1 = LoadF32<F>(d, bp + lanes);
    // It's necessary to keep the order of the operations: product rounded, then the sum.
    auto x = hn::Set(d, a0[kk]);
    c00 = hn::Add(c00, hn::Mul(x, b0));
    c01 = hn::Add(c01, hn::Mul(x, b1));
    x = hn::Set(d, a1[kk]);
    c10 = hn::Add(c10, hn::Mul(x, b0));
    c11 = hn::Add(c11, hn::Mul(x, b1));
    x = hn::Set(d, a2[kk]);
    c20 = hn::Add(c20, hn::Mul(x, b0));
    c21 = hn::Add(c21, hn::Mul(x, b1));
    x = hn::Set(d, a3[kk]);
    c30 = hn::Add(c30, hn::Mul(x, b0));
    c31 = hn::Add(c31, hn::Mul(x, b1));
  }
  float* c0 = c + m0 * n + n0;
  hn::StoreU(WithBias(d, c00, bias, n0), d, c0);
  hn::StoreU(WithBias(d, c01, bias, n0 + lanes), d, c0 + lanes);
  hn::StoreU(WithBias(d, c10, bias, n0), d, c0 + n);
  hn::StoreU(WithBias(d, c11, bias, n0 + lanes), d, c0 + n + lanes);
  hn::StoreU(WithBias(d, c20, bias, n0), d, c0 + 2 * n);
  hn::StoreU(WithBias(d, c21, bias, n0 + lanes), d, c0 + 2 * n + lanes);
  hn::StoreU(WithBias(d, c30, bias, n0), d, c0 + 3 * n);
  hn::StoreU(WithBias(d, c31, bias, n0 + lanes), d, c0 + 3 * n + lanes);
}

// Eight rows times two vectors (16 accumulators: AVX-512 has 32 registers; on 16-register
// targets the compiler spills, which costs time, not bits). Same operations as Tile4x2.
#define MANTISSA_TILE_ROW(i)                    \
  do {                                          \
    const auto x = hn::Set(d, a0[(i)*k + kk]);  \
    c##i##0 = hn::Add(c##i##0, hn::Mul(x, b0)); \
    c##i##1 = hn::Add(c##i##1, hn::Mul(x, b1)); \
  } while (0)
#define MANTISSA_TILE_STORE(i)                                                \
  do {                                                                        \
    hn::StoreU(WithBias(d, c##i##0, bias, n0), d, o + (i)*n);                 \
    hn::StoreU(WithBias(d, c##i##1, bias, n0 + lanes), d, o + (i)*n + lanes); \
  } while (0)
template <class F, class D>
HWY_INLINE void Tile8x2(D d, const float* HWY_RESTRICT a, const typename F::Storage* b,
                        float* HWY_RESTRICT c, const float* bias, int64_t m0, int64_t k, int64_t n,
                        int64_t n0) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const float* a0 = a + m0 * k;
  auto c00 = hn::Zero(d), c01 = hn::Zero(d), c10 = hn::Zero(d), c11 = hn::Zero(d);
  auto c20 = hn::Zero(d), c21 = hn::Zero(d), c30 = hn::Zero(d), c31 = hn::Zero(d);
  auto c40 = hn::Zero(d), c41 = hn::Zero(d), c50 = hn::Zero(d), c51 = hn::Zero(d);
  auto c60 = hn::Zero(d), c61 = hn::Zero(d), c70 = hn::Zero(d), c71 = hn::Zero(d);
  const typename F::Storage* bp = b + n0;
  for (int64_t kk = 0; kk < k; ++kk, bp += n) {
    const auto b0 = LoadF32<F>(d, bp);
    const auto b1 = LoadF32<F>(d, bp + lanes);
    MANTISSA_TILE_ROW(0);
    MANTISSA_TILE_ROW(1);
    MANTISSA_TILE_ROW(2);
    MANTISSA_TILE_ROW(3);
    MANTISSA_TILE_ROW(4);
    MANTISSA_TILE_ROW(5);
    MANTISSA_TILE_ROW(6);
    MANTISSA_TILE_ROW(7);
  }
  float* o = c + m0 * n + n0;
  MANTISSA_TILE_STORE(0);
  MANTISSA_TILE_STORE(1);
  MANTISSA_TILE_STORE(2);
  MANTISSA_TILE_STORE(3);
  MANTISSA_TILE_STORE(4);
  MANTISSA_TILE_STORE(5);
  MANTISSA_TILE_STORE(6);
  MANTISSA_TILE_STORE(7);
}
#undef MANTISSA_TILE_ROW
#undef MANTISSA_TILE_STORE

// kRows (1 or 4) rows times one vector of columns (any vector size, partial ones included).
template <class F, int kRows, class D>
HWY_INLINE void TileRx1(D d, const float* HWY_RESTRICT a, const typename F::Storage* b,
                        float* HWY_RESTRICT c, const float* bias, int64_t m0, int64_t k, int64_t n,
                        int64_t n0) {
  const float* a0 = a + m0 * k;
  auto c0 = hn::Zero(d), c1 = hn::Zero(d), c2 = hn::Zero(d), c3 = hn::Zero(d);
  const typename F::Storage* bp = b + n0;
  for (int64_t kk = 0; kk < k; ++kk, bp += n) {
    const auto b0 = LoadF32<F>(d, bp);
    c0 = hn::Add(c0, hn::Mul(hn::Set(d, a0[kk]), b0));
    if constexpr (kRows == 4) {
      c1 = hn::Add(c1, hn::Mul(hn::Set(d, a0[k + kk]), b0));
      c2 = hn::Add(c2, hn::Mul(hn::Set(d, a0[2 * k + kk]), b0));
      c3 = hn::Add(c3, hn::Mul(hn::Set(d, a0[3 * k + kk]), b0));
    }
  }
  float* out = c + m0 * n + n0;
  hn::StoreU(WithBias(d, c0, bias, n0), d, out);
  if constexpr (kRows == 4) {
    hn::StoreU(WithBias(d, c1, bias, n0), d, out + n);
    hn::StoreU(WithBias(d, c2, bias, n0), d, out + 2 * n);
    hn::StoreU(WithBias(d, c3, bias, n0), d, out + 3 * n);
  }
}

// The last columns (fewer than a full vector): partial vectors of 8, 4, 2 and 1 lanes, each
// lane computed by the same operations as in a full vector.
template <class F, int kRows, size_t kCap>
HWY_INLINE void TailColumns(const float* a, const typename F::Storage* b, float* c,
                            const float* bias, int64_t m0, int64_t k, int64_t n, int64_t& n0) {
  const hn::CappedTag<float, kCap> dc;
  if (n - n0 >= static_cast<int64_t>(hn::Lanes(dc))) {
    TileRx1<F, kRows>(dc, a, b, c, bias, m0, k, n, n0);
    n0 += static_cast<int64_t>(hn::Lanes(dc));
  }
  if constexpr (kCap > 1) TailColumns<F, kRows, kCap / 2>(a, b, c, bias, m0, k, n, n0);
}

// Rows [m0, m0 + kRows) of C (kRows 8, 4 or 1), every column.
template <class F, int kRows>
HWY_INLINE void RowBlock(const float* a, const typename F::Storage* b, float* c, const float* bias,
                         int64_t m0, int64_t k, int64_t n) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t n0 = 0;
  if constexpr (kRows == 8) {
    for (; n0 + 2 * lanes <= n; n0 += 2 * lanes) Tile8x2<F>(d, a, b, c, bias, m0, k, n, n0);
    for (int64_t h = 0; h < 8; h += 4) {
      int64_t m = n0;
      for (; m + lanes <= n; m += lanes) TileRx1<F, 4>(d, a, b, c, bias, m0 + h, k, n, m);
      TailColumns<F, 4, 8>(a, b, c, bias, m0 + h, k, n, m);
    }
    return;
  }
  if constexpr (kRows == 4) {
    for (; n0 + 2 * lanes <= n; n0 += 2 * lanes) Tile4x2<F>(d, a, b, c, bias, m0, k, n, n0);
  }
  for (; n0 + lanes <= n; n0 += lanes) TileRx1<F, kRows>(d, a, b, c, bias, m0, k, n, n0);
  TailColumns<F, kRows, 8>(a, b, c, bias, m0, k, n, n0);
}

// 16-bit operands are widened to fp32 (exact) before the products, A and B whole, once per call
// and before the parallel region, into buffers of the calling thread: the inner loop then runs on
// plain floats, and nothing is allocated once a chunk may have written rows of C (a failed
// allocation leaves C untouched).
template <class F>
void WidenRange(const void* src, float* dst, int64_t n) {
  auto chunk = [src, dst](int64_t begin, int64_t end) {
    // Locals of the chunk, kept in registers across the stores (as in ops/sgd/sgd.cc).
    const auto* const in = static_cast<const typename F::Storage*>(src);
    float* const out = dst;
    mantissa::HWY_NAMESPACE::ForEachVector(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      hn::StoreU(LoadF32<F>(d, in + i), d, out + i);
    });
  };
  mantissa::detail::parallel_for(n, 16384, chunk);
}

// The operand as fp32: itself, or its widened copy in `buffer` (grown, never shrunk).
template <class F>
const float* AsFp32(const void* operand, int64_t count, std::vector<float>& buffer) {
  if constexpr (std::is_same_v<F, Fp32>) {
    return static_cast<const float*>(operand);
  } else {
    if (buffer.size() < static_cast<std::size_t>(count)) {
      buffer.resize(static_cast<std::size_t>(count));
    }
    WidenRange<F>(operand, buffer.data(), count);
    return buffer.data();
  }
}

template <class F>
void GemmFormat(const void* av, const void* bv, const float* bias, float* c, int64_t m, int64_t k,
                int64_t n) {
  thread_local std::vector<float> a_widened, b_widened;
  const float* const a = AsFp32<F>(av, m * k, a_widened);
  const float* const b = AsFp32<F>(bv, k * n, b_widened);
  auto rows = [&](int64_t begin, int64_t end) {
    const float* a_rows = a + begin * k;
    float* c_rows = c + begin * n;
    const int64_t count = end - begin;
    int64_t r = 0;
    for (; r + 8 <= count; r += 8) RowBlock<Fp32, 8>(a_rows, b, c_rows, bias, r, k, n);
    for (; r + 4 <= count; r += 4) RowBlock<Fp32, 4>(a_rows, b, c_rows, bias, r, k, n);
    for (; r < count; ++r) RowBlock<Fp32, 1>(a_rows, b, c_rows, bias, r, k, n);
  };
  // Chunks of a multiple of 8 rows (the 8-row tile) holding at least 2^17 products, so that a
  // small product is not split among threads for nothing; the cut depends on the shape only.
  const int64_t per_row = std::max<int64_t>(1, k * n);
  const int64_t grain = 8 * std::max<int64_t>(1, ((int64_t{1} << 17) / per_row + 7) / 8);
  mantissa::detail::parallel_for(m, grain, rows);
}

void GemmImpl(DType dtype, const void* a, const void* b, const float* bias, float* c, int64_t m,
              int64_t k, int64_t n) {
  // Operands are only widened, so the bf16 narrowing choice does not matter here.
  switch (dtype) {
    case DType::kFloat16: GemmFormat<Fp16>(a, b, bias, c, m, k, n); return;
    case DType::kBFloat16:
      GemmFormat<mantissa::HWY_NAMESPACE::Bf16>(a, b, bias, c, m, k, n);
      return;
    default: GemmFormat<Fp32>(a, b, bias, c, m, k, n); return;
  }
}

// tanh(u) = 1 - 2 / (1 + exp(2u)): exp overflows to inf for large u (tanh = 1) and underflows to
// 0 for very negative u (tanh = -1), so no clamping is needed.
template <class D>
HWY_INLINE hn::Vec<D> Tanh(D d, hn::Vec<D> u) {
  const auto one = hn::Set(d, 1.0f);
  const auto e = Exp(d, hn::Add(u, u));
  return hn::Sub(one, hn::Div(hn::Set(d, 2.0f), hn::Add(one, e)));
}

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

template <class D>
HWY_INLINE hn::Vec<D> GeluInner(D d, hn::Vec<D> x) {
  const auto x3 = hn::Mul(hn::Mul(x, x), x);
  return hn::Mul(hn::Set(d, kSqrt2OverPi), hn::Add(x, hn::Mul(hn::Set(d, kGeluCubic), x3)));
}

void GeluForwardImpl(const float* x_all, float* y_all, int64_t n) {
  auto chunk = [x_all, y_all](int64_t begin, int64_t end) {
    const float* const x = x_all;  // locals, kept in registers across the stores
    float* const y = y_all;
    mantissa::HWY_NAMESPACE::ForEachVector(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      const auto xv = hn::LoadU(d, x + i);
      const auto t = Tanh(d, GeluInner(d, xv));
      const auto half_x = hn::Mul(hn::Set(d, 0.5f), xv);
      hn::StoreU(hn::Mul(half_x, hn::Add(hn::Set(d, 1.0f), t)), d, y + i);
    });
  };
  mantissa::detail::parallel_for(n, mantissa::detail::kDefaultGrain, chunk);
}

// d/dx gelu = 0.5 (1 + t) + 0.5 x (1 - t^2) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
void GeluBackwardImpl(const float* x_all, const float* dy_all, float* dx_all, int64_t n) {
  auto chunk = [x_all, dy_all, dx_all](int64_t begin, int64_t end) {
    const float* const x = x_all;  // locals, kept in registers across the stores
    const float* const dy = dy_all;
    float* const dx = dx_all;
    mantissa::HWY_NAMESPACE::ForEachVector(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      const auto xv = hn::LoadU(d, x + i);
      const auto one = hn::Set(d, 1.0f);
      const auto half = hn::Set(d, 0.5f);
      const auto t = Tanh(d, GeluInner(d, xv));
      const auto du =
          hn::Mul(hn::Set(d, kSqrt2OverPi),
                  hn::Add(one, hn::Mul(hn::Set(d, 3.0f * kGeluCubic), hn::Mul(xv, xv))));
      const auto left = hn::Mul(half, hn::Add(one, t));
      const auto right = hn::Mul(hn::Mul(hn::Mul(half, xv), hn::Sub(one, hn::Mul(t, t))), du);
      hn::StoreU(hn::Mul(hn::LoadU(d, dy + i), hn::Add(left, right)), d, dx + i);
    });
  };
  mantissa::detail::parallel_for(n, mantissa::detail::kDefaultGrain, chunk);
}

// Elements nonzero in fp32 whose 16-bit rounding (fp16 or bf16 bits) is +-0.
int64_t CountUnderflowImpl(const float* src, const uint16_t* bits, int64_t n) {
  const hn::ScalableTag<float> d;
  const hn::RebindToUnsigned<decltype(d)> du;
  const hn::Rebind<uint16_t, decltype(d)> d16;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t count = 0, i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto magnitude =
        hn::And(hn::PromoteTo(du, hn::LoadU(d16, bits + i)), hn::Set(du, 0x7FFFu));
    const auto lost = hn::And(hn::RebindMask(d, hn::Eq(magnitude, hn::Zero(du))),
                              hn::Ne(hn::LoadU(d, src + i), hn::Zero(d)));
    count += static_cast<int64_t>(hn::CountTrue(d, lost));
  }
  for (; i < n; ++i) count += ((bits[i] & 0x7FFF) == 0 && src[i] != 0.0f) ? 1 : 0;
  return count;
}

}  // namespace mantissa::train::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/runtime_internal.h"
#include "train/kernels.h"

namespace mantissa::train::detail {

HWY_EXPORT(GemmImpl);
HWY_EXPORT(GeluForwardImpl);
HWY_EXPORT(GeluBackwardImpl);
HWY_EXPORT(CountUnderflowImpl);

int64_t count_underflow(const float* src, const uint16_t* bits, int64_t n) {
  if (n <= 0) return 0;
  mantissa::detail::ensure_runtime_initialized();
  return HWY_DYNAMIC_DISPATCH(CountUnderflowImpl)(src, bits, n);
}

void gemm(DType dtype, const void* a, const void* b, const float* bias, float* c, int64_t m,
          int64_t k, int64_t n) {
  if (m <= 0 || n <= 0) return;
  mantissa::detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(GemmImpl)(dtype, a, b, bias, c, m, k, n);
}

void gelu_forward(const float* x, float* y, int64_t n) {
  if (n <= 0) return;
  mantissa::detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(GeluForwardImpl)(x, y, n);
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
  if (n <= 0) return;
  mantissa::detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(GeluBackwardImpl)(x, dy, dx, n);
}

}  // namespace mantissa::train::detail
#endif  // HWY_ONCE
