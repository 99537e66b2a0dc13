// LayerNorm and LayerNormGrad: bits on every target and thread count (against the kit's
// golden32), accuracy against long double and finite differences, validation through the C++
// API, aclnn (strided staging, null optional outputs, list handles, implMode) and op-by-name.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_layer_norm.h"
#include "aclnnop/aclnn_layer_norm_backward.h"
#include "mantissa/ops/layer_norm.h"
#include "mantissa/ops/layer_norm_grad.h"
#include "op_support.h"
#include "ops/layer_norm/layer_norm_desc.h"
#include "ops/layer_norm_grad/layer_norm_grad_desc.h"

namespace mantissa::testing {

namespace {

using mantissa::Dims;
using mantissa::DType;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::LayerNormGradOp;
using mantissa::detail::LayerNormOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::run_two_phases;
using mt::sentinel;
using mt::untouched;
using mt::view;

std::vector<int64_t> stats_shape(std::vector<int64_t> shape, std::size_t dims) {
  for (std::size_t i = shape.size() - dims; i < shape.size(); ++i) shape[i] = 1;
  return shape;
}

struct Problem {
  DType x, param, stats;
  std::vector<int64_t> shape, ns;
  double mean = 0.0, spread = 1.0;
  bool weight = true, bias = true;
};

std::vector<Problem> problems() {
  std::vector<Problem> p;
  for (auto [x, g] : std::vector<std::pair<DType, DType>>{{DType::kFloat32, DType::kFloat32},
                                                          {DType::kFloat16, DType::kFloat16},
                                                          {DType::kFloat16, DType::kFloat32},
                                                          {DType::kBFloat16, DType::kBFloat16},
                                                          {DType::kBFloat16, DType::kFloat32}}) {
    // Rows of 4100 are read as they are; shorter ones are widened to fp64 by their first pass,
    // 2050 one row at a time with weight and bias read as they are (fp32 rows: a group at a time,
    // as they are), 1500 one row at a time with fp64 copies of weight and bias, the others a
    // group of rows at a time (five rows: one group and one row).
    for (int64_t n : {1, 7, 16, 32, 33, 64, 128, 129, 1500, 2050, 4100}) {
      p.push_back({x, g, DType::kFloat32, {5, n}, {n}});
    }
    p.push_back({x, g, x, {3, 4, 24}, {4, 24}, 0.5, 2.0});  // two normalised dims, x's stats
    // Several column-sum blocks; batches of groups whose rstds are computed together, then groups.
    p.push_back({x, g, DType::kFloat32, {300, 130}, {130}});
    p.push_back({x, g, DType::kFloat32, {6, 40}, {40}, 0.0, 1.0, false, false});
    p.push_back({x, g, DType::kFloat32, {6, 40}, {40}, 0.0, 1.0, true, false});
    // LayerNormGrad's rows of one and two lane groups (read once, in pairs) and of four: an odd
    // count, many column blocks, no weight.
    p.push_back({x, g, DType::kFloat32, {301, 64}, {64}});
    p.push_back({x, g, DType::kFloat32, {6, 32}, {32}, 0.0, 1.0, false, false});
    p.push_back({x, g, DType::kFloat32, {7, 128}, {128}, 0.0, 1.0, false, true});
  }
  // 11 column-sum blocks of 7 rows (an uneven pairwise tree), columns in 5 tiles, the last of 4.
  for (DType x : {DType::kFloat32, DType::kBFloat16}) {
    p.push_back({x, DType::kFloat32, DType::kFloat32, {75, 4100}, {4100}});
  }
  p.push_back({DType::kFloat32, DType::kFloat32, DType::kFloat32, {8, 1000}, {1000}, 1e4, 1.0});
  p.push_back({DType::kFloat32, DType::kFloat32, DType::kFloat32, {4, 77}, {77}, 3.0, 0.0});
  return p;
}

std::string describe(const Problem& p) {
  std::string s = std::string(mantissa::dtype_name(p.x)) + "/" + mantissa::dtype_name(p.param) +
                  "/" + mantissa::dtype_name(p.stats);
  for (int64_t d : p.shape) s += " " + std::to_string(d);
  return s + (p.weight ? " weight" : "") + (p.bias ? " bias" : "");
}

// The tensors of one problem: inputs, the forward's outputs and the backward's.
struct Tensors {
  HostTensor x, w, b, out, mean, rstd, dy, dx, dw, db;
  Tensors(const Problem& p, bool outputs_as_sentinels)
      : x(filled(p.x, p.shape, p.mean, p.spread, 1)),
        w(filled(p.param, p.ns, 1.0, 0.25, 2)),
        b(filled(p.param, p.ns, 0.0, 0.5, 3)),
        out(sentinel(p.x, p.shape)),
        mean(sentinel(p.stats, stats_shape(p.shape, p.ns.size()))),
        rstd(sentinel(p.stats, stats_shape(p.shape, p.ns.size()))),
        dy(filled(p.x, p.shape, 0.0, 1.0, 4)),
        dx(sentinel(p.x, p.shape)),
        dw(sentinel(p.weight ? p.param : p.x, p.ns)),
        db(sentinel(p.weight ? p.param : p.x, p.ns)) {
    (void)outputs_as_sentinels;
  }
  mantissa::LayerNormTensors forward(const Problem& p) {
    mantissa::LayerNormTensors t;
    t.input = view(x), t.out = view(out);
    if (p.weight) t.weight = view(w);
    if (p.bias) t.bias = view(b);
    t.mean = view(mean);
    t.rstd = view(rstd);
    return t;
  }
  // The backward pass on the given forward statistics.
  mantissa::LayerNormGradTensors backward(const Problem& p, HostTensor& m, HostTensor& r) {
    mantissa::LayerNormGradTensors t;
    t.dy = view(dy), t.input = view(x), t.mean = view(m), t.rstd = view(r);
    if (p.weight) t.weight = view(w);
    if (p.bias) t.bias = view(b);
    t.dx = view(dx);
    t.dweight = view(dw);
    t.dbias = view(db);
    return t;
  }
};

TEST(LayerNorm, BitExactOnEveryTargetAndThreadCount) {
  for (const Problem& pr : problems()) {
    SCOPED_TRACE(describe(pr));
    const mantissa::LayerNormParams p{.normalized_shape = Dims(pr.ns), .eps = 1e-5};
    const mantissa::LayerNormGradParams gp{.normalized_shape = Dims(pr.ns)};
    // The reference's statistics are FLOAT (golden32's); statistics in x's dtype are those
    // values rounded once more (fp64 -> fp32 -> x's dtype, as documented).
    Problem fp32_stats = pr;
    fp32_stats.stats = DType::kFloat32;
    Tensors ref(fp32_stats, true);
    mt::apply_golden32<LayerNormOp>(ref.forward(fp32_stats), p);
    HostTensor mean_ref = sentinel(pr.stats, ref.mean.shape), rstd_ref = mean_ref;
    for (int64_t i = 0; i < ref.mean.numel(); ++i) {
      mantissa::store_from_float(pr.stats, mean_ref.data(), static_cast<std::size_t>(i),
                                 static_cast<float>(ref.mean.value(i)));
      mantissa::store_from_float(pr.stats, rstd_ref.data(), static_cast<std::size_t>(i),
                                 static_cast<float>(ref.rstd.value(i)));
    }
    mt::apply_golden32<LayerNormGradOp>(ref.backward(pr, ref.mean, ref.rstd), gp);
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      Tensors got(pr, true);
      ASSERT_TRUE(mantissa::layer_norm(got.forward(pr), p).ok());
      expect_same_bits(got.out, ref.out, "out");
      expect_same_bits(got.mean, mean_ref, "mean");
      expect_same_bits(got.rstd, rstd_ref, "rstd");
      const mantissa::LayerNormGradTensors t = got.backward(pr, ref.mean, ref.rstd);
      ASSERT_TRUE(mantissa::layer_norm_grad(t, gp).ok());
      expect_same_bits(got.dx, ref.dx, "dx");
      expect_same_bits(got.dw, ref.dw, "dweight");
      expect_same_bits(got.db, ref.db, "dbias");
      // A workspace lent by the caller gives the same bits.
      std::vector<double> ws(mantissa::layer_norm_grad_workspace_size(t, gp) / sizeof(double) + 1);
      HostTensor dw2 = sentinel(got.dw.dtype, pr.ns);
      mantissa::LayerNormGradTensors t2 = t;
      t2.dweight = view(dw2);
      ASSERT_TRUE(
          mantissa::layer_norm_grad(t2, gp, {.data = ws.data(), .size = ws.size() * sizeof(double)})
              .ok());
      expect_same_bits(dw2, ref.dw, "dweight (lent workspace)");
    });
  }
}

// x and parameter dtypes of the special-value tests of rows of 64 and 300: fp32, 16-bit x with
// fp32 parameters, all bf16.
const std::vector<std::pair<DType, DType>> kSpecialValueDtypes{
    {DType::kFloat32, DType::kFloat32},
    {DType::kFloat16, DType::kFloat32},
    {DType::kBFloat16, DType::kBFloat16}};

// Whether element i of t is the canonical quiet NaN of its dtype: 0x7FC00000 (fp32), 0x7E00
// (fp16), 0x7FC0 (bf16).
bool is_canonical_nan(const HostTensor& t, int64_t i) {
  const std::size_t b = mantissa::dtype_size(t.dtype);
  uint32_t bits = 0;
  std::memcpy(&bits, &t.bytes[static_cast<std::size_t>(i) * b], b);
  return bits == (t.dtype == DType::kFloat32   ? 0x7FC00000u
                  : t.dtype == DType::kFloat16 ? 0x7E00u
                                               : 0x7FC0u);
}

// Rows holding NaN (a payload), +inf, -inf or both infinities, in every part of a long call:
// batches of rows whose statistics are computed together, single groups, the last rows. Their
// outputs and rstd are the canonical quiet NaN in every dtype (statistics in fp32 and in x's
// dtype), so is the mean of a row with a NaN or both infinities (+-inf with one), the other rows
// are untouched by them, and the bits are golden32's everywhere.
TEST(LayerNorm, NonFiniteRowsGiveCanonicalNaNOnEveryTarget) {
  const int64_t rows = 41, n = 64;
  // (row, column, value): NaN rows 3 (payload), 17, 36 and 40; +inf 18; -inf 20; both 33.
  const float qnan_payload = std::bit_cast<float>(0x7FC12345u);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::tuple<int64_t, int64_t, float>> specials{
      {3, 5, qnan_payload},    {17, 0, std::nanf("")}, {18, 63, inf},
      {20, 31, -inf},          {33, 1, inf},           {33, 62, -inf},
      {36, 40, std::nanf("")}, {40, 7, inf},           {40, 8, std::nanf("")}};
  const std::vector<int64_t> bad_rows{3, 17, 18, 20, 33, 36, 40};
  auto put_specials = [&](HostTensor& x) {
    for (auto [r, i, v] : specials) {
      mantissa::store_from_float(x.dtype, x.data(), static_cast<std::size_t>(r * n + i), v);
    }
  };
  for (auto [xd, gd] : std::vector<std::pair<DType, DType>>{{DType::kFloat32, DType::kFloat32},
                                                            {DType::kFloat16, DType::kFloat32},
                                                            {DType::kBFloat16, DType::kBFloat16},
                                                            {DType::kBFloat16, DType::kFloat32}}) {
    for (DType sd : {DType::kFloat32, xd}) {
      const Problem pr{xd, gd, sd, {rows, n}, {n}};
      SCOPED_TRACE(describe(pr));
      const mantissa::LayerNormParams p{.normalized_shape = Dims(pr.ns), .eps = 1e-5};
      Problem fp32_stats = pr;
      fp32_stats.stats = DType::kFloat32;
      Tensors ref(fp32_stats, true);
      put_specials(ref.x);
      mt::apply_golden32<LayerNormOp>(ref.forward(fp32_stats), p);
      mt::for_each_target_and_thread_count([&](const std::string&, int) {
        Tensors got(pr, true);
        put_specials(got.x);
        ASSERT_TRUE(mantissa::layer_norm(got.forward(pr), p).ok());
        expect_same_bits(got.out, ref.out, "out");
        for (int64_t r = 0; r < rows; ++r) {
          if (std::find(bad_rows.begin(), bad_rows.end(), r) != bad_rows.end()) {
            for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(is_canonical_nan(got.out, r * n + i)) << r;
            // One infinity: mean +-inf, then inf - inf in the centred sum.
            if (r == 18 || r == 20) {
              EXPECT_EQ(got.mean.value(r), r == 18 ? inf : -inf) << r;
            } else {
              EXPECT_TRUE(is_canonical_nan(got.mean, r)) << r;
            }
            EXPECT_TRUE(is_canonical_nan(got.rstd, r)) << r;
          } else {
            EXPECT_EQ(got.mean.value(r), mantissa::round_to(sd, ref.mean.value(r))) << r;
            EXPECT_EQ(got.rstd.value(r), mantissa::round_to(sd, ref.rstd.value(r))) << r;
            EXPECT_TRUE(std::isfinite(got.rstd.value(r))) << r;
          }
        }
      });
    }
  }
}

// Finite rows whose results can still be NaN: a NaN (with a payload) or infinite weight or bias,
// and constant rows with eps = 0 (rstd = inf, 0 * inf). Rows with finite statistics and
// parameters skip the NaN step; these must not. Rows of 64 and 300 (groups, single rows, tails),
// every dtype combination, target and thread count, against golden32.
TEST(LayerNorm, NonFiniteParametersAndZeroEpsGiveCanonicalNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  const float qnan_payload = std::bit_cast<float>(0x7FC12345u);
  for (int64_t n : {64, 300}) {
    for (auto [xd, gd] : kSpecialValueDtypes) {
      for (double eps : {1e-5, 0.0}) {
        for (bool bad_params : {false, true}) {
          if (eps != 0.0 && !bad_params) continue;
          const int64_t rows = 19;
          const Problem pr{xd, gd, DType::kFloat32, {rows, n}, {n}};
          SCOPED_TRACE(describe(pr) + " eps " + std::to_string(eps) +
                       (bad_params ? " non-finite weight and bias" : ""));
          const mantissa::LayerNormParams p{.normalized_shape = Dims(pr.ns), .eps = eps};
          auto prepare = [&](Tensors& t) {
            if (bad_params) {
              mantissa::store_from_float(gd, t.w.data(), 7, std::nanf(""));
              mantissa::store_from_float(gd, t.w.data(), 9, inf);
              mantissa::store_from_float(gd, t.b.data(), 11, -inf);
              mantissa::store_from_float(gd, t.b.data(), 13, qnan_payload);
            }
            for (int64_t r : {2, 5, 6, 18}) {  // constant rows
              for (int64_t i = 0; i < n; ++i) {
                mantissa::store_from_float(xd, t.x.data(), static_cast<std::size_t>(r * n + i),
                                           1.5f);
              }
            }
          };
          Tensors ref(pr, true);
          prepare(ref);
          mt::apply_golden32<LayerNormOp>(ref.forward(pr), p);
          mt::for_each_target_and_thread_count([&](const std::string&, int) {
            Tensors got(pr, true);
            prepare(got);
            ASSERT_TRUE(mantissa::layer_norm(got.forward(pr), p).ok());
            expect_same_bits(got.out, ref.out, "out");
            // A NaN where a constant row meets rstd = inf, or a NaN parameter; the canonical NaN.
            if (eps == 0.0) {
              EXPECT_TRUE(is_canonical_nan(got.out, 5 * n + 20));
            }
            if (bad_params) {
              EXPECT_TRUE(is_canonical_nan(got.out, 1 * n + 7));
              EXPECT_TRUE(is_canonical_nan(got.out, 1 * n + 13));
            }
          });
        }
      }
    }
  }
}

// The backward pass on rows with non-finite values: a NaN (with a payload) or infinite dy or x,
// infinite, zero and NaN statistics, dy = 0 beside an infinite x. Rows whose
// sums and rstd are finite skip the NaN step; every other row must still store canonical NaNs.
// dx alone (row by row) and with the column sums, every target and thread count, against golden32.
TEST(LayerNormGrad, NonFiniteRowsGiveTheGoldenBits) {
  const float inf = std::numeric_limits<float>::infinity();
  const float qnan_payload = std::bit_cast<float>(0x7FC12345u);
  for (int64_t n : {64, 300}) {
    for (auto [xd, gd] : kSpecialValueDtypes) {
      const int64_t rows = 23;
      const Problem pr{xd, gd, DType::kFloat32, {rows, n}, {n}};
      SCOPED_TRACE(describe(pr));
      const mantissa::LayerNormParams p{.normalized_shape = Dims(pr.ns), .eps = 1e-5};
      auto prepare = [&](Tensors& t) {
        auto put = [](HostTensor& h, int64_t i, float v) {
          mantissa::store_from_float(h.dtype, h.data(), static_cast<std::size_t>(i), v);
        };
        put(t.dy, 1 * n + 3, qnan_payload);
        put(t.dy, 2 * n + 40, inf);
        put(t.x, 4 * n + 5, -inf);
        put(t.x, 6 * n + 7, qnan_payload);
        put(t.x, 8 * n + 9, inf);
        put(t.dy, 8 * n + 9, 0.0f);  // 0 * inf in dy * xhat
        put(t.mean, 10, inf);
        put(t.rstd, 12, inf);
        put(t.rstd, 14, 0.0f);
        put(t.rstd, 16, std::nanf(""));
      };
      Tensors ref(pr, true);
      mt::apply_golden32<LayerNormOp>(ref.forward(pr), p);
      prepare(ref);
      for (bool column_sums : {true, false}) {
        SCOPED_TRACE(column_sums ? "with dweight and dbias" : "dx only");
        mantissa::LayerNormGradParams gp{.normalized_shape = Dims(pr.ns)};
        if (!column_sums) gp.output_mask = {true, false, false};
        Tensors want = ref;
        mantissa::LayerNormGradTensors wt = want.backward(pr, want.mean, want.rstd);
        mt::apply_golden32<LayerNormGradOp>(wt, gp);
        mt::for_each_target_and_thread_count([&](const std::string&, int) {
          Tensors got = ref;
          mantissa::LayerNormGradTensors t = got.backward(pr, got.mean, got.rstd);
          got.dx = sentinel(xd, pr.shape);
          t.dx = view(got.dx);
          ASSERT_TRUE(mantissa::layer_norm_grad(t, gp).ok());
          expect_same_bits(got.dx, want.dx, "dx");
          EXPECT_TRUE(is_canonical_nan(got.dx, 1 * n));  // a NaN gradient: the sums are NaN
          EXPECT_TRUE(std::isfinite(got.dx.value(0)));
        });
      }
    }
  }
}

// Rows whose two sums depend on their order at every precision: each row's dy holds +big and
// -big at two elements of equal x among values near 1, so that both g and g * xhat cancel
// exactly, and the small terms that remain are those not absorbed before the cancellation, which
// depends on the order. dx, dweight and dbias have golden32's bits (core/reduce.h's order) on
// every target and thread count, for the rows read once (one and two lane groups) and rows of
// other lengths.
TEST(LayerNormGrad, RowSumsFollowTheDocumentedOrder) {
  for (int64_t n : {32, 64, 96, 128, 200}) {
    for (DType xd : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      const int64_t rows = 9;
      // No weight: g = dy, so that the large terms cancel in g too.
      const Problem pr{xd, xd, DType::kFloat32, {rows, n}, {n}, 0.0, 1.0, false, false};
      SCOPED_TRACE(describe(pr));
      const mantissa::LayerNormParams p{.normalized_shape = Dims(pr.ns), .eps = 1e-5};
      Tensors ref(pr, true);
      const auto at = [&](int64_t r, int64_t i) { return static_cast<std::size_t>(r * n + i); };
      // Pairs at distances that put them in the same or different lanes, vectors and lane groups
      // from row to row.
      const int64_t distance[rows] = {n / 2 + 3, 32, 64, 8, 16, 1, 40, 96, 24};
      const auto first = [&](int64_t r) { return (5 * r + 1) % n; };
      const auto second = [&](int64_t r) {
        const int64_t b = (first(r) + distance[r]) % n;
        return b != first(r) ? b : (b + 1) % n;
      };
      for (int64_t r = 0; r < rows; ++r) {
        mantissa::store_from_float(xd, ref.x.data(), at(r, second(r)),
                                   static_cast<float>(ref.x.value(at(r, first(r)))));
      }
      mt::apply_golden32<LayerNormOp>(ref.forward(pr), p);
      // 2^60, or fp16's largest power of two: far above the other terms' precision.
      const float big = std::ldexp(1.0f, xd == DType::kFloat16 ? 15 : 60);
      for (int64_t r = 0; r < rows; ++r) {
        mantissa::store_from_float(xd, ref.dy.data(), at(r, first(r)), big);
        mantissa::store_from_float(xd, ref.dy.data(), at(r, second(r)), -big);
      }
      for (bool column_sums : {true, false}) {
        SCOPED_TRACE(column_sums ? "with dweight and dbias" : "dx only");
        mantissa::LayerNormGradParams gp{.normalized_shape = Dims(pr.ns)};
        if (!column_sums) gp.output_mask = {true, false, false};
        Tensors want = ref;
        mt::apply_golden32<LayerNormGradOp>(want.backward(pr, want.mean, want.rstd), gp);
        mt::for_each_target_and_thread_count([&](const std::string&, int) {
          Tensors got = ref;
          got.dx = sentinel(xd, pr.shape);
          ASSERT_TRUE(mantissa::layer_norm_grad(got.backward(pr, got.mean, got.rstd), gp).ok());
          expect_same_bits(got.dx, want.dx, "dx");
          if (column_sums) {
            expect_same_bits(got.dw, want.dw, "dweight");
            expect_same_bits(got.db, want.db, "dbias");
          }
        });
      }
    }
  }
}

// Rows of 1e4 + N(0, 1): the centred variance keeps every output within 2 ulp of the long double
// result (E[x^2] - E[x]^2 in fp32 would lose all of it); constant rows give out = bias exactly.
TEST(LayerNorm, LargeMeanAndConstantRowsAreAccurate) {
  const int64_t n = 4096;
  HostTensor x = filled(DType::kFloat32, {4, n}, 1e4, 1.0, 7);
  HostTensor out = sentinel(DType::kFloat32, {4, n}), rstd = sentinel(DType::kFloat32, {4, 1});
  mantissa::LayerNormTensors t;
  t.input = view(x), t.out = view(out);
  t.rstd = view(rstd);
  ASSERT_TRUE(mantissa::layer_norm(t, {.normalized_shape = {n}, .eps = 1e-5}).ok());
  for (int64_t r = 0; r < 4; ++r) {
    long double s = 0, q = 0;
    for (int64_t i = 0; i < n; ++i) s += x.value(r * n + i);
    const long double m = s / n;
    for (int64_t i = 0; i < n; ++i) q += (x.value(r * n + i) - m) * (x.value(r * n + i) - m);
    const long double inv = 1.0L / std::sqrt(q / n + 1e-5L);
    EXPECT_NEAR(rstd.value(r), static_cast<double>(inv), static_cast<double>(inv) * 0x1.0p-23);
    for (int64_t i = 0; i < n; ++i) {
      const auto want = static_cast<float>((x.value(r * n + i) - m) * inv);
      EXPECT_LE(std::fabs(out.value(r * n + i) - want), 2 * std::ldexp(1.0f, std::ilogb(want) - 23))
          << r << "," << i;
    }
  }
  HostTensor c = filled(DType::kBFloat16, {3, 50}, -3.0, 0.0, 9);
  HostTensor b = filled(DType::kFloat32, {50}, 0.0, 1.0, 10);
  HostTensor yc = sentinel(DType::kBFloat16, {3, 50});
  mantissa::LayerNormTensors tc;
  tc.input = view(c), tc.out = view(yc);
  tc.bias = view(b);
  ASSERT_TRUE(mantissa::layer_norm(tc, {.normalized_shape = {50}}).ok());
  for (int64_t i = 0; i < 150; ++i) {
    EXPECT_EQ(yc.value(i),
              mantissa::round_to(DType::kBFloat16, static_cast<float>(b.value(i % 50))))
        << i;
  }
}

// The backward formula against central differences of the forward, in double: the gradients of
// L = sum(dy * out) with respect to x, weight and bias.
TEST(LayerNormGrad, MatchesFiniteDifferencesOfTheForward) {
  const int64_t rows = 3, n = 12;
  HostTensor x = filled(DType::kFloat32, {rows, n}, 0.3, 1.5, 21);
  HostTensor w = filled(DType::kFloat32, {n}, 1.0, 0.3, 22);
  HostTensor b = filled(DType::kFloat32, {n}, 0.0, 0.3, 23);
  HostTensor dy = filled(DType::kFloat32, {rows, n}, 0.0, 1.0, 24);
  const double eps = 1e-5;
  auto loss = [&](std::vector<double> xs, std::vector<double> ws, std::vector<double> bs) {
    double l = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0, q = 0;
      for (int64_t i = 0; i < n; ++i) m += xs[r * n + i] / n;
      for (int64_t i = 0; i < n; ++i) q += (xs[r * n + i] - m) * (xs[r * n + i] - m) / n;
      for (int64_t i = 0; i < n; ++i) {
        l += dy.value(r * n + i) * ((xs[r * n + i] - m) / std::sqrt(q + eps) * ws[i] + bs[i]);
      }
    }
    return l;
  };
  std::vector<double> xs(rows * n), ws(n), bs(n);
  for (int64_t i = 0; i < rows * n; ++i) xs[i] = x.value(i);
  for (int64_t i = 0; i < n; ++i) ws[i] = w.value(i), bs[i] = b.value(i);
  HostTensor out = sentinel(DType::kFloat32, {rows, n}), mean = sentinel(DType::kFloat32, {rows}),
             rstd = sentinel(DType::kFloat32, {rows});
  mantissa::LayerNormTensors f;
  f.input = view(x), f.out = view(out);
  f.weight = view(w), f.bias = view(b), f.mean = view(mean), f.rstd = view(rstd);
  ASSERT_TRUE(mantissa::layer_norm(f, {.normalized_shape = {n}, .eps = eps}).ok());
  HostTensor dx = sentinel(DType::kFloat32, {rows, n}), dw = sentinel(DType::kFloat32, {n}),
             db = sentinel(DType::kFloat32, {n});
  mantissa::LayerNormGradTensors g;
  g.dy = view(dy), g.input = view(x), g.mean = view(mean), g.rstd = view(rstd);
  g.weight = view(w), g.dx = view(dx), g.dweight = view(dw), g.dbias = view(db);
  ASSERT_TRUE(mantissa::layer_norm_grad(g, {.normalized_shape = {n}}).ok());
  const double h = 1e-6;
  auto central = [&](std::vector<double>& v, int64_t i, auto&& l) {
    const double keep = v[i];
    v[i] = keep + h;
    const double up = l();
    v[i] = keep - h;
    const double down = l();
    v[i] = keep;
    return (up - down) / (2 * h);
  };
  auto l = [&] { return loss(xs, ws, bs); };
  for (int64_t i = 0; i < rows * n; ++i) {
    EXPECT_NEAR(dx.value(i), central(xs, i, l), 2e-4) << "dx " << i;
  }
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(dw.value(i), central(ws, i, l), 2e-4) << "dweight " << i;
    EXPECT_NEAR(db.value(i), central(bs, i, l), 2e-4) << "dbias " << i;
  }
}

// ---- Validation: codes, the argument named, nothing written ---------------------------------

struct Call {
  HostTensor x = filled(DType::kFloat16, {2, 3, 8}, 0.0, 1.0, 11);
  HostTensor w = filled(DType::kFloat32, {8}, 1.0, 0.1, 12);
  HostTensor b = filled(DType::kFloat32, {8}, 0.0, 0.1, 13);
  HostTensor out = sentinel(DType::kFloat16, {2, 3, 8});
  HostTensor mean = sentinel(DType::kFloat32, {2, 3, 1});
  HostTensor rstd = sentinel(DType::kFloat32, {2, 3, 1});
  mantissa::LayerNormParams p{.normalized_shape = {8}};
  mantissa::LayerNormTensors tensors() {
    mantissa::LayerNormTensors t;
    t.input = view(x), t.out = view(out);
    t.weight = view(w), t.bias = view(b), t.mean = view(mean), t.rstd = view(rstd);
    return t;
  }
};

struct Row {
  const char* what;
  void (*mutate)(Call&, mantissa::LayerNormTensors&);
  StatusCode code;
  const char* named;
};

TEST(LayerNormValidation, RowsThroughTheCppApi) {
  const std::vector<Row> rows{
      {"normalized_shape empty", [](Call& c, auto&) { c.p.normalized_shape = Dims{}; },
       StatusCode::kParamInvalid, "normalized_shape"},
      {"normalized_shape not trailing", [](Call& c, auto&) { c.p.normalized_shape = {3}; },
       StatusCode::kParamInvalid, "normalized_shape"},
      {"normalized_shape longer than the rank",
       [](Call& c, auto&) {
         c.p.normalized_shape = {1, 2, 3, 8};
       },
       StatusCode::kParamInvalid, "normalized_shape"},
      {"nine dims", [](Call& c, auto&) { c.p.normalized_shape = {1, 1, 1, 1, 1, 1, 1, 1, 8}; },
       StatusCode::kParamInvalid, "normalized_shape"},
      {"weight shape", [](Call&, auto& t) { t.weight->shape[0] = 4; }, StatusCode::kParamInvalid,
       "weight"},
      {"weight dtype", [](Call&, auto& t) { t.weight->dtype = DType::kBFloat16; },
       StatusCode::kParamInvalid, "weight"},
      {"bias dtype differs from weight's",
       [](Call& c, auto& t) {
         t.bias = view(c.x);
         t.bias->rank = 1, t.bias->shape[0] = 8;
       },
       StatusCode::kParamInvalid, "bias"},
      {"mean dtype", [](Call&, auto& t) { t.mean->dtype = DType::kBFloat16; },
       StatusCode::kParamInvalid, "mean"},
      {"mean shape", [](Call&, auto& t) { t.mean->shape[1] = 2; }, StatusCode::kParamInvalid,
       "mean"},
      {"out dtype", [](Call&, auto& t) { t.out.dtype = DType::kFloat32; },
       StatusCode::kParamInvalid, "out"},
      {"out overlaps input", [](Call& c, auto& t) { t.out.data = c.x.data(); },
       StatusCode::kParamInvalid, "out"},
      {"rstd overlaps mean", [](Call& c, auto& t) { t.rstd->data = c.mean.data(); },
       StatusCode::kParamInvalid, "rstd"},
      {"input missing", [](Call&, auto& t) { t.input.data = nullptr; }, StatusCode::kParamNullptr,
       "input"},
      {"rank 9", [](Call&, auto& t) { t.input.rank = 9; }, StatusCode::kParamInvalid, "input"},
      {"misaligned weight",
       [](Call&, auto& t) { t.weight->data = static_cast<char*>(t.weight->data) + 2; },
       StatusCode::kParamInvalid, "weight data address"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    Call c;
    mantissa::LayerNormTensors t = c.tensors();
    r.mutate(c, t);
    const mantissa::Status s = mantissa::layer_norm(t, c.p);
    EXPECT_EQ(s.code(), r.code) << s.message();
    EXPECT_NE(s.message().find(r.named), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("LayerNormV4"), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(c.out) && untouched(c.mean) && untouched(c.rstd));
  }
}

// mean and rstd are optional results: left unset, out has the same bits and nothing else is
// written; both may also be dropped dims ([A...]).
TEST(LayerNorm, OptionalStatisticsAndTheirForms) {
  Call full;
  ASSERT_TRUE(mantissa::layer_norm(full.tensors(), full.p).ok());
  Call bare;
  mantissa::LayerNormTensors t = bare.tensors();
  t.mean.reset();
  t.rstd.reset();
  ASSERT_TRUE(mantissa::layer_norm(t, bare.p).ok());
  expect_same_bits(bare.out, full.out, "out without statistics");
  EXPECT_TRUE(untouched(bare.mean) && untouched(bare.rstd));
  Call dropped;
  HostTensor m = sentinel(DType::kFloat32, {2, 3}), r = sentinel(DType::kFloat32, {2, 3});
  mantissa::LayerNormTensors td = dropped.tensors();
  td.mean = view(m), td.rstd = view(r);
  ASSERT_TRUE(mantissa::layer_norm(td, dropped.p).ok());
  expect_same_bits(
      m,
      [&] {
        HostTensor k = full.mean;
        k.shape = {2, 3};
        return k;
      }(),
      "mean as [A...]");
}

// output_mask: each selected output is required (161001 naming it and the mask entry); the
// unselected ones may be left out, and when given are not written.
TEST(LayerNormGradValidation, OutputMask) {
  HostTensor dy = filled(DType::kFloat32, {4, 8}, 0.0, 1.0, 31);
  HostTensor x = filled(DType::kFloat32, {4, 8}, 0.0, 1.0, 32);
  HostTensor mean = filled(DType::kFloat32, {4, 1}, 0.0, 0.1, 33);
  HostTensor rstd = filled(DType::kFloat32, {4, 1}, 1.0, 0.1, 34);
  HostTensor w = filled(DType::kFloat32, {8}, 1.0, 0.1, 35);
  auto base = [&] {
    mantissa::LayerNormGradTensors t;
    t.dy = view(dy), t.input = view(x), t.mean = view(mean), t.rstd = view(rstd);
    t.weight = view(w);
    return t;
  };
  for (int k = 0; k < 3; ++k) {
    mantissa::LayerNormGradParams p{.normalized_shape = {8}};
    HostTensor dx = sentinel(DType::kFloat32, {4, 8}), dw = sentinel(DType::kFloat32, {8}),
               db = sentinel(DType::kFloat32, {8});
    mantissa::LayerNormGradTensors t = base();
    t.dx = view(dx), t.dweight = view(dw), t.dbias = view(db);
    std::optional<TensorView>* outs[] = {&t.dx, &t.dweight, &t.dbias};
    outs[k]->reset();
    mantissa::Status s = mantissa::layer_norm_grad(t, p);
    EXPECT_EQ(s.code(), StatusCode::kParamNullptr) << s.message();
    EXPECT_NE(s.message().find("output_mask[" + std::to_string(k) + "]"), std::string::npos)
        << s.message();
    EXPECT_TRUE(untouched(dx) && untouched(dw) && untouched(db));
    p.output_mask[k] = false;
    ASSERT_TRUE(mantissa::layer_norm_grad(t, p).ok());
    // The others are written; given but unselected stays untouched.
    HostTensor* held[] = {&dx, &dw, &db};
    for (int j = 0; j < 3; ++j) EXPECT_EQ(untouched(*held[j]), j == k) << k << " " << j;
    *outs[k] = view(*held[k]);
    ASSERT_TRUE(mantissa::layer_norm_grad(t, p).ok());
    EXPECT_TRUE(untouched(*held[k]));
  }
  // dweight's dtype is weight's; without a weight, dy's.
  HostTensor dw16 = sentinel(DType::kFloat16, {8}), db = sentinel(DType::kFloat32, {8});
  HostTensor dx = sentinel(DType::kFloat32, {4, 8});
  mantissa::LayerNormGradTensors t = base();
  t.dx = view(dx), t.dweight = view(dw16), t.dbias = view(db);
  mantissa::Status s = mantissa::layer_norm_grad(t, {.normalized_shape = {8}});
  EXPECT_EQ(s.code(), StatusCode::kParamInvalid);
  EXPECT_NE(s.message().find("dweight"), std::string::npos) << s.message();
  EXPECT_TRUE(untouched(dx));
}

// ---- aclnn ----------------------------------------------------------------------------------

// A transposed input staged through the workspace gives the contiguous bits; null optional
// outputs are accepted; the list handles are checked.
TEST(LayerNormAclnn, StridedInputNullStatisticsAndHandles) {
  Call ref;
  ASSERT_TRUE(mantissa::layer_norm(ref.tensors(), ref.p).ok());
  // x^T stored as [8][6] and viewed as [6, 8] with strides {1, 6}; shape [2, 3, 8] flattened.
  Call c;
  HostTensor xt(DType::kFloat16, {8, 6});
  for (int64_t r = 0; r < 6; ++r) {
    for (int64_t i = 0; i < 8; ++i) xt.set_bits(i * 6 + r, c.x.bits(r * 8 + i));
  }
  HostTensor out2 = sentinel(DType::kFloat16, {6, 8}), m2 = sentinel(DType::kFloat32, {6, 1});
  TensorView xv = view(xt);
  xv.shape = {6, 8}, xv.rank = 2;
  aclTensor* x = acl(xv, {1, 6}, {8, 6});
  aclTensor* w = acl(view(c.w));
  aclTensor* b = acl(view(c.b));
  aclTensor* o = acl(view(out2));
  aclTensor* m = acl(view(m2));
  const int64_t ns[] = {8};
  aclIntArray* shape = aclCreateIntArray(ns, 1);
  const aclnnStatus s = run_two_phases(
      [&](uint64_t* size, aclOpExecutor** e) {
        return aclnnLayerNormGetWorkspaceSize(x, shape, w, b, 1e-5, o, m, nullptr, size, e);
      },
      [](void* ws, uint64_t size, aclOpExecutor* e) {
        return aclnnLayerNorm(ws, size, e, nullptr);
      });
  ASSERT_EQ(s, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(std::memcmp(out2.data(), ref.out.data(), ref.out.bytes.size()), 0);
  EXPECT_EQ(std::memcmp(m2.data(), ref.mean.data(), ref.mean.bytes.size()), 0);
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnLayerNormGetWorkspaceSize(x, nullptr, w, b, 1e-5, o, m, nullptr, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("normalizedShape"), std::string::npos);
  // implMode: 0..2, and 2 only with every tensor FLOAT16.
  EXPECT_EQ(
      aclnnLayerNormWithImplModeGetWorkspaceSize(x, shape, w, b, 1e-5, o, m, nullptr, 3, &size, &e),
      ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(
      aclnnLayerNormWithImplModeGetWorkspaceSize(x, shape, w, b, 1e-5, o, m, nullptr, 2, &size, &e),
      ACLNN_ERR_PARAM_INVALID);  // weight is FLOAT
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("implMode 2"), std::string::npos);
  EXPECT_TRUE(untouched(c.out));
  for (aclTensor* t : {x, w, b, o, m}) aclDestroyTensor(t);
  // A weight at an address that is not a multiple of 4 goes through the workspace (the C++ API
  // refuses it): the same bits.
  std::vector<uint8_t> block(8 * 4 + 2);
  std::memcpy(block.data() + 2, c.w.data(), 8 * 4);
  TensorView wv = view(c.w);
  wv.data = block.data() + 2;
  aclTensor* wm = acl(wv);
  aclTensor* x2 = acl(view(c.x));
  aclTensor* b2 = acl(view(c.b));
  HostTensor out3 = sentinel(DType::kFloat16, {2, 3, 8});
  aclTensor* o3 = acl(view(out3));
  const aclnnStatus s3 = run_two_phases(
      [&](uint64_t* sz, aclOpExecutor** ex) {
        return aclnnLayerNormGetWorkspaceSize(x2, shape, wm, b2, 1e-5, o3, nullptr, nullptr, sz,
                                              ex);
      },
      [](void* ws, uint64_t sz, aclOpExecutor* ex) { return aclnnLayerNorm(ws, sz, ex, nullptr); });
  ASSERT_EQ(s3, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  expect_same_bits(out3, ref.out, "out with a misaligned weight");
  for (aclTensor* t : {wm, x2, b2, o3}) aclDestroyTensor(t);
  aclDestroyIntArray(shape);
}

TEST(LayerNormAclnn, BackwardMaskHandlesAndNulls) {
  HostTensor dy = filled(DType::kFloat32, {4, 8}, 0.0, 1.0, 41);
  HostTensor x = filled(DType::kFloat32, {4, 8}, 0.0, 1.0, 42);
  HostTensor mean = filled(DType::kFloat32, {4, 1}, 0.0, 0.1, 43);
  HostTensor rstd = filled(DType::kFloat32, {4, 1}, 1.0, 0.1, 44);
  HostTensor dx = sentinel(DType::kFloat32, {4, 8}), dx_ref = sentinel(DType::kFloat32, {4, 8});
  mantissa::LayerNormGradTensors t;
  t.dy = view(dy), t.input = view(x), t.mean = view(mean), t.rstd = view(rstd);
  t.dx = view(dx_ref);
  mantissa::LayerNormGradParams p{.normalized_shape = {8}, .output_mask = {true, false, false}};
  ASSERT_TRUE(mantissa::layer_norm_grad(t, p).ok());
  aclTensor* a_dy = acl(view(dy));
  aclTensor* a_x = acl(view(x));
  aclTensor* a_m = acl(view(mean));
  aclTensor* a_r = acl(view(rstd));
  aclTensor* a_dx = acl(view(dx));
  const int64_t ns[] = {8};
  aclIntArray* shape = aclCreateIntArray(ns, 1);
  const bool mask[] = {true, false, false};
  aclBoolArray* m3 = aclCreateBoolArray(mask, 3);
  aclBoolArray* m2 = aclCreateBoolArray(mask, 2);
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  // A mask of 2 values: 161002 naming outputMask; a selected output left null: 161001.
  EXPECT_EQ(aclnnLayerNormBackwardGetWorkspaceSize(a_dy, a_x, shape, a_m, a_r, nullptr, nullptr, m2,
                                                   a_dx, nullptr, nullptr, &size, &e),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("output_mask holds 2"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(aclnnLayerNormBackwardGetWorkspaceSize(a_dy, a_x, shape, a_m, a_r, nullptr, nullptr, m3,
                                                   nullptr, nullptr, nullptr, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(untouched(dx));
  const aclnnStatus s = run_two_phases(
      [&](uint64_t* sz, aclOpExecutor** ex) {
        return aclnnLayerNormBackwardGetWorkspaceSize(a_dy, a_x, shape, a_m, a_r, nullptr, nullptr,
                                                      m3, a_dx, nullptr, nullptr, sz, ex);
      },
      [](void* ws, uint64_t sz, aclOpExecutor* ex) {
        return aclnnLayerNormBackward(ws, sz, ex, nullptr);
      });
  ASSERT_EQ(s, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(std::memcmp(dx.data(), dx_ref.data(), dx.bytes.size()), 0);
  for (aclTensor* h : {a_dy, a_x, a_m, a_r, a_dx}) aclDestroyTensor(h);
  aclDestroyIntArray(shape);
  aclDestroyBoolArray(m3);
  aclDestroyBoolArray(m2);
}

// ---- Op-by-name -------------------------------------------------------------------------------

aclError by_name(const char* op, std::vector<std::pair<aclDataType, std::vector<int64_t>>> in,
                 std::vector<void*> in_data, std::vector<std::size_t> in_bytes,
                 std::vector<std::pair<aclDataType, std::vector<int64_t>>> out,
                 std::vector<void*> out_data, std::vector<std::size_t> out_bytes, aclopAttr* attr) {
  std::vector<aclTensorDesc*> id, od;
  std::vector<aclDataBuffer*> ib, ob;
  for (std::size_t i = 0; i < in.size(); ++i) {
    id.push_back(aclCreateTensorDesc(in[i].first, static_cast<int>(in[i].second.size()),
                                     in[i].second.data(), ACL_FORMAT_ND));
    ib.push_back(aclCreateDataBuffer(in_data[i], in_bytes[i]));
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    od.push_back(aclCreateTensorDesc(out[i].first, static_cast<int>(out[i].second.size()),
                                     out[i].second.data(), ACL_FORMAT_ND));
    ob.push_back(aclCreateDataBuffer(out_data[i], out_bytes[i]));
  }
  const aclError rc = aclopCompileAndExecuteV2(
      op, static_cast<int>(id.size()), id.data(), ib.data(), static_cast<int>(od.size()), od.data(),
      ob.data(), attr, ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr);
  for (auto* d : id) aclDestroyTensorDesc(d);
  for (auto* d : od) aclDestroyTensorDesc(d);
  for (auto* b : ib) aclDestroyDataBuffer(b);
  for (auto* b : ob) aclDestroyDataBuffer(b);
  return rc;
}

// LayerNormV4 (x, normalized_shape as an INT32 input, gamma, beta; attribute epsilon) and
// LayerNormGradV3 (dy, x, rstd, mean, gamma; attribute output_mask as ListBool; normalized_shape
// is gamma's shape) give the C++ API's bits.
TEST(LayerNormByName, GraphOrderAndAttributes) {
  Call ref;
  ref.p.eps = static_cast<float>(1e-5);  // a Float attribute by name
  ASSERT_TRUE(mantissa::layer_norm(ref.tensors(), ref.p).ok());
  Call c;
  int32_t ns = 8;
  aclopAttr* attr = aclopCreateAttr();
  ASSERT_EQ(aclopSetAttrFloat(attr, "epsilon", 1e-5f), ACL_SUCCESS);
  const aclError rc =
      by_name("LayerNormV4",
              {{ACL_FLOAT16, {2, 3, 8}}, {ACL_INT32, {1}}, {ACL_FLOAT, {8}}, {ACL_FLOAT, {8}}},
              {c.x.data(), &ns, c.w.data(), c.b.data()},
              {c.x.bytes.size(), sizeof ns, c.w.bytes.size(), c.b.bytes.size()},
              {{ACL_FLOAT16, {2, 3, 8}}, {ACL_FLOAT, {2, 3, 1}}, {ACL_FLOAT, {2, 3, 1}}},
              {c.out.data(), c.mean.data(), c.rstd.data()},
              {c.out.bytes.size(), c.mean.bytes.size(), c.rstd.bytes.size()}, attr);
  ASSERT_EQ(rc, ACL_SUCCESS) << aclGetRecentErrMsg();
  expect_same_bits(c.out, ref.out, "y");
  expect_same_bits(c.rstd, ref.rstd, "rstd");
  aclopDestroyAttr(attr);

  HostTensor dy = filled(DType::kFloat16, {2, 3, 8}, 0.0, 1.0, 51);
  HostTensor dx_ref = sentinel(DType::kFloat16, {2, 3, 8}), db_ref = sentinel(DType::kFloat32, {8});
  mantissa::LayerNormGradTensors g;
  g.dy = view(dy), g.input = view(ref.x), g.mean = view(ref.mean), g.rstd = view(ref.rstd);
  g.weight = view(ref.w), g.dx = view(dx_ref), g.dbias = view(db_ref);
  ASSERT_TRUE(
      mantissa::layer_norm_grad(g, {.normalized_shape = {8}, .output_mask = {true, false, true}})
          .ok());
  HostTensor dx = sentinel(DType::kFloat16, {2, 3, 8}), dw = sentinel(DType::kFloat32, {8}),
             db = sentinel(DType::kFloat32, {8});
  attr = aclopCreateAttr();
  const uint8_t mask[] = {1, 0, 1};
  ASSERT_EQ(aclopSetAttrListBool(attr, "output_mask", 3, mask), ACL_SUCCESS);
  const aclError rc2 = by_name(
      "LayerNormGradV3",
      {{ACL_FLOAT16, {2, 3, 8}},
       {ACL_FLOAT16, {2, 3, 8}},
       {ACL_FLOAT, {2, 3, 1}},
       {ACL_FLOAT, {2, 3, 1}},
       {ACL_FLOAT, {8}}},
      {dy.data(), ref.x.data(), ref.rstd.data(), ref.mean.data(), ref.w.data()},
      {dy.bytes.size(), ref.x.bytes.size(), ref.rstd.bytes.size(), ref.mean.bytes.size(),
       ref.w.bytes.size()},
      {{ACL_FLOAT16, {2, 3, 8}}, {ACL_FLOAT, {8}}, {ACL_FLOAT, {8}}},
      {dx.data(), dw.data(), db.data()}, {dx.bytes.size(), dw.bytes.size(), db.bytes.size()}, attr);
  ASSERT_EQ(rc2, ACL_SUCCESS) << aclGetRecentErrMsg();
  expect_same_bits(dx, dx_ref, "pd_x");
  expect_same_bits(db, db_ref, "pd_beta");
  EXPECT_TRUE(untouched(dw));
  // output_mask given as a ListInt: refused by name, nothing written.
  aclopDestroyAttr(attr);
  attr = aclopCreateAttr();
  const int64_t as_ints[] = {1, 1, 1};
  ASSERT_EQ(aclopSetAttrListInt(attr, "output_mask", 3, as_ints), ACL_SUCCESS);
  HostTensor dx2 = sentinel(DType::kFloat16, {2, 3, 8});
  EXPECT_NE(by_name("LayerNormGradV3",
                    {{ACL_FLOAT16, {2, 3, 8}},
                     {ACL_FLOAT16, {2, 3, 8}},
                     {ACL_FLOAT, {2, 3, 1}},
                     {ACL_FLOAT, {2, 3, 1}},
                     {ACL_FLOAT, {8}}},
                    {dy.data(), ref.x.data(), ref.rstd.data(), ref.mean.data(), ref.w.data()},
                    {dy.bytes.size(), ref.x.bytes.size(), ref.rstd.bytes.size(),
                     ref.mean.bytes.size(), ref.w.bytes.size()},
                    {{ACL_FLOAT16, {2, 3, 8}}, {ACL_FLOAT, {8}}, {ACL_FLOAT, {8}}},
                    {dx2.data(), dw.data(), db.data()},
                    {dx2.bytes.size(), dw.bytes.size(), db.bytes.size()}, attr),
            ACL_SUCCESS);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("ListBool"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_TRUE(untouched(dx2));
  aclopDestroyAttr(attr);
}

}  // namespace

}  // namespace mantissa::testing
