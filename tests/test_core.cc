// Core: dtypes, tensor views, status names, runtime settings and the deterministic parallel-for.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/parallel.h"
#include "mantissa/mantissa.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(dtype_size(DType::kFloat32), 4u);
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  EXPECT_EQ(dtype_size(static_cast<DType>(99)), 0u);
  EXPECT_STREQ(dtype_name(DType::kFloat16), "FLOAT16");
  EXPECT_STREQ(dtype_short_name(DType::kBFloat16), "bf16");
  EXPECT_EQ(dtype_from_name("bf16"), DType::kBFloat16);
  EXPECT_EQ(dtype_from_name("FLOAT"), DType::kFloat32);
  EXPECT_EQ(dtype_from_name("fp8"), DType::kUndefined);
  EXPECT_EQ(dtype_from_name(nullptr), DType::kUndefined);
  EXPECT_EQ(static_cast<int>(DType::kBFloat16), 27);  // CANN's ACL_BF16
}

TEST(Status, CodesAreCanns) {
  EXPECT_EQ(static_cast<int>(StatusCode::kParamNullptr), 161001);
  EXPECT_EQ(static_cast<int>(StatusCode::kParamInvalid), 161002);
  EXPECT_EQ(static_cast<int>(StatusCode::kTiling), 561002);
  EXPECT_EQ(static_cast<int>(StatusCode::kFindKernel), 561003);
  EXPECT_STREQ(status_code_name(StatusCode::kParamInvalid), "ACLNN_ERR_PARAM_INVALID");
  const Status ok;
  EXPECT_TRUE(ok.ok());
  const Status bad(StatusCode::kTiling, "x");
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.raw_code(), 561002);
}

TEST(TensorView, ContiguousStridesAndCounts) {
  float data[24];
  const TensorView t(data, DType::kFloat32, {2, 3, 4});
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.strides[0], 12);
  EXPECT_EQ(t.strides[1], 4);
  EXPECT_EQ(t.strides[2], 1);
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.nbytes(), 96);
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.shape_string(), "[2, 3, 4]");
  const TensorView scalar(data, DType::kFloat16, std::span<const int64_t>{});
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.nbytes(), 2);
  const TensorView empty(nullptr, DType::kFloat32, {3, 0, 5});
  EXPECT_EQ(empty.numel(), 0);
}

TEST(TensorView, OverflowAndBadShapesAreRejected) {
  const TensorView huge(nullptr, DType::kFloat32, {INT64_MAX / 2, 3});
  EXPECT_FALSE(huge.numel().has_value());
  const TensorView bytes_overflow(nullptr, DType::kFloat32, {INT64_MAX / 2});
  EXPECT_TRUE(bytes_overflow.numel().has_value());
  EXPECT_FALSE(bytes_overflow.nbytes().has_value());
  const TensorView negative(nullptr, DType::kFloat32, {4, -1});
  EXPECT_FALSE(negative.numel().has_value());
  const std::vector<int64_t> nine(9, 1);
  const TensorView rank9(nullptr, DType::kFloat32, nine);
  EXPECT_EQ(rank9.rank, 9);
  EXPECT_FALSE(rank9.numel().has_value());
  EXPECT_FALSE(rank9.is_contiguous());
}

TEST(TensorView, StridedViewsAndOverlap) {
  float data[32];
  const int64_t shape[] = {4, 4};
  const int64_t transposed[] = {1, 4};
  const TensorView t(data, DType::kFloat32, shape, transposed);
  EXPECT_FALSE(t.is_contiguous());
  const int64_t unit_dims[] = {4, 1};
  const int64_t odd_strides[] = {1, 99};  // a size-1 dim's stride does not matter
  EXPECT_TRUE(TensorView(data, DType::kFloat32, unit_dims, odd_strides).is_contiguous());
  const TensorView a(data, DType::kFloat32, {16});
  const TensorView b(data + 8, DType::kFloat32, {16});
  const TensorView c(data + 16, DType::kFloat32, {16});
  EXPECT_TRUE(memory_overlaps(a, b));
  EXPECT_FALSE(memory_overlaps(a, c));
  EXPECT_TRUE(same_view(a, TensorView(data, DType::kFloat32, {16})));
  EXPECT_FALSE(same_view(a, TensorView(data, DType::kFloat32, {4, 4})));
}

TEST(Runtime, ThreadsAndTargets) {
  testing::ThreadCountGuard guard;
  EXPECT_GE(num_threads(), 1);
  ASSERT_TRUE(set_num_threads(3).ok());
  EXPECT_EQ(num_threads(), 3);
  EXPECT_EQ(set_num_threads(-1).code(), StatusCode::kParamInvalid);
  ASSERT_TRUE(set_num_threads(0).ok());
  EXPECT_GE(num_threads(), 1);
  const auto available = available_simd_targets();
  ASSERT_FALSE(available.empty());
  EXPECT_EQ(simd_target(), available.front());
  const Status bad = set_simd_target("NOT_A_TARGET");
  EXPECT_EQ(bad.code(), StatusCode::kParamInvalid);
  EXPECT_NE(bad.message().find("NOT_A_TARGET"), std::string::npos);
  EXPECT_EQ(simd_target(), available.front());
  testing::for_each_target([](const std::string& target) { EXPECT_EQ(simd_target(), target); });
  EXPECT_EQ(simd_target(), available.front());
}

// AVX3_BF16 (AVX3 kernels narrowing bf16 with AVX512-BF16) is offered, just above AVX3, where the
// CPU has the instruction; forcing AVX3 keeps AVX-512 without it.
TEST(Runtime, Bf16ConversionTarget) {
  const auto compiled = compiled_simd_targets();
  const auto available = available_simd_targets();
  const auto position = [](const std::vector<std::string>& v, const std::string& name) {
    return std::find(v.begin(), v.end(), name) - v.begin();
  };
  const auto compiled_bf16 = position(compiled, "AVX3_BF16");
  if (compiled_bf16 != static_cast<std::ptrdiff_t>(compiled.size())) {
    EXPECT_EQ(position(compiled, "AVX3"), compiled_bf16 + 1);
  }
  const auto at = position(available, "AVX3_BF16");
  if (at == static_cast<std::ptrdiff_t>(available.size())) {
    const Status st = set_simd_target("AVX3_BF16");
    EXPECT_EQ(st.code(), StatusCode::kParamInvalid);
    EXPECT_EQ(conversion_paths().find("vcvtneps2bf16"), std::string::npos);
    GTEST_SKIP() << "no AVX512-BF16 here (or MANTISSA_SIMD_TARGET caps below it)";
  }
  EXPECT_NE(cpu_features().find("avx512bf16"), std::string::npos);
  EXPECT_EQ(position(available, "AVX3"), at + 1);
  ASSERT_TRUE(set_simd_target("AVX3_BF16").ok());
  EXPECT_EQ(simd_target(), "AVX3_BF16");
  EXPECT_NE(conversion_paths().find("vcvtneps2bf16"), std::string::npos);
  ASSERT_TRUE(set_simd_target("AVX3").ok());
  EXPECT_EQ(simd_target(), "AVX3");
  EXPECT_EQ(conversion_paths().find("vcvtneps2bf16"), std::string::npos);
  ASSERT_TRUE(set_simd_target("auto").ok());
  EXPECT_EQ(simd_target(), available.front());
}

// The chunks parallel_for produces depend on n and the grain only.
std::set<std::pair<int64_t, int64_t>> chunks_of(int64_t n, int64_t grain) {
  std::mutex mutex;
  std::set<std::pair<int64_t, int64_t>> chunks;
  auto record = [&](int64_t begin, int64_t end) {
    std::lock_guard<std::mutex> lock(mutex);
    chunks.emplace(begin, end);
  };
  detail::parallel_for(n, grain, record);
  return chunks;
}

TEST(ParallelFor, ChunksAreFixedByTheGrainNotTheThreadCount) {
  testing::ThreadCountGuard guard;
  for (int64_t n : {0, 1, 999, 1000, 1001, 123457}) {
    ASSERT_TRUE(set_num_threads(1).ok());
    const auto serial = chunks_of(n, 1000);
    EXPECT_EQ(static_cast<int64_t>(serial.size()), detail::chunk_count(n, 1000));
    for (int threads : {2, 3, 7}) {
      ASSERT_TRUE(set_num_threads(threads).ok());
      EXPECT_EQ(chunks_of(n, 1000), serial) << "n=" << n << " threads=" << threads;
    }
  }
}

TEST(ParallelFor, EveryElementVisitedOnceAndPerChunkSumsAreReproducible) {
  testing::ThreadCountGuard guard;
  const int64_t n = 1'000'003, grain = 4096;
  std::vector<float> x(n);
  for (int64_t i = 0; i < n; ++i) x[i] = 1.0f / static_cast<float>(i + 1);
  std::vector<uint32_t> reference_bits;
  for (int threads : {1, 2, 3, 7}) {
    ASSERT_TRUE(set_num_threads(threads).ok());
    std::vector<std::atomic<int>> visits(n);
    std::vector<float> partial(detail::chunk_count(n, grain));
    auto body = [&](int64_t begin, int64_t end) {
      float s = 0.0f;
      for (int64_t i = begin; i < end; ++i) {
        visits[i].fetch_add(1, std::memory_order_relaxed);
        s += x[i];
      }
      partial[begin / grain] = s;
    };
    detail::parallel_for(n, grain, body);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(visits[i].load(), 1) << i;
    float total = 0.0f;
    for (float p : partial) total += p;
    reference_bits.push_back(std::bit_cast<uint32_t>(total));
  }
  for (uint32_t bits : reference_bits) EXPECT_EQ(bits, reference_bits.front());
}

TEST(ParallelFor, NestedCallsRunSeriallyWithoutDeadlock) {
  testing::ThreadCountGuard guard;
  ASSERT_TRUE(set_num_threads(2).ok());
  std::atomic<int64_t> count{0};
  auto inner = [&](int64_t b, int64_t e) { count += e - b; };
  auto outer = [&](int64_t, int64_t) { detail::parallel_for(100, 10, inner); };
  detail::parallel_for(8, 1, outer);
  EXPECT_EQ(count.load(), 800);
}

// A chunk that throws on a pool worker: the exception comes back to the caller (a worker that let
// it escape would end the process), after every thread has left the body.
TEST(ParallelFor, AnExceptionOnAWorkerIsRethrownInTheCaller) {
  testing::ThreadCountGuard guard;
  ASSERT_TRUE(set_num_threads(2).ok());
  const std::thread::id caller = std::this_thread::get_id();
  for (int trial = 0; trial < 20; ++trial) {
    std::atomic<bool> worker_threw{false};
    std::atomic<int> inside{0};
    auto body = [&](int64_t, int64_t) {
      ++inside;
      if (std::this_thread::get_id() != caller) {
        --inside;
        worker_threw.store(true);
        throw std::runtime_error("chunk failed on a worker");
      }
      // The caller holds its chunk until a worker has thrown. The deadline only bounds a pool
      // that never starts a worker (a failure below); a loaded machine delays a worker by far
      // less than a minute.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (!worker_threw.load() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
      --inside;
    };
    try {
      detail::parallel_for(64, 1, body);
      FAIL() << "no exception (trial " << trial << ")";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "chunk failed on a worker");
    }
    EXPECT_TRUE(worker_threw.load());
    EXPECT_EQ(inside.load(), 0);
  }
  // The pool still works afterwards.
  std::atomic<int64_t> count{0};
  auto add = [&](int64_t b, int64_t e) { count += e - b; };
  detail::parallel_for(1000, 10, add);
  EXPECT_EQ(count.load(), 1000);
}

// The caller's own chunk throws: it waits for the workers (who use the job on its stack) before
// the exception leaves parallel_for.
TEST(ParallelFor, AnExceptionOnTheCallerWaitsForTheWorkers) {
  testing::ThreadCountGuard guard;
  ASSERT_TRUE(set_num_threads(2).ok());
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> inside{0};
  auto body = [&](int64_t, int64_t) {
    if (std::this_thread::get_id() == caller) throw std::logic_error("chunk failed on the caller");
    ++inside;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --inside;
  };
  EXPECT_THROW(detail::parallel_for(64, 1, body), std::logic_error);
  EXPECT_EQ(inside.load(), 0);
}

}  // namespace

}  // namespace mantissa::testing
