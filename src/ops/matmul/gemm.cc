// The matrix-product kernel (gemm.h), written once for every SIMD target.
//
// Blocking. The output is cut into tasks of one batch item: up to MB rows (equal blocks of whole
// tile rows) by up to 4096 columns, cut finer along n while there are fewer than two tasks per
// thread. Threads take whole tasks, so they split the batch, m and n and never k. A task walks k
// in blocks of KC: it packs A's block (MB x KC, in panels of MR rows, [k][MR]) once, then for
// each NC columns B's block (KC x NC, in panels of NR columns, [k][NR]), each operand widened to
// fp32 (and rounded as the cube math type asks) as it is packed, and runs the MR x NR register
// tile over every pair of panels. The tile's fp32 sums live in the task's buffer between k
// blocks: the first block starts them at +0, each later one loads them and goes on, so every
// output sees fma over k = 0 .. K-1 in order, whatever the blocking. After the last block a whole
// tile whose epilogue needs nothing but alpha is finished in registers (alpha, NaN made
// canonical, one rounding to out's dtype) and stored; the others (partial tiles, Addmm's self)
// go through the epilogue pass, which does the same. Padding rows and columns (zeros) only feed
// outputs that are never stored.
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
#include <condition_variable>
#include <mutex>
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

constexpr int64_t kKc = 256;            // k per block: a B panel (KC x NR) stays in L1
constexpr int64_t kNc = 512;            // columns per packed B block (KC x NC, in L2)
constexpr int64_t kTaskColumns = 1024;  // columns per task at most (its sums: MB x 1024 fp32)
constexpr int64_t kRowPanels = 16;      // MR-row panels per task at most (MB = 16 * MR rows)

// MR x NR (two vectors) of outputs over kc steps: acc[r][c] = fma(a[k][r], b[k][c], acc[r][c]),
// starting from +0 or from the partial sums in t (row stride ldt). Then either back to t, or,
// after the last k block of a tile whose epilogue needs nothing but alpha (`out` set), finished
// in registers and stored to out (row stride ldo) as the epilogue would.
// A is read from its panel ([k][MR], kPackedA) or, for an fp32 row-major operand, from its own
// rows (row stride lda): the same values either way.
template <size_t MR, bool kPackedA, class OutFormat, class D>
HWY_INLINE void Tile(D d, int64_t kc, const float* HWY_RESTRICT ap, int64_t lda,
                     const float* HWY_RESTRICT bp, float* HWY_RESTRICT t, int64_t ldt, bool resume,
                     typename OutFormat::Storage* HWY_RESTRICT out, int64_t ldo, float alpha) {
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
      const auto a = hn::Set(d, kPackedA ? ap[r] : ap[static_cast<int64_t>(r) * lda]);
      c0[r] = Fma(d, a, b0, c0[r]);
      c1[r] = Fma(d, a, b1, c1[r]);
    }
    ap += kPackedA ? static_cast<int64_t>(MR) : 1;
    bp += 2 * lanes;
  }
  if (out != nullptr) {
    const bool scale = alpha != 1.0f;
    const auto va = hn::Set(d, alpha);
#pragma GCC unroll 16
    for (size_t r = 0; r < MR; ++r) {
      auto* o = out + static_cast<int64_t>(r) * ldo;
      StoreResult<OutFormat>(d, scale ? hn::Mul(va, c0[r]) : c0[r], o);
      StoreResult<OutFormat>(d, scale ? hn::Mul(va, c1[r]) : c1[r], o + lanes);
    }
    return;
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
// Packs w of `width` positions over kc steps, dst[k * width + p] = x(p, k) (zeros for p >= w),
// x(p, k) the operand's element at index base + p * sp + k * sk, rounded as `format` asks. The
// inner loop runs along the smaller stride, so a transposed view is read along its rows.
template <class Format, bool kRound>
HWY_INLINE void PackPanelAs(const void* data, int64_t base, int64_t sp, int64_t sk, int64_t w,
                            int64_t width, int64_t kc, OperandFormat format,
                            float* HWY_RESTRICT dst) {
  auto value = [&](int64_t i) {
    const float x = LoadScalar<Format>(data, i);
    return kRound ? RoundOperand(format, x) : x;
  };
#if HWY_TARGET != HWY_SCALAR
  if constexpr (!kRound) {
    // Values used as given, in vectors of four (the same values as the scalar loops below).
    using T = typename Format::Storage;
    const hn::CappedTag<float, 4> d4;
    const T* src = static_cast<const T*>(data) + base;
    if (sp == 1) {  // contiguous along the panel: a row of the panel is a run of memory
      for (int64_t k = 0; k < kc; ++k) {
        float* row = dst + k * width;
        const T* run = src + k * sk;
        int64_t p = 0;
        for (; p + 4 <= w; p += 4) hn::StoreU(LoadF32<Format>(d4, run + p), d4, row + p);
        for (; p < w; ++p) row[p] = LoadScalar<Format>(run, p);
        for (; p < width; ++p) row[p] = 0.0f;
      }
      return;
    }
    if (sk == 1) {  // contiguous along k: 4 x 4 blocks transposed in registers
      const hn::Repartition<uint64_t, decltype(d4)> d64;
      int64_t p = 0;
      for (; p + 4 <= w; p += 4) {
        int64_t k = 0;
        for (; k + 4 <= kc; k += 4) {
          const auto r0 = LoadF32<Format>(d4, src + (p + 0) * sp + k);
          const auto r1 = LoadF32<Format>(d4, src + (p + 1) * sp + k);
          const auto r2 = LoadF32<Format>(d4, src + (p + 2) * sp + k);
          const auto r3 = LoadF32<Format>(d4, src + (p + 3) * sp + k);
          // [a0 b0 a1 b1], [c0 d0 c1 d1], [a2 b2 a3 b3], [c2 d2 c3 d3]
          const auto t0 = hn::BitCast(d64, hn::InterleaveLower(d4, r0, r1));
          const auto t1 = hn::BitCast(d64, hn::InterleaveLower(d4, r2, r3));
          const auto t2 = hn::BitCast(d64, hn::InterleaveUpper(d4, r0, r1));
          const auto t3 = hn::BitCast(d64, hn::InterleaveUpper(d4, r2, r3));
          hn::StoreU(hn::BitCast(d4, hn::InterleaveLower(d64, t0, t1)), d4, dst + k * width + p);
          hn::StoreU(hn::BitCast(d4, hn::InterleaveUpper(d64, t0, t1)), d4,
                     dst + (k + 1) * width + p);
          hn::StoreU(hn::BitCast(d4, hn::InterleaveLower(d64, t2, t3)), d4,
                     dst + (k + 2) * width + p);
          hn::StoreU(hn::BitCast(d4, hn::InterleaveUpper(d64, t2, t3)), d4,
                     dst + (k + 3) * width + p);
        }
        for (; k < kc; ++k) {
          for (int64_t q = p; q < p + 4; ++q)
            dst[k * width + q] = LoadScalar<Format>(src, q * sp + k);
        }
      }
      for (; p < width; ++p) {
        for (int64_t k = 0; k < kc; ++k) {
          dst[k * width + p] = p < w ? LoadScalar<Format>(src, p * sp + k) : 0.0f;
        }
      }
      return;
    }
  }
#endif
  if (sp <= sk) {
    for (int64_t k = 0; k < kc; ++k) {
      float* row = dst + k * width;
      for (int64_t p = 0; p < w; ++p) row[p] = value(base + p * sp + k * sk);
      for (int64_t p = w; p < width; ++p) row[p] = 0.0f;
    }
    return;
  }
  for (int64_t p = 0; p < width; ++p) {
    float* col = dst + p;
    if (p < w) {
      for (int64_t k = 0; k < kc; ++k) col[k * width] = value(base + p * sp + k * sk);
    } else {
      for (int64_t k = 0; k < kc; ++k) col[k * width] = 0.0f;
    }
  }
}

template <class Format>
void PackPanel(const void* data, int64_t base, int64_t sp, int64_t sk, int64_t w, int64_t width,
               int64_t kc, OperandFormat format, float* HWY_RESTRICT dst) {
  if (format == OperandFormat::kAsIs) {
    PackPanelAs<Format, false>(data, base, sp, sk, w, width, kc, format, dst);
  } else {
    PackPanelAs<Format, true>(data, base, sp, sk, w, width, kc, format, dst);
  }
}

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
    PackPanel<Format>(b.data, k0 * b.rows + (n0 + j0) * b.cols, b.cols, b.rows, w, nr, kc, format,
                      dst);
  }
}

// Widens rows [m0, m0 + rows) of a row-major 16-bit A, columns [k0, k0 + kc), into dst as fp32
// rows of kc (exact; the tile then reads them as it reads an fp32 A).
template <class Format, class D>
void WidenRows(D d, const Matrix& a, int64_t m0, int64_t rows, int64_t k0, int64_t kc,
               float* HWY_RESTRICT dst) {
  using T = typename Format::Storage;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t i = 0; i < rows; ++i, dst += kc) {
    const T* src = reinterpret_cast<const T*>(a.data) + (m0 + i) * a.rows + k0;
    int64_t k = 0;
    for (; k + lanes <= kc; k += lanes) hn::StoreU(LoadF32<Format>(d, src + k), d, dst + k);
    for (; k < kc; ++k) dst[k] = LoadScalar<Format>(a.data, (m0 + i) * a.rows + k0 + k);
  }
}

// Packs A[m0 .. m0+mc, k0 .. k0+kc) into panels of mr rows ([panel][k][mr]), zero-padded.
template <class Format>
void PackA(const Matrix& a, OperandFormat format, size_t mr_size, int64_t m0, int64_t mc,
           int64_t k0, int64_t kc, float* HWY_RESTRICT dst) {
  const auto mr = static_cast<int64_t>(mr_size);
  for (int64_t i0 = 0; i0 < mc; i0 += mr, dst += kc * mr) {
    PackPanel<Format>(a.data, (m0 + i0) * a.rows + k0 * a.cols, a.rows, a.cols,
                      std::min(mr, mc - i0), mr, kc, format, dst);
  }
}

// out = epilogue(t) over rows [i0, i1) and columns [j0, j1) of the task (t's row stride ldt;
// out and self at the task's first element).
template <class OutFormat>
void Epilogue(const GemmArgs& g, char* out, const char* self, const float* HWY_RESTRICT t,
              int64_t ldt, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
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
  for (int64_t i = i0; i < i1; ++i) {
    const float* row = t + i * ldt;
    const char* s_row =
        with_self ? self + i * g.self.rows * static_cast<int64_t>(dtype_size(self_dtype)) : nullptr;
    T* o = reinterpret_cast<T*>(out) + i * g.out_rows;
    int64_t j = j0;
    if (g.out_cols == 1) {
      for (; j + lanes <= j1; j += lanes) {
        StoreResult<OutFormat>(d, finish(d, hn::Load(d, row + j), s_row, j), o + j);
      }
    }
    for (; j < j1; ++j) {
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

// The slots of buffers of one call. A chunk takes a free slot and gives it back; should more
// chunks run at once than there are slots (the thread count changed during the call), the extra
// one waits for a slot instead of sharing one.
class SlotPool {
 public:
  explicit SlotPool(int slots) {
    for (int s = slots; s-- > 0;) free_.push_back(s);
  }
  int acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    freed_.wait(lock, [this] { return !free_.empty(); });
    const int s = free_.back();
    free_.pop_back();
    return s;
  }
  void release(int s) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      free_.push_back(s);
    }
    freed_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable freed_;
  std::vector<int> free_;
};

// The buffers of one call, allocated before anything is written (std::bad_alloc leaves out
// untouched). The largest block a call has returned is kept for the next call, so repeated
// products do not fault in fresh pages each time.
class BufferLease {
 public:
  explicit BufferLease(size_t floats) {
    {
      std::lock_guard<std::mutex> lock(CacheMutex());
      if (CacheSize() >= floats) {
        block_ = std::move(Cache());
        size_ = CacheSize();
        CacheSize() = 0;
      }
    }
    if (!block_) {
      block_ = hwy::AllocateAligned<float>(floats);
      size_ = floats;
      if (!block_) throw std::bad_alloc();
    }
  }
  ~BufferLease() {
    std::lock_guard<std::mutex> lock(CacheMutex());
    if (size_ > CacheSize()) {
      Cache() = std::move(block_);
      CacheSize() = size_;
    }
  }
  BufferLease(const BufferLease&) = delete;
  BufferLease& operator=(const BufferLease&) = delete;
  float* get() const { return block_.get(); }

 private:
  static std::mutex& CacheMutex() {
    static std::mutex m;
    return m;
  }
  static hwy::AlignedFreeUniquePtr<float[]>& Cache() {
    static hwy::AlignedFreeUniquePtr<float[]> cache;
    return cache;
  }
  static size_t& CacheSize() {
    static size_t size = 0;
    return size;
  }
  hwy::AlignedFreeUniquePtr<float[]> block_;
  size_t size_ = 0;
};

template <class OutFormat>
void GemmOut(const GemmArgs& g) {
  const hn::ScalableTag<float> d;
  constexpr size_t kMr = TileRows(hn::ScalableTag<float>());
  const auto mr = static_cast<int64_t>(kMr);
  const auto nr = static_cast<int64_t>(2 * hn::Lanes(d));
  int64_t items = 1;
  for (int i = 0; i < g.batch_rank; ++i) items *= g.batch_shape[static_cast<size_t>(i)];
  if (items == 0 || g.m == 0 || g.n == 0) return;
  // Tasks: m in blocks of up to MB rows (equal blocks, whole tile rows), n in blocks of up to
  // kTaskColumns (A is packed once per task and k block, then serves all its columns), split
  // further along n while there are fewer than two tasks per thread.
  const int64_t threads = std::max(num_threads(), 1);
  const int64_t m_tasks = (g.m + kRowPanels * mr - 1) / (kRowPanels * mr);
  const int64_t mb = ((g.m + m_tasks - 1) / m_tasks + mr - 1) / mr * mr;
  const int64_t n_panels = (g.n + nr - 1) / nr;
  int64_t n_tasks = (g.n + kTaskColumns - 1) / kTaskColumns;
  while (items * m_tasks * n_tasks < 2 * threads && n_tasks < n_panels) ++n_tasks;
  const int64_t nt = (n_panels + n_tasks - 1) / n_tasks * nr;  // columns of a task
  n_tasks = (g.n + nt - 1) / nt;
  const int64_t nb = std::min(kNc, nt);  // columns of a packed B block
  const int64_t kb = std::min(kKc, g.k);
  const int64_t tasks = items * m_tasks * n_tasks;
  // Each thread running tasks holds one slot of buffers: packed A (mb x kb), packed B (kb x nb)
  // and the task's sums (mb x nt), each starting on a 64-float boundary (aligned for any vector).
  const int64_t slots = std::min<int64_t>(tasks, threads);
  auto round_up = [](int64_t floats) { return (floats + 63) / 64 * 64; };
  const int64_t a_floats = round_up(mb * kb), b_floats = round_up(kb * nb);
  const int64_t per_slot = a_floats + b_floats + round_up(mb * nt);
  BufferLease buffers(static_cast<size_t>(per_slot * slots));
  SlotPool pool(static_cast<int>(slots));

  const auto a_size = static_cast<int64_t>(dtype_size(g.a.dtype));
  const auto b_size = static_cast<int64_t>(dtype_size(g.b.dtype));
  const size_t out_size = dtype_size(g.out_dtype);
  const size_t self_size = g.has_self ? dtype_size(g.self.dtype) : 0;
  const bool reads_self = g.has_self && g.beta != 0.0f;
  const int64_t k = g.product ? g.k : 0;
  // Whole tiles are finished in registers where the epilogue needs nothing but alpha and out's
  // rows are contiguous; the epilogue pass then covers only the partial tiles at the edges.
  const bool direct = !reads_self && g.out_cols == 1 && k > 0;
  // An fp32 row-major A used as given is not packed: the tile broadcasts from its rows.
  const bool direct_a =
      g.a.dtype == DType::kFloat32 && g.a.cols == 1 && g.format == OperandFormat::kAsIs;
  const bool widen_a =
      g.a.dtype != DType::kFloat32 && g.a.cols == 1 && g.format == OperandFormat::kAsIs;
  using T = typename OutFormat::Storage;
  auto run_task = [&](int64_t task, float* HWY_RESTRICT slot) {
    float* HWY_RESTRICT pa = slot;
    float* HWY_RESTRICT pb = pa + a_floats;
    float* HWY_RESTRICT sums = pb + b_floats;
    const int64_t jt = task % n_tasks;
    const int64_t it = task / n_tasks % m_tasks;
    const int64_t item = task / n_tasks / m_tasks;
    const int64_t m0 = it * mb, n0 = jt * nt;
    const int64_t mh = std::min(mb, g.m - m0), nw = std::min(nt, g.n - n0);
    const Matrix a{static_cast<const char*>(g.a.data) + BatchOffset(g, item, g.a.batch) * a_size,
                   g.a.rows, g.a.cols};
    const Matrix b{static_cast<const char*>(g.b.data) + BatchOffset(g, item, g.b.batch) * b_size,
                   g.b.rows, g.b.cols};
    char* out = static_cast<char*>(g.out) +
                (BatchOffset(g, item, g.out_batch) + m0 * g.out_rows + n0 * g.out_cols) *
                    static_cast<int64_t>(out_size);
    const int64_t mp = (mh + mr - 1) / mr;  // row panels
    const int64_t full_rows = mh / mr * mr, full_cols = nw / nr * nr;
    if (k == 0) std::fill(sums, sums + mb * nt, 0.0f);
    for (int64_t k0 = 0; k0 < k; k0 += kKc) {
      const int64_t kc = std::min(kKc, k - k0);
      const bool last = k0 + kc == k;
      // A row-major A used as given is read from its rows (fp32: where it is; fp16 and bf16:
      // widened into pa row by row, vector by vector), but for a partial last row panel.
      if (direct_a || widen_a) {
        if (widen_a) {
          VisitOperand(g.a.dtype,
                       [&](auto f) { WidenRows<decltype(f)>(d, a, m0, full_rows, k0, kc, pa); });
        }
        if (full_rows < mh) {
          VisitOperand(g.a.dtype, [&](auto f) {
            PackA<decltype(f)>(a, g.format, kMr, m0 + full_rows, mh - full_rows, k0, kc,
                               pa + full_rows * kc);
          });
        }
      } else {
        VisitOperand(g.a.dtype,
                     [&](auto f) { PackA<decltype(f)>(a, g.format, kMr, m0, mh, k0, kc, pa); });
      }
      for (int64_t j0 = 0; j0 < nw; j0 += nb) {
        const int64_t jw = std::min(nb, nw - j0);
        VisitOperand(g.b.dtype,
                     [&](auto f) { PackB<decltype(f)>(d, b, g.format, k0, kc, n0 + j0, jw, pb); });
        const int64_t np = (jw + nr - 1) / nr;
        for (int64_t jp = 0; jp < np; ++jp) {
          const int64_t col = j0 + jp * nr;
          for (int64_t ip = 0; ip < mp; ++ip) {
            const int64_t row = ip * mr;
            T* o = nullptr;
            if (direct && last && row < full_rows && col < full_cols) {
              o = reinterpret_cast<T*>(out) + row * g.out_rows + col;
            }
            float* const t = sums + row * nt + col;
            const float* const bp = pb + jp * nr * kc;
            if (direct_a && row < full_rows) {
              const float* ap = reinterpret_cast<const float*>(a.data) + (m0 + row) * a.rows + k0;
              Tile<kMr, false, OutFormat>(d, kc, ap, a.rows, bp, t, nt, k0 != 0, o, g.out_rows,
                                          g.alpha);
            } else if (widen_a && row < full_rows) {
              Tile<kMr, false, OutFormat>(d, kc, pa + row * kc, kc, bp, t, nt, k0 != 0, o,
                                          g.out_rows, g.alpha);
            } else {
              Tile<kMr, true, OutFormat>(d, kc, pa + ip * mr * kc, 0, bp, t, nt, k0 != 0, o,
                                         g.out_rows, g.alpha);
            }
          }
        }
      }
    }
    const char* self = nullptr;
    if (reads_self) {
      self = static_cast<const char*>(g.self.data) +
             (BatchOffset(g, item, g.self.batch) + m0 * g.self.rows + n0 * g.self.cols) *
                 static_cast<int64_t>(self_size);
    }
    if (direct) {  // the partial tiles: the last rows, then the last columns of the others
      Epilogue<OutFormat>(g, out, self, sums, nt, full_rows, mh, 0, nw);
      Epilogue<OutFormat>(g, out, self, sums, nt, 0, full_rows, full_cols, nw);
    } else {
      Epilogue<OutFormat>(g, out, self, sums, nt, 0, mh, 0, nw);
    }
  };
  auto chunk = [&](int64_t begin, int64_t end) {
    const int slot = pool.acquire();
    for (int64_t task = begin; task < end; ++task) run_task(task, buffers.get() + slot * per_slot);
    pool.release(slot);
  };
  detail::parallel_for(tasks, 1, chunk);
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
