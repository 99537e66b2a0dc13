// The matrix-product kernel (gemm.h), written once for every SIMD target.
//
// Blocking. The output is cut into tasks of MB rows by NC columns of one batch item; threads take
// whole tasks, so they split the batch, m and n and never k. A task walks k in blocks of KC: it
// packs B's block (KC x NC, in panels of NR columns, [k][NR]) and A's (MB x KC, in panels of MR
// rows, [k][MR]), each operand widened to fp32 (and rounded as the cube math type asks) as it is
// packed, then runs the MR x NR register tile over every pair of panels. The tile's fp32 sums
// live in the task's buffer between k blocks: the first block starts them at +0, each later one
// loads them and goes on, so every output sees fma over k = 0 .. K-1 in order, whatever the
// blocking. The epilogue (alpha, beta * self, NaN made canonical, one rounding to out's dtype)
// runs once the last block is done. Padding rows and columns (zeros) only feed outputs that are
// never stored.
//
// Tile per target: NR is two vectors and MR as many rows as the registers hold (2 * MR
// accumulators, two B vectors and one broadcast): 12 x 32 on AVX-512 (27 of 32 registers),
// 6 x 16 on AVX2 (15 of 16). Targets without FMA (SSE4, SSSE3, SCALAR) use 4 rows and compute each
// fma with the C library's fmaf, which is correctly rounded.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/matmul/gemm.cc"
// clang-format off: foreach_target.h must come first; it re-includes this file once per target.
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cmath>
#include <new>
#include <vector>

#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"
#include "mantissa/runtime.h"
#include "ops/matmul/gemm.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

using detail::GemmArgs;
using detail::GemmOperand;
using detail::OperandFormat;

// fma(a, b, c) per lane, correctly rounded on every target.
template <class D>
HWY_INLINE hn::Vec<D> Fma(D d, hn::Vec<D> a, hn::Vec<D> b, hn::Vec<D> c) {
#if HWY_NATIVE_FMA
  (void)d;
  return hn::MulAdd(a, b, c);
#else
  // No hardware FMA: the C library's fmaf (correctly rounded, as IEEE 754 and C require).
  constexpr size_t kMax = HWY_MAX_BYTES / sizeof(float);
  HWY_ALIGN float x[kMax], y[kMax], z[kMax];
  hn::Store(a, d, x);
  hn::Store(b, d, y);
  hn::Store(c, d, z);
  for (size_t i = 0; i < hn::Lanes(d); ++i) z[i] = std::fmaf(x[i], y[i], z[i]);
  return hn::Load(d, z);
#endif
}

// Rows of the register tile on this target.
template <class D>
constexpr size_t TileRows(D d) {
#if HWY_NATIVE_FMA
  return hn::MaxLanes(d) >= 16 ? 12 : 6;
#else
  (void)d;
  return 4;
#endif
}

constexpr int64_t kKc = 256;        // k per block: a B panel (KC x NR) stays in L1
constexpr int64_t kNc = 512;        // columns per task: the packed B block (KC x NC) in L2
constexpr int64_t kRowPanels = 16;  // MR-row panels per task (MB = 16 * MR rows)

// MR x NR (two vectors) of outputs over kc steps: acc[r][c] = fma(a[k][r], b[k][c], acc[r][c]),
// starting from +0 or from the partial sums in t (row stride ldt), which it then holds.
template <size_t MR, class D>
HWY_INLINE void Tile(D d, int64_t kc, const float* HWY_RESTRICT ap, const float* HWY_RESTRICT bp,
                     float* HWY_RESTRICT t, int64_t ldt, bool resume) {
  const size_t lanes = hn::Lanes(d);
  hn::Vec<D> c0[MR], c1[MR];
#pragma GCC unroll 16
  for (size_t r = 0; r < MR; ++r) {
    c0[r] = resume ? hn::Load(d, t + static_cast<int64_t>(r) * ldt) : hn::Zero(d);
    c1[r] = resume ? hn::Load(d, t + static_cast<int64_t>(r) * ldt + lanes) : hn::Zero(d);
  }
  for (int64_t k = 0; k < kc; ++k) {
    const auto b0 = hn::Load(d, bp);
    const auto b1 = hn::Load(d, bp + lanes);
#pragma GCC unroll 16
    for (size_t r = 0; r < MR; ++r) {
      const auto a = hn::Set(d, ap[r]);
      c0[r] = Fma(d, a, b0, c0[r]);
      c1[r] = Fma(d, a, b1, c1[r]);
    }
    ap += MR;
    bp += 2 * lanes;
  }
#pragma GCC unroll 16
  for (size_t r = 0; r < MR; ++r) {
    hn::Store(c0[r], d, t + static_cast<int64_t>(r) * ldt);
    hn::Store(c1[r], d, t + static_cast<int64_t>(r) * ldt + lanes);
  }
}

template <class Format>
HWY_INLINE float LoadScalar(const void* p, int64_t i) {
  if constexpr (std::is_same_v<Format, Fp32>) {
    return static_cast<const float*>(p)[i];
  } else if constexpr (std::is_same_v<Format, Fp16>) {
    return fp16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
  } else {
    return bf16_bits_to_float(static_cast<const uint16_t*>(p)[i]);
  }
}

HWY_INLINE float RoundOperand(OperandFormat f, float x) {
  switch (f) {
    case OperandFormat::kFp16: return round_to(DType::kFloat16, x);
    case OperandFormat::kHf32: return detail::round_to_hf32(x);
    case OperandFormat::kAsIs: break;
  }
  return x;
}

// One operand of one batch item, widened as it is packed.
struct Matrix {
  const char* data;  // at the batch item's offset
  int64_t rows, cols;
};

// Packs B[k0 .. k0+kc, n0 .. n0+nc) into panels of nr columns ([panel][k][nr]), zero-padded to a
// whole panel.
template <class Format, class D>
void PackB(D d, const Matrix& b, OperandFormat format, int64_t k0, int64_t kc, int64_t n0,
           int64_t nc, float* HWY_RESTRICT dst) {
  using T = typename Format::Storage;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t nr = 2 * lanes;
  for (int64_t j0 = 0; j0 < nc; j0 += nr, dst += kc * nr) {
    const int64_t w = std::min(nr, nc - j0);
    if (w == nr && b.cols == 1 && format == OperandFormat::kAsIs) {
      const T* src = reinterpret_cast<const T*>(b.data) + k0 * b.rows + n0 + j0;
      for (int64_t k = 0; k < kc; ++k, src += b.rows) {
        hn::Store(LoadF32<Format>(d, src), d, dst + k * nr);
        hn::Store(LoadF32<Format>(d, src + lanes), d, dst + k * nr + lanes);
      }
      continue;
    }
    for (int64_t k = 0; k < kc; ++k) {
      float* row = dst + k * nr;
      const int64_t base = (k0 + k) * b.rows + (n0 + j0) * b.cols;
      for (int64_t j = 0; j < w; ++j) {
        row[j] = RoundOperand(format, LoadScalar<Format>(b.data, base + j * b.cols));
      }
      for (int64_t j = w; j < nr; ++j) row[j] = 0.0f;
    }
  }
}

// Packs A[m0 .. m0+mc, k0 .. k0+kc) into panels of mr rows ([panel][k][mr]), zero-padded.
template <class Format>
void PackA(const Matrix& a, OperandFormat format, size_t mr_size, int64_t m0, int64_t mc,
           int64_t k0, int64_t kc, float* HWY_RESTRICT dst) {
  const auto mr = static_cast<int64_t>(mr_size);
  for (int64_t i0 = 0; i0 < mc; i0 += mr, dst += kc * mr) {
    const int64_t h = std::min(mr, mc - i0);
    for (int64_t r = 0; r < h; ++r) {
      const int64_t base = (m0 + i0 + r) * a.rows + k0 * a.cols;
      float* col = dst + r;
      if (format == OperandFormat::kAsIs) {
        for (int64_t k = 0; k < kc; ++k)
          col[k * mr] = LoadScalar<Format>(a.data, base + k * a.cols);
      } else {
        for (int64_t k = 0; k < kc; ++k) {
          col[k * mr] = RoundOperand(format, LoadScalar<Format>(a.data, base + k * a.cols));
        }
      }
    }
    for (int64_t r = h; r < mr; ++r) {
      for (int64_t k = 0; k < kc; ++k) dst[k * mr + r] = 0.0f;
    }
  }
}

// out = epilogue(t) over rows [0, mh) and columns [0, nw) of the task (t's row stride ldt).
template <class OutFormat>
void Epilogue(const GemmArgs& g, char* out, const char* self, const float* HWY_RESTRICT t,
              int64_t ldt, int64_t mh, int64_t nw) {
  using T = typename OutFormat::Storage;
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const bool with_self = self != nullptr;
  const bool scale = g.alpha != 1.0f;
  const DType self_dtype = g.self.dtype;
  // One vector (or one lane) of results: beta * self + alpha * acc, or alpha * acc, or acc.
  auto finish = [&](auto dv, auto acc, const char* s_row, int64_t j) {
    using DV = decltype(dv);
    auto v = !g.product ? hn::Zero(dv) : scale ? hn::Mul(hn::Set(dv, g.alpha), acc) : acc;
    if (with_self) {
      HWY_ALIGN float s[HWY_MAX_BYTES / sizeof(float)];
      for (size_t l = 0; l < hn::Lanes(dv); ++l) {
        s[l] = load_as_float(self_dtype, s_row,
                             static_cast<size_t>((j + static_cast<int64_t>(l)) * g.self.cols));
      }
      const auto scaled_self = hn::Mul(hn::Set(dv, g.beta), hn::Load(dv, s));
      v = g.product ? hn::Add(scaled_self, v) : scaled_self;
    }
    return hn::Vec<DV>(v);
  };
  for (int64_t i = 0; i < mh; ++i) {
    const float* row = t + i * ldt;
    const char* s_row =
        with_self ? self + i * g.self.rows * static_cast<int64_t>(dtype_size(self_dtype)) : nullptr;
    T* o = reinterpret_cast<T*>(out) + i * g.out_rows;
    int64_t j = 0;
    if (g.out_cols == 1) {
      for (; j + lanes <= nw; j += lanes) {
        StoreResult<OutFormat>(d, finish(d, hn::Load(d, row + j), s_row, j), o + j);
      }
    }
    for (; j < nw; ++j) {
      StoreResult<OutFormat>(d1, finish(d1, hn::LoadU(d1, row + j), s_row, j), o + j * g.out_cols);
    }
  }
}

// The batch item's offset, in elements, of an operand with batch strides `strides`.
int64_t BatchOffset(const GemmArgs& g, int64_t item,
                    const std::array<int64_t, detail::kGemmMaxBatchRank>& strides) {
  int64_t offset = 0;
  for (int i = g.batch_rank; i-- > 0;) {
    const int64_t size = g.batch_shape[static_cast<size_t>(i)];
    offset += (item % size) * strides[static_cast<size_t>(i)];
    item /= size;
  }
  return offset;
}

// Calls fn(Format{}) for an operand's dtype (packing reads it; no hardware bf16 narrowing here).
template <class Fn>
HWY_INLINE void VisitOperand(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat16: fn(Fp16{}); return;
    case DType::kBFloat16: fn(Bf16{}); return;
    default: fn(Fp32{}); return;
  }
}

template <class OutFormat>
void GemmOut(const GemmArgs& g) {
  const hn::ScalableTag<float> d;
  constexpr size_t kMr = TileRows(hn::ScalableTag<float>());
  const auto mr = static_cast<int64_t>(kMr);
  const auto nr = static_cast<int64_t>(2 * hn::Lanes(d));
  int64_t items = 1;
  for (int i = 0; i < g.batch_rank; ++i) items *= g.batch_shape[static_cast<size_t>(i)];
  if (items == 0 || g.m == 0 || g.n == 0) return;
  const int64_t mb_max = kRowPanels * mr;
  const int64_t mb = std::min(mb_max, (g.m + mr - 1) / mr * mr);  // rows of a task's buffers
  const int64_t nb = std::min(kNc, (g.n + nr - 1) / nr * nr);     // columns of its buffers
  const int64_t kb = std::min(kKc, g.k);
  const int64_t m_tasks = (g.m + mb_max - 1) / mb_max;
  const int64_t n_tasks = (g.n + kNc - 1) / kNc;
  const int64_t tasks = items * m_tasks * n_tasks;
  // The tasks go to `groups` contiguous groups, each with its own buffers: a group's buffers are
  // used by one thread at a time whatever the pool does. Twice the threads, so that a thread
  // finishing early takes another group.
  const int64_t groups = std::min<int64_t>(tasks, 2 * std::max(num_threads(), 1));
  // Each group: packed A (mb x kb), packed B (kb x nb) and the task's sums (mb x nb), each
  // starting on a 64-float boundary (aligned for any vector).
  auto round_up = [](int64_t floats) { return (floats + 63) / 64 * 64; };
  const int64_t a_floats = round_up(mb * kb), b_floats = round_up(kb * nb);
  const int64_t per_slot = a_floats + b_floats + round_up(mb * nb);
  auto buffers = hwy::AllocateAligned<float>(static_cast<size_t>(per_slot * groups));
  if (!buffers) throw std::bad_alloc();

  const auto a_size = static_cast<int64_t>(dtype_size(g.a.dtype));
  const auto b_size = static_cast<int64_t>(dtype_size(g.b.dtype));
  const size_t out_size = dtype_size(g.out_dtype);
  const size_t self_size = g.has_self ? dtype_size(g.self.dtype) : 0;
  auto run_task = [&](int64_t task, float* HWY_RESTRICT slot) {
    float* HWY_RESTRICT pa = slot;
    float* HWY_RESTRICT pb = pa + a_floats;
    float* HWY_RESTRICT sums = pb + b_floats;
    const int64_t jt = task % n_tasks;
    const int64_t it = task / n_tasks % m_tasks;
    const int64_t item = task / n_tasks / m_tasks;
    const int64_t m0 = it * mb_max, n0 = jt * kNc;
    const int64_t mh = std::min(mb_max, g.m - m0), nw = std::min(kNc, g.n - n0);
    const Matrix a{static_cast<const char*>(g.a.data) + BatchOffset(g, item, g.a.batch) * a_size,
                   g.a.rows, g.a.cols};
    const Matrix b{static_cast<const char*>(g.b.data) + BatchOffset(g, item, g.b.batch) * b_size,
                   g.b.rows, g.b.cols};
    const int64_t mp = (mh + mr - 1) / mr, np = (nw + nr - 1) / nr;  // panels
    const int64_t k = g.product ? g.k : 0;
    if (k == 0) std::fill(sums, sums + mb * nb, 0.0f);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      const int64_t kc = std::min(kKc, k - k0);
      VisitOperand(g.b.dtype,
                   [&](auto f) { PackB<decltype(f)>(d, b, g.format, k0, kc, n0, nw, pb); });
      VisitOperand(g.a.dtype,
                   [&](auto f) { PackA<decltype(f)>(a, g.format, kMr, m0, mh, k0, kc, pa); });
      for (int64_t jp = 0; jp < np; ++jp) {
        for (int64_t ip = 0; ip < mp; ++ip) {
          Tile<kMr>(d, kc, pa + ip * mr * kc, pb + jp * nr * kc, sums + ip * mr * nb + jp * nr, nb,
                    k0 != 0);
        }
      }
    }
    char* out = static_cast<char*>(g.out) +
                (BatchOffset(g, item, g.out_batch) + m0 * g.out_rows + n0 * g.out_cols) *
                    static_cast<int64_t>(out_size);
    const char* self = nullptr;
    if (g.has_self && g.beta != 0.0f) {
      self = static_cast<const char*>(g.self.data) +
             (BatchOffset(g, item, g.self.batch) + m0 * g.self.rows + n0 * g.self.cols) *
                 static_cast<int64_t>(self_size);
    }
    Epilogue<OutFormat>(g, out, self, sums, nb, mh, nw);
  };
  auto chunk = [&](int64_t begin, int64_t end) {
    for (int64_t group = begin; group < end; ++group) {
      float* slot = buffers.get() + group * per_slot;
      for (int64_t task = group * tasks / groups; task < (group + 1) * tasks / groups; ++task) {
        run_task(task, slot);
      }
    }
  };
  detail::parallel_for(groups, 1, chunk);
}

void GemmImpl(const GemmArgs& g) {
  VisitFormat(g.out_dtype, [&](auto out) { GemmOut<decltype(out)>(g); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace mantissa::detail {

HWY_EXPORT(GemmImpl);

void gemm(const GemmArgs& args) { HWY_DYNAMIC_DISPATCH(GemmImpl)(args); }

float round_to_hf32(float f) noexcept {
  // Keep 11 of the 23 explicit significand bits: adding half the kept unit (bit 11) to the
  // magnitude and dropping the low 12 bits rounds to nearest with ties away from zero.
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return std::bit_cast<float>(bits | 0x00400000u);
  return std::bit_cast<float>((bits + 0x800u) & ~0xFFFu);
}

}  // namespace mantissa::detail
#endif  // HWY_ONCE
