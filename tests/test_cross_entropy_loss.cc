// CrossEntropyLoss and CrossEntropyLossGrad: bitwise against the kit's golden32 on every SIMD
// target and thread count (vocabularies from 2 to 256K columns, one long row cut into pieces and
// the same row among many, every reduction, weights, label smoothing, z-loss, ignored rows, int32
// and int64 targets), the long-double goldens' accuracy, the stress inputs (huge and -inf logits,
// a row with one finite value, NaN), every target ignored, targets out of range (nothing
// written), every validation rule through the C++ API and aclnn, strided tensors through aclnn,
// and the gradient against finite differences of the fp64 forward.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_cross_entropy_loss.h"
#include "aclnnop/aclnn_cross_entropy_loss_grad.h"
#include "mantissa/ops/cross_entropy_loss.h"
#include "mantissa/runtime.h"
#include "op_support.h"
#include "ops/cross_entropy_loss/cross_entropy_loss_kernel.h"
#include "precision/fp.h"

namespace mantissa::testing {

namespace {

using mantissa::CrossEntropyLossGradParams;
using mantissa::CrossEntropyLossGradTensors;
using mantissa::CrossEntropyLossParams;
using mantissa::CrossEntropyLossTensors;
using mantissa::DType;
using mantissa::LossReduction;
using mantissa::Status;
using mantissa::StatusCode;
using mantissa::TensorView;
using mantissa::detail::CrossEntropyLossGradOp;
using mantissa::detail::CrossEntropyLossOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::sentinel;
using mt::untouched;
using mt::view;

constexpr DType kDtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
constexpr int64_t kIgnore = -100;

// ---- Inputs and outputs of a call -----------------------------------------------------------

HostTensor targets(DType d, const std::vector<int64_t>& values) {
  HostTensor t(d, {static_cast<int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (d == DType::kInt64) {
      std::memcpy(t.bytes.data() + i * 8, &values[i], 8);
    } else {
      t.set_bits(static_cast<int64_t>(i), static_cast<uint32_t>(static_cast<int32_t>(values[i])));
    }
  }
  return t;
}

// Classes in [0, classes), every `ignored_every`-th row (0: none) set to kIgnore.
std::vector<int64_t> random_classes(int64_t rows, int64_t classes, int ignored_every,
                                    uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, classes - 1);
  std::vector<int64_t> v(static_cast<std::size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    v[r] = ignored_every > 0 && r % ignored_every == 1 ? kIgnore : pick(rng);
  }
  return v;
}

struct Forward {
  HostTensor x, target, weight;
  bool weighted = false;
  HostTensor loss, log_prob, zloss, lse;
  CrossEntropyLossParams p;

  Forward(HostTensor input, HostTensor t, std::optional<HostTensor> w,
          CrossEntropyLossParams params)
      : x(std::move(input)), target(std::move(t)), weighted(w.has_value()), p(params) {
    if (w) weight = std::move(*w);
    reset();
  }
  int64_t rows() const { return x.shape[0]; }
  // Outputs of sentinel bytes.
  void reset() {
    const std::vector<int64_t> loss_shape = p.reduction == LossReduction::kNone
                                                ? std::vector<int64_t>{rows()}
                                                : std::vector<int64_t>{1};
    loss = sentinel(x.dtype, loss_shape);
    zloss = sentinel(x.dtype, loss_shape);
    log_prob = sentinel(x.dtype, x.shape);
    lse = sentinel(x.dtype, {rows()});
  }
  CrossEntropyLossTensors tensors() {
    CrossEntropyLossTensors t{.input = view(x),
                              .target = view(target),
                              .weight = std::nullopt,
                              .loss = view(loss),
                              .log_prob = view(log_prob),
                              .zloss = view(zloss),
                              .lse_for_zloss = view(lse)};
    if (weighted) t.weight = view(weight);
    return t;
  }
  Status run() { return mantissa::cross_entropy_loss(tensors(), p); }
  // The outputs golden32 gives for these inputs.
  Forward reference() const {
    Forward r = *this;
    r.reset();
    mt::apply_golden32<CrossEntropyLossOp>(r.tensors(), r.p);
    return r;
  }
  void expect_same_outputs(const Forward& ref, const std::string& what) const {
    expect_same_bits(loss, ref.loss, what + " loss");
    expect_same_bits(log_prob, ref.log_prob, what + " log_prob");
    expect_same_bits(zloss, ref.zloss, what + " zloss");
    expect_same_bits(lse, ref.lse, what + " lse_for_zloss");
  }
  bool untouched_outputs() const {
    return untouched(loss) && untouched(log_prob) && untouched(zloss) && untouched(lse);
  }
};

HostTensor class_weights(int64_t classes, uint32_t seed) {
  return filled(DType::kFloat32, {classes}, 1.0, 0.3, seed);
}

// The options every bitwise sweep covers.
std::vector<CrossEntropyLossParams> option_sets() {
  return {
      {.reduction = LossReduction::kMean},
      {.reduction = LossReduction::kSum, .label_smoothing = 0.1},
      {.reduction = LossReduction::kNone,
       .label_smoothing = 0.25,
       .lse_square_scale_for_zloss = 1e-4},
      {.reduction = LossReduction::kMean,
       .label_smoothing = 0.05,
       .lse_square_scale_for_zloss = 1e-3,
       .return_zloss = true},
  };
}

// aclnnCrossEntropyLoss on a call's own tensors (contiguous, or the handles given).
aclnnStatus run_aclnn(Forward& f, const char* reduction) {
  aclTensor* x = acl(view(f.x));
  aclTensor* t = acl(view(f.target));
  aclTensor* w = f.weighted ? acl(view(f.weight)) : nullptr;
  aclTensor* loss = acl(view(f.loss));
  aclTensor* lp = acl(view(f.log_prob));
  aclTensor* z = acl(view(f.zloss));
  aclTensor* lse = acl(view(f.lse));
  const aclnnStatus s = mt::run_two_phases(
      [&](uint64_t* size, aclOpExecutor** e) {
        return aclnnCrossEntropyLossGetWorkspaceSize(
            x, t, w, reduction, f.p.ignore_index, f.p.label_smoothing,
            f.p.lse_square_scale_for_zloss, f.p.return_zloss, loss, lp, z, lse, size, e);
      },
      [](void* ws, uint64_t size, aclOpExecutor* e) {
        return aclnnCrossEntropyLoss(ws, size, e, nullptr);
      });
  for (aclTensor* h : {x, t, w, loss, lp, z, lse}) {
    if (h != nullptr) aclDestroyTensor(h);
  }
  return s;
}

const char* name_of(LossReduction r) { return mantissa::loss_reduction_name(r); }

// ---- Forward: bits --------------------------------------------------------------------------

TEST(CrossEntropyLoss, BitExactOnEveryTargetAndThreadCount) {
  struct Shape {
    int64_t rows, classes;
  };
  // 2 columns to a row of 4097 (two blocks) and 70001 (18 blocks: cut into pieces, few rows).
  const Shape shapes[] = {{1, 2}, {7, 2}, {5, 7}, {19, 100}, {3, 4097}, {20, 1000}, {2, 70001}};
  for (DType d : kDtypes) {
    for (const Shape& s : shapes) {
      int k = 0;
      for (const CrossEntropyLossParams& p : option_sets()) {
        ++k;
        const bool weighted = k % 2 == 0;
        const DType target_dtype = k == 3 ? DType::kInt32 : DType::kInt64;
        SCOPED_TRACE(std::string(mantissa::dtype_name(d)) + " " + std::to_string(s.rows) + "x" +
                     std::to_string(s.classes) + " options " + std::to_string(k));
        Forward f(filled(d, {s.rows, s.classes}, 0.0, 3.0, static_cast<uint32_t>(s.classes + k)),
                  targets(target_dtype, random_classes(s.rows, s.classes, 3, 5)),
                  weighted ? std::optional(class_weights(s.classes, 9)) : std::nullopt, p);
        const Forward ref = f.reference();
        mt::for_each_target_and_thread_count([&](const std::string&, int) {
          f.reset();
          ASSERT_TRUE(f.run().ok());
          f.expect_same_outputs(ref, "");
        });
        // The aclnn entry computes the same bits.
        f.reset();
        ASSERT_EQ(run_aclnn(f, name_of(p.reduction)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        f.expect_same_outputs(ref, "aclnn");
      }
    }
  }
}

// A long row alone (cut into pieces: its passes run in parallel) and the same row among 16 rows
// (each row whole on one thread) give the same bits, for vocabularies up to 256K columns.
TEST(CrossEntropyLoss, LongRowsCutIntoPiecesGiveTheWholeRowsBits) {
  for (int64_t classes : {65537 + 4096, 128256, 262144}) {
    for (DType d : {DType::kBFloat16, DType::kFloat32}) {
      SCOPED_TRACE(std::to_string(classes) + " " + mantissa::dtype_name(d));
      ASSERT_TRUE(mantissa::detail::cross_entropy_split(1, classes));
      ASSERT_FALSE(mantissa::detail::cross_entropy_split(16, classes));
      const HostTensor row = filled(d, {1, classes}, -1.0, 4.0, 3);
      const CrossEntropyLossParams p{.reduction = LossReduction::kNone,
                                     .label_smoothing = 0.1,
                                     .lse_square_scale_for_zloss = 1e-4};
      Forward one(row, targets(DType::kInt64, {classes - 1}), class_weights(classes, 4), p);
      HostTensor rows16(d, {16, classes});
      for (int64_t r = 0; r < 16; ++r) {
        std::memcpy(rows16.bytes.data() + r * row.bytes.size(), row.bytes.data(), row.bytes.size());
      }
      Forward many(rows16, targets(DType::kInt64, std::vector<int64_t>(16, classes - 1)),
                   class_weights(classes, 4), p);
      const Forward ref = one.reference();
      mt::for_each_target_and_thread_count(
          [&](const std::string&, int) {
            one.reset();
            ASSERT_TRUE(one.run().ok());
            one.expect_same_outputs(ref, "one row");
            many.reset();
            ASSERT_TRUE(many.run().ok());
            for (int64_t r = 0; r < 16; ++r) {
              ASSERT_EQ(std::memcmp(many.log_prob.bytes.data() + r * row.bytes.size(),
                                    one.log_prob.bytes.data(), row.bytes.size()),
                        0)
                  << "row " << r;
              ASSERT_EQ(many.loss.bits(r), one.loss.bits(0)) << "row " << r;
              ASSERT_EQ(many.lse.bits(r), one.lse.bits(0)) << "row " << r;
            }
          },
          {1, 2, 3});
    }
  }
}

// ---- Forward: accuracy against the long-double golden ----------------------------------------

// Units in the last place between a and b (same dtype), treating them as ordered integers.
int64_t ulps(uint32_t a, uint32_t b, DType d) {
  const int bits = d == DType::kFloat32 ? 32 : 16;
  auto ordered = [&](uint32_t v) -> int64_t {
    const uint32_t sign = 1u << (bits - 1);
    const int64_t mag = static_cast<int64_t>(v & (sign - 1));
    return (v & sign) ? -mag : mag;
  };
  return std::llabs(ordered(a) - ordered(b));
}

TEST(CrossEntropyLoss, WithinAFewUlpOfTheLongDoubleGolden) {
  const mantissa::precision::OpEntry* op = mantissa::precision::find_op("CrossEntropyLoss");
  ASSERT_NE(op, nullptr);
  for (DType d : kDtypes) {
    for (int64_t classes : {10, 32000}) {
      const CrossEntropyLossParams p{.reduction = LossReduction::kNone,
                                     .label_smoothing = 0.1,
                                     .lse_square_scale_for_zloss = 1e-4};
      Forward f(filled(d, {16, classes}, 0.0, 3.0, 21),
                targets(DType::kInt64, random_classes(16, classes, 4, 2)),
                class_weights(classes, 6), p);
      ASSERT_TRUE(f.run().ok());
      const std::vector<std::vector<double>> g =
          op->golden(mt::kit_inputs<CrossEntropyLossOp>(f.tensors(), p));
      int64_t worst_lp = 0, worst_loss = 0, worst_lse = 0;
      for (int64_t i = 0; i < f.log_prob.numel(); ++i) {
        worst_lp = std::max(
            worst_lp, ulps(f.log_prob.bits(i), mantissa::precision::round_to_bits(g[1][i], d), d));
      }
      for (int64_t r = 0; r < 16; ++r) {
        worst_loss = std::max(
            worst_loss, ulps(f.loss.bits(r), mantissa::precision::round_to_bits(g[0][r], d), d));
        worst_lse = std::max(
            worst_lse, ulps(f.lse.bits(r), mantissa::precision::round_to_bits(g[3][r], d), d));
      }
      const std::string key = std::string(mantissa::dtype_name(d)) + "_C" + std::to_string(classes);
      RecordProperty("max_ulp_log_prob_" + key, static_cast<int>(worst_lp));
      RecordProperty("max_ulp_loss_" + key, static_cast<int>(worst_loss));
      // fp32: log_prob = (x - m) - L carries L's error (a few ulp of L, which is smaller than
      // |log_prob| for most elements); the 16-bit dtypes round that to within one step.
      EXPECT_LE(worst_lp, d == DType::kFloat32 ? 8 : 1) << key;
      EXPECT_LE(worst_lse, d == DType::kFloat32 ? 4 : 1) << key;
      EXPECT_LE(worst_loss, d == DType::kFloat32 ? 16 : 1) << key;
    }
  }
}

// ---- Forward: stress inputs -----------------------------------------------------------------

float value_of(const HostTensor& t, int64_t i) {
  return static_cast<float>(mantissa::precision::decode_bits(t.bits(i), t.dtype));
}

TEST(CrossEntropyLoss, StressInputs) {
  const float inf = std::numeric_limits<float>::infinity();
  for (DType d : kDtypes) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    const float big = d == DType::kFloat16 ? 60000.0f : 3.0e38f;
    constexpr int64_t kC = 6;
    // Rows: huge logits of both signs; -inf logits; one finite value among -inf; a NaN; +inf;
    // every logit -inf; equal logits.
    const std::vector<std::vector<float>> rows = {
        {big, -big, 1.0f, 0.0f, big, -1.0f},       {-inf, 2.0f, -inf, 1.0f, 0.5f, -inf},
        {-inf, -inf, 7.0f, -inf, -inf, -inf},      {1.0f, std::nanf(""), 0.0f, 2.0f, 3.0f, 4.0f},
        {inf, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f},       {-inf, -inf, -inf, -inf, -inf, -inf},
        {0.25f, 0.25f, 0.25f, 0.25f, 0.25f, 0.25f}};
    const int64_t n = static_cast<int64_t>(rows.size());
    HostTensor x(d, {n, kC});
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t c = 0; c < kC; ++c) {
        x.set_bits(r * kC + c, mantissa::precision::round_to_bits(rows[r][c], d));
      }
    }
    const std::vector<int64_t> cls = {0, 3, 2, 0, 1, 0, 5};
    for (double eps : {0.0, 0.2}) {
      Forward f(x, targets(DType::kInt64, cls), std::nullopt,
                {.reduction = LossReduction::kNone, .label_smoothing = eps});
      const Forward ref = f.reference();
      mt::for_each_target_and_thread_count([&](const std::string&, int) {
        f.reset();
        ASSERT_TRUE(f.run().ok());
        f.expect_same_outputs(ref, "");
      });
      // The huge row: finite loss without smoothing (log-softmax never overflows; smoothing reads
      // the log_prob of -big, -inf in fp32 as in PyTorch), log_prob of a largest logit -log 2
      // (two equal maxima dominate).
      if (eps == 0.0) {
        EXPECT_TRUE(std::isfinite(value_of(f.loss, 0)));
      }
      EXPECT_NEAR(value_of(f.log_prob, 0), -std::log(2.0f), 0.01f);
      // -inf logits: log_prob -inf there, finite elsewhere.
      EXPECT_EQ(value_of(f.log_prob, 1 * kC + 0), -inf);
      EXPECT_TRUE(std::isfinite(value_of(f.loss, 1)) == (eps == 0.0));  // smoothing reads -inf
      // One finite value: its log_prob is 0, the loss 0 without smoothing.
      EXPECT_EQ(value_of(f.log_prob, 2 * kC + 2), 0.0f);
      if (eps == 0.0) {
        EXPECT_EQ(value_of(f.loss, 2), 0.0f);
      }
      // NaN, +inf and an all -inf row: NaN everywhere in the row (canonical).
      for (int64_t r : {3, 4, 5}) {
        EXPECT_TRUE(std::isnan(value_of(f.loss, r))) << r;
        EXPECT_TRUE(std::isnan(value_of(f.log_prob, r * kC))) << r;
        EXPECT_EQ(f.loss.bits(r), mantissa::precision::quiet_nan_bits(d, false)) << r;
      }
      // Equal logits: log_prob = -log C.
      EXPECT_NEAR(value_of(f.log_prob, 6 * kC + 1), -std::log(6.0f), 0.01f);
    }
  }
}

// Every target ignored: mean is 0 / 0 = NaN (as PyTorch's), sum 0, none zeros; the gradient 0.
TEST(CrossEntropyLoss, EveryTargetIgnored) {
  for (DType d : kDtypes) {
    for (LossReduction r : {LossReduction::kMean, LossReduction::kSum, LossReduction::kNone}) {
      SCOPED_TRACE(std::string(mantissa::dtype_name(d)) + " " + name_of(r));
      Forward f(filled(d, {4, 9}, 0.0, 2.0, 8), targets(DType::kInt64, {-1, -1, -1, -1}),
                class_weights(9, 1),
                {.reduction = r,
                 .ignore_index = -1,
                 .label_smoothing = 0.1,
                 .lse_square_scale_for_zloss = 1e-3});
      ASSERT_TRUE(f.run().ok());
      f.expect_same_outputs(f.reference(), "");
      if (r == LossReduction::kMean) {
        EXPECT_EQ(f.loss.bits(0), mantissa::precision::quiet_nan_bits(d, false));
        EXPECT_EQ(f.zloss.bits(0), mantissa::precision::quiet_nan_bits(d, false));
      } else {
        for (int64_t i = 0; i < f.loss.numel(); ++i) {
          EXPECT_EQ(f.loss.bits(i), 0u);
          EXPECT_EQ(f.zloss.bits(i), 0u);
        }
      }
      // log_prob and lse are still every row's.
      EXPECT_TRUE(std::isfinite(value_of(f.log_prob, 0)));
      EXPECT_TRUE(std::isfinite(value_of(f.lse, 3)));
      // The gradient of the loss: zero everywhere.
      HostTensor g =
          filled(d, r == LossReduction::kNone ? std::vector<int64_t>{4} : std::vector<int64_t>{},
                 1.0, 0.0, 1);
      HostTensor out = sentinel(d, {4, 9});
      const Status s = mantissa::cross_entropy_loss_grad({.grad_loss = view(g),
                                                          .log_prob = view(f.log_prob),
                                                          .target = view(f.target),
                                                          .weight = view(f.weight),
                                                          .grad_zloss = std::nullopt,
                                                          .lse_for_zloss = view(f.lse),
                                                          .out = view(out)},
                                                         {.reduction = r,
                                                          .ignore_index = -1,
                                                          .label_smoothing = 0.1,
                                                          .lse_square_scale_for_zloss = 1e-3});
      ASSERT_TRUE(s.ok()) << s.message();
      for (int64_t i = 0; i < out.numel(); ++i) ASSERT_EQ(out.bits(i), 0u) << i;
    }
  }
}

// PyTorch's semantics on a small case computed here in long double: class weights, mean over the
// targets' weights, label smoothing (torch's formula), ignored rows.
TEST(CrossEntropyLoss, PyTorchSemantics) {
  const std::vector<float> xs = {1.0f, 2.0f, 0.5f, -1.0f, 0.0f, 3.0f, 1.5f, 1.5f, -2.0f};
  const std::vector<float> ws = {0.5f, 2.0f, 1.0f};
  const std::vector<int64_t> cls = {1, kIgnore, 2};
  HostTensor x(DType::kFloat32, {3, 3}), w(DType::kFloat32, {3});
  std::memcpy(x.data(), xs.data(), 36);
  std::memcpy(w.data(), ws.data(), 12);
  for (double eps : {0.0, 0.3}) {
    long double total = 0, wsum = 0;
    for (int r = 0; r < 3; ++r) {
      if (cls[r] == kIgnore) continue;
      long double m = -INFINITY, s = 0;
      for (int c = 0; c < 3; ++c) m = std::max<long double>(m, xs[r * 3 + c]);
      for (int c = 0; c < 3; ++c) s += std::exp(xs[r * 3 + c] - m);
      const long double lse = m + std::log(s);
      long double smooth = 0;
      for (int c = 0; c < 3; ++c) smooth += ws[c] * (lse - xs[r * 3 + c]);
      total += (1 - eps) * ws[cls[r]] * (lse - xs[r * 3 + cls[r]]) + eps / 3 * smooth;
      wsum += ws[cls[r]];
    }
    Forward f(x, targets(DType::kInt64, cls), w,
              {.reduction = LossReduction::kMean, .label_smoothing = eps});
    ASSERT_TRUE(f.run().ok());
    EXPECT_NEAR(value_of(f.loss, 0), static_cast<double>(total / wsum), 1e-6) << eps;
  }
}

// ---- Forward: validation --------------------------------------------------------------------

// A call whose inputs a row of the table changes; reduction_string is aclnn's.
struct BadCall {
  std::string what;
  std::function<void(Forward&)> change;
  StatusCode cpp;
  aclnnStatus aclnn;
  const char* reduction_string = nullptr;  // null: the name of p.reduction
};

Forward valid_call() {
  return Forward(filled(DType::kFloat32, {4, 5}, 0.0, 1.0, 1),
                 targets(DType::kInt64, {0, 4, kIgnore, 2}), class_weights(5, 2),
                 {.reduction = LossReduction::kMean});
}

TEST(CrossEntropyLossValidation, EveryRuleThroughTheCppApiAndAclnn) {
  constexpr StatusCode kInvalid = StatusCode::kParamInvalid;
  const std::vector<BadCall> rows = {
      {"input INT32",
       [](Forward& f) {
         f.x = HostTensor(DType::kInt32, {4, 5});
       },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"input rank 3",
       [](Forward& f) {
         f.x = filled(DType::kFloat32, {4, 5, 1}, 0, 1, 1);
       },
       kInvalid, ACLNN_ERR_INNER_TILING_ERROR},
      {"no classes",
       [](Forward& f) {
         f.x = HostTensor(DType::kFloat32, {4, 0});
       },
       kInvalid, ACLNN_ERR_INNER_TILING_ERROR},
      {"target FLOAT", [](Forward& f) { f.target = HostTensor(DType::kFloat32, {4}); }, kInvalid,
       ACLNN_ERR_PARAM_INVALID},
      {"target [5]",
       [](Forward& f) {
         f.target = targets(DType::kInt64, {0, 1, 2, 3, 4});
       },
       kInvalid, ACLNN_ERR_INNER_TILING_ERROR},
      {"target rank 2",
       [](Forward& f) {
         f.target = HostTensor(DType::kInt64, {4, 1});
       },
       kInvalid, ACLNN_ERR_INNER_TILING_ERROR},
      {"weight FLOAT16", [](Forward& f) { f.weight = HostTensor(DType::kFloat16, {5}); }, kInvalid,
       ACLNN_ERR_PARAM_INVALID},
      {"weight [6]", [](Forward& f) { f.weight = class_weights(6, 1); }, kInvalid,
       ACLNN_ERR_INNER_TILING_ERROR},
      {"loss [4] with mean", [](Forward& f) { f.loss = sentinel(DType::kFloat32, {4}); }, kInvalid,
       ACLNN_ERR_PARAM_INVALID},
      {"loss [1] with none",
       [](Forward& f) {
         f.p.reduction = LossReduction::kNone;
         f.zloss = sentinel(DType::kFloat32, {4});
       },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"zloss [2]", [](Forward& f) { f.zloss = sentinel(DType::kFloat32, {2}); }, kInvalid,
       ACLNN_ERR_PARAM_INVALID},
      {"log_prob [4, 6]",
       [](Forward& f) {
         f.log_prob = sentinel(DType::kFloat32, {4, 6});
       },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"lse_for_zloss [5]", [](Forward& f) { f.lse = sentinel(DType::kFloat32, {5}); }, kInvalid,
       ACLNN_ERR_PARAM_INVALID},
      {"log_prob FLOAT16",
       [](Forward& f) {
         f.log_prob = sentinel(DType::kFloat16, {4, 5});
       },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"label_smoothing 1.5", [](Forward& f) { f.p.label_smoothing = 1.5; }, kInvalid,
       ACLNN_ERR_INNER_TILING_ERROR},
      {"label_smoothing -0.1", [](Forward& f) { f.p.label_smoothing = -0.1; }, kInvalid,
       ACLNN_ERR_INNER_TILING_ERROR},
      {"label_smoothing NaN", [](Forward& f) { f.p.label_smoothing = std::nan(""); }, kInvalid,
       ACLNN_ERR_INNER_TILING_ERROR},
      {"lse_square_scale_for_zloss 1", [](Forward& f) { f.p.lse_square_scale_for_zloss = 1.0; },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"lse_square_scale_for_zloss -0.5", [](Forward& f) { f.p.lse_square_scale_for_zloss = -0.5; },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"reduction 7 / \"avg\"", [](Forward& f) { f.p.reduction = static_cast<LossReduction>(7); },
       kInvalid, ACLNN_ERR_INNER_TILING_ERROR, "avg"},
      {"target out of range (5)",
       [](Forward& f) {
         f.target = targets(DType::kInt64, {0, 5, 1, 2});
       },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"target negative (-1, not ignore_index)",
       [](Forward& f) {
         f.target = targets(DType::kInt32, {0, 1, -1, 2});
       },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
  };
  for (const BadCall& row : rows) {
    SCOPED_TRACE(row.what);
    Forward f = valid_call();
    row.change(f);
    const Status s = f.run();
    EXPECT_EQ(s.code(), row.cpp) << s.message();
    EXPECT_NE(s.message().find("CrossEntropyLoss"), std::string::npos) << s.message();
    EXPECT_TRUE(f.untouched_outputs());
    const char* reduction =
        row.reduction_string != nullptr ? row.reduction_string : name_of(f.p.reduction);
    EXPECT_EQ(run_aclnn(f, reduction), row.aclnn) << aclGetRecentErrMsg();
    EXPECT_TRUE(f.untouched_outputs());
  }
  // A target out of range: the message names the row and the value.
  Forward f = valid_call();
  f.target = targets(DType::kInt64, {0, 1, 2, 7000});
  const Status s = f.run();
  EXPECT_NE(s.message().find("target[3] = 7000"), std::string::npos) << s.message();
  // A null reduction string is "mean".
  f = valid_call();
  const Forward ref = f.reference();
  ASSERT_EQ(run_aclnn(f, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  f.expect_same_outputs(ref, "null reduction");
  // log_prob overlapping input.
  f = valid_call();
  CrossEntropyLossTensors t = f.tensors();
  t.log_prob = t.input;
  EXPECT_EQ(mantissa::cross_entropy_loss(t, f.p).code(), StatusCode::kParamInvalid);
  // Null data: 161001.
  t = f.tensors();
  t.input.data = nullptr;
  EXPECT_EQ(mantissa::cross_entropy_loss(t, f.p).code(), StatusCode::kParamNullptr);
  // Null handles: 161001; a null weightOptional is absent.
  f = valid_call();
  aclTensor* x = acl(view(f.x));
  aclTensor* tg = acl(view(f.target));
  aclTensor* loss = acl(view(f.loss));
  aclTensor* lp = acl(view(f.log_prob));
  aclTensor* z = acl(view(f.zloss));
  aclTensor* lse = acl(view(f.lse));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  auto phase_one = [&](aclTensor* a, aclTensor* b, aclTensor* c, aclTensor* d, aclTensor* g,
                       aclTensor* h, uint64_t* sz) {
    return aclnnCrossEntropyLossGetWorkspaceSize(a, b, nullptr, "mean", -100, 0.0, 0.0, false, c, d,
                                                 g, h, sz, &e);
  };
  EXPECT_EQ(phase_one(nullptr, tg, loss, lp, z, lse, &size), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(phase_one(x, nullptr, loss, lp, z, lse, &size), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(phase_one(x, tg, nullptr, lp, z, lse, &size), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(phase_one(x, tg, loss, nullptr, z, lse, &size), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(phase_one(x, tg, loss, lp, nullptr, lse, &size), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(phase_one(x, tg, loss, lp, z, nullptr, &size), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(phase_one(x, tg, loss, lp, z, lse, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(f.untouched_outputs());
  for (aclTensor* h : {x, tg, loss, lp, z, lse}) aclDestroyTensor(h);
}

// ---- Forward: strided through aclnn ---------------------------------------------------------

// input transposed in memory, target every other int64, log_prob written transposed: staged
// through the workspace, the contiguous call's bits.
TEST(CrossEntropyLossAclnn, StridedTensorsGiveTheContiguousBits) {
  constexpr int64_t kRows = 37, kC = 19;
  for (DType d : kDtypes) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    Forward f(filled(d, {kRows, kC}, 0.0, 2.0, 5),
              targets(DType::kInt64, random_classes(kRows, kC, 4, 7)), class_weights(kC, 3),
              {.reduction = LossReduction::kNone, .label_smoothing = 0.1});
    const Forward ref = f.reference();
    HostTensor xt(d, {kC, kRows}), lpt = sentinel(d, {kC, kRows});
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kC; ++j) xt.set_bits(j * kRows + i, f.x.bits(i * kC + j));
    }
    HostTensor t2(DType::kInt64, {2 * kRows});
    for (int64_t i = 0; i < kRows; ++i)
      std::memcpy(t2.bytes.data() + 16 * i, f.target.bytes.data() + 8 * i, 8);
    TensorView xv = view(f.x), lpv = view(f.log_prob), tv = view(f.target);
    xv.data = xt.data();
    lpv.data = lpt.data();
    tv.data = t2.data();
    aclTensor* x = acl(xv, {1, kRows}, {kC, kRows});
    aclTensor* lp = acl(lpv, {1, kRows}, {kC, kRows});
    aclTensor* t = acl(tv, {2}, {2 * kRows});
    aclTensor* w = acl(view(f.weight));
    aclTensor* loss = acl(view(f.loss));
    aclTensor* z = acl(view(f.zloss));
    aclTensor* lse = acl(view(f.lse));
    uint64_t size = 0;
    ASSERT_EQ(mt::run_two_phases(
                  [&](uint64_t* s, aclOpExecutor** e) {
                    const aclnnStatus st = aclnnCrossEntropyLossGetWorkspaceSize(
                        x, t, w, "none", kIgnore, 0.1, 0.0, false, loss, lp, z, lse, s, e);
                    size = *s;
                    return st;
                  },
                  [](void* ws, uint64_t sz, aclOpExecutor* e) {
                    return aclnnCrossEntropyLoss(ws, sz, e, nullptr);
                  }),
              ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    EXPECT_GT(size, 0u);
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kC; ++j) {
        ASSERT_EQ(lpt.bits(j * kRows + i), ref.log_prob.bits(i * kC + j)) << i << " " << j;
      }
    }
    expect_same_bits(f.loss, ref.loss, "loss");
    expect_same_bits(f.lse, ref.lse, "lse_for_zloss");
    for (aclTensor* h : {x, lp, t, w, loss, z, lse}) aclDestroyTensor(h);
  }
}

// ---- The gradient ---------------------------------------------------------------------------

struct Backward {
  HostTensor grad_loss, log_prob, target, weight, grad_zloss, lse, out;
  bool weighted = false, with_grad_zloss = false, with_lse = false;
  CrossEntropyLossGradParams p;

  CrossEntropyLossGradTensors tensors() {
    CrossEntropyLossGradTensors t{.grad_loss = view(grad_loss),
                                  .log_prob = view(log_prob),
                                  .target = view(target),
                                  .weight = std::nullopt,
                                  .grad_zloss = std::nullopt,
                                  .lse_for_zloss = std::nullopt,
                                  .out = view(out)};
    if (weighted) t.weight = view(weight);
    if (with_grad_zloss) t.grad_zloss = view(grad_zloss);
    if (with_lse) t.lse_for_zloss = view(lse);
    return t;
  }
  Status run() { return mantissa::cross_entropy_loss_grad(tensors(), p); }
  HostTensor reference() {
    Backward r = *this;
    r.out = sentinel(out.dtype, out.shape);
    mt::apply_golden32<CrossEntropyLossGradOp>(r.tensors(), r.p);
    return r.out;
  }
};

CrossEntropyLossGradParams grad_params(const CrossEntropyLossParams& p) {
  return {.reduction = p.reduction,
          .ignore_index = p.ignore_index,
          .label_smoothing = p.label_smoothing,
          .lse_square_scale_for_zloss = p.lse_square_scale_for_zloss};
}

// The backward of a forward call (run first): gradLoss of the loss's shape, gradZloss when the
// forward has a z-loss.
Backward backward_of(Forward& f, uint32_t seed) {
  Backward b;
  const DType d = f.x.dtype;
  const std::vector<int64_t> gshape = f.p.reduction == LossReduction::kNone
                                          ? std::vector<int64_t>{f.rows()}
                                          : std::vector<int64_t>{};
  b.grad_loss = filled(d, gshape, 0.5, 0.25, seed);
  b.log_prob = f.log_prob;
  b.target = f.target;
  b.weight = f.weight;
  b.weighted = f.weighted;
  b.with_lse = f.p.lse_square_scale_for_zloss != 0.0;
  b.with_grad_zloss = b.with_lse;
  b.lse = f.lse;
  b.grad_zloss = filled(d, gshape, 0.1, 0.05, seed + 1);
  b.out = sentinel(d, f.log_prob.shape);
  b.p = grad_params(f.p);
  return b;
}

aclnnStatus run_aclnn(Backward& b, const char* reduction) {
  aclTensor* g = acl(view(b.grad_loss));
  aclTensor* lp = acl(view(b.log_prob));
  aclTensor* t = acl(view(b.target));
  aclTensor* w = b.weighted ? acl(view(b.weight)) : nullptr;
  aclTensor* gz = b.with_grad_zloss ? acl(view(b.grad_zloss)) : nullptr;
  aclTensor* lse = b.with_lse ? acl(view(b.lse)) : nullptr;
  aclTensor* out = acl(view(b.out));
  const aclnnStatus s = mt::run_two_phases(
      [&](uint64_t* size, aclOpExecutor** e) {
        return aclnnCrossEntropyLossGradGetWorkspaceSize(
            g, lp, t, w, gz, lse, reduction, b.p.ignore_index, b.p.label_smoothing,
            b.p.lse_square_scale_for_zloss, out, size, e);
      },
      [](void* ws, uint64_t size, aclOpExecutor* e) {
        return aclnnCrossEntropyLossGrad(ws, size, e, nullptr);
      });
  for (aclTensor* h : {g, lp, t, w, gz, lse, out}) {
    if (h != nullptr) aclDestroyTensor(h);
  }
  return s;
}

TEST(CrossEntropyLossGrad, BitExactOnEveryTargetAndThreadCount) {
  struct Shape {
    int64_t rows, classes;
  };
  const Shape shapes[] = {{1, 2}, {7, 2}, {5, 7}, {19, 100}, {3, 4097}, {2, 70001}};
  for (DType d : kDtypes) {
    for (const Shape& s : shapes) {
      int k = 0;
      for (const CrossEntropyLossParams& p : option_sets()) {
        ++k;
        SCOPED_TRACE(std::string(mantissa::dtype_name(d)) + " " + std::to_string(s.rows) + "x" +
                     std::to_string(s.classes) + " options " + std::to_string(k));
        Forward f(filled(d, {s.rows, s.classes}, 0.0, 3.0, static_cast<uint32_t>(s.classes + k)),
                  targets(k == 3 ? DType::kInt32 : DType::kInt64,
                          random_classes(s.rows, s.classes, 3, 5)),
                  k % 2 == 0 ? std::optional(class_weights(s.classes, 9)) : std::nullopt, p);
        ASSERT_TRUE(f.run().ok());
        Backward b = backward_of(f, static_cast<uint32_t>(k));
        const HostTensor ref = b.reference();
        mt::for_each_target_and_thread_count([&](const std::string&, int) {
          b.out = sentinel(d, f.log_prob.shape);
          ASSERT_TRUE(b.run().ok());
          expect_same_bits(b.out, ref, "out");
        });
        b.out = sentinel(d, f.log_prob.shape);
        ASSERT_EQ(run_aclnn(b, name_of(p.reduction)), ACLNN_SUCCESS) << aclGetRecentErrMsg();
        expect_same_bits(b.out, ref, "aclnn out");
        // Ignored rows are +0 throughout.
        const std::vector<int64_t> cls = random_classes(s.rows, s.classes, 3, 5);
        for (int64_t r = 0; r < s.rows; ++r) {
          if (cls[r] != kIgnore) continue;
          for (int64_t j = 0; j < s.classes; ++j) ASSERT_EQ(b.out.bits(r * s.classes + j), 0u);
        }
      }
    }
  }
}

// The gradient's formula against central differences of the fp64 forward (the kit's long-double
// golden), with weights, smoothing, z-loss and ignored rows, every reduction.
TEST(CrossEntropyLossGrad, MatchesFiniteDifferencesOfTheForward) {
  const mantissa::precision::OpEntry* fwd = mantissa::precision::find_op("CrossEntropyLoss");
  ASSERT_NE(fwd, nullptr);
  constexpr int64_t kRows = 4, kC = 5;
  for (LossReduction r : {LossReduction::kMean, LossReduction::kSum, LossReduction::kNone}) {
    for (const CrossEntropyLossParams& base : option_sets()) {
      CrossEntropyLossParams p = base;
      p.reduction = r;
      SCOPED_TRACE(std::string(name_of(r)) + " eps " + std::to_string(p.label_smoothing) + " s " +
                   std::to_string(p.lse_square_scale_for_zloss));
      Forward f(filled(DType::kFloat32, {kRows, kC}, 0.0, 1.5, 3),
                targets(DType::kInt64, {2, kIgnore, 0, 4}), class_weights(kC, 8), p);
      ASSERT_TRUE(f.run().ok());
      Backward b = backward_of(f, 4);
      ASSERT_TRUE(b.run().ok());
      // d(sum_k gL_k loss_k + sum_k gZ_k zloss_k) / dx by central differences in fp64.
      auto objective = [&](const HostTensor& x) {
        Forward g = f;
        g.x = x;
        const auto out = fwd->golden(mt::kit_inputs<CrossEntropyLossOp>(g.tensors(), p));
        long double v = 0;
        for (std::size_t k = 0; k < out[0].size(); ++k) {
          v += static_cast<long double>(b.grad_loss.numel() == 1 ? value_of(b.grad_loss, 0)
                                                                 : value_of(b.grad_loss, k)) *
               out[0][k];
          if (b.with_grad_zloss) {
            v += static_cast<long double>(b.grad_zloss.numel() == 1 ? value_of(b.grad_zloss, 0)
                                                                    : value_of(b.grad_zloss, k)) *
                 out[2][k];
          }
        }
        return v;
      };
      for (int64_t i = 0; i < kRows * kC; ++i) {
        const float h = 1.0f / 512;
        HostTensor up = f.x, down = f.x;
        up.set_bits(i, mantissa::precision::round_to_bits(value_of(f.x, i) + h, DType::kFloat32));
        down.set_bits(i, mantissa::precision::round_to_bits(value_of(f.x, i) - h, DType::kFloat32));
        const long double step = static_cast<long double>(value_of(up, i)) - value_of(down, i);
        const double numeric = static_cast<double>((objective(up) - objective(down)) / step);
        EXPECT_NEAR(value_of(b.out, i), numeric, 2e-5 + 1e-4 * std::fabs(numeric)) << i;
      }
    }
  }
}

TEST(CrossEntropyLossGrad, WithinTheLongDoubleGolden) {
  const mantissa::precision::OpEntry* op = mantissa::precision::find_op("CrossEntropyLossGrad");
  ASSERT_NE(op, nullptr);
  for (DType d : kDtypes) {
    Forward f(filled(d, {8, 32000}, 0.0, 2.0, 13),
              targets(DType::kInt64, random_classes(8, 32000, 5, 3)), class_weights(32000, 2),
              {.reduction = LossReduction::kMean,
               .label_smoothing = 0.1,
               .lse_square_scale_for_zloss = 1e-4});
    ASSERT_TRUE(f.run().ok());
    Backward b = backward_of(f, 9);
    ASSERT_TRUE(b.run().ok());
    const auto g = op->golden(mt::kit_inputs<CrossEntropyLossGradOp>(b.tensors(), b.p));
    // Relative to the row's largest gradient (the target's element cancels p - 1).
    double worst = 0;
    for (int64_t r = 0; r < 8; ++r) {
      double scale = 0;
      for (int64_t j = 0; j < 32000; ++j) scale = std::max(scale, std::fabs(g[0][r * 32000 + j]));
      for (int64_t j = 0; j < 32000; ++j) {
        const double e = std::fabs(value_of(b.out, r * 32000 + j) - g[0][r * 32000 + j]);
        if (scale > 0) worst = std::max(worst, e / scale);
      }
    }
    RecordProperty(std::string("max_rel_to_row_max_") + mantissa::dtype_name(d),
                   std::to_string(worst));
    EXPECT_LE(worst, d == DType::kFloat32 ? 1e-5 : 1e-2) << mantissa::dtype_name(d);
  }
}

Backward valid_backward() {
  Forward f = valid_call();
  f.p.lse_square_scale_for_zloss = 1e-3;
  EXPECT_TRUE(f.run().ok());
  return backward_of(f, 2);
}

TEST(CrossEntropyLossGradValidation, EveryRuleThroughTheCppApiAndAclnn) {
  constexpr StatusCode kInvalid = StatusCode::kParamInvalid;
  struct Row {
    std::string what;
    std::function<void(Backward&)> change;
    StatusCode cpp;
    aclnnStatus aclnn;
    const char* reduction_string = nullptr;
  };
  const std::vector<Row> rows = {
      {"grad_loss INT32", [](Backward& b) { b.grad_loss = HostTensor(DType::kInt32, {}); },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"grad_loss [4] with mean",
       [](Backward& b) { b.grad_loss = filled(DType::kFloat32, {4}, 1, 0, 1); }, kInvalid,
       ACLNN_ERR_PARAM_INVALID},
      {"grad_loss [] with none",
       [](Backward& b) {
         b.p.reduction = LossReduction::kNone;
         b.with_grad_zloss = false;
       },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"log_prob FLOAT16",
       [](Backward& b) {
         b.log_prob = filled(DType::kFloat16, {4, 5}, 0, 1, 1);
       },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"log_prob rank 3",
       [](Backward& b) {
         b.log_prob = filled(DType::kFloat32, {4, 5, 1}, 0, 1, 1);
       },
       kInvalid, ACLNN_ERR_INNER_TILING_ERROR},
      {"target [3]",
       [](Backward& b) {
         b.target = targets(DType::kInt64, {0, 1, 2});
       },
       kInvalid, ACLNN_ERR_INNER_TILING_ERROR},
      {"weight [4]", [](Backward& b) { b.weight = class_weights(4, 1); }, kInvalid,
       ACLNN_ERR_INNER_TILING_ERROR},
      {"grad_zloss [4] with mean",
       [](Backward& b) { b.grad_zloss = filled(DType::kFloat32, {4}, 1, 0, 1); }, kInvalid,
       ACLNN_ERR_PARAM_INVALID},
      {"lse_for_zloss [3]", [](Backward& b) { b.lse = filled(DType::kFloat32, {3}, 1, 0, 1); },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"lse_for_zloss FLOAT16", [](Backward& b) { b.lse = filled(DType::kFloat16, {4}, 1, 0, 1); },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"lse_for_zloss left out with a z-loss", [](Backward& b) { b.with_lse = false; },
       StatusCode::kParamNullptr, ACLNN_ERR_PARAM_NULLPTR},
      {"out [4, 4]",
       [](Backward& b) {
         b.out = sentinel(DType::kFloat32, {4, 4});
       },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"label_smoothing 2", [](Backward& b) { b.p.label_smoothing = 2.0; }, kInvalid,
       ACLNN_ERR_PARAM_INVALID},
      {"lse_square_scale_for_zloss 1", [](Backward& b) { b.p.lse_square_scale_for_zloss = 1.0; },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
      {"reduction 3 / \"batchmean\"",
       [](Backward& b) { b.p.reduction = static_cast<LossReduction>(3); }, kInvalid,
       ACLNN_ERR_PARAM_INVALID, "batchmean"},
      {"target out of range (9)",
       [](Backward& b) {
         b.target = targets(DType::kInt64, {0, 9, 1, 2});
       },
       kInvalid, ACLNN_ERR_PARAM_INVALID},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    Backward b = valid_backward();
    row.change(b);
    const Status s = b.run();
    EXPECT_EQ(s.code(), row.cpp) << s.message();
    EXPECT_NE(s.message().find("CrossEntropyLossGrad"), std::string::npos) << s.message();
    EXPECT_TRUE(untouched(b.out));
    const char* reduction =
        row.reduction_string != nullptr ? row.reduction_string : name_of(b.p.reduction);
    EXPECT_EQ(run_aclnn(b, reduction), row.aclnn) << aclGetRecentErrMsg();
    EXPECT_TRUE(untouched(b.out));
  }
  // The valid call passes both ways, and out may not overlap log_prob.
  Backward b = valid_backward();
  ASSERT_TRUE(b.run().ok());
  b.out = sentinel(DType::kFloat32, {4, 5});
  ASSERT_EQ(run_aclnn(b, "mean"), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  CrossEntropyLossGradTensors t = b.tensors();
  t.out = t.log_prob;
  EXPECT_EQ(mantissa::cross_entropy_loss_grad(t, b.p).code(), StatusCode::kParamInvalid);
  // Null handles.
  aclTensor* g = acl(view(b.grad_loss));
  aclTensor* lp = acl(view(b.log_prob));
  aclTensor* tg = acl(view(b.target));
  aclTensor* out = acl(view(b.out));
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  for (int k = 0; k < 4; ++k) {
    aclTensor* h[4] = {g, lp, tg, out};
    h[k] = nullptr;
    EXPECT_EQ(aclnnCrossEntropyLossGradGetWorkspaceSize(h[0], h[1], h[2], nullptr, nullptr, nullptr,
                                                        "sum", -100, 0.0, 0.0, h[3], &size, &e),
              ACLNN_ERR_PARAM_NULLPTR)
        << k;
  }
  for (aclTensor* h : {g, lp, tg, out}) aclDestroyTensor(h);
}

// log_prob and out transposed in memory through aclnn: the contiguous call's bits.
TEST(CrossEntropyLossGradAclnn, StridedTensorsGiveTheContiguousBits) {
  constexpr int64_t kRows = 29, kC = 23;
  for (DType d : kDtypes) {
    SCOPED_TRACE(mantissa::dtype_name(d));
    Forward f(filled(d, {kRows, kC}, 0.0, 2.0, 5),
              targets(DType::kInt64, random_classes(kRows, kC, 4, 7)), class_weights(kC, 3),
              {.reduction = LossReduction::kSum, .label_smoothing = 0.2});
    ASSERT_TRUE(f.run().ok());
    Backward b = backward_of(f, 3);
    const HostTensor ref = b.reference();
    HostTensor lpt(d, {kC, kRows}), outt = sentinel(d, {kC, kRows});
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kC; ++j) lpt.set_bits(j * kRows + i, b.log_prob.bits(i * kC + j));
    }
    TensorView lpv = view(b.log_prob), ov = view(b.out);
    lpv.data = lpt.data();
    ov.data = outt.data();
    aclTensor* g = acl(view(b.grad_loss));
    aclTensor* lp = acl(lpv, {1, kRows}, {kC, kRows});
    aclTensor* t = acl(view(b.target));
    aclTensor* w = acl(view(b.weight));
    aclTensor* out = acl(ov, {1, kRows}, {kC, kRows});
    ASSERT_EQ(mt::run_two_phases(
                  [&](uint64_t* s, aclOpExecutor** e) {
                    return aclnnCrossEntropyLossGradGetWorkspaceSize(
                        g, lp, t, w, nullptr, nullptr, "sum", kIgnore, 0.2, 0.0, out, s, e);
                  },
                  [](void* ws, uint64_t sz, aclOpExecutor* e) {
                    return aclnnCrossEntropyLossGrad(ws, sz, e, nullptr);
                  }),
              ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    for (int64_t i = 0; i < kRows; ++i) {
      for (int64_t j = 0; j < kC; ++j) {
        ASSERT_EQ(outt.bits(j * kRows + i), ref.bits(i * kC + j)) << i << " " << j;
      }
    }
    for (aclTensor* h : {g, lp, t, w, out}) aclDestroyTensor(h);
  }
}

}  // namespace

}  // namespace mantissa::testing
