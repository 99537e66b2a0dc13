// Per-target reduction kernels: the fixed-lane block loops of core/reduce.h, and ReduceRow, the
// serial reduction of one row that Highway kernels (softmax, norms) call inside their row loops.
//
// Glossary: A is the accumulator type (float or double); DA a descriptor of at most
// kReduceLanes lanes of A; a "group" is kReduceLanes consecutive elements, one per lane; a
// "term" is a functor term(da, i) giving the values that elements [i, i + Lanes(da)) contribute
// (the element widened to A, a product, a square...), for any descriptor including one lane.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_CORE_REDUCE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_CORE_REDUCE_INL_H_
#undef MANTISSA_CORE_REDUCE_INL_H_
#else
#define MANTISSA_CORE_REDUCE_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/reduce.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// The accumulator vectors: kReduceLanes lanes of A held in kReduceLanes / N vectors.
template <class A>
using AccTag = hn::CappedTag<A, detail::kReduceLanes>;

template <class DA>
inline constexpr size_t kAccVectors = detail::kReduceLanes / hn::MaxLanes(DA());

// Elements at p widened exactly to the lanes of `da` (fp32, or fp64 through fp32).
template <class Format, class DA>
HWY_INLINE hn::Vec<DA> LoadAcc(DA da, const typename Format::Storage* HWY_RESTRICT p) {
  if constexpr (std::is_same_v<hn::TFromD<DA>, float>) {
    return LoadF32<Format>(da, p);
  } else {
    const hn::Rebind<float, DA> df;
    return hn::PromoteTo(da, LoadF32<Format>(df, p));
  }
}

// Terms of the sums.
template <class Format>
struct SumTerm {
  const typename Format::Storage* x;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    return LoadAcc<Format>(da, x + i);
  }
};

// x * y rounded once in A (exact when A is double: 24-bit by 24-bit significands).
template <class Format>
struct DotTerm {
  const typename Format::Storage* x;
  const typename Format::Storage* y;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    return hn::Mul(LoadAcc<Format>(da, x + i), LoadAcc<Format>(da, y + i));
  }
};

template <class Format>
struct SquareTerm {
  const typename Format::Storage* x;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    const auto v = LoadAcc<Format>(da, x + i);
    return hn::Mul(v, v);
  }
};

// One accumulation step of lane vector (s, c) by term x. The compensated forms keep c with the
// sign that makes s + c the running value. It is necessary to keep the order of the operations.
template <detail::ReduceMethod M, class D>
HWY_INLINE void Accumulate(D /*d*/, hn::Vec<D>& s, hn::Vec<D>& c, hn::Vec<D> x) {
  using detail::ReduceMethod;
  if constexpr (M == ReduceMethod::kKahan) {
    const auto y = hn::Add(x, c);
    const auto t = hn::Add(s, y);
    c = hn::Sub(y, hn::Sub(t, s));  // what t lost of y
    s = t;
  } else if constexpr (M == ReduceMethod::kNeumaier) {
    const auto t = hn::Add(s, x);
    // The smaller addend is the one whose low bits t lost.
    const auto s_bigger = hn::Ge(hn::Abs(s), hn::Abs(x));
    const auto lost =
        hn::IfThenElse(s_bigger, hn::Add(hn::Sub(s, t), x), hn::Add(hn::Sub(x, t), s));
    c = hn::Add(c, lost);
    s = t;
  } else {
    s = hn::Add(s, x);
  }
}

// Combines the lane arrays (sum, comp) of one block: lane[i] (+) lane[i + w], w = 16 .. 1.
template <detail::ReduceMethod M, class A>
detail::Partial<A> CombineLanes(const A* sums, const A* comps) {
  detail::Partial<A> lane[detail::kReduceLanes];
  for (int j = 0; j < detail::kReduceLanes; ++j) lane[j] = {sums[j], comps[j]};
  for (int w = detail::kReduceLanes / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lane[j] = detail::merge<M>(lane[j], lane[j + w]);
  }
  return lane[0];
}

// The halving steps of CombineLanes inside one vector: lane j (+) lane j + Lanes/2, down to one
// lane.
template <class D>
HWY_INLINE hn::TFromD<D> SumLanesByHalving(D d, hn::Vec<D> v) {
#if HWY_TARGET == HWY_SCALAR  // one lane (and no UpperHalf)
  (void)d;
  return hn::GetLane(v);
#else
  if constexpr (hn::MaxLanes(D()) == 1) {
    (void)d;
    return hn::GetLane(v);
  } else {
    const hn::Half<D> dh;
    return SumLanesByHalving(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  }
#endif
}

// The naive method's block kept in registers: the same additions in the same order as the
// general LanesBlock and CombineLanes below (lane j sums elements j, j + 32, ... in order; the
// lanes then combine by halving: lane j (+) lane j + w, w = 16 .. 1), without the round trip of
// 32 lanes through memory. Short rows spend most of their reduction time in that round trip.
template <class A, class Term>
HWY_INLINE A NaiveBlockSum(const Term& term, int64_t begin, int64_t len) {
  const AccTag<A> da;
  constexpr size_t kN = hn::MaxLanes(AccTag<A>());
  constexpr size_t kV = kAccVectors<AccTag<A>>;
  hn::Vec<AccTag<A>> s[kV];
  for (size_t v = 0; v < kV; ++v) s[v] = hn::Set(da, A(-0.0));
  const int64_t groups = len / detail::kReduceLanes;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t i = begin + g * detail::kReduceLanes;
    for (size_t v = 0; v < kV; ++v) {
      s[v] = hn::Add(s[v], term(da, i + static_cast<int64_t>(v * kN)));
    }
  }
  const int64_t tail = len - groups * detail::kReduceLanes;
  if (tail > 0) {  // element j of the partial group goes to lane j
    HWY_ALIGN A lanes[detail::kReduceLanes];
    for (size_t v = 0; v < kV; ++v) hn::Store(s[v], da, lanes + v * kN);
    const hn::CappedTag<A, 1> d1;
    const int64_t tail_begin = begin + groups * detail::kReduceLanes;
    for (int64_t j = 0; j < tail; ++j) {
      hn::Store(hn::Add(hn::Load(d1, lanes + j), term(d1, tail_begin + j)), d1, lanes + j);
    }
    for (size_t v = 0; v < kV; ++v) s[v] = hn::Load(da, lanes + v * kN);
  }
  for (size_t w = kV / 2; w >= 1; w /= 2) {  // lane widths 16 .. kN
    for (size_t v = 0; v < w; ++v) s[v] = hn::Add(s[v], s[v + w]);
  }
  return SumLanesByHalving(da, s[0]);
}

// Naive, Kahan or Neumaier over elements [begin, begin + len) of one block.
template <detail::ReduceMethod M, class A, class Term>
detail::Partial<A> LanesBlock(const Term& term, int64_t begin, int64_t len) {
  const AccTag<A> da;
  constexpr size_t kN = hn::MaxLanes(AccTag<A>());
  constexpr size_t kV = kAccVectors<AccTag<A>>;
  hn::Vec<AccTag<A>> s[kV], c[kV];
  for (size_t v = 0; v < kV; ++v) {
    s[v] = hn::Set(da, A(-0.0));  // -0 is the identity of addition (+0 would turn -0 into +0)
    c[v] = hn::Set(da, A(-0.0));
  }
  const int64_t groups = len / detail::kReduceLanes;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t i = begin + g * detail::kReduceLanes;
    for (size_t v = 0; v < kV; ++v) {
      Accumulate<M>(da, s[v], c[v], term(da, i + static_cast<int64_t>(v * kN)));
    }
  }
  HWY_ALIGN A sums[detail::kReduceLanes];
  HWY_ALIGN A comps[detail::kReduceLanes];
  for (size_t v = 0; v < kV; ++v) {
    hn::Store(s[v], da, sums + v * kN);
    hn::Store(c[v], da, comps + v * kN);
  }
  // The tail: element j of the last, partial group goes to lane j, with the same operations.
  const hn::CappedTag<A, 1> d1;
  const int64_t tail_begin = begin + groups * detail::kReduceLanes;
  for (int64_t j = 0; j < len - groups * detail::kReduceLanes; ++j) {
    auto s1 = hn::Load(d1, sums + j);
    auto c1 = hn::Load(d1, comps + j);
    Accumulate<M>(d1, s1, c1, term(d1, tail_begin + j));
    hn::Store(s1, d1, sums + j);
    hn::Store(c1, d1, comps + j);
  }
  return CombineLanes<M>(sums, comps);
}

// Merges chunk rows [first, first + count) into row `first` along the pairwise tree.
template <class A>
void MergeChunkRows(A (*rows)[detail::kReduceLanes], int first, int count) {
  if (count <= 1) return;
  int left = 1;
  while (left * 2 < count) left *= 2;  // the largest power of two below count
  MergeChunkRows(rows, first, left);
  MergeChunkRows(rows, first + left, count - left);
  const AccTag<A> da;
  constexpr size_t kN = hn::MaxLanes(AccTag<A>());
  for (size_t k = 0; k < detail::kReduceLanes; k += kN) {
    hn::Store(hn::Add(hn::Load(da, rows[first] + k), hn::Load(da, rows[first + left] + k)), da,
              rows[first] + k);
  }
}

// Pairwise over one block: each lane sums chunks of kPairwiseChunk of its elements naively,
// and the chunk sums of a lane combine along the pairwise tree.
template <class A, class Term>
detail::Partial<A> PairwiseBlock(const Term& term, int64_t begin, int64_t len) {
  constexpr int kLanes = detail::kReduceLanes;
  constexpr int kChunkElements = kLanes * detail::kPairwiseChunk;
  constexpr int kMaxChunks = static_cast<int>(detail::kReduceBlock / kChunkElements);
  const AccTag<A> da;
  constexpr size_t kN = hn::MaxLanes(AccTag<A>());
  constexpr size_t kV = kAccVectors<AccTag<A>>;
  const hn::CappedTag<A, 1> d1;
  HWY_ALIGN A rows[kMaxChunks][kLanes];
  const int chunks = static_cast<int>((len + kChunkElements - 1) / kChunkElements);
  for (int k = 0; k < chunks; ++k) {
    const int64_t chunk_begin = begin + int64_t{k} * kChunkElements;
    const int64_t chunk_len = std::min<int64_t>(kChunkElements, begin + len - chunk_begin);
    const int64_t groups = chunk_len / kLanes;
    hn::Vec<AccTag<A>> s[kV];
    for (size_t v = 0; v < kV; ++v) s[v] = hn::Set(da, A(-0.0));
    for (int64_t g = 0; g < groups; ++g) {
      for (size_t v = 0; v < kV; ++v) {
        s[v] = hn::Add(s[v], term(da, chunk_begin + g * kLanes + static_cast<int64_t>(v * kN)));
      }
    }
    for (size_t v = 0; v < kV; ++v) hn::Store(s[v], da, rows[k] + v * kN);
    for (int64_t j = 0; j < chunk_len - groups * kLanes; ++j) {
      const auto sum =
          hn::Add(hn::Load(d1, rows[k] + j), term(d1, chunk_begin + groups * kLanes + j));
      hn::Store(sum, d1, rows[k] + j);
    }
  }
  MergeChunkRows(rows, 0, chunks);
  HWY_ALIGN A comps[kLanes];
  for (int j = 0; j < kLanes; ++j) comps[j] = A(-0.0);
  return CombineLanes<detail::ReduceMethod::kPairwise>(rows[0], comps);
}

// One block of [begin, begin + len), len in [1, kReduceBlock].
template <detail::ReduceMethod M, class A, class Term>
HWY_NOINLINE detail::Partial<A> ReduceBlock(const Term& term, int64_t begin, int64_t len) {
  using detail::ReduceMethod;
  if constexpr (M == ReduceMethod::kPairwise) {
    return PairwiseBlock<A>(term, begin, len);
  } else {
    if constexpr (M == ReduceMethod::kNaive) {
      return {NaiveBlockSum<A>(term, begin, len), A(-0.0)};
    }
    detail::Partial<A> p = LanesBlock<M, A>(term, begin, len);
    if constexpr (detail::is_compensated(M)) {
      // inf, NaN or overflow: the compensation means nothing; take the plain sum instead.
      if (!std::isfinite(p.sum) || !std::isfinite(p.comp)) {
        p = LanesBlock<ReduceMethod::kNaive, A>(term, begin, len);
      }
    }
    return p;
  }
}

// The reduction of terms [0, n) in the calling thread, no allocation: the value of the sum of
// every term in the order of core/reduce.h (+0 when n is 0; NaN is the positive quiet NaN).
template <detail::ReduceMethod M, class A, class Term>
HWY_NOINLINE A ReduceRow(const Term& term, int64_t n) {
  if (n <= 0) return A(0);
  // One block: the tree holds a single item (and building its stack would cost more than the
  // sum of a short row).
  if (n <= detail::kReduceBlock) return detail::finish<M>(ReduceBlock<M, A>(term, 0, n));
  detail::PairwiseStack<detail::Partial<A>> stack;
  const auto merge = [](const detail::Partial<A>& a, const detail::Partial<A>& b) {
    return detail::merge<M>(a, b);
  };
  for (int64_t b = 0; b < n; b += detail::kReduceBlock) {
    stack.push(ReduceBlock<M, A>(term, b, std::min(detail::kReduceBlock, n - b)), merge);
  }
  return detail::finish<M>(stack.collapse(merge));
}

// ---------------------------------------------------------------------------------------------
// Max: exact, so only the NaN and tie rules need care (see core/reduce.h).

struct MaxPartial {
  float value = -std::numeric_limits<float>::infinity();
  bool nan = false;
};

inline MaxPartial MergeMax(const MaxPartial& a, const MaxPartial& b) {
  return {b.value > a.value ? b.value : a.value, a.nan || b.nan};
}

template <class Format, bool kAbs>
struct MaxTerm {
  const typename Format::Storage* x;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(D d, int64_t i) const {
    const auto v = LoadF32<Format>(d, x + i);
    if constexpr (kAbs) {
      return hn::Abs(v);
    } else {
      return v;
    }
  }
};

template <class D>
HWY_INLINE void AccumulateMax(D d, hn::Vec<D>& m, hn::Mask<D>& nan, hn::Vec<D> x) {
  m = hn::IfThenElse(hn::Gt(x, m), x, m);  // NaN compares false: tracked by `nan` instead
  nan = hn::Or(nan, hn::IsNaN(x));
  (void)d;
}

template <class Term>
MaxPartial MaxBlock(const Term& term, int64_t begin, int64_t len) {
  const AccTag<float> d;
  constexpr size_t kN = hn::MaxLanes(AccTag<float>());
  constexpr size_t kV = kAccVectors<AccTag<float>>;
  const auto neg_inf = hn::Set(d, -std::numeric_limits<float>::infinity());
  hn::Vec<AccTag<float>> m[kV];
  hn::Mask<AccTag<float>> nan[kV];
  for (size_t v = 0; v < kV; ++v) {
    m[v] = neg_inf;
    nan[v] = hn::FirstN(d, 0);
  }
  const int64_t groups = len / detail::kReduceLanes;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t i = begin + g * detail::kReduceLanes;
    for (size_t v = 0; v < kV; ++v) {
      AccumulateMax(d, m[v], nan[v], term(d, i + static_cast<int64_t>(v * kN)));
    }
  }
  HWY_ALIGN float values[detail::kReduceLanes];
  MaxPartial lane[detail::kReduceLanes];
  for (size_t v = 0; v < kV; ++v) hn::Store(m[v], d, values + v * kN);
  for (int j = 0; j < detail::kReduceLanes; ++j) lane[j].value = values[j];
  for (size_t v = 0; v < kV; ++v) {
    if (!hn::AllFalse(d, nan[v])) lane[v * kN].nan = true;
  }
  const hn::CappedTag<float, 1> d1;
  const int64_t tail_begin = begin + groups * detail::kReduceLanes;
  for (int64_t j = 0; j < len - groups * detail::kReduceLanes; ++j) {
    auto m1 = hn::Set(d1, lane[j].value);
    auto nan1 = hn::FirstN(d1, 0);
    AccumulateMax(d1, m1, nan1, term(d1, tail_begin + j));
    lane[j].value = hn::GetLane(m1);
    lane[j].nan = lane[j].nan || !hn::AllFalse(d1, nan1);
  }
  for (int w = detail::kReduceLanes / 2; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) lane[j] = MergeMax(lane[j], lane[j + w]);
  }
  return lane[0];
}

// Max (or max |x|) of [0, n) in the calling thread; -inf (max |x|: +0) when n is 0.
template <class Term>
HWY_NOINLINE float MaxRow(const Term& term, int64_t n, float empty) {
  if (n <= 0) return empty;
  detail::PairwiseStack<MaxPartial> stack;
  for (int64_t b = 0; b < n; b += detail::kReduceBlock) {
    stack.push(MaxBlock(term, b, std::min(detail::kReduceBlock, n - b)), MergeMax);
  }
  const MaxPartial p = stack.collapse(MergeMax);
  return p.nan ? std::numeric_limits<float>::quiet_NaN() : p.value;
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_CORE_REDUCE_INL_H_
