// ForeachNorm through the C++ API: bitwise against the kit's golden32 on every SIMD target and
// thread count for lists of 1, 3 and 300 tensors of mixed sizes and dtypes (empty and
// one-element tensors, tensors of several reduction blocks), p = 2, 1 and inf, special values;
// exact values and error bounds against long double; and every validation rule through the
// three entry points (C++, aclnn, op-by-name) with nothing written.
//
// Below the C++ API's tests: the aclnn two-phase entry, each section headed "// ====".

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_foreach_norm.h"
#include "aclop_support.h"
#include "mantissa/dtype.h"
#include "mantissa/ops/foreach_norm.h"
#include "op_support.h"

namespace mantissa::testing {

namespace {

using Op = detail::ForeachNormOp;
constexpr double kInf = std::numeric_limits<double>::infinity();

// A list of tensors, one arena each, and one 8-byte output arena per tensor.
struct Problem {
  std::vector<std::vector<uint8_t>> mem, out;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DType> dtypes;

  void add(DType d, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    mem.emplace_back(static_cast<size_t>(n) * dtype_size(d) + 4, 0);
    out.emplace_back(8, 0xA5);
    shapes.push_back(std::move(shape));
    dtypes.push_back(d);
  }
  int64_t numel(size_t k) const {
    int64_t n = 1;
    for (int64_t s : shapes[k]) n *= s;
    return n;
  }
  // Normal values around `center` with spread `spread`; `special_pct` percent special values.
  void fill(uint64_t seed, float center, float spread, int special_pct) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> normal(center, spread);
    for (size_t k = 0; k < mem.size(); ++k) {
      const std::vector<uint32_t> specials = testing::special_bits(dtypes[k]);
      for (int64_t i = 0; i < numel(k); ++i) {
        if (static_cast<int>(rng() % 1000) < special_pct) {
          const uint32_t bits = specials[rng() % specials.size()];
          std::memcpy(mem[k].data() + i * dtype_size(dtypes[k]), &bits, dtype_size(dtypes[k]));
        } else {
          store_from_float(dtypes[k], mem[k].data(), i, normal(rng));
        }
      }
    }
  }
  std::vector<TensorView> xs() {
    std::vector<TensorView> v;
    for (size_t k = 0; k < mem.size(); ++k) {
      v.emplace_back(mem[k].data(), dtypes[k], std::span<const int64_t>(shapes[k]));
    }
    return v;
  }
  std::vector<TensorView> outs() {
    std::vector<TensorView> v;
    for (size_t k = 0; k < out.size(); ++k) v.push_back(TensorView(out[k].data(), dtypes[k], {1}));
    return v;
  }
  Status run(double p) {
    const std::vector<TensorView> x = xs(), o = outs();
    return foreach_norm({.x = x, .out = o}, {.p = p});
  }
  void golden(double p) {
    const std::vector<TensorView> x = xs(), o = outs();
    testing::apply_golden32<Op>({.x = x, .out = o}, {.p = p});
  }
  double result(size_t k) const {
    return static_cast<double>(load_as_float(dtypes[k], out[k].data(), 0));
  }
};

// Every target and thread count gives golden32's bits, and x is left as it was.
void expect_golden_everywhere(const Problem& input, double p) {
  Problem want = input;
  want.golden(p);
  testing::for_each_target_and_thread_count([&](const std::string&, int) {
    Problem got = input;
    const Status st = got.run(p);
    ASSERT_TRUE(st.ok()) << st.message();
    for (size_t k = 0; k < got.out.size(); ++k) {
      EXPECT_EQ(0, std::memcmp(got.out[k].data(), want.out[k].data(), dtype_size(got.dtypes[k])))
          << "out[" << k << "] " << dtype_name(got.dtypes[k]) << " got " << got.result(k)
          << " want " << want.result(k);
    }
    EXPECT_EQ(got.mem, input.mem) << "x was written";
  });
}

Problem mixed_list(size_t count, uint64_t seed) {
  Problem p;
  const DType dtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
  std::mt19937_64 rng(seed);
  for (size_t k = 0; k < count; ++k) {
    const int64_t kind = static_cast<int64_t>(rng() % 10);
    std::vector<int64_t> shape;
    if (kind == 0)
      shape = {0};  // empty
    else if (kind == 1)
      shape = {};  // rank 0: one element
    else if (kind == 2)
      shape = {1, 1};  // one element
    else if (kind == 3 && count < 100)
      shape = {70001};  // 18 reduction blocks, the last one partial
    else
      shape = {static_cast<int64_t>(rng() % 300) + 1, 3};
    p.add(dtypes[rng() % 3], shape);
  }
  // Every kind at least once in the longer lists.
  if (count >= 3) {
    p.shapes[0] = {0};
    p.mem[0].assign(4, 0);
    p.shapes[count - 1] = {1};
    p.mem[count - 1].assign(dtype_size(p.dtypes[count - 1]) + 4, 0);
  }
  return p;
}

TEST(ForeachNorm, ListsOfOneThreeAndThreeHundredMatchTheReference) {
  for (size_t count : {size_t{1}, size_t{3}, size_t{300}}) {
    for (double p : {2.0, 1.0, kInf}) {
      SCOPED_TRACE("tensors " + std::to_string(count) + " p " + std::to_string(p));
      Problem prob = mixed_list(count, count);
      prob.fill(count * 7, 0.0f, 3.0f, 0);
      expect_golden_everywhere(prob, p);
    }
  }
  // One large tensor of each dtype: blocks claimed by several threads.
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Problem prob;
    prob.add(d, {300001});
    prob.fill(5, 1.0f, 2.0f, 0);
    for (double p : {2.0, 1.0, kInf}) expect_golden_everywhere(prob, p);
  }
}

TEST(ForeachNorm, SpecialValuesMatchTheReference) {
  Problem prob = mixed_list(40, 3);
  prob.fill(11, 0.0f, 10.0f, 20);  // 2 %: +-0, +-inf, NaNs with payloads, subnormals, max
  for (double p : {2.0, 1.0, kInf}) expect_golden_everywhere(prob, p);
}

// The rules one by one, with exact expectations.
TEST(ForeachNorm, SpecialValueRules) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(d));
    const float big = d == DType::kFloat16 ? 60000.0f : 3.0e38f;
    const std::vector<std::vector<float>> lists{
        {3.0f, -4.0f},                                    // 0: 5, 7, 4
        {std::numeric_limits<float>::infinity(), 1.0f},   // 1: inf
        {-std::numeric_limits<float>::infinity(), 1.0f},  // 2: inf
        {std::numeric_limits<float>::quiet_NaN(), 1.0f},  // 3: NaN (canonical)
        {1.0f, std::numeric_limits<float>::infinity(),    // 4: NaN wins over inf
         -std::numeric_limits<float>::quiet_NaN()},
        {-0.0f, -0.0f},  // 5: +0
        {big, big},      // 6: p=1 and p=2 overflow the dtype: inf; p=inf: big
    };
    Problem prob;
    for (const auto& l : lists) {
      prob.add(d, {static_cast<int64_t>(l.size())});
      for (size_t i = 0; i < l.size(); ++i) store_from_float(d, prob.mem.back().data(), i, l[i]);
    }
    prob.add(d, {0});  // 7: empty: +0
    const uint32_t nan_bits =
        d == DType::kFloat32 ? 0x7FC00000u : (d == DType::kFloat16 ? 0x7E00u : 0x7FC0u);
    for (double p : {2.0, 1.0, kInf}) {
      SCOPED_TRACE("p " + std::to_string(p));
      ASSERT_TRUE(prob.run(p).ok());
      EXPECT_EQ(prob.result(0), p == 2.0 ? 5.0 : (p == 1.0 ? 7.0 : 4.0));
      EXPECT_EQ(prob.result(1), kInf);
      EXPECT_EQ(prob.result(2), kInf);
      for (size_t k : {size_t{3}, size_t{4}}) {
        uint32_t bits = 0;
        std::memcpy(&bits, prob.out[k].data(), dtype_size(d));
        EXPECT_EQ(bits, nan_bits) << "out[" << k << "]";
      }
      EXPECT_EQ(prob.result(5), 0.0);
      EXPECT_FALSE(std::signbit(prob.result(5)));
      EXPECT_EQ(prob.result(6), p == kInf ? static_cast<double>(round_to(d, big)) : kInf);
      EXPECT_EQ(prob.result(7), 0.0);
      EXPECT_FALSE(std::signbit(prob.result(7)));
    }
  }
}

// One rounding from fp64 to the output dtype: sums just above a midpoint of fp16 or bf16 whose
// fp32 rounding lands on the midpoint itself (a second rounding would tie to even, downwards).
TEST(ForeachNorm, RoundedOnceNotTwice) {
  Problem prob;
  prob.add(DType::kBFloat16, {3});  // 1 + 2^-8 + 2^-40: just above the midpoint 1 + 2^-8
  prob.add(DType::kFloat16, {3});   // 1 + 2^-11 + 2^-24: just above the midpoint 1 + 2^-11
  const float b[] = {1.0f, std::ldexp(1.0f, -8), std::ldexp(1.0f, -40)};
  const float h[] = {1.0f, std::ldexp(1.0f, -11), std::ldexp(1.0f, -24)};
  for (int i = 0; i < 3; ++i) {
    store_from_float(DType::kBFloat16, prob.mem[0].data(), i, b[i]);
    store_from_float(DType::kFloat16, prob.mem[1].data(), i, h[i]);
  }
  ASSERT_TRUE(prob.run(1.0).ok());
  EXPECT_EQ(prob.result(0), 1.0 + std::ldexp(1.0, -7));
  EXPECT_EQ(prob.result(1), 1.0 + std::ldexp(1.0, -10));
  expect_golden_everywhere(prob, 1.0);
}

// The documented bound (docs/ops/foreach_norm.md): the fp64 norm is within gamma(k) N of the
// exact norm N (naive method, k = 132 + L, docs/reductions.md; the terms are non-negative), far
// below half an ulp of fp32, so the result is N rounded once (RNE) to the output dtype, except
// where N lies within that bound of a rounding midpoint. Checked against long double sums.
TEST(ForeachNorm, WithinHalfAnUlpPlusTheFp64BoundOfTheExactNorm) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    Problem prob;
    for (int64_t n : {1, 31, 4096, 4097, 100000}) prob.add(d, {n});
    prob.fill(17, 0.5f, 1.0f, 0);
    for (double p : {2.0, 1.0}) {
      ASSERT_TRUE(prob.run(p).ok());
      for (size_t k = 0; k < prob.mem.size(); ++k) {
        long double s = 0.0L;
        for (int64_t i = 0; i < prob.numel(k); ++i) {
          const long double v = std::fabs(load_as_float(d, prob.mem[k].data(), i));
          s += p == 2.0 ? v * v : v;
        }
        const long double exact = p == 2.0 ? std::sqrt(s) : s;
        if (d == DType::kFloat16 && exact > 65520.0L) {  // rounds to inf in fp16
          EXPECT_EQ(prob.result(k), kInf);
          continue;
        }
        const int bits = d == DType::kFloat32 ? 24 : (d == DType::kFloat16 ? 11 : 8);
        const long double ulp = std::ldexp(1.0L, std::ilogb(static_cast<double>(exact)) - bits + 1);
        // gamma(k) N for p = 1, (gamma(k) / 2 + u) N for p = 2; k = 132 + L <= 140 here.
        const long double fp64_bound = (140.0L * std::ldexp(1.0L, -53)) * exact;
        EXPECT_LE(std::fabs(static_cast<long double>(prob.result(k)) - exact), ulp / 2 + fp64_bound)
            << dtype_name(d) << " p " << p << " n " << prob.numel(k);
      }
    }
  }
}

TEST(ForeachNorm, PFromEveryScalarFormAndEmptyList) {
  Problem prob;
  prob.add(DType::kFloat32, {3});
  for (int i = 0; i < 3; ++i) store_from_float(DType::kFloat32, prob.mem[0].data(), i, -2.0f);
  ASSERT_TRUE(prob.run(1.0).ok());
  EXPECT_EQ(prob.result(0), 6.0);
  EXPECT_TRUE(foreach_norm({}, {.p = 2.0}).ok());   // nothing to do
  EXPECT_EQ(foreach_norm_workspace_size({}), 16u);  // one block offset and alignment room
}

TEST(ForeachNorm, CallerWorkspaceGivesTheSameBits) {
  Problem prob = mixed_list(30, 8);
  prob.fill(3, 0.0f, 1.0f, 0);
  Problem want = prob;
  ASSERT_TRUE(want.run(2.0).ok());
  const std::vector<TensorView> x = prob.xs(), o = prob.outs();
  const ForeachNormTensors t{.x = x, .out = o};
  const uint64_t size = foreach_norm_workspace_size(t);
  EXPECT_EQ(size % 8, 0u);
  // Lent at every alignment: the size covers aligning the partials inside it.
  std::vector<uint8_t> ws(size + 8, 0xEE);
  for (std::size_t offset = 0; offset < 8; ++offset) {
    SCOPED_TRACE("workspace offset " + std::to_string(offset));
    for (auto& b : prob.out) std::fill(b.begin(), b.end(), 0xA5);
    ASSERT_TRUE(foreach_norm(t, {}, {ws.data() + offset, size}).ok());
    EXPECT_EQ(prob.out, want.out);
  }
  // Bytes past the reported size are not touched.
  std::vector<uint8_t> exact(size + 64, 0xEE);
  ASSERT_TRUE(foreach_norm(t, {}, {exact.data(), size}).ok());
  for (std::size_t i = size; i < exact.size(); ++i) ASSERT_EQ(exact[i], 0xEE) << i;
}

// ---- Validation through every entry point: code, a message naming the operator, the argument
// (with its index) and the values, and nothing written ----

// A view's dims and strides; a view of rank above kMaxRank keeps only its first kMaxRank dims,
// so the rest read as 1 (still the view's rank, which is what the rank rows test).
std::vector<int64_t> dims_of(const TensorView& v, bool strides = false) {
  std::vector<int64_t> d(static_cast<std::size_t>(v.rank), 1);
  for (int i = 0; i < std::min(v.rank, kMaxRank); ++i) d[i] = strides ? v.strides[i] : v.shape[i];
  return d;
}

aclTensor* acl_tensor(const TensorView& v) {
  const std::vector<int64_t> shape = dims_of(v), strides = dims_of(v, true);
  int64_t reach = 1;
  for (int i = 0; i < v.rank; ++i) reach += (shape[i] - 1) * strides[i];
  const std::vector<int64_t> storage{std::max<int64_t>(reach, 0)};
  return aclCreateTensor(shape.data(), shape.size(), static_cast<aclDataType>(v.dtype),
                         strides.data(), 0, ACL_FORMAT_ND, storage.data(), 1, v.data);
}

// Both aclnn phases; p as an aclScalar of `p_dtype`.
aclnnStatus run_aclnn(const std::vector<TensorView>& x, const std::vector<TensorView>& out,
                      double p, aclDataType p_dtype = ACL_FLOAT) {
  std::vector<aclTensor*> xe, oe;
  for (const TensorView& v : x) xe.push_back(acl_tensor(v));
  for (const TensorView& v : out) oe.push_back(acl_tensor(v));
  aclTensorList* xl = aclCreateTensorList(xe.data(), xe.size());
  aclTensorList* ol = aclCreateTensorList(oe.data(), oe.size());
  const float f = static_cast<float>(p);
  const int64_t i = std::isfinite(p) ? static_cast<int64_t>(p) : 0;
  const void* value = p_dtype == ACL_FLOAT    ? static_cast<const void*>(&f)
                      : p_dtype == ACL_DOUBLE ? static_cast<const void*>(&p)
                                              : static_cast<const void*>(&i);
  aclScalar* scalar = aclCreateScalar(const_cast<void*>(value), p_dtype);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus s = aclnnForeachNormGetWorkspaceSize(xl, scalar, ol, &size, &executor);
  if (s == ACLNN_SUCCESS) {
    std::vector<uint64_t> ws((size + 7) / 8);
    s = aclnnForeachNorm(ws.empty() ? nullptr : ws.data(), size, executor, nullptr);
  }
  aclDestroyTensorList(xl);
  aclDestroyTensorList(ol);
  aclDestroyScalar(scalar);
  return s;
}

// Op-by-name: x as the dynamic input, p as the "scalar" input tensor, out as the dynamic
// output "y".
aclError run_aclop(const std::vector<TensorView>& x, const std::vector<TensorView>& out, double p,
                   aclDataType p_dtype = ACL_FLOAT) {
  std::vector<aclTensorDesc*> in_desc, out_desc;
  std::vector<aclDataBuffer*> in_buf, out_buf;
  std::vector<std::vector<int64_t>> dims;
  auto add = [&](const TensorView& v, std::vector<aclTensorDesc*>& d,
                 std::vector<aclDataBuffer*>& b) {
    const std::vector<int64_t> shape = dims_of(v);
    d.push_back(aclCreateTensorDesc(static_cast<aclDataType>(v.dtype), v.rank, shape.data(),
                                    ACL_FORMAT_ND));
    b.push_back(aclCreateDataBuffer(v.data, static_cast<size_t>(v.nbytes().value_or(0))));
  };
  for (const TensorView& v : x) add(v, in_desc, in_buf);
  const float f = static_cast<float>(p);
  const int64_t i = std::isfinite(p) ? static_cast<int64_t>(p) : 0;
  void* value = p_dtype == ACL_FLOAT    ? static_cast<void*>(const_cast<float*>(&f))
                : p_dtype == ACL_DOUBLE ? static_cast<void*>(&p)
                                        : static_cast<void*>(const_cast<int64_t*>(&i));
  add(TensorView(value, static_cast<DType>(p_dtype), {1}), in_desc, in_buf);
  for (const TensorView& v : out) add(v, out_desc, out_buf);
  const aclError rc = aclopCompileAndExecuteV2(
      "ForeachNorm", static_cast<int>(in_desc.size()), in_desc.data(), in_buf.data(),
      static_cast<int>(out_desc.size()), out_desc.data(), out_buf.data(), nullptr, ACL_ENGINE_SYS,
      ACL_COMPILE_SYS, nullptr, nullptr);
  for (auto* d : in_desc) aclDestroyTensorDesc(d);
  for (auto* d : out_desc) aclDestroyTensorDesc(d);
  for (auto* b : in_buf) aclDestroyDataBuffer(b);
  for (auto* b : out_buf) aclDestroyDataBuffer(b);
  return rc;
}

TEST(ForeachNorm, ValidationRowsWriteNothingThroughEveryEntryPoint) {
  // One arena so overlapping views can be made.
  std::vector<float> arena(256);
  for (size_t i = 0; i < arena.size(); ++i) arena[i] = static_cast<float>(i) + 0.5f;
  const std::vector<float> before = arena;
  float* a = arena.data();
  constexpr int kSkip = -1;  // the entry point cannot express the row
  struct Row {
    const char* what;
    int cxx, aclnn, aclop;  // expected codes
    const char* needle;
    std::vector<TensorView> x, out;
    double p = 2.0;
  };
  const TensorView x0(a, DType::kFloat32, {16}), x1(a + 16, DType::kFloat32, {4, 4});
  const TensorView o0(a + 200, DType::kFloat32, {1}), o1(a + 201, DType::kFloat32, {1, 1});
  const TensorView h0(a + 64, DType::kFloat16, {8}), ho1(a + 202, DType::kFloat16, {1});
  constexpr int kNull = 161001, kInvalid = 161002, kTiling = 561002;
  std::vector<Row> rows{
      {"null x element data",
       kNull,
       kNull,
       kNull,
       "x[1]",
       {x0, TensorView(nullptr, DType::kFloat32, {4})},
       {o0, o1}},
      {"null out element data",
       kNull,
       kNull,
       kNull,
       "out[1]",
       {x0, x1},
       {o0, TensorView(nullptr, DType::kFloat32, {1})}},
      {"out shorter than x",
       kInvalid,
       kInvalid,
       kInvalid,
       "out holds 1 tensors but x holds 2",
       {x0, x1},
       {o0}},
      {"out longer than x",
       kInvalid,
       kInvalid,
       kInvalid,
       "out holds 2 tensors but x holds 1",
       {x0},
       {o0, o1}},
      {"int32 x element",
       kInvalid,
       kInvalid,
       kInvalid,
       "x[1] dtype INT32",
       {x0, TensorView(a + 16, DType::kInt32, {4})},
       {o0, o1}},
      // In aclnn a list of one dtype comes first: out is mixed there.
      {"out[2] dtype differs from x[2]",
       kInvalid,
       kTiling,
       kInvalid,
       "out[2] dtype FLOAT16",
       {x0, x1, TensorView(a + 100, DType::kFloat32, {8})},
       {o0, o1, TensorView(a + 203, DType::kFloat16, {1})}},
      {"mixed x dtypes",
       0,
       kTiling,
       0,
       "x[1] dtype FLOAT16 differs from x[0]",
       {x0, h0},
       {o0, ho1}},
      {"two-element out[1]",
       kTiling,
       kTiling,
       kTiling,
       "out[1]",
       {x0, x1},
       {o0, TensorView(a + 201, DType::kFloat32, {2})}},
      {"empty out[0]",
       kTiling,
       kTiling,
       kTiling,
       "out[0]",
       {x0},
       {TensorView(a + 200, DType::kFloat32, {0})}},
      // Upstream's tiling rule in aclnn.
      {"rank 9 x element",
       kInvalid,
       kTiling,
       kInvalid,
       "x[0] rank 9",
       {TensorView(a, DType::kFloat32, {1, 1, 1, 1, 1, 1, 1, 1, 2})},
       {o0}},
      {"p = 3", kInvalid, kInvalid, kInvalid, "p is 3", {x0}, {o0}, 3.0},
      {"p = -inf", kInvalid, kInvalid, kInvalid, "p is -inf", {x0}, {o0}, -kInf},
      {"p = 0", kInvalid, kInvalid, kInvalid, "p is 0", {x0}, {o0}, 0.0},
      {"strided x element",
       kInvalid,
       kInvalid,
       kSkip,
       "x[1]",
       {x0, TensorView(a + 16, DType::kFloat32, std::vector<int64_t>{4}, std::vector<int64_t>{2})},
       {o0, o1}},
      {"out inside x",
       kInvalid,
       kInvalid,
       kInvalid,
       "overlaps",
       {x0, x1},
       {o0, TensorView(a + 20, DType::kFloat32, {1})}},
      {"two outs on one element",
       kInvalid,
       kInvalid,
       kInvalid,
       "overlaps",
       {x0, x1},
       {o0, TensorView(a + 200, DType::kFloat32, {1})}},
  };
  for (Row& r : rows) {
    SCOPED_TRACE(r.what);
    const ForeachNormTensors t{.x = r.x, .out = r.out};
    const Status v = foreach_norm_validate(t, {.p = r.p});
    EXPECT_EQ(static_cast<int>(v.code()), r.cxx) << v.message();
    if (r.cxx != 0) {
      const Status s = foreach_norm(t, {.p = r.p});
      EXPECT_EQ(static_cast<int>(s.code()), r.cxx) << s.message();
      EXPECT_EQ(s.message(), v.message());
      EXPECT_EQ(s.message().rfind("ForeachNorm: ", 0), 0u) << s.message();
      EXPECT_NE(s.message().find(r.needle), std::string::npos) << s.message();
      EXPECT_EQ(arena, before) << "a rejected C++ call wrote";
    }
    if (r.aclnn != kSkip && r.aclnn != 0) {
      const aclDataType p_dtype = std::isfinite(r.p) ? ACL_DOUBLE : ACL_FLOAT;
      EXPECT_EQ(static_cast<int>(run_aclnn(r.x, r.out, r.p, p_dtype)), r.aclnn)
          << aclGetRecentErrMsg();
      EXPECT_NE(std::string(aclGetRecentErrMsg()).find(r.needle), std::string::npos)
          << aclGetRecentErrMsg();
      EXPECT_EQ(arena, before) << "a rejected aclnn call wrote";
    }
    if (r.aclop != kSkip && r.aclop != 0) {
      const aclDataType p_dtype = std::isfinite(r.p) ? ACL_INT64 : ACL_FLOAT;
      const double p = std::isfinite(r.p) ? std::trunc(r.p) : r.p;
      EXPECT_EQ(static_cast<int>(run_aclop(r.x, r.out, p, p_dtype)), r.aclop)
          << aclGetRecentErrMsg();
      EXPECT_NE(std::string(aclGetRecentErrMsg()).find(r.needle), std::string::npos)
          << aclGetRecentErrMsg();
      EXPECT_EQ(arena, before) << "a rejected op-by-name call wrote";
    }
  }
}

// The scalar's own rules: aclnn takes FLOAT, DOUBLE or INT64 (else 161002), op-by-name the same
// dtypes as a one-element input tensor; every form gives the same bits.
TEST(ForeachNorm, ScalarFormsAgreeAcrossEntryPoints) {
  Problem prob = mixed_list(5, 21);
  for (size_t k = 0; k < prob.dtypes.size(); ++k) prob.dtypes[k] = DType::kBFloat16;
  prob.fill(2, 0.0f, 4.0f, 0);
  for (double p : {2.0, 1.0, kInf}) {
    Problem want = prob;
    ASSERT_TRUE(want.run(p).ok());
    for (aclDataType d : {ACL_FLOAT, ACL_DOUBLE, ACL_INT64}) {
      if (d == ACL_INT64 && std::isinf(p)) continue;
      Problem got = prob;
      ASSERT_EQ(run_aclnn(got.xs(), got.outs(), p, d), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      EXPECT_EQ(got.out, want.out) << "aclnn, p dtype " << d;
      Problem byname = prob;
      ASSERT_EQ(run_aclop(byname.xs(), byname.outs(), p, d), ACL_SUCCESS) << aclGetRecentErrMsg();
      EXPECT_EQ(byname.out, want.out) << "op-by-name, p dtype " << d;
    }
  }
  Problem bad = prob;
  const auto before = bad.out;
  EXPECT_EQ(run_aclnn(bad.xs(), bad.outs(), 2.0, ACL_FLOAT16), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("scalar dtype FLOAT16"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(run_aclop(bad.xs(), bad.outs(), 2.0, ACL_INT32), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("(scalar) dtype INT32"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(bad.out, before);
}

}  // namespace

// ==== The aclnn entry: =======================================================
// aclnnForeachNorm through the C API: upstream's published sample inputs, the same bits as the
// C++ API for every p form (FLOAT, DOUBLE, INT64 scalars), and the codes: nulls 161001; a
// scalar that is not live or of another dtype, an unsupported p, out[i] not of x[i]'s dtype, a
// length mismatch or a strided element 161002; mixed dtypes in x or out, a rank above 8 and an
// out[i] without exactly one element 561002; nothing written on error. Also op-by-name with the
// dynamic output list "y" and p as the "scalar" input tensor.

namespace aclnn {

namespace {

using mantissa::DType;

aclTensor* tensor(void* data, aclDataType d, const std::vector<int64_t>& shape,
                  std::vector<int64_t> strides = {}) {
  if (strides.empty()) {
    strides.assign(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  }
  int64_t reach = 1;
  for (size_t i = 0; i < shape.size(); ++i) reach += (shape[i] - 1) * strides[i];
  const std::vector<int64_t> storage{std::max<int64_t>(reach, 0)};
  return aclCreateTensor(shape.data(), shape.size(), d, strides.data(), 0, ACL_FORMAT_ND,
                         storage.data(), 1, data);
}

// Host memory for a list x and its outputs; the C handles made on demand.
struct Host {
  std::vector<std::vector<uint8_t>> x, out;
  std::vector<std::vector<int64_t>> shapes, out_shapes;
  std::vector<aclDataType> dtypes, out_dtypes;
  std::vector<std::vector<int64_t>> strides;  // empty: contiguous

  void add(aclDataType d, std::vector<int64_t> shape, float first, float step = 0.7f) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    const auto dt = static_cast<DType>(d);
    x.emplace_back(std::max<size_t>(8, static_cast<size_t>(n) * mantissa::dtype_size(dt)), 0);
    for (int64_t i = 0; i < n; ++i) {
      mantissa::store_from_float(dt, x.back().data(), i, first + step * static_cast<float>(i));
    }
    shapes.push_back(std::move(shape));
    dtypes.push_back(d);
    strides.emplace_back();
    out.emplace_back(8, 0x5A);
    out_shapes.push_back({1});
    out_dtypes.push_back(d);
  }
  float result(size_t k) const {
    return mantissa::load_as_float(static_cast<DType>(out_dtypes[k]), out[k].data(), 0);
  }
};

struct Scalar {
  aclDataType dtype = ACL_FLOAT;
  double p = 2.0;
};

// Both phases; returns the first non-success status.
aclnnStatus run_aclnn(Host& h, Scalar s = {}) {
  std::vector<aclTensor*> xe, oe;
  for (size_t k = 0; k < h.x.size(); ++k) {
    xe.push_back(tensor(h.x[k].data(), h.dtypes[k], h.shapes[k], h.strides[k]));
  }
  for (size_t k = 0; k < h.out.size(); ++k) {
    oe.push_back(tensor(h.out[k].data(), h.out_dtypes[k], h.out_shapes[k]));
  }
  aclTensorList* xl = aclCreateTensorList(xe.data(), xe.size());
  aclTensorList* ol = aclCreateTensorList(oe.data(), oe.size());
  float f = static_cast<float>(s.p);
  int64_t i = std::isfinite(s.p) ? static_cast<int64_t>(s.p) : 0;
  int32_t i32 = static_cast<int32_t>(i);
  void* value = s.dtype == ACL_FLOAT    ? static_cast<void*>(&f)
                : s.dtype == ACL_DOUBLE ? static_cast<void*>(&s.p)
                : s.dtype == ACL_INT32  ? static_cast<void*>(&i32)
                                        : static_cast<void*>(&i);
  aclScalar* scalar = aclCreateScalar(value, s.dtype);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus st = aclnnForeachNormGetWorkspaceSize(xl, scalar, ol, &size, &executor);
  if (st == ACLNN_SUCCESS) {
    std::vector<uint64_t> ws((size + 7) / 8);
    st = aclnnForeachNorm(ws.empty() ? nullptr : ws.data(), size, executor, nullptr);
  }
  aclDestroyTensorList(xl);
  aclDestroyTensorList(ol);
  aclDestroyScalar(scalar);
  return st;
}

// The C++ API on a copy: the reference bits.
Host cxx(const Host& in, double p) {
  Host h = in;
  std::vector<mantissa::TensorView> x, out;
  for (size_t k = 0; k < h.x.size(); ++k) {
    x.emplace_back(h.x[k].data(), static_cast<DType>(h.dtypes[k]),
                   std::span<const int64_t>(h.shapes[k]));
    out.emplace_back(h.out[k].data(), static_cast<DType>(h.out_dtypes[k]),
                     std::span<const int64_t>(h.out_shapes[k]));
  }
  EXPECT_TRUE(mantissa::foreach_norm({.x = x, .out = out}, {.p = p}).ok());
  return h;
}

TEST(AclnnForeachNorm, UpstreamSampleInputs) {
  // x[0] = [[1, 2, 3], [4, 5, 6]], x[1] = [[7, 8, 9]], out shapes [1, 1], p = 2 as FLOAT.
  Host h;
  h.add(ACL_FLOAT, {2, 3}, 1.0f, 1.0f);
  h.add(ACL_FLOAT, {1, 3}, 7.0f, 1.0f);
  h.out_shapes = {{1, 1}, {1, 1}};
  ASSERT_EQ(run_aclnn(h), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(h.result(0), static_cast<float>(std::sqrt(91.0)));
  EXPECT_EQ(h.result(1), static_cast<float>(std::sqrt(194.0)));
}

TEST(AclnnForeachNorm, EveryScalarFormGivesTheCxxBits) {
  const double inf = std::numeric_limits<double>::infinity();
  for (aclDataType d : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    for (int count : {0, 1, 3, 300}) {
      Host h;
      for (int k = 0; k < count; ++k) {
        std::vector<int64_t> shape{(k * 37) % 90, 3};  // includes empty tensors
        if (k % 7 == 1) shape = {};                    // rank 0
        if (k == 2) shape = {5000};                    // two reduction blocks
        h.add(d, shape, -1.0f + 0.01f * static_cast<float>(k), 0.37f);
      }
      for (double p : {2.0, 1.0, inf}) {
        const Host want = cxx(h, p);
        for (aclDataType sd : {ACL_FLOAT, ACL_DOUBLE, ACL_INT64}) {
          if (sd == ACL_INT64 && std::isinf(p)) continue;
          SCOPED_TRACE(::testing::Message() << "dtype " << d << " tensors " << count << " p " << p
                                            << " scalar dtype " << sd);
          Host got = h;
          ASSERT_EQ(run_aclnn(got, {sd, p}), ACLNN_SUCCESS) << aclGetRecentErrMsg();
          EXPECT_EQ(got.out, want.out);
        }
      }
    }
  }
}

TEST(AclnnForeachNorm, NullsAre161001) {
  Host h;
  h.add(ACL_FLOAT, {2}, 1.0f);
  aclTensor* xe = tensor(h.x[0].data(), ACL_FLOAT, h.shapes[0]);
  aclTensor* oe = tensor(h.out[0].data(), ACL_FLOAT, {1});
  aclTensorList* xl = aclCreateTensorList(&xe, 1);
  aclTensorList* ol = aclCreateTensorList(&oe, 1);
  float two = 2.0f;
  aclScalar* s = aclCreateScalar(&two, ACL_FLOAT);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(nullptr, s, ol, &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(xl, nullptr, ol, &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("scalar is null"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(xl, s, nullptr, &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(xl, s, ol, nullptr, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(xl, s, ol, &size, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  // A destroyed scalar is detected, not read.
  aclDestroyScalar(s);
  EXPECT_EQ(aclnnForeachNormGetWorkspaceSize(xl, s, ol, &size, &executor), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("not a live aclScalar"), std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(h.out[0], std::vector<uint8_t>(8, 0x5A));
  aclDestroyTensorList(xl);
  aclDestroyTensorList(ol);
}

TEST(AclnnForeachNorm, RejectedCallsWriteNothing) {
  struct Row {
    const char* what;
    aclnnStatus code;
    const char* needle;
    void (*mutate)(Host&, Scalar&);
  };
  const std::vector<Row> rows{
      {"FLOAT16 scalar", ACLNN_ERR_PARAM_INVALID, "scalar dtype FLOAT16",
       [](Host&, Scalar& s) { s.dtype = ACL_FLOAT16; }},
      {"INT32 scalar", ACLNN_ERR_PARAM_INVALID, "scalar dtype INT32",
       [](Host&, Scalar& s) { s.dtype = ACL_INT32; }},
      {"p = 3", ACLNN_ERR_PARAM_INVALID, "p is 3", [](Host&, Scalar& s) { s.p = 3.0; }},
      {"p = 0.5 as DOUBLE", ACLNN_ERR_PARAM_INVALID, "p is 0.5",
       [](Host&, Scalar& s) { s.dtype = ACL_DOUBLE, s.p = 0.5; }},
      {"p = NaN", ACLNN_ERR_PARAM_INVALID, "p is nan",
       [](Host&, Scalar& s) { s.p = std::numeric_limits<double>::quiet_NaN(); }},
      {"mixed x dtypes", ACLNN_ERR_INNER_TILING_ERROR, "x[1] dtype FLOAT16 differs from x[0]",
       [](Host& h, Scalar&) { h.dtypes[1] = h.out_dtypes[1] = ACL_FLOAT16; }},
      {"mixed out dtypes", ACLNN_ERR_INNER_TILING_ERROR,
       "out[2] dtype BFLOAT16 differs from out[0]",
       [](Host& h, Scalar&) { h.out_dtypes[2] = ACL_BF16; }},
      {"out of another dtype than x", ACLNN_ERR_PARAM_INVALID, "out[0]",
       [](Host& h, Scalar&) {
         h.out_dtypes = {ACL_FLOAT16, ACL_FLOAT16, ACL_FLOAT16};
       }},
      {"INT32 x", ACLNN_ERR_PARAM_INVALID, "x[0] dtype INT32",
       [](Host& h, Scalar&) {
         h.dtypes = {ACL_INT32, ACL_INT32, ACL_INT32};
         h.out_dtypes = h.dtypes;
       }},
      {"out shorter than x", ACLNN_ERR_PARAM_INVALID, "out holds 2 tensors but x holds 3",
       [](Host& h, Scalar&) {
         h.out.pop_back(), h.out_shapes.pop_back(), h.out_dtypes.pop_back();
       }},
      {"rank 9 x[1]", ACLNN_ERR_INNER_TILING_ERROR, "x[1] rank 9 is above 8",
       [](Host& h, Scalar&) { h.shapes[1] = {1, 1, 1, 1, 1, 1, 1, 2, 2}; }},
      {"rank 9 out[0]", ACLNN_ERR_INNER_TILING_ERROR, "out[0] rank 9 is above 8",
       [](Host& h, Scalar&) { h.out_shapes[0] = {1, 1, 1, 1, 1, 1, 1, 1, 1}; }},
      {"two-element out[1]", ACLNN_ERR_INNER_TILING_ERROR, "out[1]",
       [](Host& h, Scalar&) { h.out_shapes[1] = {2}; }},
      {"strided x[2]", ACLNN_ERR_PARAM_INVALID, "x[2]",
       [](Host& h, Scalar&) { h.strides[2] = {2}, h.shapes[2] = {2}; }},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    Host h;
    h.add(ACL_FLOAT, {4}, 1.0f);
    h.add(ACL_FLOAT, {2, 2}, -3.0f);
    h.add(ACL_FLOAT, {5}, 0.5f);
    Scalar s;
    r.mutate(h, s);
    const Host before = h;
    EXPECT_EQ(run_aclnn(h, s), r.code) << aclGetRecentErrMsg();
    EXPECT_NE(std::string(aclGetRecentErrMsg()).find(r.needle), std::string::npos)
        << aclGetRecentErrMsg();
    EXPECT_EQ(h.out, before.out);
    EXPECT_EQ(h.x, before.x);
  }
}

TEST(AclopForeachNorm, DynamicOutputListGivesTheCxxBits) {
  for (int count : {0, 1, 3}) {
    SCOPED_TRACE("tensors " + std::to_string(count));
    mantissa::testing::aclop_support::Call c("ForeachNorm");
    Host h;
    for (int k = 0; k < count; ++k) h.add(ACL_BF16, {3, static_cast<int64_t>(k + 1)}, 0.5f * k);
    for (int k = 0; k < count; ++k) c.add_in(ACL_BF16, h.shapes[k]);
    c.add_in(ACL_INT64, {});  // p
    for (int k = 0; k < count; ++k) c.add_out(ACL_BF16, {1});
    c.allocate();
    for (int k = 0; k < count; ++k) c.in(k).mem = h.x[k];
    const int64_t one = 1;
    std::memcpy(c.in(count).mem.data(), &one, sizeof(one));
    ASSERT_EQ(c.run(), ACL_SUCCESS) << aclGetRecentErrMsg();
    const Host want = cxx(h, 1.0);
    for (int k = 0; k < count; ++k) {
      EXPECT_EQ(0, std::memcmp(c.out(k).mem.data(), want.out[k].data(), 2)) << k;
    }
  }
}

TEST(AclopForeachNorm, ScalarInputAndOutputCountRules) {
  auto base = [] {
    mantissa::testing::aclop_support::Call c("ForeachNorm");
    c.add_in(ACL_FLOAT, {4});
    c.add_in(ACL_FLOAT, {3});
    c.add_in(ACL_FLOAT, {1});  // p
    c.add_out(ACL_FLOAT, {1});
    c.add_out(ACL_FLOAT, {1});
    return c;
  };
  {
    mantissa::testing::aclop_support::Call c = base();
    c.in(2).dims = {2};
    mantissa::testing::aclop_support::expect_rejected_untouched(
        c, ACLNN_ERR_PARAM_INVALID, "two-element p", "(scalar) dims [2]");
  }
  {
    mantissa::testing::aclop_support::Call c = base();
    c.in(2).dtype = ACL_FLOAT16;
    mantissa::testing::aclop_support::expect_rejected_untouched(
        c, ACLNN_ERR_PARAM_INVALID, "FLOAT16 p", "(scalar) dtype FLOAT16");
  }
  {
    mantissa::testing::aclop_support::Call c = base();
    c.outs().pop_back();
    mantissa::testing::aclop_support::expect_rejected_untouched(
        c, ACLNN_ERR_PARAM_INVALID, "one output for two x", "out holds 1 tensors but x holds 2");
  }
  {
    mantissa::testing::aclop_support::Call c = base();
    c.set_float("p", 2.0f);  // p is an input by name, not an attribute
    mantissa::testing::aclop_support::expect_rejected_untouched(
        c, ACLNN_ERR_PARAM_INVALID, "p as an attribute", "unknown attribute \"p\"");
  }
}

}  // namespace

}  // namespace aclnn

}  // namespace mantissa::testing
