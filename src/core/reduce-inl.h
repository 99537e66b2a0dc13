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
#include <array>
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

// (+) of core/reduce.h (detail::merge) lane by lane: lane j of (s, c) becomes lane j of (s, c)
// (+) lane j of (s2, c2). It is necessary to keep the order of the operations.
template <detail::ReduceMethod M, class D>
HWY_INLINE void MergeVectors(D d, hn::Vec<D>& s, hn::Vec<D>& c, hn::Vec<D> s2, hn::Vec<D> c2) {
  if constexpr (detail::is_compensated(M)) {  // detail::merge_compensated
    const auto sum = hn::Add(s, s2);
    const auto b_virtual = hn::Sub(sum, s);
    const auto a_virtual = hn::Sub(sum, b_virtual);
    const auto error = hn::Add(hn::Sub(s, a_virtual), hn::Sub(s2, b_virtual));
    const auto comp = hn::Add(hn::Add(c, c2), error);
    // inf or NaN carries the result alone
    c = hn::IfThenElse(hn::IsFinite(sum), comp, hn::Set(d, hn::TFromD<D>(-0.0)));
    s = sum;
  } else {  // detail::merge_plain; the compensation stays -0
    (void)d;
    (void)c2;
    s = hn::Add(s, s2);
  }
}

// The halving steps of CombineLanes inside one vector: lane j (+) lane j + Lanes/2, down to one
// lane.
template <detail::ReduceMethod M, class D>
HWY_INLINE detail::Partial<hn::TFromD<D>> MergeLanesByHalving(D d, hn::Vec<D> s, hn::Vec<D> c) {
#if HWY_TARGET == HWY_SCALAR  // one lane (and no UpperHalf)
  (void)d;
  return {hn::GetLane(s), hn::GetLane(c)};
#else
  if constexpr (hn::MaxLanes(D()) == 1) {
    (void)d;
    return {hn::GetLane(s), hn::GetLane(c)};
  } else {
    const hn::Half<D> dh;
    auto s_low = hn::LowerHalf(dh, s);
    auto c_low = hn::LowerHalf(dh, c);
    MergeVectors<M>(dh, s_low, c_low, hn::UpperHalf(dh, s), hn::UpperHalf(dh, c));
    return MergeLanesByHalving<M>(dh, s_low, c_low);
  }
#endif
}

// u[k] = u[k] + v[k] for k in [0, count): one IEEE addition per element (the same bits as a
// scalar loop), a vector at a time. u and v do not overlap.
inline void AddRowInPlace(double* HWY_RESTRICT u, const double* HWY_RESTRICT v, int64_t count) {
  const hn::ScalableTag<double> d;
  const int64_t step = static_cast<int64_t>(hn::Lanes(d));
  int64_t k = 0;
  for (; k + step <= count; k += step) {
    hn::StoreU(hn::Add(hn::LoadU(d, u + k), hn::LoadU(d, v + k)), d, u + k);
  }
  for (; k < count; ++k) u[k] = u[k] + v[k];
}

// The naive sum of one vector's lanes in that order.
template <class D>
HWY_INLINE hn::TFromD<D> SumLanesByHalving(D d, hn::Vec<D> v) {
  return MergeLanesByHalving<detail::ReduceMethod::kNaive>(d, v, v).sum;
}

// A term of R rows may also give two consecutive vectors at once: term.Pair(k, da, i, lo, hi)
// sets lo and hi to term(k, da, i) and term(k, da, i + Lanes(da)). BlockPartials then asks for
// pairs, which costs less where both come from one vector of twice the lanes (a 16-bit format's
// products formed exactly in fp32, then widened half by half).
template <class Term, class DA>
concept PairedTerm = requires(const Term& term, DA da, hn::Vec<DA>& v) {
  term.Pair(size_t{0}, da, int64_t{0}, v, v);
};

// The same for a term of one row: term.Pair(da, i, lo, hi).
template <class Term, class DA>
concept RowPairedTerm = requires(const Term& term, DA da, hn::Vec<DA>& v) {
  term.Pair(da, int64_t{0}, v, v);
};

// Naive, Kahan or Neumaier over elements [begin, begin + len) (len in [0, kReduceBlock]) of R
// rows at once, in registers: row k's terms are term(k, da, i). For each row, lane j accumulates
// elements j, j + 32, ... in order; element j of the last, partial group goes to lane j; then
// the lanes combine as CombineLanes combines them (lane j (+) lane j + w, w = 16 .. 1) across
// vectors, down to one vector per row: (s[k], c[k]), whose lanes BlockPartials or
// MergeLanesOfRows combine. The same operations in the same order as CombineLanes over the 32
// lanes in memory, without their round trip (short rows spend most of their reduction time
// there). The rows' chains of dependent operations are interleaved, so a core overlaps them; a
// row-wise kernel over short rows otherwise waits on each row's latencies.
template <detail::ReduceMethod M, class A, size_t R, class Term>
HWY_INLINE void BlockLaneVectors(const Term& term, int64_t begin, int64_t len,
                                 hn::Vec<AccTag<A>> (&s_out)[R], hn::Vec<AccTag<A>> (&c_out)[R]) {
  static_assert(M != detail::ReduceMethod::kPairwise, "pairwise blocks are PairwiseBlock's");
  const AccTag<A> da;
  constexpr size_t kN = hn::MaxLanes(AccTag<A>());
  constexpr size_t kV = kAccVectors<AccTag<A>>;
  hn::Vec<AccTag<A>> s[R][kV], c[R][kV];
  HWY_UNROLL(32)
  for (size_t k = 0; k < R; ++k) {
    HWY_UNROLL(32)
    for (size_t v = 0; v < kV; ++v) {
      s[k][v] = hn::Set(da, A(-0.0));  // -0 is the identity of addition (+0 would turn -0 into +0)
      c[k][v] = hn::Set(da, A(-0.0));
    }
  }
  const int64_t groups = len / detail::kReduceLanes;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t i = begin + g * detail::kReduceLanes;
    HWY_UNROLL(32)
    for (size_t k = 0; k < R; ++k) {
      if constexpr (PairedTerm<Term, AccTag<A>> && kV % 2 == 0) {
        HWY_UNROLL(32)
        for (size_t v = 0; v < kV; v += 2) {
          hn::Vec<AccTag<A>> lo, hi;
          term.Pair(k, da, i + static_cast<int64_t>(v * kN), lo, hi);
          Accumulate<M>(da, s[k][v], c[k][v], lo);
          Accumulate<M>(da, s[k][v + 1], c[k][v + 1], hi);
        }
      } else {
        HWY_UNROLL(32)
        for (size_t v = 0; v < kV; ++v) {
          Accumulate<M>(da, s[k][v], c[k][v], term(k, da, i + static_cast<int64_t>(v * kN)));
        }
      }
    }
  }
  const int64_t tail = len - groups * detail::kReduceLanes;
  if (tail > 0) {
    const hn::CappedTag<A, 1> d1;
    const int64_t tail_begin = begin + groups * detail::kReduceLanes;
    HWY_UNROLL(32)
    for (size_t k = 0; k < R; ++k) {
      HWY_ALIGN A sums[detail::kReduceLanes];
      HWY_ALIGN A comps[detail::kReduceLanes];
      HWY_UNROLL(32)
      for (size_t v = 0; v < kV; ++v) {
        hn::Store(s[k][v], da, sums + v * kN);
        hn::Store(c[k][v], da, comps + v * kN);
      }
      for (int64_t j = 0; j < tail; ++j) {
        auto s1 = hn::Load(d1, sums + j);
        auto c1 = hn::Load(d1, comps + j);
        Accumulate<M>(d1, s1, c1, term(k, d1, tail_begin + j));
        hn::Store(s1, d1, sums + j);
        hn::Store(c1, d1, comps + j);
      }
      HWY_UNROLL(32)
      for (size_t v = 0; v < kV; ++v) {
        s[k][v] = hn::Load(da, sums + v * kN);
        c[k][v] = hn::Load(da, comps + v * kN);
      }
    }
  }
  HWY_UNROLL(32)
  for (size_t w = kV / 2; w >= 1; w /= 2) {  // lane distances 16 .. kN
    HWY_UNROLL(32)
    for (size_t k = 0; k < R; ++k) {
      HWY_UNROLL(32)
      for (size_t v = 0; v < w; ++v) {
        MergeVectors<M>(da, s[k][v], c[k][v], s[k][v + w], c[k][v + w]);
      }
    }
  }
  HWY_UNROLL(32)
  for (size_t k = 0; k < R; ++k) {
    s_out[k] = s[k][0];
    c_out[k] = c[k][0];
  }
}

// BlockLaneVectors, each row's lanes then combined by halving inside its vector: row k's
// partial.
template <detail::ReduceMethod M, class A, size_t R, class Term>
HWY_INLINE void BlockPartials(const Term& term, int64_t begin, int64_t len,
                              detail::Partial<A> (&partials)[R]) {
  const AccTag<A> da;
  hn::Vec<AccTag<A>> s[R], c[R];
  BlockLaneVectors<M, A, R>(term, begin, len, s, c);
  HWY_UNROLL(32)
  for (size_t k = 0; k < R; ++k) partials[k] = MergeLanesByHalving<M>(da, s[k], c[k]);
}

// Rows whose lanes MergeLanesOfRows and MaxLanesOfRows combine at once: one per lane.
template <class A>
inline constexpr size_t kRowsAcrossLanes = hn::MaxLanes(AccTag<A>());

#if HWY_TARGET != HWY_SCALAR  // one lane: nothing to combine (and no ConcatEven)
// v with lane p moved to the lane whose index is p's bits reversed (an involution on the kN =
// Lanes(d) lanes): the order MergeLanesOfRows starts from.
template <class D>
HWY_INLINE hn::Vec<D> BitReverseLanes(D d, hn::Vec<D> v) {
  constexpr size_t kN = hn::MaxLanes(D());
  if constexpr (kN <= 2) {
    (void)d;
    return v;
  } else {
    using TI = hwy::MakeSigned<hn::TFromD<D>>;
    alignas(64) static constexpr auto kIndex = [] {
      std::array<TI, kN> index{};
      for (size_t p = 0; p < kN; ++p) {
        size_t r = 0;
        for (size_t bit = 1, mirror = kN / 2; bit < kN; bit *= 2, mirror /= 2) {
          if (p & bit) r |= mirror;
        }
        index[p] = static_cast<TI>(r);
      }
      return index;
    }();
    return hn::TableLookupLanes(v, hn::SetTableIndices(d, kIndex.data()));
  }
}

// One step of the across-rows trees below: lanes p = 2i of the vectors a and b (a's in the lower
// half) and lanes p = 2i + 1, in that order.
template <class D>
HWY_INLINE void SplitEvenOdd(D d, hn::Vec<D> a, hn::Vec<D> b, hn::Vec<D>& even, hn::Vec<D>& odd) {
  even = hn::ConcatEven(d, b, a);
  odd = hn::ConcatOdd(d, b, a);
}
#endif

// MergeLanesByHalving of kN = Lanes(da) rows at once, row k's lane vectors in (s[k], c[k]) (as
// BlockLaneVectors leaves them): afterwards lane k of (s[0], c[0]) is row k's partial, with the
// same bits. Each row's lanes are first put in bit-reversed order, so that lane j and lane
// j + kN / 2 sit side by side, j in the even position; each of the log2(kN) passes then takes two
// vectors, gathers the even positions of both into one vector and the odd ones into another
// (ConcatEven, ConcatOdd) and merges the two: one MergeVectors per pair of vectors instead of a
// narrowing chain of them per row, and no dependence between rows. After the pass that merges
// lane j with lane j + w, lane j and lane j + w / 2 again sit side by side; after the last, the
// rows' lanes are in row order.
template <detail::ReduceMethod M, class DA>
HWY_INLINE void MergeLanesOfRows(DA da, hn::Vec<DA> (&s)[hn::MaxLanes(DA())],
                                 hn::Vec<DA> (&c)[hn::MaxLanes(DA())]) {
#if HWY_TARGET == HWY_SCALAR
  (void)da, (void)s, (void)c;
#else
  constexpr size_t kN = hn::MaxLanes(DA());
  for (size_t k = 0; k < kN; ++k) {
    s[k] = BitReverseLanes(da, s[k]);
    c[k] = BitReverseLanes(da, c[k]);
  }
  for (size_t count = kN; count > 1; count /= 2) {
    for (size_t i = 0; i < count / 2; ++i) {
      hn::Vec<DA> s_lo, s_hi, c_lo, c_hi;
      SplitEvenOdd(da, s[2 * i], s[2 * i + 1], s_lo, s_hi);
      SplitEvenOdd(da, c[2 * i], c[2 * i + 1], c_lo, c_hi);
      MergeVectors<M>(da, s_lo, c_lo, s_hi, c_hi);
      s[i] = s_lo;
      c[i] = c_lo;
    }
  }
#endif
}

// A term of one row as a term of rows (row 0), with its pairs where it gives them.
template <class Term>
struct OneRowTerm {
  const Term& term;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(size_t, D d, int64_t i) const {
    return term(d, i);
  }
  template <class D>
  requires RowPairedTerm<Term, D> HWY_INLINE void Pair(size_t, D d, int64_t i, hn::Vec<D>& lo,
                                                       hn::Vec<D>& hi) const {
    term.Pair(d, i, lo, hi);
  }
};

// BlockPartials of one row: term(da, i).
template <detail::ReduceMethod M, class A, class Term>
HWY_INLINE detail::Partial<A> LanesBlock(const Term& term, int64_t begin, int64_t len) {
  detail::Partial<A> p[1];
  BlockPartials<M, A, 1>(OneRowTerm<Term>{term}, begin, len, p);
  return p[0];
}

// Rows BlockSums<M> handles at once: as many as keep their accumulators (and compensations) in
// 16 vector registers.
template <detail::ReduceMethod M, class A>
constexpr size_t kRowsAtOnce = std::max<size_t>(1, 16 / (kAccVectors<AccTag<A>> *
                                                         (detail::is_compensated(M) ? 2 : 1)));

// ReduceRow<M> of R rows of `len` elements (len in [1, kReduceBlock]) at once, M naive, Kahan or
// Neumaier: row k's terms are term(k, da, i); sums[k] gets exactly ReduceRow's value for that
// row (ReduceBlock's naive fallback included).
template <detail::ReduceMethod M, class A, size_t R, class Term>
HWY_INLINE void BlockSums(const Term& term, int64_t len, A (&sums)[R]) {
  detail::Partial<A> p[R];
  BlockPartials<M, A, R>(term, 0, len, p);
  HWY_UNROLL(32)
  for (size_t k = 0; k < R; ++k) {
    if constexpr (detail::is_compensated(M)) {
      // inf, NaN or overflow: the compensation means nothing; the plain sum instead (ReduceBlock)
      if (!std::isfinite(p[k].sum) || !std::isfinite(p[k].comp)) {
        p[k] = LanesBlock<detail::ReduceMethod::kNaive, A>(
            [&](auto d, int64_t i) { return term(k, d, i); }, 0, len);
      }
    }
    sums[k] = detail::finish<M>(p[k]);
  }
}

// BlockSums' naive sums of R rows of kVectors whole vectors each (whole lane groups, at most one
// reduction block), their terms given a vector at a time: terms(v, t) sets t[k] to row k's terms
// for the row's elements [v * Lanes, (v + 1) * Lanes). It is called once per vector, in order of
// v, so a caller can compute the terms from vectors it loads there and keeps (a row read once for
// its sums and its elementwise pass). Vector v goes to accumulator v % kAccVectors, the
// accumulators merge at lane distances 16 .. Lanes, then halve inside the last one: the same
// additions in the same order as BlockLaneVectors and BlockPartials.
template <class A, size_t R, size_t kVectors, class Terms>
HWY_INLINE void NaiveSumsOfVectors(const Terms& terms, A (&sums)[R]) {
  constexpr detail::ReduceMethod kM = detail::ReduceMethod::kNaive;
  using V = hn::Vec<AccTag<A>>;
  const AccTag<A> da;
  constexpr size_t kV = kAccVectors<AccTag<A>>;
  static_assert(kVectors % kV == 0);
  static_assert(kVectors / kV * detail::kReduceLanes <= detail::kReduceBlock);
  V s[R][kV], c[R][kV];
  HWY_UNROLL(32)
  for (size_t k = 0; k < R; ++k) {
    HWY_UNROLL(32)
    for (size_t v = 0; v < kV; ++v) s[k][v] = c[k][v] = hn::Set(da, A(-0.0));  // -0: the identity
  }
#pragma GCC unroll 64
  for (size_t v = 0; v < kVectors; ++v) {
    V t[R];
    terms(v, t);
    HWY_UNROLL(32)
    for (size_t k = 0; k < R; ++k) Accumulate<kM>(da, s[k][v % kV], c[k][v % kV], t[k]);
  }
  HWY_UNROLL(32)
  for (size_t w = kV / 2; w >= 1; w /= 2) {  // lane distances 16 .. Lanes(da)
    HWY_UNROLL(32)
    for (size_t k = 0; k < R; ++k) {
      HWY_UNROLL(32)
      for (size_t v = 0; v < w; ++v) {
        MergeVectors<kM>(da, s[k][v], c[k][v], s[k][v + w], c[k][v + w]);
      }
    }
  }
  HWY_UNROLL(32)
  for (size_t k = 0; k < R; ++k) {
    sums[k] = detail::finish<kM>(MergeLanesByHalving<kM>(da, s[k][0], c[k][0]));
  }
}

// Rows [first, first + R) of a term of rows, as rows [0, R) (with its pairs where it gives them).
template <class Term>
struct RowsFrom {
  const Term& term;
  size_t first;
  template <class D>
  HWY_INLINE hn::Vec<D> operator()(size_t k, D d, int64_t i) const {
    return term(first + k, d, i);
  }
  template <class D>
  requires PairedTerm<Term, D> HWY_INLINE void Pair(size_t k, D d, int64_t i, hn::Vec<D>& lo,
                                                    hn::Vec<D>& hi) const {
    term.Pair(first + k, d, i, lo, hi);
  }
};

// BlockSums of kRowsAcrossLanes<A> rows at once (one per lane of the accumulators): each row's
// lane vectors as BlockLaneVectors leaves them (kRowsAtOnce rows' chains interleaved at a time),
// then the rows' lanes combined across the rows (MergeLanesOfRows), and finished in one vector.
// sums[k] gets exactly BlockSums' value for row k (its naive fallback included).
template <detail::ReduceMethod M, class A, class Term>
HWY_INLINE void BlockSumsAcrossLanes(const Term& term, int64_t len, A* HWY_RESTRICT sums) {
  using V = hn::Vec<AccTag<A>>;
  const AccTag<A> da;
  constexpr size_t kN = kRowsAcrossLanes<A>;
  constexpr size_t kR = std::min(kN, kRowsAtOnce<M, A>);
  static_assert(kN % kR == 0);
  V s[kN], c[kN];
  for (size_t first = 0; first < kN; first += kR) {
    V rows_s[kR], rows_c[kR];
    BlockLaneVectors<M, A, kR>(RowsFrom<Term>{term, first}, 0, len, rows_s, rows_c);
    for (size_t k = 0; k < kR; ++k) {
      s[first + k] = rows_s[k];
      c[first + k] = rows_c[k];
    }
  }
  MergeLanesOfRows<M>(da, s, c);
  const V total = s[0];
  if constexpr (detail::is_compensated(M)) {
    // detail::finish: sum + comp where the compensation is not zero. A row whose sum or
    // compensation is not finite is summed again plainly, as BlockSums does.
    const V comp = c[0];
    hn::StoreU(hn::IfThenElse(hn::Ne(comp, hn::Zero(da)), hn::Add(total, comp), total), da, sums);
    const auto bad = hn::Not(hn::And(hn::IsFinite(total), hn::IsFinite(comp)));
    if (HWY_UNLIKELY(!hn::AllFalse(da, bad))) {
      A totals[kN], comps[kN];
      hn::StoreU(total, da, totals);
      hn::StoreU(comp, da, comps);
      for (size_t k = 0; k < kN; ++k) {
        if (std::isfinite(totals[k]) && std::isfinite(comps[k])) continue;
        sums[k] = detail::finish<detail::ReduceMethod::kNaive>(
            LanesBlock<detail::ReduceMethod::kNaive, A>(
                [&](auto d, int64_t i) { return term(k, d, i); }, 0, len));
      }
    }
  } else {
    // detail::finish: a NaN made the positive quiet NaN.
    const V nan = hn::Set(da, std::numeric_limits<A>::quiet_NaN());
    hn::StoreU(hn::IfThenElse(hn::IsNaN(total), nan, total), da, sums);
  }
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
  HWY_UNROLL(32)
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
    HWY_UNROLL(32)
    for (size_t v = 0; v < kV; ++v) s[v] = hn::Set(da, A(-0.0));
    for (int64_t g = 0; g < groups; ++g) {
      HWY_UNROLL(32)
      for (size_t v = 0; v < kV; ++v) {
        s[v] = hn::Add(s[v], term(da, chunk_begin + g * kLanes + static_cast<int64_t>(v * kN)));
      }
    }
    HWY_UNROLL(32)
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

// ReduceRow<M> of R terms over the same range [0, n) at once, M naive, Kahan or Neumaier:
// sums[k] gets exactly ReduceRow's value for term(k, da, i). Each block's R sums are taken in one
// pass over the block (BlockPartials), so a row longer than a block is read once, not R times;
// the block partials of each term go along their own pairwise tree, as ReduceRow's do.
template <detail::ReduceMethod M, class A, size_t R, class Term>
HWY_INLINE void ReduceRows(const Term& term, int64_t n, A (&sums)[R]) {
  static_assert(M != detail::ReduceMethod::kPairwise, "BlockPartials has no pairwise blocks");
  if (n <= 0) {
    for (size_t k = 0; k < R; ++k) sums[k] = A(0);
    return;
  }
  if (n <= detail::kReduceBlock) return BlockSums<M, A, R>(term, n, sums);
  detail::LockstepPairwiseStacks<detail::Partial<A>, static_cast<int>(R), 64> stacks;
  const auto merge = [](const detail::Partial<A>& a, const detail::Partial<A>& b) {
    return detail::merge<M>(a, b);
  };
  for (int64_t b = 0; b < n; b += detail::kReduceBlock) {
    const int64_t len = std::min(detail::kReduceBlock, n - b);
    detail::Partial<A> p[R];
    BlockPartials<M, A, R>(term, b, len, p);
    for (size_t k = 0; k < R; ++k) {
      if constexpr (detail::is_compensated(M)) {
        // inf, NaN or overflow: the plain sum instead, as ReduceBlock does
        if (!std::isfinite(p[k].sum) || !std::isfinite(p[k].comp)) {
          p[k] = LanesBlock<detail::ReduceMethod::kNaive, A>(
              [&](auto d, int64_t i) { return term(k, d, i); }, b, len);
        }
      }
    }
    stacks.push(p, static_cast<int>(R), merge);
  }
  detail::Partial<A> total[R];
  stacks.collapse(total, static_cast<int>(R), merge);
  for (size_t k = 0; k < R; ++k) sums[k] = detail::finish<M>(total[k]);
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

// max of two lane vectors as MergeMax takes it: lane j of b where it is greater, else of a (so a
// tie of +0 and -0 keeps a's zero, and a NaN in b is never taken). On x86 that is one instruction:
// maxps(b, a) returns b where b > a and a otherwise (equal, or either NaN), and Highway's Max there
// is maxps with its operands in order. The compare-and-select chain it replaces has twice the
// latency, which bounded the max pass of long rows (two chains per row). Elsewhere Highway's Max
// may return either zero of a tie, so the select stays.
template <class D>
HWY_INLINE hn::Vec<D> MaxVectors(hn::Vec<D> a, hn::Vec<D> b) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  return hn::Max(b, a);
#else
  return hn::IfThenElse(hn::Gt(b, a), b, a);
#endif
}

template <class D>
HWY_INLINE void AccumulateMax(D d, hn::Vec<D>& m, hn::Mask<D>& nan, hn::Vec<D> x) {
  m = MaxVectors<D>(m, x);  // a NaN x is not taken: tracked by `nan` instead
  nan = hn::Or(nan, hn::IsNaN(x));
  (void)d;
}

// MergeMax's halving steps inside one vector: lane j against lane j + Lanes/2, down to one lane.
template <class D>
HWY_INLINE float MaxLanesByHalving(D d, hn::Vec<D> m) {
#if HWY_TARGET == HWY_SCALAR  // one lane (and no UpperHalf)
  (void)d;
  return hn::GetLane(m);
#else
  if constexpr (hn::MaxLanes(D()) == 1) {
    (void)d;
    return hn::GetLane(m);
  } else {
    const hn::Half<D> dh;
    return MaxLanesByHalving(dh,
                             MaxVectors<decltype(dh)>(hn::LowerHalf(dh, m), hn::UpperHalf(dh, m)));
  }
#endif
}

// The max of elements [begin, begin + len) (len in [0, kReduceBlock]) of R rows at once (row
// k's elements are term(k, d, i)): for each row, lane j takes elements j, j + 32, ... (element j
// of the last, partial group goes to lane j), then the lanes combine as MergeMax, lane j against
// lane j + w, w = 16 .. 1, across vectors down to one vector per row, m[k] (whose lanes MaxBlocks
// or MaxLanesOfRows combine). Any NaN makes nan[k]. The rows' chains are interleaved.
template <size_t R, class Term>
HWY_INLINE void MaxLaneVectors(const Term& term, int64_t begin, int64_t len,
                               hn::Vec<AccTag<float>> (&m_out)[R], bool (&nan_out)[R]) {
  const AccTag<float> d;
  constexpr size_t kN = hn::MaxLanes(AccTag<float>());
  constexpr size_t kV = kAccVectors<AccTag<float>>;
  const auto neg_inf = hn::Set(d, -std::numeric_limits<float>::infinity());
  hn::Vec<AccTag<float>> m[R][kV];
  hn::Mask<AccTag<float>> nan[R][kV];
  HWY_UNROLL(32)
  for (size_t k = 0; k < R; ++k) {
    HWY_UNROLL(32)
    for (size_t v = 0; v < kV; ++v) {
      m[k][v] = neg_inf;
      nan[k][v] = hn::FirstN(d, 0);
    }
  }
  const int64_t groups = len / detail::kReduceLanes;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t i = begin + g * detail::kReduceLanes;
    HWY_UNROLL(32)
    for (size_t k = 0; k < R; ++k) {
      HWY_UNROLL(32)
      for (size_t v = 0; v < kV; ++v) {
        AccumulateMax(d, m[k][v], nan[k][v], term(k, d, i + static_cast<int64_t>(v * kN)));
      }
    }
  }
  const int64_t tail = len - groups * detail::kReduceLanes;
  const int64_t tail_begin = begin + groups * detail::kReduceLanes;
  HWY_UNROLL(32)
  for (size_t k = 0; k < R; ++k) {
    bool any_nan = false;
    HWY_UNROLL(32)
    for (size_t v = 0; v < kV; ++v) any_nan = any_nan || !hn::AllFalse(d, nan[k][v]);
    if (tail > 0) {
      HWY_ALIGN float values[detail::kReduceLanes];
      HWY_UNROLL(32)
      for (size_t v = 0; v < kV; ++v) hn::Store(m[k][v], d, values + v * kN);
      const hn::CappedTag<float, 1> d1;
      for (int64_t j = 0; j < tail; ++j) {
        auto m1 = hn::Load(d1, values + j);
        auto nan1 = hn::FirstN(d1, 0);
        AccumulateMax(d1, m1, nan1, term(k, d1, tail_begin + j));
        hn::Store(m1, d1, values + j);
        any_nan = any_nan || !hn::AllFalse(d1, nan1);
      }
      HWY_UNROLL(32)
      for (size_t v = 0; v < kV; ++v) m[k][v] = hn::Load(d, values + v * kN);
    }
    nan_out[k] = any_nan;
  }
  HWY_UNROLL(32)
  for (size_t w = kV / 2; w >= 1; w /= 2) {  // lane distances 16 .. kN
    HWY_UNROLL(32)
    for (size_t k = 0; k < R; ++k) {
      HWY_UNROLL(32)
      for (size_t v = 0; v < w; ++v) m[k][v] = MaxVectors<AccTag<float>>(m[k][v], m[k][v + w]);
    }
  }
  HWY_UNROLL(32)
  for (size_t k = 0; k < R; ++k) m_out[k] = m[k][0];
}

// MaxLaneVectors, each row's lanes then combined by halving inside its vector.
template <size_t R, class Term>
HWY_INLINE void MaxBlocks(const Term& term, int64_t begin, int64_t len, MaxPartial (&maxes)[R]) {
  const AccTag<float> d;
  hn::Vec<AccTag<float>> m[R];
  bool nan[R];
  MaxLaneVectors<R>(term, begin, len, m, nan);
  HWY_UNROLL(32)
  for (size_t k = 0; k < R; ++k) maxes[k] = {MaxLanesByHalving(d, m[k]), nan[k]};
}

// MaxLanesByHalving of kN = Lanes(d) rows at once, as MergeLanesOfRows: afterwards lane k of
// m[0] is the value of row k's max.
template <class D>
HWY_INLINE void MaxLanesOfRows(D d, hn::Vec<D> (&m)[hn::MaxLanes(D())]) {
#if HWY_TARGET == HWY_SCALAR
  (void)d, (void)m;
#else
  constexpr size_t kN = hn::MaxLanes(D());
  for (size_t k = 0; k < kN; ++k) m[k] = BitReverseLanes(d, m[k]);
  for (size_t count = kN; count > 1; count /= 2) {
    for (size_t i = 0; i < count / 2; ++i) {
      hn::Vec<D> lo, hi;
      SplitEvenOdd(d, m[2 * i], m[2 * i + 1], lo, hi);
      m[i] = MaxVectors<D>(lo, hi);
    }
  }
#endif
}

// MaxBlocks of one row: term(d, i).
template <class Term>
MaxPartial MaxBlock(const Term& term, int64_t begin, int64_t len) {
  MaxPartial p[1];
  MaxBlocks<1>([&](size_t, auto d, int64_t i) { return term(d, i); }, begin, len, p);
  return p[0];
}

// The value a row's max reports: NaN when any element is.
inline float MaxValue(const MaxPartial& p) {
  return p.nan ? std::numeric_limits<float>::quiet_NaN() : p.value;
}

// Max (or max |x|) of [0, n) in the calling thread; -inf (max |x|: +0) when n is 0.
template <class Term>
HWY_NOINLINE float MaxRow(const Term& term, int64_t n, float empty) {
  if (n <= 0) return empty;
  if (n <= detail::kReduceBlock) return MaxValue(MaxBlock(term, 0, n));  // one block: no tree
  detail::PairwiseStack<MaxPartial> stack;
  for (int64_t b = 0; b < n; b += detail::kReduceBlock) {
    stack.push(MaxBlock(term, b, std::min(detail::kReduceBlock, n - b)), MergeMax);
  }
  return MaxValue(stack.collapse(MergeMax));
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_CORE_REDUCE_INL_H_
