// Allocation failures inside the C++ API: an operator that cannot get its scratch memory returns
// 561000 (ACLNN_ERR_INNER) naming itself and leaves its outputs untouched; anything thrown inside
// an entry becomes a status, never an exception (core/entry.h). The address-space limit that
// makes the allocations fail is set only around the call under test.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#include "core/entry.h"
#include "mantissa/ops/add_rms_norm.h"
#include "mantissa/ops/layer_norm_grad.h"
#include "mantissa/ops/rms_norm_grad.h"
#include "mantissa/ops/softmax.h"
#include "mantissa/runtime.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::Status;
using mantissa::StatusCode;
using mantissa::TensorView;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the sanitizers reserve terabytes of address space up front
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// The process's current address-space size in bytes (/proc/self/statm's first field).
uint64_t address_space_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long long pages = 0;
  const int got = std::fscanf(f, "%llu", &pages);
  std::fclose(f);
  return got == 1 ? pages * 4096ull : 0;
}

// Limits the address space to what is mapped now plus `headroom` bytes while alive.
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(uint64_t headroom) {
    getrlimit(RLIMIT_AS, &saved_);
    const rlimit lower{address_space_bytes() + headroom, saved_.rlim_max};
    ok_ = setrlimit(RLIMIT_AS, &lower) == 0;
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  bool ok_ = false;
};

// 8192 rows of 1024: 256 row blocks, 2 MiB of fp64 partials per column sum.
constexpr int64_t kRows = 8192, kN = 1024;

struct NormGradData {
  std::vector<float> dy, x, mean, rstd, gamma, dx, dgamma, dbeta;
  NormGradData()
      : dy(kRows * kN, 0.5f),
        x(kRows * kN, 1.25f),
        mean(kRows, 0.25f),
        rstd(kRows, 2.0f),
        gamma(kN, 0.75f),
        dx(kRows * kN, -7.0f),
        dgamma(kN, -7.0f),
        dbeta(kN, -7.0f) {}
  bool outputs_untouched() const {
    for (const auto* v : {&dx, &dgamma, &dbeta}) {
      for (float e : *v) {
        if (e != -7.0f) return false;
      }
    }
    return true;
  }
};

TEST(AllocFailure, RmsNormGradReportsScratchItCannotGetAndWritesNothing) {
  if (kSanitized) GTEST_SKIP() << "address-space limits do not apply under the sanitizers";
  NormGradData d;
  const mantissa::RmsNormGradTensors t{
      .dy = TensorView(d.dy.data(), DType::kFloat32, {kRows, kN}),
      .x = TensorView(d.x.data(), DType::kFloat32, {kRows, kN}),
      .rstd = TensorView(d.rstd.data(), DType::kFloat32, {kRows}),
      .gamma = TensorView(d.gamma.data(), DType::kFloat32, {kN}),
      .dx = TensorView(d.dx.data(), DType::kFloat32, {kRows, kN}),
      .dgamma = TensorView(d.dgamma.data(), DType::kFloat32, {kN})};
  const uint64_t need = mantissa::rms_norm_grad_workspace_size(t, {});
  ASSERT_GE(need, uint64_t{1} << 20);
  ASSERT_TRUE(mantissa::set_num_threads(1).ok());  // no worker thread to start under the limit
  Status s;
  {
    AddressSpaceLimit limit(256 << 10);
    ASSERT_TRUE(limit.ok());
    s = mantissa::rms_norm_grad(t, {});
  }
  EXPECT_EQ(s.code(), StatusCode::kInner);
  EXPECT_NE(s.message().find("RmsNormGrad"), std::string::npos) << s.message();
  EXPECT_TRUE(d.outputs_untouched());
  // With the scratch lent, the same call under the same limit succeeds.
  std::vector<double> ws(need / sizeof(double));
  {
    AddressSpaceLimit limit(256 << 10);
    ASSERT_TRUE(limit.ok());
    s = mantissa::rms_norm_grad(t, {}, {.data = ws.data(), .size = need});
  }
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_FALSE(d.outputs_untouched());
}

TEST(AllocFailure, LayerNormGradReportsScratchItCannotGetAndWritesNothing) {
  if (kSanitized) GTEST_SKIP() << "address-space limits do not apply under the sanitizers";
  NormGradData d;
  const mantissa::LayerNormGradTensors t{
      .dy = TensorView(d.dy.data(), DType::kFloat32, {kRows, kN}),
      .input = TensorView(d.x.data(), DType::kFloat32, {kRows, kN}),
      .mean = TensorView(d.mean.data(), DType::kFloat32, {kRows, 1}),
      .rstd = TensorView(d.rstd.data(), DType::kFloat32, {kRows, 1}),
      .weight = TensorView(d.gamma.data(), DType::kFloat32, {kN}),
      .bias = std::nullopt,
      .dx = TensorView(d.dx.data(), DType::kFloat32, {kRows, kN}),
      .dweight = TensorView(d.dgamma.data(), DType::kFloat32, {kN}),
      .dbias = TensorView(d.dbeta.data(), DType::kFloat32, {kN})};
  const mantissa::LayerNormGradParams p{.normalized_shape = {kN}};
  const uint64_t need = mantissa::layer_norm_grad_workspace_size(t, p);
  ASSERT_GE(need, uint64_t{1} << 20);
  ASSERT_TRUE(mantissa::set_num_threads(1).ok());  // no worker thread to start under the limit
  Status s;
  {
    AddressSpaceLimit limit(256 << 10);
    ASSERT_TRUE(limit.ok());
    s = mantissa::layer_norm_grad(t, p);
  }
  EXPECT_EQ(s.code(), StatusCode::kInner);
  EXPECT_NE(s.message().find("LayerNormGrad"), std::string::npos) << s.message();
  EXPECT_TRUE(d.outputs_untouched());
}

// AddRmsNorm with its x output over x1 shifted by half a row (an overlap other than in place)
// copies its inputs first (64 MiB here): without them it returns 561000 naming itself and writes
// nothing; with them lent, the same call succeeds under the same limit.
TEST(AllocFailure, AddRmsNormReportsInputCopiesItCannotGetAndWritesNothing) {
  if (kSanitized) GTEST_SKIP() << "address-space limits do not apply under the sanitizers";
  std::vector<float> arena(kRows * kN + kN, 1.5f), x2(kRows * kN, 0.25f), gamma(kN, 0.75f);
  std::vector<float> y(kRows * kN, -7.0f), rstd(kRows, -7.0f);
  const mantissa::AddRmsNormTensors t{
      .x1 = TensorView(arena.data(), DType::kFloat32, {kRows, kN}),
      .x2 = TensorView(x2.data(), DType::kFloat32, {kRows, kN}),
      .gamma = TensorView(gamma.data(), DType::kFloat32, {kN}),
      .y = TensorView(y.data(), DType::kFloat32, {kRows, kN}),
      .rstd = TensorView(rstd.data(), DType::kFloat32, {kRows, 1}),
      .x = TensorView(arena.data() + kN / 2, DType::kFloat32, {kRows, kN})};
  const uint64_t need = mantissa::add_rms_norm_workspace_size(t, {});
  ASSERT_GE(need, uint64_t{64} << 20);
  ASSERT_TRUE(mantissa::set_num_threads(1).ok());  // no worker thread to start under the limit
  const std::vector<float> before = arena;
  Status s;
  {
    AddressSpaceLimit limit(256 << 10);
    ASSERT_TRUE(limit.ok());
    s = mantissa::add_rms_norm(t, {});
  }
  EXPECT_EQ(s.code(), StatusCode::kInner);
  EXPECT_NE(s.message().find("AddRmsNorm"), std::string::npos) << s.message();
  EXPECT_TRUE(arena == before);
  EXPECT_EQ(y[0], -7.0f);
  EXPECT_EQ(rstd[0], -7.0f);
  std::vector<uint64_t> ws(need / sizeof(uint64_t));
  {
    AddressSpaceLimit limit(256 << 10);
    ASSERT_TRUE(limit.ok());
    s = mantissa::add_rms_norm(t, {}, {.data = ws.data(), .size = need});
  }
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(arena[kN / 2], 1.75f);  // x = x1 + x2
  EXPECT_NE(y[0], -7.0f);
}

// Softmax over a non-last axis keeps a tile's exponentials in a per-thread buffer (axis x 64
// floats: 1 MiB here); when the buffer cannot be had, the tile computes them again: the call
// succeeds, with the bits of the call that had it.
TEST(AllocFailure, SoftmaxWithoutItsExponentialsBufferGivesTheSameBits) {
  if (kSanitized) GTEST_SKIP() << "address-space limits do not apply under the sanitizers";
  constexpr int64_t kOuter = 2, kAxis = 4096, kInner = 64;
  std::vector<float> x(kOuter * kAxis * kInner);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 97.0f;
  std::vector<float> constrained(x.size(), -7.0f), free(x.size(), -7.0f);
  auto call = [&](std::vector<float>& out) {
    return mantissa::softmax(
        {.self = TensorView(x.data(), DType::kFloat32, {kOuter, kAxis, kInner}),
         .out = TensorView(out.data(), DType::kFloat32, {kOuter, kAxis, kInner})},
        {.dim = 1});
  };
  ASSERT_TRUE(mantissa::set_num_threads(1).ok());  // no worker thread to start under the limit
  Status s;
  {
    AddressSpaceLimit limit(256 << 10);
    ASSERT_TRUE(limit.ok());
    s = call(constrained);
  }
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(call(free).ok());
  EXPECT_EQ(std::memcmp(constrained.data(), free.data(), x.size() * sizeof(float)), 0);
  EXPECT_NE(constrained[0], -7.0f);
}

TEST(AllocFailure, NothingThrownInsideAnEntryEscapesIt) {
  const Status oom =
      mantissa::detail::guarded_entry("op", []() -> Status { throw std::bad_alloc(); });
  EXPECT_EQ(oom.code(), StatusCode::kInner);
  EXPECT_EQ(oom.message(), "op: out of memory for the call's scratch buffers");
  const Status other = mantissa::detail::guarded_entry(
      "op", []() -> Status { throw std::runtime_error("worker pool"); });
  EXPECT_EQ(other.code(), StatusCode::kInner);
  EXPECT_EQ(other.message(), "op: worker pool");
  const Status any = mantissa::detail::guarded_entry("op", []() -> Status { throw 3; });
  EXPECT_EQ(any.code(), StatusCode::kInner);
  const Status fine = mantissa::detail::guarded_entry("op", []() -> Status { return {}; });
  EXPECT_TRUE(fine.ok());
}

}  // namespace

}  // namespace mantissa::testing
