// AddRmsNorm: contract and validation, then the row kernel written once for every SIMD target.
// Per row of n elements (the trailing dims gamma spans; x1's last dim for gamma [1, D]), in this
// order, which is normative:
//   x_i  = x1_i + x2_i              one fp32 addition of the widened inputs, rounded once (RNE) to
//                                   x1's dtype: the x stored, and the x the norm reads. For fp16
//                                   and bf16 that is the exactly rounded sum (fp32's 24 bits are at
//                                   least twice the 11 or 8 bits plus 2, so rounding twice is
//                                   rounding once)
//   then RmsNorm's order on that x (ops/rms_norm/rms_norm-inl.h, the same code):
//   ss   = sum of x_i * x_i         squares exact in fp64, summed in core/reduce.h's order (naive
//                                   method, fp64 lanes)
//   rstd = fp32(1 / sqrt(ss / n + epsilon))   fp64 steps, one rounding to fp32
//   y_i  = (x_i * rstd) * gamma_i   two fp32 multiplications, rounded once to y's dtype
// so y and rstd have exactly rms_norm's bits for the stored x. A NaN result is the canonical
// quiet NaN (x as well).
//
// Traffic, one pass over memory: per row, x1 and x2 are read once, and x is stored as the sum of
// squares is taken (the same pass); the scaling pass then reads x back from cache (a row of a few
// thousand elements is a few KiB to tens of KiB) with gamma, and writes y, fetching the next
// row's x1 and x2 meanwhile. Without an x output the scaling pass adds x1 and x2 again (from
// cache, the same bits). Where an output is the very buffer of x1 or x2 the row is computed in
// place (every vector is read before it is written); any other overlap of outputs and inputs
// copies the inputs to the workspace first.
#ifndef MANTISSA_OPS_ADD_RMS_NORM_ARGS_
#define MANTISSA_OPS_ADD_RMS_NORM_ARGS_
#include <cstdint>

#include "mantissa/dtype.h"

namespace mantissa::detail {
struct AddRmsNormKernelArgs {
  DType dtype = DType::kFloat32;  // x1, x2, gamma, y, x
  int64_t rows = 0;               // rows of n elements, contiguous
  int64_t n = 0;
  const void* x1 = nullptr;
  const void* x2 = nullptr;
  const void* gamma = nullptr;  // n elements
  void* y = nullptr;
  float* rstd = nullptr;  // one per row; null: not computed
  void* x = nullptr;      // null: not stored
  double epsilon = 1e-6;
};
}  // namespace mantissa::detail
#endif  // MANTISSA_OPS_ADD_RMS_NORM_ARGS_

// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/add_rms_norm/add_rms_norm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <type_traits>

#include "core/prefetch.h"
#include "core/reduce-inl.h"
#include "core/rows.h"
#include "core/simd-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/rms_norm/rms_norm-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// v rounded to Format as StoreResult rounds it (NaN canonical, then RNE): the storage lanes
// (fp32 lanes for Fp32, u16 lanes otherwise). Both bf16 narrowings give the integer rule's bits.
template <class Format, class D>
HWY_INLINE auto NarrowSum(D d, hn::Vec<D> v) {
  const auto canonical = CanonicalNaN(d, v);
  if constexpr (std::is_same_v<Format, Fp32>) {
    return canonical;
  } else if constexpr (std::is_same_v<Format, Fp16>) {
    return F32ToF16(d, canonical);
  } else {
    static_assert(kIsBf16<Format>);
    return CanonicalF32ToBf16(d, canonical);
  }
}

// Storage lanes widened to fp32 (exact).
template <class Format, class D, class V>
HWY_INLINE hn::Vec<D> WidenStored(D d, V bits) {
  if constexpr (std::is_same_v<Format, Fp32>) {
    (void)d;
    return bits;
  } else if constexpr (std::is_same_v<Format, Fp16>) {
    return F16ToF32(d, bits);
  } else {
    return Bf16ToF32(d, bits);
  }
}

template <class Format, class D, class V>
HWY_INLINE void StoreStored(D d, V bits, typename Format::Storage* HWY_RESTRICT p) {
  if constexpr (std::is_same_v<Format, Fp32>) {
    hn::StoreU(bits, d, p);
  } else {
    hn::StoreU(bits, U16For<D>(), p);
  }
}

// x = x1 + x2 at [i, i + Lanes(df)) rounded to Format, stored at x (kStoreX), and returned
// widened to fp32: the value the stored bits hold.
template <class Format, bool kStoreX, class DF>
HWY_INLINE hn::Vec<DF> SumAt(DF df, const typename Format::Storage* x1,
                             const typename Format::Storage* x2, typename Format::Storage* x,
                             int64_t i) {
  const auto bits =
      NarrowSum<Format>(df, hn::Add(LoadF32<Format>(df, x1 + i), LoadF32<Format>(df, x2 + i)));
  if constexpr (kStoreX) StoreStored<Format>(df, bits, x + i);
  return WidenStored<Format>(df, bits);
}

// The row term of one row: the squares of its rounded sums x_i in fp64 lanes (exact), storing
// the sums as it goes (kStoreX). core/reduce-inl.h asks for every element's term exactly once
// (rms_norm-inl.h's RmsNormRowBlock), so x is written once per element.
template <class Format, bool kStoreX>
struct SumSquareTerm {
  const typename Format::Storage* x1;
  const typename Format::Storage* x2;
  typename Format::Storage* x;  // row's x output (kStoreX)
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    const hn::Rebind<float, DA> df;
    const auto v = hn::PromoteTo(da, SumAt<Format, kStoreX>(df, x1, x2, x, i));
    return hn::Mul(v, v);
  }
#if HWY_TARGET != HWY_SCALAR  // one lane: no pairs
  // Elements [i, i + 2 Lanes(da)): lo and hi as operator() gives them, from one fp32 vector of
  // twice the lanes (whole vectors loaded, added, rounded and stored).
  template <class DA>
  HWY_INLINE void Pair(DA da, int64_t i, hn::Vec<DA>& lo, hn::Vec<DA>& hi) const {
    const hn::Repartition<float, DA> df;  // twice da's lanes
    const hn::Half<decltype(df)> dh;
    const auto s = SumAt<Format, kStoreX>(df, x1, x2, x, i);
    const auto vl = hn::PromoteTo(da, hn::LowerHalf(dh, s));
    const auto vh = hn::PromoteTo(da, hn::UpperHalf(dh, s));
    lo = hn::Mul(vl, vl);
    hi = hn::Mul(vh, vh);
  }
#endif
};

// Rows [begin, end). Everything the loops use is copied into locals here, and the terms and the
// row pass are made here: a vector store may alias anything a pointer reaches (Highway's vector
// types are may_alias), so a pointer held in the caller's closure or in `a` would be loaded again
// after every store of x (as ops/sgd/sgd.cc notes).
template <class Format, bool kStoreX>
HWY_INLINE void AddRmsNormRowBlock(const detail::AddRmsNormKernelArgs& a, int64_t begin,
                                   int64_t end) {
  using S = typename Format::Storage;
  const S* const x1_all = static_cast<const S*>(a.x1);
  const S* const x2_all = static_cast<const S*>(a.x2);
  const S* const g = static_cast<const S*>(a.gamma);
  S* const y_all = static_cast<S*>(a.y);
  S* const x_all = static_cast<S*>(a.x);
  float* const rstd_all = a.rstd;
  const int64_t n = a.n;
  const int64_t row_count = a.rows;
  const double epsilon = a.epsilon;
  // The next row is fetched only for calls that outgrow the caches: in cache the prefetches only
  // take issue slots (core/prefetch.h).
  const bool fetch_rows =
      a.rows * n * static_cast<int64_t>(2 * sizeof(S)) > detail::kPrefetchMinBytes;
  const auto row_term = [=](int64_t r) {
    return SumSquareTerm<Format, kStoreX>{x1_all + r * n, x2_all + r * n,
                                          kStoreX ? x_all + r * n : nullptr};
  };
  // rstd and the scaling pass of row r from its sum of squares (rms_norm-inl.h), x read back
  // from the row just stored, or summed again. Meanwhile row r + ahead's x1 and x2 are fetched
  // (rows up to kPrefetchedRowBytes), so that memory is not idle while this pass only writes.
  const auto finish_row = [=](int64_t r, double ss, int64_t ahead) {
    const float rstd = RmsNormRstd(ss, n, epsilon);
    if (rstd_all != nullptr) rstd_all[r] = rstd;
    S* const y = y_all + r * n;
    const S* const x1_next =
        fetch_rows ? detail::row_to_fetch(x1_all, n, r + ahead, row_count) : nullptr;
    const S* const x2_next =
        fetch_rows ? detail::row_to_fetch(x2_all, n, r + ahead, row_count) : nullptr;
    const auto fetch = [x1_next, x2_next](int64_t i) MANTISSA_VECTOR_BODY {
      if (x1_next != nullptr) {
        hwy::Prefetch(x1_next + i);
        hwy::Prefetch(x2_next + i);
      }
    };
    if constexpr (kStoreX) {
      const S* const x = x_all + r * n;
      RmsNormScaleRow<Format, Format>(
          [x](auto d, int64_t i) MANTISSA_VECTOR_BODY { return LoadF32<Format>(d, x + i); }, g, y,
          n, rstd, fetch);
    } else {
      const S* const x1 = x1_all + r * n;
      const S* const x2 = x2_all + r * n;
      RmsNormScaleRow<Format, Format>(
          [x1, x2](auto d, int64_t i) MANTISSA_VECTOR_BODY {
            return SumAt<Format, false>(d, x1, x2, static_cast<S*>(nullptr), i);
          },
          g, y, n, rstd, fetch);
    }
  };
  // Storing x, the rows' sums go one row at a time: several rows at once interleave the rows
  // column by column, so the store of row k's x is followed by the load of row k + 1's x1 at the
  // same column, a multiple of 4 KiB away for rows of 4096 fp32 (or 2048 16-bit) elements in
  // page-aligned tensors, where the load waits on the store (4K aliasing): that pass ran 1.5x
  // slower. The sums are the same either way.
  RmsNormRowBlock<!kStoreX>(begin, end, n, row_term, finish_row);
}

template <class Format, bool kStoreX>
void AddRmsNormRows(const detail::AddRmsNormKernelArgs& a) {
  const detail::Rows rows{a.rows, a.n, 1};
  detail::for_each_row_block(rows, [&a](int64_t begin, int64_t end) {
    AddRmsNormRowBlock<Format, kStoreX>(a, begin, end);
  });
}

template <class Format>
void AddRmsNormFormat(const detail::AddRmsNormKernelArgs& a) {
  if (a.x != nullptr) {
    AddRmsNormRows<Format, true>(a);
  } else {
    AddRmsNormRows<Format, false>(a);
  }
}

void AddRmsNormImpl(const detail::AddRmsNormKernelArgs& a) {
  VisitFormat(a.dtype, [&](auto format) { AddRmsNormFormat<decltype(format)>(a); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <array>
#include <cstring>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "core/scratch.h"
#include "mantissa/ops/add_rms_norm.h"
#include "ops/add_rms_norm/add_rms_norm_desc.h"

namespace mantissa {

HWY_EXPORT(AddRmsNormImpl);

namespace {

constexpr uint64_t kCopyAlignment = 64;

uint64_t padded(uint64_t bytes) {
  return (bytes + kCopyAlignment - 1) / kCopyAlignment * kCopyAlignment;
}

// Whether an output shares bytes with an input other than as the very buffer of x1 or x2 (y or x
// in place: the same first byte and size, so element for element), which the row kernel cannot
// compute where it is. Safe on views not yet validated (the aclnn layer sizes its workspace
// before validation): a view whose size does not fit spans nothing.
bool inputs_need_copies(const AddRmsNormTensors& t) {
  const std::array<const TensorView*, 3> in{&t.x1, &t.x2, &t.gamma};
  const std::array<const TensorView*, 3> out{&t.y, t.rstd ? &*t.rstd : nullptr,
                                             t.x ? &*t.x : nullptr};
  for (std::size_t o = 0; o < out.size(); ++o) {
    if (out[o] == nullptr) continue;
    const detail::ByteRange written = detail::byte_range(*out[o]);
    for (std::size_t k = 0; k < in.size(); ++k) {
      if (!written.intersects(detail::byte_range(*in[k]))) continue;
      const bool in_place =
          o != 1 && k != 2 && out[o]->data == in[k]->data && out[o]->nbytes() == in[k]->nbytes();
      if (!in_place) return true;
    }
  }
  return false;
}

}  // namespace

uint64_t add_rms_norm_workspace_size(const AddRmsNormTensors& t, const AddRmsNormParams&) {
  if (!inputs_need_copies(t)) return 0;
  uint64_t bytes = 0;
  for (const TensorView* v : {&t.x1, &t.x2, &t.gamma}) {
    bytes += padded(static_cast<uint64_t>(v->nbytes().value_or(0)));
  }
  return bytes;
}

// Validation is derived from the declaration (add_rms_norm_desc.h): the outputs share no byte
// with one another; each may overlap the inputs.
Status add_rms_norm_validate(const AddRmsNormTensors& t, const AddRmsNormParams& p) {
  return detail::validate<detail::AddRmsNormOp>(t, p);
}

Status add_rms_norm(const AddRmsNormTensors& t, const AddRmsNormParams& p, Workspace ws) {
  return detail::op_entry<detail::AddRmsNormOp>(t, p, [&]() -> Status {
    const int64_t n = *t.gamma.numel();
    // Rows: x1's dims before the normalised ones (rows of 0 elements still get their rstd: NaN,
    // the mean of nothing).
    const int dims = detail::AddRmsNormOp::normalized_dims(t, p);
    int64_t rows = 1;
    for (int i = 0; i < t.x1.rank - dims; ++i) rows *= t.x1.shape[i];
    if (rows == 0) return {};
    detail::AddRmsNormKernelArgs a;
    a.dtype = t.x1.dtype;
    a.rows = rows;
    a.n = n;
    a.x1 = t.x1.data;
    a.x2 = t.x2.data;
    a.gamma = t.gamma.data;
    a.y = t.y.data;
    a.rstd = t.rstd ? static_cast<float*>(t.rstd->data) : nullptr;
    a.x = t.x ? t.x->data : nullptr;
    a.epsilon = p.epsilon;
    // Outputs overlapping the inputs other than in place: the kernel reads copies.
    const uint64_t need = add_rms_norm_workspace_size(t, p);
    const detail::Scratch<uint64_t> copies(ws, need / sizeof(uint64_t));
    if (need != 0) {
      if (copies.data() == nullptr) {
        return detail::fail(StatusCode::kInner, detail::AddRmsNormOp::kType,
                            "cannot allocate {} bytes for copies of the inputs an output overlaps "
                            "(lend a workspace of that size)",
                            need);
      }
      auto* at = reinterpret_cast<unsigned char*>(copies.data());
      for (const void** slot : {&a.x1, &a.x2, &a.gamma}) {
        const TensorView& v = slot == &a.x1 ? t.x1 : slot == &a.x2 ? t.x2 : t.gamma;
        const auto bytes = static_cast<std::size_t>(*v.nbytes());
        if (bytes != 0) std::memcpy(at, v.data, bytes);
        *slot = at;
        at += padded(bytes);
      }
    }
    HWY_DYNAMIC_DISPATCH(AddRmsNormImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
