// Test support for the reductions: test data in fp32/fp16/bf16, a plain scalar model of the
// normative order of core/reduce.h (written from its description, sharing no code with the
// kernels), bit comparison, and the error-bound check against a long double reference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/reduce.h"
#include "mantissa/dtype.h"

namespace mantissa::testing::reduce_support {

inline constexpr ReduceMethod kMethods[] = {ReduceMethod::kNaive, ReduceMethod::kPairwise,
                                            ReduceMethod::kKahan, ReduceMethod::kNeumaier};
inline constexpr ReduceAccumulator kAccumulators[] = {ReduceAccumulator::kFloat32,
                                                      ReduceAccumulator::kFloat64};

inline const char* MethodName(ReduceMethod m) {
  switch (m) {
    case ReduceMethod::kNaive: return "naive";
    case ReduceMethod::kPairwise: return "pairwise";
    case ReduceMethod::kKahan: return "Kahan";
    default: return "Neumaier";
  }
}

inline bool SameBits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

// x (and y, for dot) stored in `dtype`, with their exact fp32 values.
struct Data {
  DType dtype = DType::kFloat32;
  int64_t n = 0;
  std::vector<float> xf, yf;     // fp32 storage, or the widened values of the 16-bit data
  std::vector<uint16_t> xh, yh;  // fp16/bf16 storage
  const void* x() const { return dtype == DType::kFloat32 ? (const void*)xf.data() : xh.data(); }
  const void* y() const { return dtype == DType::kFloat32 ? (const void*)yf.data() : yh.data(); }
};

inline uint16_t Narrow(DType dtype, float f) {
  return dtype == DType::kFloat16 ? float_to_fp16_bits(f) : float_to_bf16_bits(f);
}

// Values of mixed signs and magnitudes (2^-6 .. 2^6), with some signed zeros: every rounding
// path of the sums is exercised.
inline Data MakeData(DType dtype, int64_t n, uint32_t seed) {
  Data d;
  d.dtype = dtype;
  d.n = n;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-6, 6);
  const auto draw = [&]() {
    const uint32_t r = rng();
    if (r % 64 == 0) return (r & 64) ? -0.0f : 0.0f;
    return std::ldexp(mant(rng), expo(rng));
  };
  for (int64_t i = 0; i < n; ++i) {
    float a = draw(), b = draw();
    if (dtype != DType::kFloat32) {
      d.xh.push_back(Narrow(dtype, a));
      d.yh.push_back(Narrow(dtype, b));
      a = load_as_float(dtype, d.xh.data(), d.xh.size() - 1);
      b = load_as_float(dtype, d.yh.data(), d.yh.size() - 1);
    }
    d.xf.push_back(a);
    d.yf.push_back(b);
  }
  return d;
}

// ---------------------------------------------------------------------------------------------
// The scalar model.

template <class A>
struct Pair {
  A s, c;
};

template <class A>
Pair<A> PlainMerge(Pair<A> a, Pair<A> b) {
  return {a.s + b.s, A(-0.0)};
}

template <class A>
Pair<A> TwoSumMerge(Pair<A> a, Pair<A> b) {
  const A s = a.s + b.s;
  if (!std::isfinite(s)) return {s, A(-0.0)};
  const A bv = s - a.s;
  const A av = s - bv;
  return {s, (a.c + b.c) + ((a.s - av) + (b.s - bv))};
}

// The pairwise tree over k >= 1 items: left subtree over the largest power of two below k.
template <class T, class F>
T Tree(const T* items, int64_t k, F merge) {
  if (k == 1) return items[0];
  int64_t p = 1;
  while (p * 2 < k) p *= 2;
  return merge(Tree(items, p, merge), Tree(items + p, k - p, merge));
}

template <class A>
Pair<A> LaneTree(std::array<Pair<A>, 32> lane, bool compensated) {
  for (int w = 16; w >= 1; w /= 2) {
    for (int j = 0; j < w; ++j) {
      lane[j] = compensated ? TwoSumMerge(lane[j], lane[j + w]) : PlainMerge(lane[j], lane[j + w]);
    }
  }
  return lane[0];
}

template <class A>
Pair<A> ModelBlock(const A* t, int64_t len, ReduceMethod m) {
  std::array<Pair<A>, 32> lane;
  lane.fill({A(-0.0), A(-0.0)});
  if (m == ReduceMethod::kPairwise) {
    const int64_t chunks = (len + 255) / 256;
    std::vector<std::array<A, 32>> rows(static_cast<size_t>(chunks));
    for (int64_t k = 0; k < chunks; ++k) {
      for (int j = 0; j < 32; ++j) {
        A s = A(-0.0);
        for (int64_t g = 0; g < 8; ++g) {
          const int64_t i = k * 256 + g * 32 + j;
          if (i < len) s = s + t[i];
        }
        rows[k][j] = s;
      }
    }
    const auto add_rows = [](const std::array<A, 32>& a, const std::array<A, 32>& b) {
      std::array<A, 32> r;
      for (int j = 0; j < 32; ++j) r[j] = a[j] + b[j];
      return r;
    };
    const std::array<A, 32> sums = Tree(rows.data(), chunks, add_rows);
    for (int j = 0; j < 32; ++j) lane[j].s = sums[j];
    return LaneTree(lane, false);
  }
  for (int64_t i = 0; i < len; ++i) {
    A& s = lane[i % 32].s;
    A& c = lane[i % 32].c;
    const A x = t[i];
    if (m == ReduceMethod::kKahan) {
      const A y = x + c;
      const A u = s + y;
      c = y - (u - s);
      s = u;
    } else if (m == ReduceMethod::kNeumaier) {
      const A u = s + x;
      c = c + (std::fabs(s) >= std::fabs(x) ? (s - u) + x : (x - u) + s);
      s = u;
    } else {
      s = s + x;
    }
  }
  const bool compensated = m == ReduceMethod::kKahan || m == ReduceMethod::kNeumaier;
  Pair<A> p = LaneTree(lane, compensated);
  if (compensated && (!std::isfinite(p.s) || !std::isfinite(p.c))) {
    return ModelBlock(t, len, ReduceMethod::kNaive);
  }
  return p;
}

template <class A>
A ModelSum(const std::vector<A>& t, ReduceMethod m) {
  const int64_t n = static_cast<int64_t>(t.size());
  if (n == 0) return A(0);
  std::vector<Pair<A>> blocks;
  for (int64_t b = 0; b < n; b += 4096) {
    blocks.push_back(ModelBlock(t.data() + b, std::min<int64_t>(4096, n - b), m));
  }
  const bool compensated = m == ReduceMethod::kKahan || m == ReduceMethod::kNeumaier;
  const Pair<A> p = Tree(blocks.data(), static_cast<int64_t>(blocks.size()),
                         compensated ? TwoSumMerge<A> : PlainMerge<A>);
  A v = p.s;
  if (compensated && std::isfinite(p.s) && p.c != A(0)) v = p.s + p.c;
  return std::isnan(v) ? std::numeric_limits<A>::quiet_NaN() : v;
}

struct MaxPair {
  float v;
  bool nan;
};

inline double ModelMax(const std::vector<float>& x, bool abs) {
  const int64_t n = static_cast<int64_t>(x.size());
  if (n == 0) return abs ? 0.0 : -std::numeric_limits<double>::infinity();
  const auto merge = [](MaxPair a, MaxPair b) {
    return MaxPair{b.v > a.v ? b.v : a.v, a.nan || b.nan};
  };
  std::vector<MaxPair> blocks;
  for (int64_t b = 0; b < n; b += 4096) {
    std::array<MaxPair, 32> lane;
    lane.fill({-std::numeric_limits<float>::infinity(), false});
    for (int64_t i = b; i < std::min<int64_t>(n, b + 4096); ++i) {
      const float v = abs ? std::fabs(x[i]) : x[i];
      lane[(i - b) % 32] = merge(lane[(i - b) % 32], {v, std::isnan(v)});
    }
    for (int w = 16; w >= 1; w /= 2) {
      for (int j = 0; j < w; ++j) lane[j] = merge(lane[j], lane[j + w]);
    }
    blocks.push_back(lane[0]);
  }
  const MaxPair p = Tree(blocks.data(), static_cast<int64_t>(blocks.size()), merge);
  return p.nan ? std::numeric_limits<double>::quiet_NaN() : p.v;
}

template <class A>
double ModelTyped(detail::ReduceOp op, const Data& d, ReduceMethod m) {
  std::vector<A> t(static_cast<size_t>(d.n));
  for (int64_t i = 0; i < d.n; ++i) {
    const A x = d.xf[i], y = d.yf[i];
    t[i] = op == detail::ReduceOp::kSum ? x : op == detail::ReduceOp::kDot ? x * y : x * x;
  }
  const A s = ModelSum(t, m);
  return op == detail::ReduceOp::kL2Norm ? std::sqrt(s) : s;
}

inline double Model(detail::ReduceOp op, const Data& d, ReduceOptions o) {
  if (op == detail::ReduceOp::kMax) return ModelMax(d.xf, false);
  if (op == detail::ReduceOp::kMaxAbs) return ModelMax(d.xf, true);
  return o.accumulator == ReduceAccumulator::kFloat64 ? ModelTyped<double>(op, d, o.method)
                                                      : ModelTyped<float>(op, d, o.method);
}

// ---------------------------------------------------------------------------------------------
// Error bounds.
//
// With u the unit roundoff of the accumulator (2^-24 or 2^-53), m = 128 elements per lane and
// block, L = ceil(log2(blocks)), every term passes through at most k additions before the
// result: naive k = (m - 1) + 5 + L (lane, 5 lane levels, block tree), pairwise
// k = (8 - 1) + 4 + 5 + L (chunk, 16-chunk tree, lanes, blocks). Higham's bound for recursive
// summation then gives |err| <= k u / (1 - k u) * sum |t|. Kahan per lane gives
// (2u + O(m u^2)) sum |t| (Higham, Thm 4.8); Neumaier makes s + c exact up to the rounding of the
// compensation sum, hence u |S| + O(k^2 u^2) sum |t|; the TwoSum merges are exact and the lost
// parts of every lane are summed with the compensations. Asserted (t the terms):
//   naive, pairwise: |err| <= gamma(k) sum|t|
//   Kahan:           |err| <= u |S| + 2u sum|t| + 4 (m + 5 + L)^2 u^2 sum|t|
//   Neumaier:        |err| <= u |S| +             4 (m + 5 + L)^2 u^2 sum|t|
// For dot with an fp32 accumulator each product adds u |x y| (k + 1 for naive and pairwise).

struct Bound {
  double abs_sum_factor;  // times sum |t|
  double result_factor;   // times |S|
};

inline Bound DerivedBound(ReduceMethod m, bool fp64, int64_t n, bool rounded_products) {
  const double u = fp64 ? std::ldexp(1.0, -53) : std::ldexp(1.0, -24);
  const int64_t blocks = (n + 4095) / 4096;
  double levels = 0;
  while ((int64_t{1} << static_cast<int>(levels)) < blocks) levels += 1;
  const double extra = rounded_products ? 1 : 0;
  const auto gamma = [&](double k) { return k * u / (1 - k * u); };
  const double second = 4 * (128 + 5 + levels) * (128 + 5 + levels) * u * u;
  switch (m) {
    case ReduceMethod::kNaive: return {gamma(127 + 5 + levels + extra), 0};
    case ReduceMethod::kPairwise: return {gamma(7 + 4 + 5 + levels + extra), 0};
    case ReduceMethod::kKahan: return {(2 + extra) * u + second, u};
    default: return {extra * u + second, u};
  }
}

// Neumaier in long double (64-bit significand): accurate to about 2^-64 |S| + n^2 2^-128 sum|t|,
// far below every bound above. Products of fp32 values are exact in long double.
inline long double Reference(const std::vector<long double>& t) {
  long double s = 0, c = 0;
  for (const long double x : t) {
    const long double u = s + x;
    c += std::fabs(s) >= std::fabs(x) ? (s - u) + x : (x - u) + s;
    s = u;
  }
  return s + c;
}

struct Kind {
  const char* name;
  bool dot;
  std::vector<float> x, y;
};

inline std::vector<Kind> IllConditionedKinds(int64_t n) {
  std::mt19937 rng(12345);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<Kind> kinds;
  Kind k1{"uniform [0, 1)", false, {}, {}};
  Kind k2{"1e4 + N(0, 1)", false, {}, {}};
  Kind k3{"alternating +-(1 + U/16)", false, {}, {}};
  Kind k4{"1 then 2^-25 increments", false, {}, {}};
  Kind k5{"dot N(0,1) . N(0,1)", true, {}, {}};
  for (int64_t i = 0; i < n; ++i) {
    k1.x.push_back(uniform(rng));
    k2.x.push_back(1e4f + normal(rng));
    k3.x.push_back((i % 2 == 0 ? 1.0f : -1.0f) * (1.0f + uniform(rng) / 16.0f));
    // Large values with small increments: every block starts with 1, then values below half an
    // ulp of 1 in fp32: a plain fp32 sum loses them in the lanes that hold the 1.
    k4.x.push_back(i % 4096 < 32 ? 1.0f : std::ldexp(1.0f + uniform(rng), -25));
    k5.x.push_back(normal(rng));
    k5.y.push_back(normal(rng));
  }
  kinds.push_back(std::move(k1));
  kinds.push_back(std::move(k2));
  kinds.push_back(std::move(k3));
  kinds.push_back(std::move(k4));
  kinds.push_back(std::move(k5));
  return kinds;
}

// Measures every method and accumulator on the ill-conditioned kinds, asserts the derived
// bounds, and optionally prints a markdown table (relative error |err| / |S| and the asserted
// bound in the same unit).
inline void CheckErrorBounds(int64_t n, bool print_table) {
  if (print_table) {
    std::printf(
        "\nn = %lld\n\n| data | method | fp32 acc: rel. error | fp32 bound | "
        "fp64 acc: rel. error | fp64 bound |\n|---|---|---|---|---|---|\n",
        static_cast<long long>(n));
  }
  for (const Kind& kind : IllConditionedKinds(n)) {
    std::vector<long double> t(static_cast<size_t>(n));
    long double abs_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      t[i] = kind.dot ? static_cast<long double>(kind.x[i]) * kind.y[i] : kind.x[i];
      abs_sum += std::fabs(t[i]);
    }
    const long double exact = Reference(t);
    for (const ReduceMethod m : kMethods) {
      std::string row = std::string("| ") + kind.name + " | " + MethodName(m) + " |";
      for (const ReduceAccumulator acc : kAccumulators) {
        detail::ReduceArgs a;
        a.op = kind.dot ? detail::ReduceOp::kDot : detail::ReduceOp::kSum;
        a.x = kind.x.data();
        a.y = kind.dot ? kind.y.data() : nullptr;
        a.n = n;
        a.options = {m, acc};
        const double got = detail::reduce(a);
        const long double err = std::fabs(static_cast<long double>(got) - exact);
        const bool fp64 = acc == ReduceAccumulator::kFloat64;
        const Bound b = DerivedBound(m, fp64, n, kind.dot && !fp64);
        // The reference's own error, far below the bounds, as slack.
        const long double bound = b.abs_sum_factor * abs_sum + b.result_factor * std::fabs(exact) +
                                  std::ldexp(abs_sum, -60);
        EXPECT_LE(err, bound) << kind.name << " " << MethodName(m) << (fp64 ? " fp64" : " fp32")
                              << " n=" << n << " got " << got << " exact "
                              << static_cast<double>(exact);
        char cell[96];
        std::snprintf(cell, sizeof cell, " %.2e | %.2e |",
                      static_cast<double>(err / std::fabs(exact)),
                      static_cast<double>(bound / std::fabs(exact)));
        row += cell;
      }
      if (print_table) std::printf("%s\n", row.c_str());
    }
  }
}

}  // namespace mantissa::testing::reduce_support
