// SoftmaxGrad and LogSoftmaxGrad: bitwise against the kit's golden32 on every SIMD target and
// thread count (last axis and every dim of a rank-4 tensor, long rows and long non-last axes,
// large gradient offsets), in place, special rows (NaN output rows, zero probabilities, inf and
// NaN gradients), accuracy against the kit's fp64 golden where dy - sum(dy * y) cancels, every
// validation row through the C++ API, aclnn and op-by-name with nothing written, aclnn on
// strided inputs, and every fp16/bf16 output value through LogSoftmaxGrad's exp table.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_op_compiler.h"
#include "aclnnop/aclnn_logsoftmax_backward.h"
#include "aclnnop/aclnn_softmax_backward.h"
#include "mantissa/math.h"
#include "mantissa/ops/softmax.h"
#include "mantissa/ops/softmax_grad.h"
#include "op_support.h"
#include "precision/fp64_exp.h"
#include "precision/kit.h"
#include "precision/ops_common.h"

namespace mantissa::testing {

namespace {

using detail::LogSoftmaxGradOp;
using detail::SoftmaxGradOp;

template <class Op>
constexpr bool kIsLog = std::is_same_v<Op, LogSoftmaxGradOp>;

using Bytes = std::vector<uint8_t>;

// Random values in [lo, hi) stored in `dtype` (2 bytes for fp16/bf16).
Bytes random_buffer(DType dtype, int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  const std::size_t size = dtype_size(dtype);
  Bytes b(static_cast<std::size_t>(n) * size);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = precision::narrow_result(dist(rng), dtype);
    std::memcpy(b.data() + i * size, &bits, size);  // little-endian: the low bytes
  }
  return b;
}

// The forward's output over dim of random logits in [-6, 6): a realistic `output`.
template <class Op>
Bytes forward_output(DType dtype, const std::vector<int64_t>& shape, int64_t dim, uint32_t seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Bytes x = random_buffer(dtype, n, -6, 6, seed), y(x.size());
  const SoftmaxTensors t{.self = TensorView(x.data(), dtype, shape),
                         .out = TensorView(y.data(), dtype, shape)};
  const Status s =
      kIsLog<Op> ? log_softmax(t, {.dim = dim}) : softmax(t, {.dim = dim, .half_to_float = false});
  EXPECT_TRUE(s.ok()) << s.message();
  return y;
}

SoftmaxGradTensors tensors(DType dtype, const std::vector<int64_t>& shape, void* dy, void* y,
                           void* out) {
  return {.grad_output = TensorView(dy, dtype, shape),
          .output = TensorView(y, dtype, shape),
          .out = TensorView(out, dtype, shape)};
}

// Runs Op (out of place and in place of grad_output) on every target and thread count and
// compares the bits with golden32.
template <class Op>
void expect_bitwise(DType dtype, const std::vector<int64_t>& shape, int64_t dim, const Bytes& dy,
                    const Bytes& y, const std::vector<int>& threads = sweep_thread_counts()) {
  SCOPED_TRACE("dim " + std::to_string(dim) + " dtype " + std::string(dtype_name(dtype)));
  Bytes dyin = dy, yin = y, want(dy.size());
  const SoftmaxGradParams p{.dim = dim};
  apply_golden32<Op>(tensors(dtype, shape, dyin.data(), yin.data(), want.data()), p);
  const int64_t n = static_cast<int64_t>(dy.size() / dtype_size(dtype));
  for_each_target_and_thread_count(
      [&](const std::string&, int) {
        Bytes got(dy.size(), 0xAB);
        ASSERT_TRUE(Op::run(tensors(dtype, shape, dyin.data(), yin.data(), got.data()), p).ok());
        ASSERT_EQ(first_bit_difference(got.data(), want.data(), n, dtype), -1);
        Bytes inplace = dy;
        ASSERT_TRUE(
            Op::run(tensors(dtype, shape, inplace.data(), yin.data(), inplace.data()), p).ok());
        ASSERT_EQ(first_bit_difference(inplace.data(), want.data(), n, dtype), -1);
      },
      threads);
  EXPECT_EQ(dyin, dy);  // inputs untouched
  EXPECT_EQ(yin, y);
}

template <class Op>
void sweep_shapes() {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    // Row lengths around the vector widths, the 32 reduction lanes and a 4096 block; five rows:
    // short ones take four at once and one alone.
    for (int64_t len : {1, 3, 16, 31, 33, 100, 4095, 4097, 9000}) {
      const std::vector<int64_t> shape{5, len};
      expect_bitwise<Op>(dtype, shape, -1, random_buffer(dtype, 5 * len, -3, 3, len),
                         forward_output<Op>(dtype, shape, -1, len + 1), {1, 3});
    }
    // Every dim of a rank-4 tensor (tiles of 64 with a partial one: inner 70 or 7*70).
    const std::vector<int64_t> shape{5, 7, 3, 70};
    for (int64_t dim = -4; dim < 4; ++dim) {
      expect_bitwise<Op>(dtype, shape, dim, random_buffer(dtype, 5 * 7 * 3 * 70, -2, 2, 7),
                         forward_output<Op>(dtype, shape, dim, 8));
    }
  }
}

TEST(SoftmaxGrad, BitwiseEveryTargetThreadsDims) { sweep_shapes<SoftmaxGradOp>(); }
TEST(LogSoftmaxGrad, BitwiseEveryTargetThreadsDims) { sweep_shapes<LogSoftmaxGradOp>(); }

template <class Op>
void stress() {
  // Large gradient offsets: dy in [1000, 1001) (dy - sum(dy * y) cancels), along the last axis
  // and dim 0; fp16/bf16 in [100, 101).
  expect_bitwise<Op>(DType::kFloat32, {4, 1000}, -1,
                     random_buffer(DType::kFloat32, 4000, 1000, 1001, 1),
                     forward_output<Op>(DType::kFloat32, {4, 1000}, -1, 2), {1, 2});
  expect_bitwise<Op>(DType::kFloat16, {1000, 4}, 0,
                     random_buffer(DType::kFloat16, 4000, 100, 101, 3),
                     forward_output<Op>(DType::kFloat16, {1000, 4}, 0, 4), {1, 2});
  expect_bitwise<Op>(DType::kBFloat16, {4, 1000}, -1,
                     random_buffer(DType::kBFloat16, 4000, 100, 101, 5),
                     forward_output<Op>(DType::kBFloat16, {4, 1000}, -1, 6), {1, 2});
  // A 1M-element row, and a 256K-long non-last axis (64 reduction blocks per tile row).
  expect_bitwise<Op>(DType::kFloat32, {1 << 20}, 0,
                     random_buffer(DType::kFloat32, 1 << 20, -1, 1, 7),
                     forward_output<Op>(DType::kFloat32, {1 << 20}, 0, 8), {1, 2});
  expect_bitwise<Op>(DType::kFloat32, {1 << 18, 3}, 0,
                     random_buffer(DType::kFloat32, 3 << 18, -1, 1, 9),
                     forward_output<Op>(DType::kFloat32, {1 << 18, 3}, 0, 10), {1, 2});
  // Five blocks per row (the pairwise tree collapses a run of four with a single block) over
  // tiles of 64 and 6 rows.
  expect_bitwise<Op>(DType::kFloat32, {4 * 4096 + 5, 70}, 0,
                     random_buffer(DType::kFloat32, (4 * 4096 + 5) * 70, -1, 1, 11),
                     forward_output<Op>(DType::kFloat32, {4 * 4096 + 5, 70}, 0, 12), {1, 2});
}

TEST(SoftmaxGrad, StressInputs) { stress<SoftmaxGradOp>(); }
TEST(LogSoftmaxGrad, StressInputs) { stress<LogSoftmaxGradOp>(); }

// bf16 values m * 2^e, m standard normal and e uniform in [e_lo, e_hi] (one per element).
Bytes bf16_wide(int64_t n, int e_lo, int e_hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> m;
  std::uniform_int_distribution<int> e(e_lo, e_hi);
  Bytes b(static_cast<std::size_t>(n) * 2);
  for (int64_t i = 0; i < n; ++i) {
    const auto bits = static_cast<uint16_t>(
        precision::narrow_result(std::ldexp(m(rng), e(rng)), DType::kBFloat16));
    std::memcpy(b.data() + 2 * i, &bits, 2);
  }
  return b;
}

// bf16 softmax forms dy * y in fp32 on AVX-512 (in fp64 where a product under- or overflows)
// and, along the last axis, computes most output blocks in fp32 (in fp64 near a bf16 rounding
// midpoint or where the row sum is outside [2^-60, 2^60]): every path against golden32 on every
// target, over inputs that reach each one, including rows where dy - s cancels to s's last bits.
// Rows of 4096, so that the blocks cover every lane of every vector width.
TEST(SoftmaxGrad, Bf16Fp32StepsGiveTheFp64Bits) {
  constexpr int64_t kRows = 64, kLen = 4096, kN = kRows * kLen;
  const std::vector<int64_t> shape{kRows, kLen};
  const auto expect = [&](const char* what, const Bytes& dy, const Bytes& y) {
    SCOPED_TRACE(what);
    expect_bitwise<SoftmaxGradOp>(DType::kBFloat16, shape, -1, dy, y, {1});
  };
  // Outputs and gradients over 140 binades: sums of every size (some beyond 2^60 or under
  // 2^-60), results from subnormal to overflowing, about 130 near a midpoint per row.
  expect("wide", bf16_wide(kN, -70, 70, 1), bf16_wide(kN, -70, 70, 2));
  {
    SCOPED_TRACE("wide, dim 0");  // the products of a non-last axis
    expect_bitwise<SoftmaxGradOp>(DType::kBFloat16, {kLen, kRows}, 0, bf16_wide(kN, -70, 70, 1),
                                  bf16_wide(kN, -70, 70, 2), {1});
  }
  // A realistic output and gradients with a common offset (dy - s cancels in many lanes).
  Bytes offset = random_buffer(DType::kBFloat16, kN, 100, 101, 3);
  const Bytes probabilities = forward_output<SoftmaxGradOp>(DType::kBFloat16, shape, -1, 4);
  expect("offset", offset, probabilities);
  expect("normal", bf16_wide(kN, -2, 2, 5), probabilities);
  // dy - s cancelling to s's last bits: y = 1 at the row's start and tiny elsewhere (2^-45 ..
  // 2^-35 or 2^-35 .. 2^-25: sum(y) = 1 + e, e carrying bits far below fp32's), dy = c, so
  // s = c (1 + e) and dy - s = -c e.
  {
    Bytes y = bf16_wide(kN, -45, -35, 12), dy(2 * kN);
    const Bytes coarse = bf16_wide(kN, -35, -25, 13);
    for (int64_t r = 0; r < kRows; ++r) {
      uint8_t* const yr = y.data() + 2 * r * kLen;
      if (r % 2 == 1) std::memcpy(yr, coarse.data() + 2 * r * kLen, 2 * kLen);
      const uint16_t one = 0x3F80;  // 1.0
      std::memcpy(yr, &one, 2);
      const auto c = static_cast<uint16_t>(
          precision::narrow_result(static_cast<float>(1.0 + r / 64.0), DType::kBFloat16));
      for (int64_t j = 0; j < kLen; ++j) std::memcpy(dy.data() + 2 * (r * kLen + j), &c, 2);
    }
    expect("dy - s cancels", dy, y);
  }
  // Row sums exactly 0 (each gradient next to its negation, equal outputs): t = dy exactly.
  Bytes dy = bf16_wide(kN, -20, 20, 6), y = bf16_wide(kN, -20, 20, 7);
  for (int64_t i = 0; i + 1 < kN; i += 2) {
    uint16_t bits;
    std::memcpy(&bits, dy.data() + 2 * i, 2);
    bits ^= 0x8000;
    std::memcpy(dy.data() + 2 * (i + 1), &bits, 2);
    std::memcpy(y.data() + 2 * (i + 1), y.data() + 2 * i, 2);
  }
  expect("zero sums", dy, y);
  // Sums near the thresholds: y around 2^-66 .. 2^-54 against dy around 1 gives |s| from below
  // 2^-60 to above it, and y around 2^54 .. 2^66 the same at 2^60.
  expect("small sums", bf16_wide(kN, -1, 1, 8), bf16_wide(kN, -66, -54, 9));
  expect("large sums", bf16_wide(kN, -1, 1, 10), bf16_wide(kN, 54, 66, 11));
}

// fp16 and bf16 outputs take exp(y) from a table of Exp64 over every bit pattern: every pattern
// as y (zeros, subnormals, infinities and NaNs included), along the last axis and along dim 0,
// against the kit's statement (its own fp64 exp) on every target and thread count.
TEST(LogSoftmaxGrad, EveryHalfPrecisionOutputValue) {
  constexpr int64_t kPatterns = 1 << 16;
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    Bytes y(2 * kPatterns);
    for (int64_t b = 0; b < kPatterns; ++b) {
      const auto bits = static_cast<uint16_t>(b);
      std::memcpy(y.data() + 2 * b, &bits, 2);
    }
    const Bytes dy = random_buffer(dtype, kPatterns, -1, 1, 11);
    expect_bitwise<LogSoftmaxGradOp>(dtype, {256, 256}, -1, dy, y, {1, 2});
    expect_bitwise<LogSoftmaxGradOp>(dtype, {256, 256}, 0, dy, y, {1, 2});
  }
}

// ulp distance of an fp32 result from the fp64 reference, in units of the reference's fp32 ulp.
double ulp_error(float got, double want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) == std::isnan(got) ? 0 : 1e30;
  const float w = static_cast<float>(want);
  const float up = std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity());
  const double ulp = static_cast<double>(up) - std::fabs(static_cast<double>(w));
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

// Accuracy where dy - sum(dy * y) cancels (dy = 1000 + U[0, 1)) and for ordinary inputs: fp32
// results within 1 ulp of the kit's fp64 golden (the fp64 row sum makes the cancellation exact
// to far below an fp32 ulp; only the final rounding and, for log-softmax, Exp's error remain).
template <class Op>
void accuracy() {
  const std::vector<int64_t> shape{16, 2000};
  for (float offset : {0.0f, 1000.0f}) {
    SCOPED_TRACE("offset " + std::to_string(offset));
    Bytes dy = random_buffer(DType::kFloat32, 16 * 2000, offset, offset + 1, 11);
    Bytes y = forward_output<Op>(DType::kFloat32, shape, -1, 12), got(dy.size());
    const SoftmaxGradParams p{.dim = -1};
    const SoftmaxGradTensors t = tensors(DType::kFloat32, shape, dy.data(), y.data(), got.data());
    ASSERT_TRUE(Op::run(t, p).ok());
    const auto* op = precision::find_op(std::string(Op::kType));
    ASSERT_NE(op, nullptr);
    const std::vector<std::vector<double>> golden = op->golden(kit_inputs<Op>(t, p));
    double worst = 0;
    for (std::size_t i = 0; i < golden[0].size(); ++i) {
      float g;
      std::memcpy(&g, got.data() + 4 * i, 4);
      worst = std::max(worst, ulp_error(g, golden[0][i]));
    }
    // Softmax: y * (dy - s) with both fp64 steps exact to ~2^-40 relative: at most the final
    // rounding (0.5 ulp) plus a little. Log-softmax: dy - e * s carries Exp's error (0.99 ulp
    // of e), amplified where dy and e * s nearly cancel, so a looser bound.
    EXPECT_LE(worst, kIsLog<Op> ? 4.0 : 1.0);
    std::printf("%s offset %g: max %.3f ulp\n", std::string(Op::kType).c_str(), offset, worst);
  }
}

TEST(SoftmaxGrad, AccuracyAgainstFp64) { accuracy<SoftmaxGradOp>(); }
TEST(LogSoftmaxGrad, AccuracyAgainstFp64) { accuracy<LogSoftmaxGradOp>(); }

// Special rows along the last axis and along dim 0 (transposed copy): the forward's output of
// an all -inf row (NaN) gives NaN; zero probabilities (softmax 0, log-softmax -inf); inf and
// NaN gradients propagate as IEEE says; signed zeros.
template <class Op>
void special_rows() {
  constexpr bool kLog = kIsLog<Op>;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float zero_p = kLog ? -inf : 0.0f;
  const float fifth = kLog ? std::log(0.2f) : 0.2f;
  const std::vector<std::vector<float>> ys{{nan, nan, nan, nan, nan},
                                           {fifth, zero_p, fifth, zero_p, fifth},
                                           {fifth, fifth, fifth, fifth, fifth},
                                           {fifth, fifth, zero_p, zero_p, zero_p},
                                           {fifth, fifth, fifth, fifth, fifth}};
  const std::vector<std::vector<float>> dys{{1, 2, 3, 4, 5},
                                            {1, 2, 3, 4, 5},
                                            {1, inf, 3, 4, 5},
                                            {nan, 1, 2, 3, 4},
                                            {-0.0f, 0.0f, -0.0f, 0.0f, -0.0f}};
  const int64_t r = 5, c = 5;
  std::vector<float> y, dy, yt(r * c), dyt(r * c);
  for (const auto& row : ys) y.insert(y.end(), row.begin(), row.end());
  for (const auto& row : dys) dy.insert(dy.end(), row.begin(), row.end());
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      yt[j * r + i] = y[i * c + j];
      dyt[j * r + i] = dy[i * c + j];
    }
  }
  auto bytes = [](const std::vector<float>& v) {
    Bytes b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  expect_bitwise<Op>(DType::kFloat32, {r, c}, 1, bytes(dy), bytes(y));
  expect_bitwise<Op>(DType::kFloat32, {c, r}, 0, bytes(dyt), bytes(yt));
  for (DType dt : {DType::kFloat16, DType::kBFloat16}) {
    Bytes dy16(r * c * 2), y16(r * c * 2);
    for (int64_t i = 0; i < r * c; ++i) {
      const uint32_t a = precision::narrow_result(dy[i], dt),
                     b = precision::narrow_result(y[i], dt);
      std::memcpy(dy16.data() + 2 * i, &a, 2);
      std::memcpy(y16.data() + 2 * i, &b, 2);
    }
    expect_bitwise<Op>(dt, {r, c}, -1, dy16, y16, {1});
  }
  std::vector<float> out(r * c);
  ASSERT_TRUE(Op::run(tensors(DType::kFloat32, {r, c}, dy.data(), y.data(), out.data()), {}).ok());
  auto bits = [&](int64_t i) { return std::bit_cast<uint32_t>(out[i]); };
  for (int64_t j = 0; j < c; ++j) {
    EXPECT_EQ(bits(j), 0x7FC00000u);          // NaN output row
    EXPECT_EQ(bits(3 * c + j), 0x7FC00000u);  // NaN gradient in the row: the sum is NaN
    EXPECT_EQ(out[4 * c + j], 0.0f);          // zero gradients
  }
  if (kLog) {
    // dy - exp(-inf) * s = dy where the probability is 0.
    EXPECT_EQ(out[c + 1], 2.0f);
    EXPECT_EQ(out[c + 3], 4.0f);
    EXPECT_EQ(bits(2 * c + 1), 0x7FC00000u);  // inf - e * inf
    EXPECT_EQ(out[2 * c], -inf);              // 1 - e * inf
  } else {
    EXPECT_EQ(out[c + 1], 0.0f);              // y = 0
    EXPECT_EQ(bits(2 * c + 1), 0x7FC00000u);  // 0.2 * (inf - inf)
    EXPECT_EQ(out[2 * c], -inf);              // 0.2 * (1 - inf)
  }
}

TEST(SoftmaxGrad, SpecialRows) { special_rows<SoftmaxGradOp>(); }
TEST(LogSoftmaxGrad, SpecialRows) { special_rows<LogSoftmaxGradOp>(); }

// Rows of 64 and 200 (full vector groups): a row with a finite sum stores its results without
// the NaN step, which must still make canonical every NaN that can arise there: log-softmax's
// exp(NaN) and inf * 0 (y = 800 with dy summing to 0), beside rows whose sum is infinite or
// NaN and rows with an out-of-range but harmless y (-800).
template <class Op>
void nan_steps_on_long_rows() {
  constexpr bool kLog = kIsLog<Op>;
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t c : {64, 200}) {
    const int64_t r = 7;
    std::vector<float> y(r * c), dy(r * c);
    for (int64_t i = 0; i < r; ++i) {
      for (int64_t j = 0; j < c; ++j) {
        const float p = static_cast<float>(j % 7 + 1) / static_cast<float>(4 * c);
        y[i * c + j] = kLog ? std::log(p) : p;
        dy[i * c + j] = (j % 2 == 0 ? 1.0f : -1.0f) * static_cast<float>(1 + j % 3);
      }
    }
    // Row 0 stays ordinary. dy of rows 2 and 3 sums to exactly 0.
    y[1 * c + 37] = nan;
    for (int64_t j = 0; j < c; ++j) dy[2 * c + j] = dy[3 * c + j] = j % 2 == 0 ? 1.0f : -1.0f;
    y[2 * c + 5] = 800.0f;
    y[3 * c + c - 1] = inf;
    y[4 * c + 10] = -800.0f;
    dy[5 * c + 20] = inf;
    dy[6 * c + 9] = nan;
    auto bytes = [](const std::vector<float>& v, DType dt) {
      Bytes b(v.size() * dtype_size(dt));
      for (size_t i = 0; i < v.size(); ++i) {
        const uint32_t bits = dt == DType::kFloat32 ? std::bit_cast<uint32_t>(v[i])
                                                    : precision::narrow_result(v[i], dt);
        std::memcpy(b.data() + i * dtype_size(dt), &bits, dtype_size(dt));
      }
      return b;
    };
    for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
      expect_bitwise<Op>(dt, {r, c}, -1, bytes(dy, dt), bytes(y, dt), {1, 2});
    }
    std::vector<float> out(r * c);
    ASSERT_TRUE(
        Op::run(tensors(DType::kFloat32, {r, c}, dy.data(), y.data(), out.data()), {}).ok());
    auto bits = [&](int64_t i) { return std::bit_cast<uint32_t>(out[i]); };
    for (int64_t j = 0; j < c; ++j) EXPECT_TRUE(std::isfinite(out[j]));
    if (kLog) {
      EXPECT_EQ(bits(1 * c + 37), 0x7FC00000u);     // exp(NaN)
      EXPECT_EQ(bits(2 * c + 5), 0x7FC00000u);      // dy - inf * 0
      EXPECT_EQ(bits(3 * c + c - 1), 0x7FC00000u);  // dy - inf * 0
      EXPECT_EQ(out[4 * c + 10], dy[4 * c + 10]);   // exp(-800) = 0
    } else {
      EXPECT_EQ(bits(1 * c + 3), 0x7FC00000u);  // a NaN y makes the sum NaN
      EXPECT_EQ(out[3 * c], inf);               // y = inf at dy = -1: s = -inf
    }
    EXPECT_EQ(bits(6 * c), 0x7FC00000u);  // a NaN gradient makes the sum NaN
  }
}

TEST(SoftmaxGrad, NaNStepsOnLongRows) { nan_steps_on_long_rows<SoftmaxGradOp>(); }
TEST(LogSoftmaxGrad, NaNStepsOnLongRows) { nan_steps_on_long_rows<LogSoftmaxGradOp>(); }

// A uniform softmax row with a constant gradient: dx = y * (c - c * sum(y)) exactly as the
// fp64 steps give it (0 when sum(y) is exactly 1, as for 1/4).
TEST(SoftmaxGrad, EqualRows) {
  std::vector<float> y(8, 0.25f), dy(8, 3.0f), out(8, 9.0f);
  ASSERT_TRUE(
      softmax_grad(tensors(DType::kFloat32, {2, 4}, dy.data(), y.data(), out.data()), {}).ok());
  for (float v : out) EXPECT_EQ(v, 0.0f);
  std::vector<float> ly(8, -std::log(4.0f)), lout(8, 9.0f);
  ASSERT_TRUE(
      log_softmax_grad(tensors(DType::kFloat32, {2, 4}, dy.data(), ly.data(), lout.data()), {})
          .ok());
  for (float v : lout) EXPECT_NEAR(v, 0.0f, 1e-6f);  // 3 - exp(-log 4) * 12
}

TEST(SoftmaxGrad, RankZeroAndEmpty) {
  float dy = 3.0f, y = 1.0f, out = 7.0f;
  const std::span<const int64_t> scalar{};
  ASSERT_TRUE(softmax_grad({.grad_output = TensorView(&dy, DType::kFloat32, scalar),
                            .output = TensorView(&y, DType::kFloat32, scalar),
                            .out = TensorView(&out, DType::kFloat32, scalar)},
                           {.dim = 0})
                  .ok());
  EXPECT_EQ(out, 0.0f);  // 1 * (3 - 3 * 1)
  float dummy = 5.0f;
  for (bool log : {false, true}) {
    const SoftmaxGradTensors t = tensors(DType::kFloat32, {0, 3}, &dummy, &dummy, &dummy);
    EXPECT_TRUE((log ? log_softmax_grad(t, {.dim = 1}) : softmax_grad(t, {.dim = 1})).ok());
    EXPECT_EQ(dummy, 5.0f);
  }
}

// ---- Validation -----------------------------------------------------------------------------

struct Bad {
  const char* what;
  SoftmaxGradTensors t;
  int64_t dim;
  StatusCode code;
  const char* needle;  // in the message, with the operator's name
};

TEST(SoftmaxGrad, ValidationRowsWriteNothing) {
  std::vector<float> dy(12, 1.0f), y(12, 0.25f), out(12, 5.0f), out2(6, 5.0f);
  std::vector<int32_t> di(12, 1);
  const std::vector<int64_t> s34{3, 4};
  const TensorView vdy(dy.data(), DType::kFloat32, s34), vy(y.data(), DType::kFloat32, s34),
      vo(out.data(), DType::kFloat32, s34);
  const std::vector<int64_t> s9(9, 1);
  const std::vector<Bad> rows{
      {"null grad_output",
       {TensorView(nullptr, DType::kFloat32, s34), vy, vo},
       -1,
       StatusCode::kParamNullptr,
       "grad_output"},
      {"null output",
       {vdy, TensorView(nullptr, DType::kFloat32, s34), vo},
       -1,
       StatusCode::kParamNullptr,
       "output"},
      {"null out",
       {vdy, vy, TensorView(nullptr, DType::kFloat32, s34)},
       -1,
       StatusCode::kParamNullptr,
       "out"},
      {"int grad_output",
       {TensorView(di.data(), DType::kInt32, s34), vy, vo},
       -1,
       StatusCode::kParamInvalid,
       "grad_output"},
      {"output dtype mismatch",
       {vdy, TensorView(y.data(), DType::kFloat16, s34), vo},
       -1,
       StatusCode::kParamInvalid,
       "output"},
      {"out dtype mismatch",
       {vdy, vy, TensorView(out.data(), DType::kBFloat16, s34)},
       -1,
       StatusCode::kParamInvalid,
       "out"},
      {"output shape mismatch",
       {vdy, TensorView(y.data(), DType::kFloat32, {4, 3}), vo},
       -1,
       StatusCode::kParamInvalid,
       "output"},
      {"out shape mismatch",
       {vdy, vy, TensorView(out2.data(), DType::kFloat32, {2, 3})},
       -1,
       StatusCode::kParamInvalid,
       "out"},
      {"rank 9",
       {TensorView(dy.data(), DType::kFloat32, s9), TensorView(y.data(), DType::kFloat32, s9),
        TensorView(out.data(), DType::kFloat32, s9)},
       -1,
       StatusCode::kParamInvalid,
       "grad_output"},
      {"dim too large", {vdy, vy, vo}, 2, StatusCode::kParamInvalid, "dim is 2"},
      {"dim too small", {vdy, vy, vo}, -3, StatusCode::kParamInvalid, "dim is -3"},
      {"out overlaps grad_output",
       {vdy, vy, TensorView(dy.data() + 1, DType::kFloat32, {2, 4})},
       -1,
       StatusCode::kParamInvalid,
       "out"},
      {"out is output",
       {vdy, vy, TensorView(y.data(), DType::kFloat32, s34)},
       -1,
       StatusCode::kParamInvalid,
       "out"},
  };
  for (const Bad& b : rows) {
    SCOPED_TRACE(b.what);
    for (bool log : {false, true}) {
      const Status s =
          log ? log_softmax_grad(b.t, {.dim = b.dim}) : softmax_grad(b.t, {.dim = b.dim});
      EXPECT_EQ(s.code(), b.code);
      EXPECT_NE(s.message().find(log ? "LogSoftmaxGrad" : "SoftmaxGrad"), std::string::npos)
          << s.message();
      EXPECT_NE(s.message().find(b.needle), std::string::npos) << s.message();
      for (float v : out) ASSERT_EQ(v, 5.0f);
      for (float v : out2) ASSERT_EQ(v, 5.0f);
      for (float v : dy) ASSERT_EQ(v, 1.0f);
      for (float v : y) ASSERT_EQ(v, 0.25f);
    }
  }
  // Log-softmax needs rank >= 1; softmax accepts rank 0.
  float s0 = 1.0f, y0 = 1.0f, o0 = 5.0f;
  const std::span<const int64_t> scalar{};
  const SoftmaxGradTensors t0{.grad_output = TensorView(&s0, DType::kFloat32, scalar),
                              .output = TensorView(&y0, DType::kFloat32, scalar),
                              .out = TensorView(&o0, DType::kFloat32, scalar)};
  const Status r0 = log_softmax_grad(t0, {.dim = 0});
  EXPECT_EQ(r0.code(), StatusCode::kParamInvalid);
  EXPECT_NE(r0.message().find("LogSoftmaxGrad"), std::string::npos) << r0.message();
  EXPECT_EQ(o0, 5.0f);
  EXPECT_TRUE(softmax_grad_validate(t0, {.dim = -1}).ok());
}

// ---- aclnn ----------------------------------------------------------------------------------

struct AclTensorHolder {
  aclTensor* t = nullptr;
  ~AclTensorHolder() { aclDestroyTensor(t); }
};

using PhaseOne = aclnnStatus (*)(const aclTensor*, const aclTensor*, int64_t, aclTensor*, uint64_t*,
                                 aclOpExecutor**);
using PhaseTwo = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

aclnnStatus run_aclnn(PhaseOne one, PhaseTwo two, const aclTensor* dy, const aclTensor* y,
                      int64_t dim, aclTensor* out, uint64_t* ws_size = nullptr) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  if (aclnnStatus s = one(dy, y, dim, out, &size, &executor); s != ACLNN_SUCCESS) return s;
  if (ws_size) *ws_size = size;
  std::vector<uint64_t> ws((size + 7) / 8);
  return two(ws.empty() ? nullptr : ws.data(), size, executor, nullptr);
}

// grad_output and output are transposed (strided) views and out a contiguous one: aclnn copies
// them through the workspace and gives the bits of the C++ API on contiguous copies.
template <class Op>
void aclnn_strided(PhaseOne one, PhaseTwo two) {
  const int64_t r = 37, c = 29;
  std::vector<float> dy_base(r * c), y_base(r * c);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-4, 4);
  for (float& v : dy_base) v = dist(rng);
  for (float& v : y_base) v = kIsLog<Op> ? dist(rng) - 4.0f : (dist(rng) + 4.0f) / 8.0f;
  std::vector<float> dy(r * c), y(r * c);
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      dy[i * c + j] = dy_base[j * r + i];
      y[i * c + j] = y_base[j * r + i];
    }
  }
  for (int64_t dim : {0, 1, -1}) {
    std::vector<float> want(r * c), got(r * c, 9.0f);
    ASSERT_TRUE(
        Op::run(tensors(DType::kFloat32, {r, c}, dy.data(), y.data(), want.data()), {.dim = dim})
            .ok());
    const int64_t dims[2] = {r, c}, strides[2] = {1, r}, out_strides[2] = {c, 1};
    const int64_t storage[1] = {r * c};
    AclTensorHolder ady{
        aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, dy_base.data())};
    AclTensorHolder ay{
        aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, y_base.data())};
    AclTensorHolder out{
        aclCreateTensor(dims, 2, ACL_FLOAT, out_strides, 0, ACL_FORMAT_ND, storage, 1, got.data())};
    uint64_t ws = 0;
    ASSERT_EQ(run_aclnn(one, two, ady.t, ay.t, dim, out.t, &ws), ACLNN_SUCCESS)
        << aclGetRecentErrMsg();
    EXPECT_GT(ws, 0u);
    EXPECT_EQ(first_bit_difference(got.data(), want.data(), r * c, DType::kFloat32), -1);
  }
}

TEST(SoftmaxGrad, AclnnStrided) {
  aclnn_strided<SoftmaxGradOp>(aclnnSoftmaxBackwardGetWorkspaceSize, aclnnSoftmaxBackward);
}
TEST(LogSoftmaxGrad, AclnnStrided) {
  aclnn_strided<LogSoftmaxGradOp>(aclnnLogSoftmaxBackwardGetWorkspaceSize, aclnnLogSoftmaxBackward);
}

TEST(SoftmaxGrad, AclnnValidationWritesNothing) {
  std::vector<float> dy(12, 1.0f), y(12, 0.25f), out(12, 5.0f);
  std::vector<int32_t> di(12, 1);
  const int64_t dims[2] = {3, 4}, dims_t[2] = {4, 3}, strides[2] = {4, 1}, strides_t[2] = {3, 1},
                storage[1] = {12};
  auto make = [&](void* p, aclDataType dt, const int64_t* d = nullptr, const int64_t* s = nullptr) {
    return aclCreateTensor(d ? d : dims, 2, dt, s ? s : strides, 0, ACL_FORMAT_ND, storage, 1, p);
  };
  AclTensorHolder ady{make(dy.data(), ACL_FLOAT)}, ay{make(y.data(), ACL_FLOAT)},
      aout{make(out.data(), ACL_FLOAT)}, ay16{make(y.data(), ACL_FLOAT16)},
      adyi{make(di.data(), ACL_INT32)}, aout16{make(out.data(), ACL_FLOAT16)},
      ayt{make(y.data(), ACL_FLOAT, dims_t, strides_t)},
      aoutt{make(out.data(), ACL_FLOAT, dims_t, strides_t)};
  struct Row {
    const char* what;
    const aclTensor* dy;
    const aclTensor* y;
    int64_t dim;
    aclTensor* out;
    aclnnStatus code;
    const char* needle;
  };
  const std::vector<Row> rows{
      {"null gradOutput", nullptr, ay.t, -1, aout.t, ACLNN_ERR_PARAM_NULLPTR, "grad"},
      {"null output", ady.t, nullptr, -1, aout.t, ACLNN_ERR_PARAM_NULLPTR, "output"},
      {"null out", ady.t, ay.t, -1, nullptr, ACLNN_ERR_PARAM_NULLPTR, "out"},
      {"int gradOutput", adyi.t, ay.t, -1, aout.t, ACLNN_ERR_PARAM_INVALID, "grad"},
      {"output dtype", ady.t, ay16.t, -1, aout.t, ACLNN_ERR_PARAM_INVALID, "output"},
      {"out dtype", ady.t, ay.t, -1, aout16.t, ACLNN_ERR_PARAM_INVALID, "out"},
      {"output shape", ady.t, ayt.t, -1, aout.t, ACLNN_ERR_PARAM_INVALID, "output"},
      {"out shape", ady.t, ay.t, -1, aoutt.t, ACLNN_ERR_PARAM_INVALID, "out"},
      {"dim out of range", ady.t, ay.t, 2, aout.t, ACLNN_ERR_PARAM_INVALID, "dim is 2"},
      {"dim below range", ady.t, ay.t, -3, aout.t, ACLNN_ERR_PARAM_INVALID, "dim is -3"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(aclnnSoftmaxBackwardGetWorkspaceSize(r.dy, r.y, r.dim, r.out, &size, &executor),
              r.code);
    std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("Softmax"), std::string::npos) << msg;  // the aclnn or op type name
    EXPECT_NE(msg.find(r.needle), std::string::npos) << msg;
    EXPECT_EQ(aclnnLogSoftmaxBackwardGetWorkspaceSize(r.dy, r.y, r.dim, r.out, &size, &executor),
              r.code);
    msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("LogSoftmax"), std::string::npos) << msg;
    EXPECT_NE(msg.find(r.needle), std::string::npos) << msg;
    for (float v : out) ASSERT_EQ(v, 5.0f);
    for (float v : dy) ASSERT_EQ(v, 1.0f);
    for (float v : y) ASSERT_EQ(v, 0.25f);
  }
}

// ---- Op-by-name ------------------------------------------------------------------------------

// One op-by-name call: inputs in the graph's order, one output, the axis attribute as a list
// (or as a plain int when `axis_as_int`).
struct ByName {
  std::string op;
  std::vector<std::pair<aclDataType, std::vector<int64_t>>> in_desc;
  std::vector<void*> in_data;
  aclDataType out_dtype = ACL_FLOAT;
  std::vector<int64_t> out_dims;
  void* out_data = nullptr;
  std::string attr;
  std::vector<int64_t> axes{-1};
  bool axis_as_int = false;

  aclError run() {
    std::vector<aclTensorDesc*> ind;
    std::vector<aclDataBuffer*> inb;
    for (std::size_t i = 0; i < in_desc.size(); ++i) {
      const auto& [dt, dims] = in_desc[i];
      ind.push_back(
          aclCreateTensorDesc(dt, static_cast<int>(dims.size()), dims.data(), ACL_FORMAT_ND));
      inb.push_back(aclCreateDataBuffer(in_data[i], 4 * 64));
    }
    aclTensorDesc* od = aclCreateTensorDesc(out_dtype, static_cast<int>(out_dims.size()),
                                            out_dims.data(), ACL_FORMAT_ND);
    aclDataBuffer* ob = aclCreateDataBuffer(out_data, 4 * 64);
    aclopAttr* a = aclopCreateAttr();
    if (axis_as_int) {
      EXPECT_EQ(aclopSetAttrInt(a, attr.c_str(), axes.at(0)), ACL_SUCCESS);
    } else {
      EXPECT_EQ(aclopSetAttrListInt(a, attr.c_str(), static_cast<int>(axes.size()), axes.data()),
                ACL_SUCCESS);
    }
    const aclError rc =
        aclopCompileAndExecuteV2(op.c_str(), static_cast<int>(ind.size()), ind.data(), inb.data(),
                                 1, &od, &ob, a, ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr);
    for (auto* d : ind) aclDestroyTensorDesc(d);
    for (auto* b : inb) aclDestroyDataBuffer(b);
    aclDestroyTensorDesc(od);
    aclDestroyDataBuffer(ob);
    aclopDestroyAttr(a);
    return rc;
  }
};

// The graph's input order (SoftmaxGrad: softmax, grad_softmax; LogSoftmaxGrad: grad, x) and
// attribute names ("axes", "axis"): op-by-name gives the bits of the C++ API, and every
// rejected call writes nothing.
template <class Op>
void by_name() {
  constexpr bool kLog = kIsLog<Op>;
  std::vector<float> dy(64), y(64), want(64), got(64, 9.0f);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-2, 2);
  for (float& v : dy) v = dist(rng);
  for (float& v : y) v = kLog ? dist(rng) - 3.0f : (dist(rng) + 2.0f) / 16.0f;
  const std::vector<int64_t> shape{4, 16};
  auto call = [&](std::vector<int64_t> axes) {
    ByName c;
    c.op = std::string(Op::kType);
    c.in_desc = {{ACL_FLOAT, shape}, {ACL_FLOAT, shape}};
    c.in_data =
        kLog ? std::vector<void*>{dy.data(), y.data()} : std::vector<void*>{y.data(), dy.data()};
    c.out_dims = shape;
    c.out_data = got.data();
    c.attr = kLog ? "axis" : "axes";
    c.axes = std::move(axes);
    return c;
  };
  for (int64_t dim : {-1, 0, 1}) {
    ASSERT_TRUE(
        Op::run(tensors(DType::kFloat32, shape, dy.data(), y.data(), want.data()), {.dim = dim})
            .ok());
    ByName c = call({dim});
    ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(first_bit_difference(got.data(), want.data(), 64, DType::kFloat32), -1);
  }
  const std::vector<float> dy0 = dy, y0 = y;
  std::fill(got.begin(), got.end(), 9.0f);
  struct Row {
    const char* what;
    ByName c;
    const char* needle;
  };
  std::vector<Row> rows;
  rows.push_back({"axis out of range", call({2}), "dim is 2"});
  rows.push_back({"two axes", call({0, 1}), "exactly one axis"});
  {
    ByName c = call({-1});
    c.axis_as_int = true;
    rows.push_back({"axis as int", c, "ListInt"});
  }
  {
    ByName c = call({-1});
    c.in_desc[1].first = ACL_FLOAT16;
    rows.push_back({"dtype mismatch", c, kLog ? "output" : "grad_output"});
  }
  {
    ByName c = call({-1});
    c.out_dims = {16, 4};
    rows.push_back({"out shape", c, "out"});
  }
  {
    ByName c = call({-1});
    c.in_desc.pop_back();
    c.in_data.pop_back();
    rows.push_back({"one input", c, "numInputs"});
  }
  {
    ByName c = call({-1});
    c.attr = kLog ? "axes" : "axis";
    rows.push_back({"unknown attribute", c, "unknown attribute"});
  }
  for (Row& r : rows) {
    SCOPED_TRACE(r.what);
    EXPECT_EQ(r.c.run(), 161002) << aclGetRecentErrMsg();
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find(std::string(Op::kType)), std::string::npos) << msg;
    EXPECT_NE(msg.find(r.needle), std::string::npos) << msg;
    for (float v : got) ASSERT_EQ(v, 9.0f);
    EXPECT_EQ(dy, dy0);
    EXPECT_EQ(y, y0);
  }
}

TEST(SoftmaxGrad, OpByName) { by_name<SoftmaxGradOp>(); }
TEST(LogSoftmaxGrad, OpByName) { by_name<LogSoftmaxGradOp>(); }

// ---- The fp64 exponential -------------------------------------------------------------------

// exp_f64 (core/math-inl.h's Exp64) gives the kit's documented statement bit for bit on every
// target, and is within 1.2 fp64 ulp of expl (1.017 measured): over every 61st fp32 value in
// [-746, 710] (the
// inputs LogSoftmaxGrad feeds it), the edges and the special values.
TEST(Exp64, MatchesDocumentedOnEveryTargetAndIsAccurate) {
  std::vector<double> x;
  for (uint32_t b = 0; b < 0xFFFFFFFFu - 61; b += 61) {
    const float f = std::bit_cast<float>(b);
    if (f >= -746.0f && f <= 710.0f) x.push_back(f);
  }
  const double inf = std::numeric_limits<double>::infinity();
  for (double v : {0.0, -0.0, 1.0, -1.0, 709.78, 709.79, 710.0, -708.4, -745.1, -745.2, -746.0,
                   1e-300, -1e-300, inf, -inf, std::numeric_limits<double>::quiet_NaN()}) {
    x.push_back(v);
  }
  std::vector<double> want(x.size());
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    want[i] = precision::exp64_documented(x[i]);
    if (!std::isfinite(x[i]) || std::isnan(want[i])) continue;
    const long double ref = std::exp(static_cast<long double>(x[i]));
    if (ref > std::numeric_limits<double>::max() || ref < std::numeric_limits<double>::min()) {
      continue;  // overflow and subnormal results: checked below
    }
    const double r = static_cast<double>(ref);
    const double ulp = std::nextafter(r, inf) - r;
    worst = std::max(worst, static_cast<double>(std::fabs(want[i] - ref) / ulp));
  }
  std::printf("Exp64: max %.3f ulp over %zu inputs\n", worst, x.size());
  EXPECT_LE(worst, 1.2);
  EXPECT_EQ(precision::exp64_documented(inf), inf);
  EXPECT_EQ(precision::exp64_documented(-inf), 0.0);
  EXPECT_EQ(precision::exp64_documented(710.0), inf);
  EXPECT_EQ(precision::exp64_documented(0.0), 1.0);
  EXPECT_GT(precision::exp64_documented(-745.1), 0.0);  // the smallest subnormal
  EXPECT_EQ(precision::exp64_documented(-746.0), 0.0);
  for_each_target([&](const std::string&) {
    std::vector<double> got(x.size());
    exp_f64(x.data(), got.data(), static_cast<int64_t>(x.size()));
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(want[i])) {
        ASSERT_TRUE(std::isnan(got[i])) << x[i];
      } else {
        ASSERT_EQ(std::bit_cast<uint64_t>(got[i]), std::bit_cast<uint64_t>(want[i])) << x[i];
      }
    }
  });
}

}  // namespace

}  // namespace mantissa::testing
