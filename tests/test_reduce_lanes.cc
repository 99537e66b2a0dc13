// The across-rows lane trees of core/reduce-inl.h (MergeLanesOfRows, MaxLanesOfRows) against the
// per-row halving they stand in for (MergeLanesByHalving, MaxLanesByHalving), on every SIMD
// target: lane vectors of values spread over 25 binades, so that any other order of the
// additions gives other bits (checked below for the naive sum), for the naive, Kahan and
// Neumaier merges in fp32 and fp64, and the max with ties between +0 and -0; and the sums of whole
// rows (BlockSumsAcrossLanes) against BlockSums row by row, and of several terms over long rows
// (ReduceRows) and of rows whose terms come a vector at a time (NaiveSumsOfVectors) against
// ReduceRow; bit for bit. Also the max of two lane vectors (MaxVectors, every max pass's step)
// against its definition on special values.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "test_reduce_lanes.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <vector>

#include "core/reduce-inl.h"
#include "hwy/highway.h"

#ifndef MANTISSA_TEST_REDUCE_LANES_ONCE
#define MANTISSA_TEST_REDUCE_LANES_ONCE
namespace mantissa::testing {
// What one target's check found: rows compared, rows whose across-rows result differs from the
// halving's, and rows whose halving differs from a left-to-right sum of the same lanes (the
// values are meant to make every order give its own bits).
struct LaneTreeCounts {
  int64_t rows = 0;
  int64_t mismatches = 0;
  int64_t naive_rows = 0;  // naive sums of at least four lanes, where the two orders differ
  int64_t order_sensitive = 0;
};
}  // namespace mantissa::testing
#endif

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {
namespace {

// A value with a random sign, significand and binary exponent in [-12, 12].
template <class A>
A SpreadValue(std::mt19937& rng) {
  std::uniform_real_distribution<double> significand(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-12, 12);
  const double v = std::ldexp(significand(rng), exponent(rng));
  return static_cast<A>(rng() & 1 ? -v : v);
}

template <class A>
bool SameBits(A a, A b) {
  return std::memcmp(&a, &b, sizeof(A)) == 0;
}

// One batch of kN rows for method M: random lane sums (and compensations, for the compensated
// methods), combined both ways.
template <detail::ReduceMethod M, class A>
void CheckSums(std::mt19937& rng, testing::LaneTreeCounts& counts) {
  const AccTag<A> da;
  constexpr size_t kN = hn::MaxLanes(AccTag<A>());
  A sums[kN][kN], comps[kN][kN];
  for (size_t k = 0; k < kN; ++k) {
    for (size_t j = 0; j < kN; ++j) {
      sums[k][j] = SpreadValue<A>(rng);
      comps[k][j] =
          detail::is_compensated(M) ? sums[k][j] * A(0x1p-30) * SpreadValue<A>(rng) : A(-0.0);
    }
  }
  hn::Vec<AccTag<A>> s[kN], c[kN];
  for (size_t k = 0; k < kN; ++k) {
    s[k] = hn::LoadU(da, sums[k]);
    c[k] = hn::LoadU(da, comps[k]);
  }
  MergeLanesOfRows<M>(da, s, c);
  A across_sum[kN], across_comp[kN];
  hn::StoreU(s[0], da, across_sum);
  hn::StoreU(c[0], da, across_comp);
  for (size_t k = 0; k < kN; ++k) {
    const detail::Partial<A> p =
        MergeLanesByHalving<M>(da, hn::LoadU(da, sums[k]), hn::LoadU(da, comps[k]));
    ++counts.rows;
    if (!SameBits(p.sum, across_sum[k]) || !SameBits(p.comp, across_comp[k])) ++counts.mismatches;
    if constexpr (M == detail::ReduceMethod::kNaive && kN >= 4) {
      ++counts.naive_rows;
      A left_to_right = A(-0.0);
      for (size_t j = 0; j < kN; ++j) left_to_right = left_to_right + sums[k][j];
      if (!SameBits(left_to_right, p.sum)) ++counts.order_sensitive;
    }
  }
}

// One batch of kN rows' maxima: values from a few, with +0 and -0 among them (the tie rule: the
// lower lane's value wins).
void CheckMax(std::mt19937& rng, testing::LaneTreeCounts& counts) {
  const AccTag<float> d;
  constexpr size_t kN = hn::MaxLanes(AccTag<float>());
  static constexpr float kValues[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.0f, -0.0f, 2.5f};
  std::uniform_int_distribution<size_t> pick(0, std::size(kValues) - 1);
  float values[kN][kN];
  hn::Vec<AccTag<float>> m[kN];
  for (size_t k = 0; k < kN; ++k) {
    for (size_t j = 0; j < kN; ++j) values[k][j] = kValues[pick(rng)];
    m[k] = hn::LoadU(d, values[k]);
  }
  MaxLanesOfRows(d, m);
  float across[kN];
  hn::StoreU(m[0], d, across);
  for (size_t k = 0; k < kN; ++k) {
    ++counts.rows;
    if (!SameBits(MaxLanesByHalving(d, hn::LoadU(d, values[k])), across[k])) ++counts.mismatches;
  }
}

// MaxVectors(a, b) lane by lane against its definition, b where b > a else a, on every pair of
// special values (ties of +0 and -0 in both orders, NaNs with payloads on either side, infinities,
// a subnormal), in a full vector and in the one-lane vectors of a row's tail: on x86 it is one
// maxps whose operand order carries these rules.
template <class D>
void CheckMaxVectorsIn(D d, testing::LaneTreeCounts& counts) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  uint32_t payload_bits = 0x7FC01234u;
  float payload;
  std::memcpy(&payload, &payload_bits, sizeof(payload));
  const float values[] = {0.0f, -0.0f, 1.0f, -1.0f, inf, -inf, nan, -nan, payload, 1e-40f, 2.5f};
  constexpr size_t kV = std::size(values);
  constexpr size_t kPairs = kV * kV;
  const size_t lanes = hn::Lanes(d);
  std::vector<float> a(kPairs + lanes), b(kPairs + lanes), got(kPairs + lanes);
  for (size_t i = 0; i < kPairs; ++i) a[i] = values[i / kV], b[i] = values[i % kV];
  for (size_t i = 0; i < kPairs; i += lanes) {
    hn::StoreU(MaxVectors<D>(hn::LoadU(d, a.data() + i), hn::LoadU(d, b.data() + i)), d,
               got.data() + i);
  }
  for (size_t i = 0; i < kPairs; ++i) {
    ++counts.rows;
    if (!SameBits(got[i], b[i] > a[i] ? b[i] : a[i])) ++counts.mismatches;
  }
}

void CheckMaxVectors(testing::LaneTreeCounts& counts) {
  CheckMaxVectorsIn(AccTag<float>(), counts);
  CheckMaxVectorsIn(hn::CappedTag<float, 1>(), counts);
}

// BlockSumsAcrossLanes against BlockSums one row at a time, over rows of `len` values spread over
// the binades, a few of them with an infinity or a NaN (the compensated methods' naive fallback,
// the canonical NaN).
template <detail::ReduceMethod M, class A>
void CheckBlockSums(std::mt19937& rng, int64_t len, testing::LaneTreeCounts& counts) {
  constexpr size_t kN = kRowsAcrossLanes<A>;
  std::vector<A> x(kN * static_cast<size_t>(len));
  for (A& v : x) v = SpreadValue<A>(rng);
  std::uniform_int_distribution<size_t> where(0, x.size() - 1);
  x[where(rng)] = std::numeric_limits<A>::infinity();
  x[where(rng)] = -std::numeric_limits<A>::quiet_NaN();
  const auto term = [&](size_t k, auto d, int64_t i) {
    return hn::LoadU(d, x.data() + k * static_cast<size_t>(len) + static_cast<size_t>(i));
  };
  A across[kN];
  BlockSumsAcrossLanes<M, A>(term, len, across);
  for (size_t k = 0; k < kN; ++k) {
    A one[1];
    BlockSums<M, A, 1>(RowsFrom<decltype(term)>{term, k}, len, one);
    ++counts.rows;
    if (!SameBits(one[0], across[k])) ++counts.mismatches;
  }
}

// ReduceRows of two terms at once against ReduceRow term by term, over rows of `len` values
// spread over the binades (rows longer than a block: each block's partials along each term's
// tree), one term with an infinity in one block and a NaN in another (the compensated methods'
// naive fallback, block by block).
template <detail::ReduceMethod M, class A>
void CheckReduceRows(std::mt19937& rng, int64_t len, testing::LaneTreeCounts& counts) {
  constexpr size_t kR = 2;
  const auto n = static_cast<size_t>(len);
  std::vector<A> x(kR * n);
  for (A& v : x) v = SpreadValue<A>(rng);
  std::uniform_int_distribution<size_t> where(0, n - 1);
  if (len > detail::kReduceBlock) {
    x[n + where(rng) % static_cast<size_t>(detail::kReduceBlock)] =
        std::numeric_limits<A>::infinity();
    x[2 * n - 1] = std::numeric_limits<A>::quiet_NaN();
  }
  const auto term = [&](size_t k, auto d, int64_t i) {
    return hn::LoadU(d, x.data() + k * n + static_cast<size_t>(i));
  };
  A both[kR];
  ReduceRows<M, A, kR>(term, len, both);
  for (size_t k = 0; k < kR; ++k) {
    const A one = ReduceRow<M, A>([&](auto d, int64_t i) { return term(k, d, i); }, len);
    ++counts.rows;
    if (!SameBits(one, both[k])) ++counts.mismatches;
  }
}

// NaiveSumsOfVectors of two rows of kVectors vectors each, the terms handed over a vector at a
// time, against ReduceRow row by row, over values spread over the binades.
template <class A, size_t kVectors>
void CheckSumsOfVectors(std::mt19937& rng, testing::LaneTreeCounts& counts) {
  constexpr size_t kR = 2;
  const AccTag<A> da;
  const size_t n = kVectors * hn::Lanes(da);
  std::vector<A> x(kR * n);
  for (A& v : x) v = SpreadValue<A>(rng);
  A sums[kR];
  NaiveSumsOfVectors<A, kR, kVectors>(
      [&](size_t v, hn::Vec<AccTag<A>>(&t)[kR]) {
        for (size_t k = 0; k < kR; ++k) t[k] = hn::LoadU(da, x.data() + k * n + v * hn::Lanes(da));
      },
      sums);
  for (size_t k = 0; k < kR; ++k) {
    const A one = ReduceRow<detail::ReduceMethod::kNaive, A>(
        [&](auto d, int64_t i) { return hn::LoadU(d, x.data() + k * n + static_cast<size_t>(i)); },
        static_cast<int64_t>(n));
    ++counts.rows;
    if (!SameBits(one, sums[k])) ++counts.mismatches;
  }
}

// Calls check.template operator()<M, A>() for each summation method, in fp32 and in fp64.
template <class Check>
void ForEachMethodAndAccumulator(Check&& check) {
  using detail::ReduceMethod;
  check.template operator()<ReduceMethod::kNaive, float>();
  check.template operator()<ReduceMethod::kKahan, float>();
  check.template operator()<ReduceMethod::kNeumaier, float>();
  check.template operator()<ReduceMethod::kNaive, double>();
  check.template operator()<ReduceMethod::kKahan, double>();
  check.template operator()<ReduceMethod::kNeumaier, double>();
}

}  // namespace

testing::LaneTreeCounts CheckLaneTrees(uint32_t seed) {
  std::mt19937 rng(seed);
  testing::LaneTreeCounts counts;
  for (int batch = 0; batch < 64; ++batch) {
    ForEachMethodAndAccumulator(
        [&]<detail::ReduceMethod M, class A>() { CheckSums<M, A>(rng, counts); });
    CheckMax(rng, counts);
  }
  CheckMaxVectors(counts);
  for (int64_t len : {1, 5, 32, 64, 100}) {
    for (int batch = 0; batch < 8; ++batch) {
      ForEachMethodAndAccumulator(
          [&]<detail::ReduceMethod M, class A>() { CheckBlockSums<M, A>(rng, len, counts); });
    }
  }
  for (int batch = 0; batch < 8; ++batch) {  // rows of 32, 64 and 128 elements
    CheckSumsOfVectors<float, kAccVectors<AccTag<float>>>(rng, counts);
    CheckSumsOfVectors<float, 2 * kAccVectors<AccTag<float>>>(rng, counts);
    CheckSumsOfVectors<double, kAccVectors<AccTag<double>>>(rng, counts);
    CheckSumsOfVectors<double, 2 * kAccVectors<AccTag<double>>>(rng, counts);
    CheckSumsOfVectors<double, 4 * kAccVectors<AccTag<double>>>(rng, counts);
  }
  const int64_t block = detail::kReduceBlock;
  for (int64_t len : {int64_t{1}, int64_t{100}, block, block + 1, 3 * block + 5, 9 * block + 1}) {
    for (int batch = 0; batch < 2; ++batch) {
      ForEachMethodAndAccumulator(
          [&]<detail::ReduceMethod M, class A>() { CheckReduceRows<M, A>(rng, len, counts); });
    }
  }
  return counts;
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>

#include <string>

#include "target_support.h"

namespace mantissa {
HWY_EXPORT(CheckLaneTrees);

namespace testing {
namespace {

TEST(ReduceLanes, AcrossRowsGivesEachRowsHalvingBitsOnEveryTarget) {
  for_each_target([](const std::string& target) {
    const LaneTreeCounts counts = HWY_DYNAMIC_DISPATCH(CheckLaneTrees)(7);
    EXPECT_EQ(counts.mismatches, 0) << target;
    EXPECT_GT(counts.rows, 0) << target;
    // The values make the order of the additions matter: a left-to-right sum of four lanes or
    // more differs from the halving tree in many rows.
    EXPECT_GE(counts.order_sensitive, counts.naive_rows / 4) << target;
  });
}

}  // namespace
}  // namespace testing
}  // namespace mantissa
#endif  // HWY_ONCE
