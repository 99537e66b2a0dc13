// aclnnApplyAdamWV2 through the C API: in-place updates with the C++ API's bits; strided
// (padded, transposed, reversed) tensors staged through the workspace give the same bits and
// leave the bytes around their views alone; a null maxGradNormOptionalRef; validation rows with
// their status codes and nothing written.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_apply_adam_w_v2.h"
#include "mantissa/dtype.h"
#include "mantissa/ops/apply_adam_w_v2.h"

namespace {

using mantissa::DType;

std::string recent() { return aclGetRecentErrMsg(); }
DType dt(aclDataType d) { return static_cast<DType>(d); }
size_t esize(aclDataType d) { return mantissa::dtype_size(dt(d)); }

constexpr uint8_t kSentinel = 0xA7;
constexpr int kRows = 4, kCols = 16, kN = kRows * kCols;

enum class Layout { kContiguous, kPadded, kTransposed, kReversed };
constexpr Layout kLayouts[] = {Layout::kContiguous, Layout::kPadded, Layout::kTransposed,
                               Layout::kReversed};

struct Geometry {
  std::vector<int64_t> dims, strides, storage;
  int64_t offset = 0;
  int64_t storage_elems() const {
    int64_t n = 1;
    for (int64_t d : storage) n *= d;
    return n;
  }
  int64_t at(int i, int j) const { return offset + i * strides[0] + j * strides[1]; }
};

Geometry geometry(Layout l) {
  switch (l) {
    case Layout::kContiguous: return {{kRows, kCols}, {kCols, 1}, {kRows, kCols}, 0};
    case Layout::kPadded: return {{kRows, kCols}, {40, 1}, {kRows + 1, 40}, 3};
    case Layout::kTransposed: return {{kRows, kCols}, {1, kRows}, {kCols, kRows}, 0};
    case Layout::kReversed: return {{kRows, kCols}, {kCols, -1}, {kN}, kCols - 1};
  }
  return {};
}

// A [kRows, kCols] tensor of the call: its storage (sentinel-filled) and the aclTensor over it.
struct Tensor {
  aclDataType dtype = ACL_FLOAT;
  Geometry g;
  std::vector<uint8_t> bytes;
  aclTensor* t = nullptr;

  Tensor() = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() {
    if (t != nullptr) aclDestroyTensor(t);
  }
  void make(aclDataType d, Geometry geo) {
    dtype = d;
    g = std::move(geo);
    bytes.assign(static_cast<size_t>(g.storage_elems()) * esize(d), kSentinel);
    if (t != nullptr) aclDestroyTensor(t);
    t = aclCreateTensor(g.dims.data(), g.dims.size(), dtype, g.strides.data(), g.offset,
                        ACL_FORMAT_ND, g.storage.data(), g.storage.size(), bytes.data());
    ASSERT_NE(t, nullptr) << recent();
  }
  // Logical element k (row-major) <-> storage.
  int64_t index(int k) const { return g.at(k / kCols, k % kCols); }
  void set(int k, float f) {
    mantissa::store_from_float(dt(dtype), bytes.data(), static_cast<size_t>(index(k)), f);
  }
  uint32_t bits(int k) const {
    uint32_t u = 0;
    std::memcpy(&u, bytes.data() + index(k) * esize(dtype), esize(dtype));
    return u;
  }
};

// The step: one int64 or fp32 element.
struct Step {
  int64_t i64 = 9;
  float f32 = 9.0f;
  aclTensor* t = nullptr;
  explicit Step(aclDataType d = ACL_INT64) {
    const int64_t dims[] = {1}, strides[] = {1};
    t = aclCreateTensor(dims, 1, d, strides, 0, ACL_FORMAT_ND, dims, 1,
                        d == ACL_INT64 ? static_cast<void*>(&i64) : static_cast<void*>(&f32));
  }
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;
  ~Step() { aclDestroyTensor(t); }
};

struct Values {
  std::vector<float> var, m, v, max, grad;
};

Values make_values(uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  Values x;
  for (int k = 0; k < kN; ++k) {
    x.var.push_back(n(rng));
    x.m.push_back(0.1f * n(rng));
    x.v.push_back(0.5f + 0.05f * n(rng));
    x.max.push_back(0.5f + 0.05f * n(rng));
    x.grad.push_back(0.3f * n(rng));
  }
  return x;
}

// The C++ API on contiguous buffers: the reference bits of var, m, v, max (row-major).
struct Bits {
  std::vector<uint32_t> var, m, v, max;
};

Bits cpp_reference(aclDataType state, aclDataType grad, const Values& x,
                   const mantissa::ApplyAdamWV2Params& p) {
  auto buffer = [&](aclDataType d, const std::vector<float>& f) {
    std::vector<uint8_t> b(kN * esize(d));
    for (int k = 0; k < kN; ++k) mantissa::store_from_float(dt(d), b.data(), k, f[k]);
    return b;
  };
  std::vector<uint8_t> var = buffer(state, x.var), m = buffer(state, x.m), v = buffer(state, x.v),
                       max = buffer(state, x.max), g = buffer(grad, x.grad);
  int64_t step = 9;
  const std::vector<int64_t> shape{kRows, kCols};
  mantissa::ApplyAdamWV2Tensors t{
      .var = {var.data(), dt(state), shape},
      .m = {m.data(), dt(state), shape},
      .v = {v.data(), dt(state), shape},
      .max_grad_norm = mantissa::TensorView(max.data(), dt(state), shape),
      .grad = {g.data(), dt(grad), shape},
      .step = {&step, DType::kInt64, {1}}};
  EXPECT_TRUE(mantissa::apply_adam_w_v2(t, p).ok());
  auto bits = [&](const std::vector<uint8_t>& b) {
    std::vector<uint32_t> out(kN);
    for (int k = 0; k < kN; ++k) std::memcpy(&out[k], b.data() + k * esize(state), esize(state));
    return out;
  };
  return {bits(var), bits(m), bits(v), bits(max)};
}

// One two-phase call; returns phase one's status (phase two must succeed when it does).
aclnnStatus call(aclTensor* var, aclTensor* m, aclTensor* v, aclTensor* max, aclTensor* grad,
                 aclTensor* step, const mantissa::ApplyAdamWV2Params& p,
                 uint64_t* workspace_size = nullptr) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus s = aclnnApplyAdamWV2GetWorkspaceSize(var, m, v, max, grad, step, p.lr, p.beta1,
                                                          p.beta2, p.weight_decay, p.eps, p.amsgrad,
                                                          p.maximize, &size, &executor);
  if (s != ACLNN_SUCCESS) return s;
  if (workspace_size) *workspace_size = size;
  std::vector<uint64_t> ws((size + 7) / 8);
  EXPECT_EQ(aclnnApplyAdamWV2(ws.empty() ? nullptr : ws.data(), size, executor, nullptr),
            ACLNN_SUCCESS)
      << recent();
  return s;
}

struct Form {
  aclDataType state, grad;
};
constexpr Form kForms[] = {{ACL_FLOAT, ACL_FLOAT},
                           {ACL_FLOAT16, ACL_FLOAT16},
                           {ACL_BF16, ACL_BF16},
                           {ACL_FLOAT, ACL_FLOAT16},
                           {ACL_FLOAT, ACL_BF16}};

TEST(AclnnApplyAdamWV2, StridedInPlaceGivesTheCppApiBits) {
  uint32_t seed = 1;
  for (const Form& form : kForms) {
    for (bool amsgrad : {false, true}) {
      for (bool maximize : {false, true}) {
        mantissa::ApplyAdamWV2Params p;
        p.amsgrad = amsgrad;
        p.maximize = maximize;
        const Values x = make_values(++seed);
        const Bits want = cpp_reference(form.state, form.grad, x, p);
        for (Layout l : kLayouts) {
          // All contiguous, or each tensor in its own strided layout (rotated), so different
          // layouts meet in one call.
          Tensor var, m, v, max, grad;
          Tensor* all[] = {&var, &m, &v, &max, &grad};
          const std::vector<float>* vals[] = {&x.var, &x.m, &x.v, &x.max, &x.grad};
          for (int k = 0; k < 5; ++k) {
            const Layout lk =
                l == Layout::kContiguous ? l : kLayouts[1 + (static_cast<int>(l) - 1 + k) % 3];
            all[k]->make(k == 4 ? form.grad : form.state, geometry(lk));
            for (int e = 0; e < kN; ++e) all[k]->set(e, (*vals[k])[e]);
          }
          const std::vector<uint8_t> grad_before = grad.bytes, max_before = max.bytes;
          Step step;
          uint64_t size = 0;
          ASSERT_EQ(call(var.t, m.t, v.t, max.t, grad.t, step.t, p, &size), ACLNN_SUCCESS)
              << recent();
          if (l == Layout::kContiguous) {
            EXPECT_EQ(size, 0u) << "contiguous in-place needs no workspace";
          }
          for (int e = 0; e < kN; ++e) {
            ASSERT_EQ(var.bits(e), want.var[e]) << e;
            ASSERT_EQ(m.bits(e), want.m[e]) << e;
            ASSERT_EQ(v.bits(e), want.v[e]) << e;
            if (amsgrad) {
              ASSERT_EQ(max.bits(e), want.max[e]) << e;
            }
          }
          if (!amsgrad) {
            EXPECT_EQ(max.bytes, max_before) << "max_grad_norm written";
          }
          EXPECT_EQ(grad.bytes, grad_before) << "grad written";
          // Bytes outside the views keep the sentinel.
          for (Tensor* t : {&var, &m, &v}) {
            std::vector<bool> in_view(t->bytes.size() / esize(t->dtype), false);
            for (int e = 0; e < kN; ++e) in_view[static_cast<size_t>(t->index(e))] = true;
            for (size_t i = 0; i < in_view.size(); ++i) {
              if (in_view[i]) continue;
              for (size_t b = 0; b < esize(t->dtype); ++b) {
                ASSERT_EQ(t->bytes[i * esize(t->dtype) + b], kSentinel) << "padding written";
              }
            }
          }
        }
      }
    }
  }
}

TEST(AclnnApplyAdamWV2, NullMaxGradNormWithoutAmsgrad) {
  const Values x = make_values(50);
  const Bits want = cpp_reference(ACL_FLOAT, ACL_FLOAT, x, {});
  Tensor var, m, v, grad;
  Tensor* all[] = {&var, &m, &v, &grad};
  const std::vector<float>* vals[] = {&x.var, &x.m, &x.v, &x.grad};
  for (int k = 0; k < 4; ++k) {
    all[k]->make(ACL_FLOAT, geometry(Layout::kPadded));
    for (int e = 0; e < kN; ++e) all[k]->set(e, (*vals[k])[e]);
  }
  Step step(ACL_FLOAT);
  ASSERT_EQ(call(var.t, m.t, v.t, nullptr, grad.t, step.t, {}), ACLNN_SUCCESS) << recent();
  for (int e = 0; e < kN; ++e) ASSERT_EQ(var.bits(e), want.var[e]);
}

// ---- Validation rows ------------------------------------------------------------------------

struct Call {
  Tensor var, m, v, max, grad;
  Step step;
  Call(Form form = {ACL_FLOAT, ACL_FLOAT}) {
    for (Tensor* t : {&var, &m, &v, &max}) t->make(form.state, geometry(Layout::kContiguous));
    grad.make(form.grad, geometry(Layout::kContiguous));
    const Values x = make_values(7);
    for (int e = 0; e < kN; ++e) {
      var.set(e, x.var[e]);
      m.set(e, x.m[e]);
      v.set(e, x.v[e]);
      max.set(e, x.max[e]);
      grad.set(e, x.grad[e]);
    }
  }
  // Calls with the given handles and checks the status, the message and that nothing changed.
  void expect(aclTensor* a, aclTensor* b, aclTensor* c, aclTensor* d, aclTensor* g, aclTensor* s,
              const mantissa::ApplyAdamWV2Params& p, aclnnStatus code, const std::string& what,
              const std::string& name) {
    const auto before = std::vector<std::vector<uint8_t>>{var.bytes, m.bytes, v.bytes, max.bytes};
    EXPECT_EQ(call(a, b, c, d, g, s, p), code) << what << ": " << recent();
    if (code == ACLNN_SUCCESS) return;
    const std::string msg = recent();
    EXPECT_NE(msg.find("ApplyAdamWV2"), std::string::npos) << msg;
    EXPECT_NE(msg.find(name), std::string::npos) << what << ": " << msg;
    const auto after = std::vector<std::vector<uint8_t>>{var.bytes, m.bytes, v.bytes, max.bytes};
    EXPECT_EQ(before, after) << what << ": a tensor was written";
  }
};

TEST(AclnnApplyAdamWV2Validation, NullsAre161001) {
  mantissa::ApplyAdamWV2Params amsgrad;
  amsgrad.amsgrad = true;
  for (int k = 0; k < 6; ++k) {
    if (k == 3) continue;
    Call c;
    aclTensor* h[] = {c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, c.step.t};
    const char* names[] = {"varRef", "mRef", "vRef", "maxGradNormOptionalRef", "grad", "step"};
    h[k] = nullptr;
    c.expect(h[0], h[1], h[2], h[3], h[4], h[5], {}, ACLNN_ERR_PARAM_NULLPTR, names[k], names[k]);
  }
  Call c;
  c.expect(c.var.t, c.m.t, c.v.t, nullptr, c.grad.t, c.step.t, amsgrad, ACLNN_ERR_PARAM_NULLPTR,
           "null maxGradNormOptionalRef with amsgrad", "maxGradNormOptionalRef");
  // Null out-pointers.
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnApplyAdamWV2GetWorkspaceSize(c.var.t, c.m.t, c.v.t, nullptr, c.grad.t, c.step.t,
                                              1e-3f, 0.9f, 0.999f, 0.01f, 1e-8f, false, false,
                                              nullptr, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
}

TEST(AclnnApplyAdamWV2Validation, InvalidAre161002) {
  mantissa::ApplyAdamWV2Params amsgrad;
  amsgrad.amsgrad = true;
  {  // A state tensor of another dtype.
    Call c;
    c.m.make(ACL_FLOAT16, geometry(Layout::kContiguous));
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, c.step.t, {}, ACLNN_ERR_PARAM_INVALID,
             "m fp16 with var fp32", "m");
  }
  {  // fp32 grad with fp16 state.
    Call c({ACL_FLOAT16, ACL_FLOAT});
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, c.step.t, {}, ACLNN_ERR_PARAM_INVALID,
             "grad fp32 with var fp16", "grad");
  }
  {  // max_grad_norm in grad's dtype in the master-weight form (the spec: fp32 state).
    Call c({ACL_FLOAT, ACL_BF16});
    c.max.make(ACL_BF16, geometry(Layout::kContiguous));
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, c.step.t, amsgrad, ACLNN_ERR_PARAM_INVALID,
             "max_grad_norm bf16 with var fp32", "max_grad_norm");
  }
  {  // step int32; step of two elements.
    Call c;
    int32_t s32 = 3;
    const int64_t one[] = {1}, two[] = {2}, strides[] = {1};
    aclTensor* step32 = aclCreateTensor(one, 1, ACL_INT32, strides, 0, ACL_FORMAT_ND, one, 1, &s32);
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, step32, {}, ACLNN_ERR_PARAM_INVALID,
             "step int32", "step");
    aclDestroyTensor(step32);
    int64_t s64[2] = {3, 4};
    aclTensor* step2 = aclCreateTensor(two, 1, ACL_INT64, strides, 0, ACL_FORMAT_ND, two, 1, s64);
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, step2, {}, ACLNN_ERR_PARAM_INVALID,
             "step of two elements", "step");
    aclDestroyTensor(step2);
  }
  {  // Shape mismatch: v of [16, 4].
    Call c;
    Geometry g{{kCols, kRows}, {kRows, 1}, {kCols, kRows}, 0};
    c.v.make(ACL_FLOAT, g);
    c.expect(c.var.t, c.m.t, c.v.t, c.max.t, c.grad.t, c.step.t, {}, ACLNN_ERR_PARAM_INVALID,
             "v shape", "v");
  }
  {  // A state tensor sharing storage with another (strided views over the same bytes).
    Call c;
    aclTensor* alias =
        aclCreateTensor(c.var.g.dims.data(), 2, ACL_FLOAT, c.var.g.strides.data(), 0, ACL_FORMAT_ND,
                        c.var.g.storage.data(), 2, c.var.bytes.data());
    c.expect(c.var.t, alias, c.v.t, c.max.t, c.grad.t, c.step.t, {}, ACLNN_ERR_PARAM_INVALID,
             "m on var's memory", "overlaps");
    aclDestroyTensor(alias);
  }
}

}  // namespace
