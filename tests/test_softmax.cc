// Softmax and LogSoftmax: bitwise against the kit's golden32 on every SIMD target and thread
// count (last axis and every dim of a rank-4 tensor, long rows, large offsets), special rows
// (all -inf, mixed +-inf, NaN, constant), in place, every validation row through the C++ API
// and aclnn, and aclnn on strided inputs.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_logsoftmax.h"
#include "aclnnop/aclnn_softmax.h"
#include "mantissa/ops/softmax.h"
#include "op_support.h"
#include "precision/ops_common.h"

namespace mantissa::testing {

namespace {

using detail::LogSoftmaxOp;
using detail::SoftmaxOp;

// Random values in [lo, hi) stored in `dtype` (2 bytes for fp16/bf16).
std::vector<uint8_t> random_buffer(DType dtype, int64_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  const std::size_t size = dtype_size(dtype);
  std::vector<uint8_t> b(static_cast<std::size_t>(n) * size);
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = precision::narrow_result(dist(rng), dtype);
    std::memcpy(b.data() + i * size, &bits, size);  // little-endian: the low bytes
  }
  return b;
}

// Runs Op on x (out of place and in place) on every target and thread count and compares the
// bits with golden32.
template <class Op>
void expect_bitwise(DType dtype, std::vector<int64_t> shape, int64_t dim,
                    const std::vector<uint8_t>& x,
                    const std::vector<int>& threads = sweep_thread_counts()) {
  SCOPED_TRACE("dim " + std::to_string(dim) + " dtype " + std::string(dtype_name(dtype)));
  std::vector<uint8_t> xin = x;
  std::vector<uint8_t> want(x.size());
  typename Op::Params p{};
  p.dim = dim;
  {
    SoftmaxTensors t{.self = TensorView(xin.data(), dtype, shape),
                     .out = TensorView(want.data(), dtype, shape)};
    apply_golden32<Op>(t, p);
  }
  const int64_t n = static_cast<int64_t>(x.size() / dtype_size(dtype));
  for_each_target_and_thread_count(
      [&](const std::string&, int) {
        std::vector<uint8_t> got(x.size(), 0xAB);
        SoftmaxTensors t{.self = TensorView(xin.data(), dtype, shape),
                         .out = TensorView(got.data(), dtype, shape)};
        ASSERT_TRUE(Op::run(t, p).ok());
        ASSERT_EQ(first_bit_difference(got.data(), want.data(), n, dtype), -1);
        std::vector<uint8_t> inplace = x;
        SoftmaxTensors ti{.self = TensorView(inplace.data(), dtype, shape),
                          .out = TensorView(inplace.data(), dtype, shape)};
        ASSERT_TRUE(Op::run(ti, p).ok());
        ASSERT_EQ(first_bit_difference(inplace.data(), want.data(), n, dtype), -1);
      },
      threads);
}

template <class Op>
void sweep_shapes() {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    // Row lengths around the vector widths, the 32 reduction lanes and a 4096 block.
    for (int64_t len : {1, 3, 16, 31, 33, 100, 4095, 4097, 9000}) {
      std::vector<int64_t> shape{3, len};
      expect_bitwise<Op>(dtype, shape, -1, random_buffer(dtype, 3 * len, -6, 6, len), {1, 3});
    }
    // Every dim of a rank-4 tensor (tiles of 64 with a partial one: inner 70 or 7*70).
    const std::vector<int64_t> shape{5, 7, 3, 70};
    for (int64_t dim = -4; dim < 4; ++dim) {
      expect_bitwise<Op>(dtype, shape, dim, random_buffer(dtype, 5 * 7 * 3 * 70, -5, 5, 7));
    }
  }
}

TEST(Softmax, BitwiseEveryTargetThreadsDims) { sweep_shapes<SoftmaxOp>(); }
TEST(LogSoftmax, BitwiseEveryTargetThreadsDims) { sweep_shapes<LogSoftmaxOp>(); }

template <class Op>
void stress() {
  // Large offsets: fp32 rows in [90, 100] (exp would overflow without the max shift), fp16/bf16
  // rows in [15, 20].
  expect_bitwise<Op>(DType::kFloat32, {4, 1000}, -1,
                     random_buffer(DType::kFloat32, 4000, 90, 100, 1), {1, 2});
  expect_bitwise<Op>(DType::kFloat16, {4, 1000}, -1,
                     random_buffer(DType::kFloat16, 4000, 15, 20, 2), {1, 2});
  expect_bitwise<Op>(DType::kBFloat16, {4, 1000}, 0,
                     random_buffer(DType::kBFloat16, 4000, 15, 20, 3), {1, 2});
  // A 1M-element row, and a 1M-long non-last axis (several reduction blocks per tile row).
  expect_bitwise<Op>(DType::kFloat32, {1 << 20}, 0,
                     random_buffer(DType::kFloat32, 1 << 20, -10, 10, 4), {1, 2});
  expect_bitwise<Op>(DType::kFloat32, {1 << 18, 3}, 0,
                     random_buffer(DType::kFloat32, 3 << 18, -10, 10, 5), {1, 2});
  // Five blocks per row (the pairwise tree collapses a run of four with a single block) over
  // tiles of 64 and 6 rows.
  expect_bitwise<Op>(DType::kFloat32, {4 * 4096 + 5, 70}, 0,
                     random_buffer(DType::kFloat32, (4 * 4096 + 5) * 70, -10, 10, 6), {1, 2});
}

TEST(Softmax, StressInputs) { stress<SoftmaxOp>(); }

// Softmax keeps a row's exponentials for its output pass up to 2^22 elements (a buffer per
// thread); a longer row computes them again there: both give golden32's bits on every target.
TEST(Softmax, RowBeyondTheKeptExponentials) {
  const int64_t len = (int64_t{1} << 22) + 17;
  expect_bitwise<SoftmaxOp>(DType::kBFloat16, {1, len}, -1,
                            random_buffer(DType::kBFloat16, len, -8, 8, 23), {1});
}
TEST(LogSoftmax, StressInputs) { stress<LogSoftmaxOp>(); }

// A bf16 softmax along the last axis multiplies by the reciprocal of the sum and divides only
// the vectors with a result near a bf16 rounding midpoint: against golden32 (which divides) on
// every target, short rows (a batch's reciprocals in one vector), rows of one reduction block
// (exponentials kept) and longer (recomputed), over a million outputs each (about 500 near a
// midpoint), spread wide enough for subnormal and zero outputs.
TEST(Softmax, Bf16ReciprocalGivesTheDivisionBits) {
  for (int64_t len : {64, 4096, 5000}) {
    const int64_t rows = (1 << 20) / len + 1;
    expect_bitwise<SoftmaxOp>(DType::kBFloat16, {rows, len}, -1,
                              random_buffer(DType::kBFloat16, rows * len, -6, 6, 21), {1});
    expect_bitwise<SoftmaxOp>(DType::kBFloat16, {rows, len}, -1,
                              random_buffer(DType::kBFloat16, rows * len, -120, 0, 22), {1});
  }
}

// Special rows along the last axis and along dim 0 (transposed copy): all -inf -> NaN; +inf
// present -> NaN for the row (inf - inf); NaN -> NaN; constant rows -> uniform (1/n, -log n).
template <class Op>
void special_rows() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<std::vector<float>> rows{
      {-inf, -inf, -inf, -inf, -inf},  {1, -inf, 2, -inf, 3}, {1, inf, 2, -inf, 3},
      {inf, inf, -inf, 0, 0},          {1, 2, nan, 4, 5},     {7, 7, 7, 7, 7},
      {-0.0f, 0.0f, -0.0f, 0.0f, -200}};
  const int64_t r = static_cast<int64_t>(rows.size()), c = 5;
  std::vector<float> x, xt(r * c);
  for (const auto& row : rows) x.insert(x.end(), row.begin(), row.end());
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) xt[j * r + i] = x[i * c + j];
  }
  auto bytes = [](const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
  };
  expect_bitwise<Op>(DType::kFloat32, {r, c}, 1, bytes(x));
  expect_bitwise<Op>(DType::kFloat32, {c, r}, 0, bytes(xt));
  std::vector<float> y(x.size());
  SoftmaxTensors t{.self = TensorView(x.data(), DType::kFloat32, {r, c}),
                   .out = TensorView(y.data(), DType::kFloat32, {r, c})};
  typename Op::Params p{};
  ASSERT_TRUE(Op::run(t, p).ok());
  constexpr bool kLog = std::is_same_v<Op, LogSoftmaxOp>;
  for (int64_t j = 0; j < c; ++j) {
    EXPECT_EQ(std::bit_cast<uint32_t>(y[j]), 0x7FC00000u);          // all -inf
    EXPECT_EQ(std::bit_cast<uint32_t>(y[2 * c + j]), 0x7FC00000u);  // +inf present
    EXPECT_EQ(std::bit_cast<uint32_t>(y[4 * c + j]), 0x7FC00000u);  // NaN present
    EXPECT_EQ(y[5 * c + j], kLog ? -std::log(5.0f) : 0.2f);         // constant
  }
  EXPECT_EQ(y[c + 1], kLog ? -inf : 0.0f);  // -inf among finite values
}

TEST(Softmax, SpecialRows) { special_rows<SoftmaxOp>(); }

// Short rows go one per vector lane at once (a batch: 16 rows with AVX-512, 8 with AVX2, 4 with
// SSE4), their lanes combined across the batch's rows: special rows at a batch's first and last
// row, inside one and in the rows after the last whole batch, for row lengths around the
// vector widths and the 32 reduction lanes up to the longest batched row (256) and one more;
// and rows of 2000, which go two at a time (first and second of a pair, the last row alone);
// every dtype, every target and thread count, bitwise against golden32.
template <class Op>
void special_rows_in_batches() {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const int64_t rows = 41;  // two batches of 16 and nine rows after them
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int64_t len : {1, 5, 31, 64, 100, 256, 257, 2000}) {
      SCOPED_TRACE("len " + std::to_string(len));
      std::vector<uint8_t> x = random_buffer(dtype, rows * len, -6, 6, static_cast<uint32_t>(len));
      const std::size_t size = dtype_size(dtype);
      auto set = [&](int64_t row, int64_t j, float v) {
        const uint32_t bits = precision::narrow_result(v, dtype);
        std::memcpy(x.data() + (row * len + j) * static_cast<int64_t>(size), &bits, size);
      };
      for (int64_t j = 0; j < len; ++j) set(0, j, -inf);  // all -inf
      set(7, len / 2, inf);                               // one +inf
      set(15, len - 1, nan);                              // NaN in the last element
      set(16, 0, inf);                                    // +inf and -inf
      set(16, len - 1, -inf);
      for (int64_t j = 0; j < len; ++j) set(22, j, 3.0f);  // constant
      set(31, 0, nan);
      set(40, len - 1, inf);
      expect_bitwise<Op>(dtype, {rows, len}, -1, x, {1, 2});
    }
  }
}

TEST(Softmax, SpecialRowsInBatchesOfShortRows) { special_rows_in_batches<SoftmaxOp>(); }
TEST(LogSoftmax, SpecialRowsInBatchesOfShortRows) { special_rows_in_batches<LogSoftmaxOp>(); }
TEST(LogSoftmax, SpecialRows) { special_rows<LogSoftmaxOp>(); }

TEST(Softmax, RankZeroAndEmpty) {
  float x = 3.0f, y = 0.0f;
  ASSERT_TRUE(softmax({.self = TensorView(&x, DType::kFloat32, std::span<const int64_t>{}),
                       .out = TensorView(&y, DType::kFloat32, std::span<const int64_t>{})},
                      {.dim = 0, .half_to_float = false})
                  .ok());
  EXPECT_EQ(y, 1.0f);
  float dummy = 0.0f;
  EXPECT_TRUE(softmax({.self = TensorView(&dummy, DType::kFloat32, {0, 3}),
                       .out = TensorView(&dummy, DType::kFloat32, {0, 3})},
                      {.dim = 1, .half_to_float = false})
                  .ok());
}

// ---- Validation -----------------------------------------------------------------------------

struct Bad {
  const char* what;
  SoftmaxTensors t;
  int64_t dim;
  StatusCode code;
  const char* needle;  // in the message, with the operator's name
};

TEST(Softmax, ValidationRowsWriteNothing) {
  std::vector<float> x(12, 1.0f), y(12, 5.0f), y2(6, 5.0f);
  std::vector<int32_t> xi(12, 1);
  const TensorView vx(x.data(), DType::kFloat32, {3, 4});
  const TensorView vy(y.data(), DType::kFloat32, {3, 4});
  const std::vector<Bad> rows{
      {"null self",
       {.self = TensorView(nullptr, DType::kFloat32, {3, 4}), .out = vy},
       -1,
       StatusCode::kParamNullptr,
       "self"},
      {"null out",
       {.self = vx, .out = TensorView(nullptr, DType::kFloat32, {3, 4})},
       -1,
       StatusCode::kParamNullptr,
       "out"},
      {"int self",
       {.self = TensorView(xi.data(), DType::kInt32, {3, 4}), .out = vy},
       -1,
       StatusCode::kParamInvalid,
       "self"},
      {"dtype mismatch",
       {.self = vx, .out = TensorView(y.data(), DType::kFloat16, {3, 4})},
       -1,
       StatusCode::kParamInvalid,
       "out"},
      {"shape mismatch",
       {.self = vx, .out = TensorView(y2.data(), DType::kFloat32, {2, 3})},
       -1,
       StatusCode::kParamInvalid,
       "out"},
      {"dim too large", {.self = vx, .out = vy}, 2, StatusCode::kParamInvalid, "dim is 2"},
      {"dim too small", {.self = vx, .out = vy}, -3, StatusCode::kParamInvalid, "dim is -3"},
      {"overlap",
       {.self = vx, .out = TensorView(x.data() + 1, DType::kFloat32, {3, 4})},
       -1,
       StatusCode::kParamInvalid,
       "out"},
  };
  for (const Bad& b : rows) {
    SCOPED_TRACE(b.what);
    for (bool log : {false, true}) {
      const Status s = log ? log_softmax(b.t, {.dim = b.dim})
                           : softmax(b.t, {.dim = b.dim, .half_to_float = false});
      EXPECT_EQ(s.code(), b.code);
      EXPECT_NE(s.message().find(log ? "LogSoftmaxV2" : "SoftmaxV2"), std::string::npos)
          << s.message();
      EXPECT_NE(s.message().find(b.needle), std::string::npos) << s.message();
      for (float v : y) ASSERT_EQ(v, 5.0f);
      for (float v : x) ASSERT_EQ(v, 1.0f);
    }
  }
  const Status h = softmax({.self = vx, .out = vy}, {.dim = -1, .half_to_float = true});
  EXPECT_EQ(h.code(), StatusCode::kParamInvalid);
  EXPECT_NE(h.message().find("half_to_float"), std::string::npos);
  // Log-softmax needs rank >= 1.
  float s0 = 1.0f, o0 = 5.0f;
  const Status r0 =
      log_softmax({.self = TensorView(&s0, DType::kFloat32, std::span<const int64_t>{}),
                   .out = TensorView(&o0, DType::kFloat32, std::span<const int64_t>{})},
                  {.dim = 0});
  EXPECT_EQ(r0.code(), StatusCode::kParamInvalid);
  EXPECT_EQ(o0, 5.0f);
}

// ---- aclnn ----------------------------------------------------------------------------------

struct AclTensorHolder {
  aclTensor* t = nullptr;
  ~AclTensorHolder() { aclDestroyTensor(t); }
};

using PhaseOne = aclnnStatus (*)(const aclTensor*, int64_t, aclTensor*, uint64_t*, aclOpExecutor**);
using PhaseTwo = aclnnStatus (*)(void*, uint64_t, aclOpExecutor*, aclrtStream);

aclnnStatus run_aclnn(PhaseOne one, PhaseTwo two, const aclTensor* self, int64_t dim,
                      aclTensor* out, uint64_t* ws_size = nullptr) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  if (aclnnStatus s = one(self, dim, out, &size, &executor); s != ACLNN_SUCCESS) return s;
  if (ws_size) *ws_size = size;
  std::vector<uint64_t> ws((size + 7) / 8);
  return two(ws.empty() ? nullptr : ws.data(), size, executor, nullptr);
}

// self is a transposed (strided) view: aclnn copies it through the workspace and gives the bits
// of the C++ API on the contiguous copy.
template <class Op>
void aclnn_strided(PhaseOne one, PhaseTwo two) {
  const int64_t r = 37, c = 29;
  std::vector<float> base(r * c);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-4, 4);
  for (float& v : base) v = dist(rng);
  // self[i][j] = base[j * r + i]: shape [r, c]... transposed view of a [c, r] buffer.
  std::vector<float> contiguous(r * c);
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) contiguous[i * c + j] = base[j * r + i];
  }
  for (int64_t dim : {0, 1, -1}) {
    std::vector<float> want(r * c), got(r * c, 9.0f);
    typename Op::Params p{};
    p.dim = dim;
    ASSERT_TRUE(Op::run({.self = TensorView(contiguous.data(), DType::kFloat32, {r, c}),
                         .out = TensorView(want.data(), DType::kFloat32, {r, c})},
                        p)
                    .ok());
    const int64_t dims[2] = {r, c}, strides[2] = {1, r}, out_strides[2] = {c, 1};
    const int64_t storage[1] = {r * c};
    AclTensorHolder self{
        aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, base.data())};
    AclTensorHolder out{
        aclCreateTensor(dims, 2, ACL_FLOAT, out_strides, 0, ACL_FORMAT_ND, storage, 1, got.data())};
    uint64_t ws = 0;
    ASSERT_EQ(run_aclnn(one, two, self.t, dim, out.t, &ws), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_GT(ws, 0u);
    EXPECT_EQ(first_bit_difference(got.data(), want.data(), r * c, DType::kFloat32), -1);
  }
}

TEST(Softmax, AclnnStrided) {
  aclnn_strided<SoftmaxOp>(aclnnSoftmaxGetWorkspaceSize, aclnnSoftmax);
}
TEST(LogSoftmax, AclnnStrided) {
  aclnn_strided<LogSoftmaxOp>(aclnnLogSoftmaxGetWorkspaceSize, aclnnLogSoftmax);
}

TEST(Softmax, AclnnValidation) {
  std::vector<float> x(12, 1.0f), y(12, 5.0f);
  const int64_t dims[2] = {3, 4}, strides[2] = {4, 1}, storage[1] = {12};
  AclTensorHolder self{
      aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, x.data())};
  AclTensorHolder out{
      aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, y.data())};
  AclTensorHolder out16{
      aclCreateTensor(dims, 2, ACL_FLOAT16, strides, 0, ACL_FORMAT_ND, storage, 1, y.data())};
  struct Row {
    const char* what;
    const aclTensor* self;
    int64_t dim;
    aclTensor* out;
    aclnnStatus code;
    const char* needle;
  };
  const std::vector<Row> rows{
      {"null self", nullptr, -1, out.t, ACLNN_ERR_PARAM_NULLPTR, "self"},
      {"null out", self.t, -1, nullptr, ACLNN_ERR_PARAM_NULLPTR, "out"},
      {"dim out of range", self.t, 2, out.t, ACLNN_ERR_PARAM_INVALID, "dim is 2"},
      {"dtype mismatch", self.t, -1, out16.t, ACLNN_ERR_PARAM_INVALID, "out"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(aclnnSoftmaxGetWorkspaceSize(r.self, r.dim, r.out, &size, &executor), r.code);
    const std::string msg = aclGetRecentErrMsg();
    EXPECT_NE(msg.find("Softmax"), std::string::npos) << msg;  // the aclnn or op type name
    EXPECT_NE(msg.find(r.needle), std::string::npos) << msg;
    EXPECT_EQ(aclnnLogSoftmaxGetWorkspaceSize(r.self, r.dim, r.out, &size, &executor), r.code);
    for (float v : y) ASSERT_EQ(v, 5.0f);
  }
}

}  // namespace

}  // namespace mantissa::testing
