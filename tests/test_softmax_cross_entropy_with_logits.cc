// SoftmaxCrossEntropyWithLogits: bitwise against the kit's golden32 on every SIMD target and
// thread count (row lengths around the vector width and the 4096-element reduction block, one-hot
// and soft labels, large offsets, -inf and NaN logits), consistency with the library's Softmax
// and LogSoftmax (bit for bit), every validation row through the C++ API and aclnn (nothing
// written), and strided tensors through aclnn.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_softmax_cross_entropy_with_logits.h"
#include "mantissa/ops/softmax.h"
#include "mantissa/ops/softmax_cross_entropy_with_logits.h"
#include "op_support.h"
#include "precision/fp.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::Status;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::SoftmaxCrossEntropyWithLogitsOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::sentinel;
using mt::untouched;
using mt::view;

// One-hot rows (class r * 7 % C), or a soft distribution (uniform weights, normalised in double).
HostTensor labels(DType d, int64_t rows, int64_t classes, bool soft, uint32_t seed) {
  HostTensor h(d, {rows, classes});
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> w(static_cast<std::size_t>(classes), 0.0);
    double total = 0.0;
    for (int64_t c = 0; c < classes; ++c) total += (w[c] = soft ? u(rng) : 0.0);
    for (int64_t c = 0; c < classes; ++c) {
      const double v = soft ? w[c] / total : (c == (r * 7) % classes ? 1.0 : 0.0);
      h.set_bits(r * classes + c, mantissa::precision::round_to_bits(v, d));
    }
  }
  return h;
}

struct Problem {
  DType dtype;
  int64_t rows, classes;
  double mean = 0.0, spread = 2.0;
  bool soft = false;
  bool specials = false;  // -inf, NaN, +inf and extreme logits in some rows
};

std::vector<Problem> problems() {
  std::vector<Problem> p;
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int64_t c : {1, 2, 7, 16, 33, 129, 1000, 4100}) p.push_back({d, 5, c});
    p.push_back({d, 64, 10, 0.0, 3.0, true});
    p.push_back({d, 9, 300, d == DType::kFloat16 ? 17.0 : 95.0, 3.0});  // large offsets
    p.push_back({d, 2, 9000, 0.0, 4.0, true});                          // several blocks
    p.push_back({d, 300, 3, 0.0, 1.0});                                 // many short rows
    p.push_back({d, 6, 40, 0.0, 1.0, false, true});
  }
  return p;
}

HostTensor features_for(const Problem& pr) {
  HostTensor x = filled(pr.dtype, {pr.rows, pr.classes}, pr.mean, pr.spread, 11);
  if (pr.specials) {
    const double inf = std::numeric_limits<double>::infinity();
    const int64_t c = pr.classes;
    for (int64_t i = 0; i < c; ++i) {  // row 0: all -inf (NaN outputs, as PyTorch)
      x.set_bits(i, mantissa::precision::round_to_bits(-inf, pr.dtype));
    }
    x.set_bits(c + 3, mantissa::precision::round_to_bits(-inf, pr.dtype));  // row 1: one -inf
    x.set_bits(2 * c + 5, mantissa::precision::round_to_bits(std::nan(""), pr.dtype));
    x.set_bits(3 * c + 1, mantissa::precision::round_to_bits(inf, pr.dtype));
    x.set_bits(4 * c + 2, mantissa::precision::round_to_bits(60000.0, pr.dtype));
  }
  return x;
}

TEST(SoftmaxCrossEntropyWithLogits, BitExactOnEveryTargetAndThreadCount) {
  for (const Problem& pr : problems()) {
    SCOPED_TRACE(std::string(mantissa::dtype_name(pr.dtype)) + " " + std::to_string(pr.rows) + "x" +
                 std::to_string(pr.classes) + (pr.soft ? " soft" : ""));
    HostTensor x = features_for(pr);
    HostTensor y = labels(pr.dtype, pr.rows, pr.classes, pr.soft, 12);
    HostTensor loss_ref = sentinel(pr.dtype, {pr.rows}),
               bp_ref = sentinel(pr.dtype, {pr.rows, pr.classes});
    mt::apply_golden32<SoftmaxCrossEntropyWithLogitsOp>(
        {.features = view(x), .labels = view(y), .loss = view(loss_ref), .backprop = view(bp_ref)},
        {});
    mt::for_each_target_and_thread_count([&](const std::string&, int) {
      HostTensor loss = sentinel(pr.dtype, {pr.rows}),
                 bp = sentinel(pr.dtype, {pr.rows, pr.classes});
      ASSERT_TRUE(
          mantissa::softmax_cross_entropy_with_logits(
              {.features = view(x), .labels = view(y), .loss = view(loss), .backprop = view(bp)})
              .ok());
      expect_same_bits(loss, loss_ref, "loss");
      expect_same_bits(bp, bp_ref, "backprop");
    });
  }
}

// With labels 0 the gradient is Softmax's output and the loss 0; with one-hot labels (fp32) the
// loss is minus LogSoftmax's value at the label, bit for bit: the same max, sum and log, and the
// loss's single nonzero term is rounded once.
TEST(SoftmaxCrossEntropyWithLogits, AgreesWithSoftmaxAndLogSoftmax) {
  for (int64_t c : {3, 10, 1000, 5000}) {
    SCOPED_TRACE(c);
    const int64_t rows = 37;  // short rows: two batches of 16 and five rows after them
    HostTensor x = filled(DType::kFloat32, {rows, c}, 1.0, 3.0, 21);
    HostTensor zero(DType::kFloat32, {rows, c});
    HostTensor one_hot = labels(DType::kFloat32, rows, c, false, 0);
    HostTensor loss(DType::kFloat32, {rows}), bp(DType::kFloat32, {rows, c});
    HostTensor sm(DType::kFloat32, {rows, c}), lsm(DType::kFloat32, {rows, c});
    ASSERT_TRUE(mantissa::softmax({.self = view(x), .out = view(sm)}, {}).ok());
    ASSERT_TRUE(mantissa::log_softmax({.self = view(x), .out = view(lsm)}, {}).ok());

    ASSERT_TRUE(
        mantissa::softmax_cross_entropy_with_logits(
            {.features = view(x), .labels = view(zero), .loss = view(loss), .backprop = view(bp)})
            .ok());
    expect_same_bits(bp, sm, "backprop with labels 0 vs Softmax");
    for (int64_t r = 0; r < rows; ++r) EXPECT_EQ(mantissa::precision::in_f32(loss, r), 0.0f);

    ASSERT_TRUE(mantissa::softmax_cross_entropy_with_logits({.features = view(x),
                                                             .labels = view(one_hot),
                                                             .loss = view(loss),
                                                             .backprop = view(bp)})
                    .ok());
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t label = (r * 7) % c;
      EXPECT_EQ(mantissa::precision::in_f32(loss, r),
                -mantissa::precision::in_f32(lsm, r * c + label))
          << "row " << r;
    }
  }
}

// Row-wise accuracy against the fp64 formula: fp16/bf16 outputs within one ulp; fp32 loss and
// backprop within a few ulp of 1 in absolute terms (the probabilities' scale: where the loss is
// near 0 or softmax near the label, the result cancels and only absolute accuracy is defined).
TEST(SoftmaxCrossEntropyWithLogits, AccurateAgainstFp64) {
  const int64_t rows = 32, c = 100;
  HostTensor x = filled(DType::kFloat32, {rows, c}, 0.0, 4.0, 31);
  HostTensor y = labels(DType::kFloat32, rows, c, true, 32);
  HostTensor loss(DType::kFloat32, {rows}), bp(DType::kFloat32, {rows, c});
  ASSERT_TRUE(
      mantissa::softmax_cross_entropy_with_logits(
          {.features = view(x), .labels = view(y), .loss = view(loss), .backprop = view(bp)})
          .ok());
  for (int64_t r = 0; r < rows; ++r) {
    long double max = -INFINITY, sum = 0.0L, l = 0.0L;
    for (int64_t i = 0; i < c; ++i) {
      max = std::max<long double>(max, mantissa::precision::in_f32(x, r * c + i));
    }
    for (int64_t i = 0; i < c; ++i)
      sum += std::exp(mantissa::precision::in_f32(x, r * c + i) - max);
    for (int64_t i = 0; i < c; ++i) {
      const long double shifted = mantissa::precision::in_f32(x, r * c + i) - max;
      const long double label = mantissa::precision::in_f32(y, r * c + i);
      l += label * (std::log(sum) - shifted);
      const long double g = std::exp(shifted) / sum - label;
      EXPECT_NEAR(mantissa::precision::in_f32(bp, r * c + i), static_cast<double>(g), 4 * 0x1p-24)
          << r << " " << i;
    }
    EXPECT_NEAR(mantissa::precision::in_f32(loss, r), static_cast<double>(l),
                4 * 0x1p-24 * std::max<double>(1.0, static_cast<double>(l)))
        << r;
  }
}

struct Call {
  HostTensor x = filled(DType::kFloat16, {4, 6}, 0.0, 1.0, 1);
  HostTensor y = labels(DType::kFloat16, 4, 6, true, 2);
  HostTensor loss = sentinel(DType::kFloat16, {4});
  HostTensor bp = sentinel(DType::kFloat16, {4, 6});
  mantissa::SoftmaxCrossEntropyWithLogitsTensors tensors() {
    return {view(x), view(y), view(loss), view(bp)};
  }
};

struct Row {
  const char* what;
  void (*mutate)(Call&, mantissa::SoftmaxCrossEntropyWithLogitsTensors&);
  StatusCode code;
  const char* arg;
};

std::vector<Row> rows() {
  using T = mantissa::SoftmaxCrossEntropyWithLogitsTensors;
  return {
      {"features null", [](Call&, T& t) { t.features.data = nullptr; }, StatusCode::kParamNullptr,
       "features"},
      {"features int32",
       [](Call&, T& t) {
         t.features.dtype = DType::kInt32;
         t.features.shape[1] = 3;
       },
       StatusCode::kParamInvalid, "features"},
      {"labels dtype",
       [](Call& c, T& t) {
         c.y = labels(DType::kFloat32, 4, 6, true, 3);
         t.labels = view(c.y);
       },
       StatusCode::kParamInvalid, "labels"},
      {"features rank 1",
       [](Call&, T& t) {
         t.features.rank = 1;
         t.features.shape[0] = 24;
       },
       StatusCode::kParamInvalid, "features"},
      {"features rank 3",
       [](Call&, T& t) {
         t.features = TensorView(t.features.data, DType::kFloat16, {2, 2, 6});
       },
       StatusCode::kParamInvalid, "features"},
      {"labels shape",
       [](Call&, T& t) {
         t.labels = TensorView(t.labels.data, DType::kFloat16, {6, 4});
       },
       StatusCode::kParamInvalid, "labels"},
      {"loss shape", [](Call&, T& t) { t.loss = TensorView(t.loss.data, DType::kFloat16, {3}); },
       StatusCode::kParamInvalid, "loss"},
      {"loss dtype", [](Call&, T& t) { t.loss = TensorView(t.loss.data, DType::kBFloat16, {4}); },
       StatusCode::kParamInvalid, "loss"},
      {"backprop shape",
       [](Call&, T& t) {
         t.backprop = TensorView(t.backprop.data, DType::kFloat16, {4, 5});
       },
       StatusCode::kParamInvalid, "backprop"},
      {"backprop over features", [](Call&, T& t) { t.backprop.data = t.features.data; },
       StatusCode::kParamInvalid, "backprop"},
      {"loss inside backprop", [](Call&, T& t) { t.loss.data = t.backprop.data; },
       StatusCode::kParamInvalid, "loss"},
  };
}

TEST(SoftmaxCrossEntropyWithLogitsValidation, RowsThroughTheCppApi) {
  {
    Call c;
    ASSERT_TRUE(mantissa::softmax_cross_entropy_with_logits(c.tensors()).ok());
    HostTensor loss1 = sentinel(DType::kFloat16, {4, 1});  // the class dim kept as 1
    auto t = c.tensors();
    t.loss = view(loss1);
    EXPECT_TRUE(mantissa::softmax_cross_entropy_with_logits(t).ok());
  }
  for (const Row& row : rows()) {
    SCOPED_TRACE(row.what);
    Call c;
    auto t = c.tensors();
    row.mutate(c, t);
    const Status s = mantissa::softmax_cross_entropy_with_logits(t);
    EXPECT_EQ(s.code(), row.code);
    EXPECT_NE(s.message().find("SoftmaxCrossEntropyWithLogits"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(row.arg), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(c.loss));
    if (t.backprop.data == c.bp.data()) {
      EXPECT_TRUE(untouched(c.bp));
    }
  }
}

TEST(SoftmaxCrossEntropyWithLogitsValidation, RowsThroughAclnn) {
  for (const Row& row : rows()) {
    if (row.code == StatusCode::kParamNullptr) continue;  // a null handle is covered below
    SCOPED_TRACE(row.what);
    Call c;
    auto t = c.tensors();
    row.mutate(c, t);
    aclTensor *x = acl(t.features), *y = acl(t.labels), *l = acl(t.loss), *b = acl(t.backprop);
    uint64_t size = 0;
    aclOpExecutor* e = nullptr;
    const aclnnStatus s = aclnnSoftmaxCrossEntropyWithLogitsGetWorkspaceSize(x, y, l, b, &size, &e);
    EXPECT_EQ(s, static_cast<aclnnStatus>(row.code));
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find(row.arg), std::string::npos) << msg;
    EXPECT_TRUE(untouched(c.loss));
    for (aclTensor* h : {x, y, l, b}) aclDestroyTensor(h);
  }
  Call c;
  auto t = c.tensors();
  aclTensor *y = acl(t.labels), *l = acl(t.loss), *b = acl(t.backprop);
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnSoftmaxCrossEntropyWithLogitsGetWorkspaceSize(nullptr, y, l, b, &size, &e),
            static_cast<aclnnStatus>(StatusCode::kParamNullptr));
  for (aclTensor* h : {y, l, b}) aclDestroyTensor(h);
}

// Transposed features and labels (column-major views of [N, C]) through aclnn: staged through the
// workspace, the same bits as the contiguous call.
TEST(SoftmaxCrossEntropyWithLogitsAclnn, TransposedInputsGiveTheContiguousBits) {
  const int64_t n = 5, c = 37;
  HostTensor x = filled(DType::kBFloat16, {n, c}, 0.0, 2.0, 41);
  HostTensor y = labels(DType::kBFloat16, n, c, true, 42);
  HostTensor loss_ref(DType::kBFloat16, {n}), bp_ref(DType::kBFloat16, {n, c});
  ASSERT_TRUE(
      mantissa::softmax_cross_entropy_with_logits({view(x), view(y), view(loss_ref), view(bp_ref)})
          .ok());
  // Column-major copies.
  HostTensor xt(DType::kBFloat16, {c, n}), yt(DType::kBFloat16, {c, n});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      xt.set_bits(j * n + i, x.bits(i * c + j));
      yt.set_bits(j * n + i, y.bits(i * c + j));
    }
  }
  HostTensor loss(DType::kBFloat16, {n}), bp(DType::kBFloat16, {n, c});
  const TensorView xv(xt.data(), DType::kBFloat16, {n, c}), yv(yt.data(), DType::kBFloat16, {n, c});
  aclTensor* xa = acl(xv, {1, n}, {c, n});
  aclTensor* ya = acl(yv, {1, n}, {c, n});
  aclTensor *la = acl(view(loss)), *ba = acl(view(bp));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(aclnnSoftmaxCrossEntropyWithLogitsGetWorkspaceSize(xa, ya, la, ba, &size, &e), 0);
  EXPECT_GT(size, 0u);
  std::vector<uint8_t> ws(size);
  ASSERT_EQ(aclnnSoftmaxCrossEntropyWithLogits(ws.data(), size, e, nullptr), 0);
  expect_same_bits(loss, loss_ref, "loss");
  expect_same_bits(bp, bp_ref, "backprop");
  for (aclTensor* h : {xa, ya, la, ba}) aclDestroyTensor(h);
}

}  // namespace

}  // namespace mantissa::testing
