// RmsNorm and RmsNormGrad: bitwise against the kit's golden32 on every SIMD target and thread
// count (dtype combinations, row lengths around the vector width and the 4096-element reduction
// block, rows with a large mean, constant rows, several dgamma row blocks), the rstd shape forms,
// every validation row through the C++ API and aclnn (nothing written), and strided tensors
// through aclnn.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_rms_norm.h"
#include "aclnnop/aclnn_rms_norm_grad.h"
#include "mantissa/ops/rms_norm.h"
#include "mantissa/ops/rms_norm_grad.h"
#include "op_support.h"
#include "precision/fp.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::Status;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::RmsNormGradOp;
using mantissa::detail::RmsNormOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::sentinel;
using mt::untouched;
using mt::view;

std::vector<int64_t> reduced(std::vector<int64_t> shape, int dims, bool drop) {
  if (drop) {
    shape.resize(shape.size() - static_cast<std::size_t>(dims));
  } else {
    for (std::size_t i = shape.size() - static_cast<std::size_t>(dims); i < shape.size(); ++i) {
      shape[i] = 1;
    }
  }
  return shape;
}

struct Problem {
  DType x, gamma;
  std::vector<int64_t> x_shape, gamma_shape;
  double mean = 0.0, spread = 1.0;
  bool drop_rstd = false;
};

std::vector<Problem> problems() {
  std::vector<Problem> p;
  const std::vector<std::pair<DType, DType>> combos{{DType::kFloat32, DType::kFloat32},
                                                    {DType::kFloat16, DType::kFloat16},
                                                    {DType::kFloat16, DType::kFloat32},
                                                    {DType::kBFloat16, DType::kBFloat16},
                                                    {DType::kBFloat16, DType::kFloat32}};
  for (auto [x, g] : combos) {
    for (int64_t n : {1, 7, 16, 32, 33, 64, 129, 4100}) {
      p.push_back({x, g, {5, n}, {n}, 0.0, 1.0, false});
    }
    p.push_back({x, g, {3, 4, 24}, {4, 24}, 0.5, 2.0, true});  // two normalised dims, rstd [3]
    p.push_back({x, g, {300, 130}, {130}, 0.0, 1.0, false});   // several dgamma row blocks
    p.push_back({x, g, {301, 64}, {64}, 0.0, 1.0, false});     // odd rows, several blocks
  }
  // Large mean, small spread; constant rows (fp32: 1e4 + N(0, 1) exactly representable grid).
  // 11 dgamma blocks of 7 rows (an uneven pairwise tree), columns in 5 tiles, the last of 4.
  p.push_back({DType::kFloat32, DType::kFloat32, {75, 4100}, {4100}, 0.0, 1.0, false});
  p.push_back({DType::kFloat32, DType::kFloat32, {8, 1000}, {1000}, 1e4, 1.0, false});
  p.push_back({DType::kFloat32, DType::kFloat32, {4, 77}, {77}, 3.0, 0.0, false});
  p.push_back({DType::kBFloat16, DType::kFloat32, {4, 77}, {77}, -2.0, 0.0, true});
  return p;
}

std::string describe(const Problem& p) {
  std::string s = std::string(mantissa::dtype_name(p.x)) + "/" + mantissa::dtype_name(p.gamma);
  for (int64_t d : p.x_shape) s += " " + std::to_string(d);
  return s + " mean " + std::to_string(p.mean) + " spread " + std::to_string(p.spread);
}

TEST(RmsNorm, BitExactOnEveryTargetAndThreadCount) {
  for (const Problem& pr : problems()) {
    SCOPED_TRACE(describe(pr));
    HostTensor x = filled(pr.x, pr.x_shape, pr.mean, pr.spread, 1);
    HostTensor g = filled(pr.gamma, pr.gamma_shape, 1.0, 0.25, 2);
    const auto rs = reduced(pr.x_shape, static_cast<int>(pr.gamma_shape.size()), pr.drop_rstd);
    HostTensor y_ref = sentinel(pr.x, pr.x_shape), rstd_ref = sentinel(DType::kFloat32, rs);
    const mantissa::RmsNormParams p{.epsilon = 1e-6};
    mt::apply_golden32<RmsNormOp>(
        {.x = view(x), .gamma = view(g), .y = view(y_ref), .rstd = view(rstd_ref)}, p);
    // The backward pass on the forward's rstd.
    HostTensor dy = filled(pr.x, pr.x_shape, 0.0, 1.0, 3);
    HostTensor dx_ref = sentinel(pr.x, pr.x_shape),
               dg_ref = sentinel(DType::kFloat32, pr.gamma_shape);
    mt::apply_golden32<RmsNormGradOp>({.dy = view(dy),
                                       .x = view(x),
                                       .rstd = view(rstd_ref),
                                       .gamma = view(g),
                                       .dx = view(dx_ref),
                                       .dgamma = view(dg_ref)},
                                      {});
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      HostTensor y = sentinel(pr.x, pr.x_shape), rstd = sentinel(DType::kFloat32, rs);
      ASSERT_TRUE(
          mantissa::rms_norm({.x = view(x), .gamma = view(g), .y = view(y), .rstd = view(rstd)}, p)
              .ok());
      expect_same_bits(y, y_ref, "y");
      expect_same_bits(rstd, rstd_ref, "rstd");
      HostTensor dx = sentinel(pr.x, pr.x_shape), dg = sentinel(DType::kFloat32, pr.gamma_shape);
      const mantissa::RmsNormGradTensors t{.dy = view(dy),
                                           .x = view(x),
                                           .rstd = view(rstd_ref),
                                           .gamma = view(g),
                                           .dx = view(dx),
                                           .dgamma = view(dg)};
      ASSERT_TRUE(mantissa::rms_norm_grad(t, {}).ok());
      expect_same_bits(dx, dx_ref, "dx");
      expect_same_bits(dg, dg_ref, "dgamma");
      // A workspace lent by the caller gives the same bits.
      std::vector<double> ws(mantissa::rms_norm_grad_workspace_size(t, {}) / sizeof(double) + 1);
      HostTensor dg2 = sentinel(DType::kFloat32, pr.gamma_shape);
      mantissa::RmsNormGradTensors t2 = t;
      t2.dgamma = view(dg2);
      ASSERT_TRUE(
          mantissa::rms_norm_grad(t2, {}, {.data = ws.data(), .size = ws.size() * sizeof(double)})
              .ok());
      expect_same_bits(dg2, dg_ref, "dgamma (lent workspace)");
    });
  }
}

// The inputs of one RmsNormGrad call and golden32's dx and dgamma for them.
struct GradCase {
  HostTensor dy, x, rstd, gamma;
  HostTensor dx_ref{}, dg_ref{};  // golden32's, from make_golden()
  mantissa::RmsNormGradTensors tensors(HostTensor& dx, HostTensor& dg) {
    return {.dy = view(dy),
            .x = view(x),
            .rstd = view(rstd),
            .gamma = view(gamma),
            .dx = view(dx),
            .dgamma = view(dg)};
  }
  void make_golden() {
    dx_ref = sentinel(dy.dtype, dy.shape);
    dg_ref = sentinel(DType::kFloat32, gamma.shape);
    mt::apply_golden32<RmsNormGradOp>(tensors(dx_ref, dg_ref), {});
  }
  // dx and dgamma on every target at each thread count, bit for bit against golden32's.
  void expect_golden_bits(const std::vector<int>& threads = mt::sweep_thread_counts()) {
    mt::for_each_target_and_thread_count(
        [&](const std::string&, int) {
          HostTensor dx = sentinel(dy.dtype, dy.shape);
          HostTensor dg = sentinel(DType::kFloat32, gamma.shape);
          ASSERT_TRUE(mantissa::rms_norm_grad(tensors(dx, dg), {}).ok());
          expect_same_bits(dx, dx_ref, "dx");
          expect_same_bits(dg, dg_ref, "dgamma");
        },
        threads);
  }
};

// Rows with +-2^60 (fp16: 2^15) in dy at two elements of equal x, gamma 1: their terms of the
// row sum cancel exactly, so which of the small terms survive next to them, and so every dx of
// the row, depends on the order of the additions. Every target and thread count must take
// core/reduce.h's order, as golden32 does (ordinary data round to the same output in any order).
TEST(RmsNormGrad, RowSumsFollowTheDocumentedOrder) {
  for (int64_t n : {32, 64, 96, 128, 200}) {
    for (DType xd : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      const int64_t rows = 9;
      SCOPED_TRACE(std::string(mantissa::dtype_name(xd)) + " n " + std::to_string(n));
      GradCase c{.dy = filled(xd, {rows, n}, 0.0, 1.0, 33),
                 .x = filled(xd, {rows, n}, 0.0, 1.0, 31),
                 .rstd = filled(DType::kFloat32, {rows, 1}, 1.25, 0.0, 34),
                 .gamma = filled(xd, {n}, 1.0, 0.0, 32)};
      const auto at = [&](int64_t r, int64_t i) { return static_cast<std::size_t>(r * n + i); };
      // Pairs at distances that put them in the same or different lanes, vectors and lane groups
      // from row to row.
      const int64_t distance[rows] = {n / 2 + 3, 32, 64, 8, 16, 1, 40, 96, 24};
      const float big = std::ldexp(1.0f, xd == DType::kFloat16 ? 15 : 60);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t first = (5 * r + 1) % n;
        int64_t second = (first + distance[r]) % n;
        if (second == first) second = (second + 1) % n;
        mantissa::store_from_float(xd, c.x.data(), at(r, second),
                                   static_cast<float>(c.x.value(at(r, first))));
        mantissa::store_from_float(xd, c.dy.data(), at(r, first), big);
        mantissa::store_from_float(xd, c.dy.data(), at(r, second), -big);
      }
      c.make_golden();
      c.expect_golden_bits();
    }
  }
}

// dx beyond FLT_MAX rounds to +-inf on every target (the SCALAR and EMU128 fp64 -> fp32
// conversions clamp to FLT_MAX unless the kernel corrects them), as golden32 says.
TEST(RmsNormGrad, OverflowingDxIsInfOnEveryTarget) {
  GradCase c{.dy = filled(DType::kFloat32, {2, 16}, 0.0, 1e30, 11),
             .x = filled(DType::kFloat32, {2, 16}, 0.0, 1.0, 12),
             .rstd = filled(DType::kFloat32, {2, 1}, 1e10, 0.0, 14),
             .gamma = filled(DType::kFloat32, {16}, 1.0, 0.25, 13)};
  c.make_golden();
  int64_t infinite = 0;
  for (int64_t i = 0; i < c.dx_ref.numel(); ++i) infinite += std::isinf(c.dx_ref.value(i));
  EXPECT_GT(infinite, 0);
  c.expect_golden_bits({1});
}

TEST(RmsNorm, LargeMeanAndConstantRowsAreAccurate) {
  // 1e4 + N(0, 1): rstd within an ulp of the fp64 value; constant rows: y = gamma * sign.
  HostTensor x = filled(DType::kFloat32, {4, 4096}, 1e4, 1.0, 7);
  HostTensor g = filled(DType::kFloat32, {4096}, 1.0, 0.0, 8);
  HostTensor y = sentinel(DType::kFloat32, {4, 4096}), rstd = sentinel(DType::kFloat32, {4, 1});
  ASSERT_TRUE(mantissa::rms_norm({.x = view(x), .gamma = view(g), .y = view(y), .rstd = view(rstd)},
                                 {.epsilon = 1e-6})
                  .ok());
  for (int64_t r = 0; r < 4; ++r) {
    long double ss = 0;
    for (int64_t i = 0; i < 4096; ++i)
      ss += static_cast<long double>(x.value(r * 4096 + i)) * x.value(r * 4096 + i);
    const double want = static_cast<double>(1.0L / std::sqrt(ss / 4096 + 1e-6L));
    EXPECT_NEAR(rstd.value(r), want, want * 0x1.0p-23);
  }
  HostTensor c = filled(DType::kFloat32, {2, 50}, -3.0, 0.0, 9);
  HostTensor yc = sentinel(DType::kFloat32, {2, 50}), rc = sentinel(DType::kFloat32, {2});
  HostTensor gc = filled(DType::kFloat32, {50}, 1.0, 0.0, 10);
  ASSERT_TRUE(mantissa::rms_norm({.x = view(c), .gamma = view(gc), .y = view(yc), .rstd = view(rc)},
                                 {.epsilon = 0.0})
                  .ok());
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(yc.value(i), -1.0) << i;
}

// ---- Validation -----------------------------------------------------------------------------

struct Call {
  HostTensor x = filled(DType::kFloat16, {2, 3, 8}, 0.0, 1.0, 11);
  HostTensor g = filled(DType::kFloat32, {8}, 1.0, 0.1, 12);
  HostTensor y = sentinel(DType::kFloat16, {2, 3, 8});
  HostTensor rstd = sentinel(DType::kFloat32, {2, 3, 1});
  mantissa::RmsNormTensors tensors() {
    return {.x = view(x), .gamma = view(g), .y = view(y), .rstd = view(rstd)};
  }
};

struct Row {
  const char* what;
  void (*mutate)(Call&, mantissa::RmsNormTensors&);
  StatusCode code;
  const char* arg;
};

const std::vector<Row>& rows() {
  static const std::vector<Row> r{
      {"null x", [](Call&, mantissa::RmsNormTensors& t) { t.x.data = nullptr; },
       StatusCode::kParamNullptr, "x"},
      {"gamma bf16 with fp16 x",
       [](Call& c, mantissa::RmsNormTensors& t) {
         c.g = filled(DType::kBFloat16, {8}, 1.0, 0.1, 1);
         t.gamma = view(c.g);
       },
       StatusCode::kParamInvalid, "gamma"},
      {"gamma not trailing",
       [](Call& c, mantissa::RmsNormTensors& t) {
         c.g = filled(DType::kFloat32, {3}, 1.0, 0.1, 1);
         t.gamma = view(c.g);
       },
       StatusCode::kParamInvalid, "gamma"},
      {"rstd fp16",
       [](Call& c, mantissa::RmsNormTensors& t) {
         c.rstd = sentinel(DType::kFloat16, {2, 3, 1});
         t.rstd = view(c.rstd);
       },
       StatusCode::kParamInvalid, "rstd"},
      {"rstd wrong shape",
       [](Call& c, mantissa::RmsNormTensors& t) {
         c.rstd = sentinel(DType::kFloat32, {6, 1});
         t.rstd = view(c.rstd);
       },
       StatusCode::kParamInvalid, "rstd"},
      {"y wrong dtype",
       [](Call& c, mantissa::RmsNormTensors& t) {
         c.y = sentinel(DType::kFloat32, {2, 3, 8});
         t.y = view(c.y);
       },
       StatusCode::kParamInvalid, "y"},
      {"y is x", [](Call&, mantissa::RmsNormTensors& t) { t.y = t.x; }, StatusCode::kParamInvalid,
       "y"},
      {"x rank 0",
       [](Call& c, mantissa::RmsNormTensors& t) {
         c.x = filled(DType::kFloat16, {}, 0.0, 1.0, 1);
         t.x = view(c.x);
       },
       StatusCode::kParamInvalid, "x"},
  };
  return r;
}

TEST(RmsNormValidation, RowsThroughTheCppApi) {
  {
    Call c;
    ASSERT_TRUE(mantissa::rms_norm(c.tensors(), {}).ok());
  }
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.what);
    Call c;
    mantissa::RmsNormTensors t = c.tensors();
    row.mutate(c, t);
    const Status s = mantissa::rms_norm(t, {});
    EXPECT_EQ(s.code(), row.code);
    EXPECT_NE(s.message().find("RmsNorm"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(row.arg), std::string::npos) << s.message();
    if (t.y.data != t.x.data) {
      EXPECT_TRUE(untouched(c.y));
    }
    EXPECT_TRUE(untouched(c.rstd));
  }
}

TEST(RmsNormValidation, RowsThroughAclnn) {
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.what);
    Call c;
    mantissa::RmsNormTensors t = c.tensors();
    row.mutate(c, t);
    aclTensor *x = acl(t.x), *g = acl(t.gamma), *y = acl(t.y), *r = acl(t.rstd);
    uint64_t size = 0;
    aclOpExecutor* e = nullptr;
    const aclnnStatus s = aclnnRmsNormGetWorkspaceSize(x, g, 1e-6, y, r, &size, &e);
    EXPECT_EQ(s, static_cast<aclnnStatus>(row.code));
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find(row.arg), std::string::npos) << msg;
    if (t.y.data != t.x.data) {
      EXPECT_TRUE(untouched(c.y));
    }
    EXPECT_TRUE(untouched(c.rstd));
    for (aclTensor* h : {x, g, y, r}) aclDestroyTensor(h);
  }
}

TEST(RmsNormGradValidation, RstdFormsAndRows) {
  HostTensor dy = filled(DType::kBFloat16, {2, 1, 16}, 0.0, 1.0, 1);
  HostTensor x = filled(DType::kBFloat16, {2, 1, 16}, 0.0, 1.0, 2);
  HostTensor g = filled(DType::kBFloat16, {16}, 1.0, 0.1, 3);
  HostTensor dx = sentinel(DType::kBFloat16, {2, 1, 16}), dg = sentinel(DType::kFloat32, {16});
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{2}, {2, 1}, {2, 1, 1}}) {  // dropped, dropped, kept
    HostTensor rstd = filled(DType::kFloat32, shape, 1.0, 0.0, 4);
    EXPECT_TRUE(mantissa::rms_norm_grad({.dy = view(dy),
                                         .x = view(x),
                                         .rstd = view(rstd),
                                         .gamma = view(g),
                                         .dx = view(dx),
                                         .dgamma = view(dg)},
                                        {})
                    .ok());
  }
  // Rows with nothing written: rstd of the wrong count, dgamma bf16, dgamma aliasing dy.
  HostTensor bad_rstd = filled(DType::kFloat32, {4}, 1.0, 0.0, 5);
  HostTensor dg_bf16 = sentinel(DType::kBFloat16, {16});
  HostTensor rstd = filled(DType::kFloat32, {2, 1, 1}, 1.0, 0.0, 6);
  struct GradRow {
    const char* what;
    mantissa::RmsNormGradTensors t;
    const char* arg;
  };
  HostTensor dx2 = sentinel(DType::kBFloat16, {2, 1, 16}), dg2 = sentinel(DType::kFloat32, {16});
  const mantissa::RmsNormGradTensors base{.dy = view(dy),
                                          .x = view(x),
                                          .rstd = view(rstd),
                                          .gamma = view(g),
                                          .dx = view(dx2),
                                          .dgamma = view(dg2)};
  std::vector<GradRow> grad_rows;
  grad_rows.push_back({"rstd count", base, "rstd"});
  grad_rows.back().t.rstd = view(bad_rstd);
  grad_rows.push_back({"dgamma bf16", base, "dgamma"});
  grad_rows.back().t.dgamma = view(dg_bf16);
  grad_rows.push_back({"dx is dy", base, "dx"});
  grad_rows.back().t.dx = base.dy;
  for (GradRow& row : grad_rows) {
    SCOPED_TRACE(row.what);
    const Status s = mantissa::rms_norm_grad(row.t, {});
    EXPECT_EQ(s.code(), StatusCode::kParamInvalid);
    EXPECT_NE(s.message().find("RmsNormGrad"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(row.arg), std::string::npos) << s.message();
    aclTensor *a = acl(row.t.dy), *b = acl(row.t.x), *c = acl(row.t.rstd), *d = acl(row.t.gamma),
              *e = acl(row.t.dx), *f = acl(row.t.dgamma);
    uint64_t size = 0;
    aclOpExecutor* ex = nullptr;
    EXPECT_EQ(aclnnRmsNormGradGetWorkspaceSize(a, b, c, d, e, f, &size, &ex),
              ACLNN_ERR_PARAM_INVALID);
    for (aclTensor* h : {a, b, c, d, e, f}) aclDestroyTensor(h);
    EXPECT_TRUE(untouched(dx2));
    EXPECT_TRUE(untouched(dg2));
    EXPECT_TRUE(untouched(dg_bf16));
  }
}

// ---- aclnn with strided tensors -------------------------------------------------------------

// Runs both phases with a workspace of the reported size.
template <class PhaseOne, class PhaseTwo>
aclnnStatus run(PhaseOne one, PhaseTwo two) {
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  if (const aclnnStatus prepared = one(&size, &e); prepared != ACLNN_SUCCESS) return prepared;
  std::vector<uint64_t> ws((size + 7) / 8 + 1);
  return two(size ? ws.data() : nullptr, size, e, nullptr);
}

TEST(RmsNormAclnn, TransposedInputsGiveTheContiguousBits) {
  constexpr int64_t kRows = 6, kCols = 40;
  HostTensor x = filled(DType::kFloat32, {kRows, kCols}, 0.5, 1.0, 21);
  HostTensor dy = filled(DType::kFloat32, {kRows, kCols}, 0.0, 1.0, 22);
  HostTensor g = filled(DType::kFloat32, {kCols}, 1.0, 0.2, 23);
  // Transposed storage: element (i, j) at j * kRows + i.
  HostTensor xt(DType::kFloat32, {kCols, kRows}), dyt(DType::kFloat32, {kCols, kRows});
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) {
      xt.set_bits(j * kRows + i, x.bits(i * kCols + j));
      dyt.set_bits(j * kRows + i, dy.bits(i * kCols + j));
    }
  }
  HostTensor y = sentinel(DType::kFloat32, {kRows, kCols}),
             rstd = sentinel(DType::kFloat32, {kRows, 1});
  ASSERT_TRUE(mantissa::rms_norm({.x = view(x), .gamma = view(g), .y = view(y), .rstd = view(rstd)},
                                 {.epsilon = 1e-5})
                  .ok());
  HostTensor dx = sentinel(DType::kFloat32, {kRows, kCols}),
             dg = sentinel(DType::kFloat32, {kCols});
  ASSERT_TRUE(mantissa::rms_norm_grad({.dy = view(dy),
                                       .x = view(x),
                                       .rstd = view(rstd),
                                       .gamma = view(g),
                                       .dx = view(dx),
                                       .dgamma = view(dg)},
                                      {})
                  .ok());

  TensorView xv = view(x);
  xv.data = xt.data();
  TensorView dyv = view(dy);
  dyv.data = dyt.data();
  HostTensor y2 = sentinel(DType::kFloat32, {kCols, kRows}),
             r2 = sentinel(DType::kFloat32, {kRows});
  TensorView y2v = view(y);
  y2v.data = y2.data();
  aclTensor* ax = acl(xv, {1, kRows}, {kCols, kRows});
  aclTensor* ag = acl(view(g));
  aclTensor* ay = acl(y2v, {1, kRows}, {kCols, kRows});
  aclTensor* ar = acl(view(r2));
  uint64_t size = 0;
  ASSERT_EQ(run(
                [&](uint64_t* s, aclOpExecutor** e) {
                  const aclnnStatus st = aclnnRmsNormGetWorkspaceSize(ax, ag, 1e-5, ay, ar, s, e);
                  size = *s;
                  return st;
                },
                aclnnRmsNorm),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  EXPECT_GT(size, 0u);  // the transposed x and y are staged
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) {
      EXPECT_EQ(y2.bits(j * kRows + i), y.bits(i * kCols + j)) << i << " " << j;
    }
    EXPECT_EQ(r2.bits(i), rstd.bits(i));
  }
  HostTensor dx2 = sentinel(DType::kFloat32, {kCols, kRows}),
             dg2 = sentinel(DType::kFloat32, {kCols});
  TensorView dx2v = view(dx);
  dx2v.data = dx2.data();
  aclTensor* ady = acl(dyv, {1, kRows}, {kCols, kRows});
  aclTensor* ar2 = acl(view(rstd));
  aclTensor* adx = acl(dx2v, {1, kRows}, {kCols, kRows});
  aclTensor* adg = acl(view(dg2));
  ASSERT_EQ(run(
                [&](uint64_t* s, aclOpExecutor** e) {
                  return aclnnRmsNormGradGetWorkspaceSize(ady, ax, ar2, ag, adx, adg, s, e);
                },
                aclnnRmsNormGrad),
            ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  for (int64_t i = 0; i < kRows; ++i) {
    for (int64_t j = 0; j < kCols; ++j) {
      EXPECT_EQ(dx2.bits(j * kRows + i), dx.bits(i * kCols + j)) << i << " " << j;
    }
  }
  expect_same_bits(dg2, dg, "dgamma");
  for (aclTensor* h : {ax, ag, ay, ar, ady, ar2, adx, adg}) aclDestroyTensor(h);
}

}  // namespace

}  // namespace mantissa::testing
