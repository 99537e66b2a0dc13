// aclnnApplyAdamD through the C API: in-place and separate outputs give the C++ API's bits;
// strided (padded, transposed, reversed) tensors give the same bits as contiguous ones and leave
// the bytes around their views alone; workspace rules; validation rows with nothing written.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_amp_update_scale.h"
#include "aclnnop/aclnn_apply_adam_d.h"
#include "mantissa/dtype.h"
#include "mantissa/ops/apply_adam_d.h"

namespace {

using mantissa::DType;

std::string recent() { return aclGetRecentErrMsg(); }
DType dt(aclDataType d) { return static_cast<DType>(d); }
size_t esize(aclDataType d) { return mantissa::dtype_size(dt(d)); }

constexpr uint8_t kSentinel = 0xA7;
constexpr int kRows = 4, kCols = 16, kN = kRows * kCols;

// How a [kRows, kCols] tensor sits in its storage.
enum class Layout { kContiguous, kPadded, kTransposed, kReversed };
const char* name(Layout l) {
  switch (l) {
    case Layout::kContiguous: return "contiguous";
    case Layout::kPadded: return "padded";
    case Layout::kTransposed: return "transposed";
    case Layout::kReversed: return "reversed";
  }
  return "?";
}

struct Geometry {
  std::vector<int64_t> dims, strides, storage;
  int64_t offset = 0;
  int64_t storage_elems() const {
    int64_t n = 1;
    for (int64_t d : storage) n *= d;
    return n;
  }
  // Storage index of logical element (i, j) of a rank-2 view.
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

// A tensor of the call: its storage bytes and the aclTensor over them.
struct Tensor {
  aclDataType dtype = ACL_FLOAT;
  Geometry g;
  std::vector<uint8_t> bytes;
  aclTensor* t = nullptr;

  ~Tensor() {
    if (t != nullptr) aclDestroyTensor(t);
  }
  void make(aclDataType d, Geometry geo, aclFormat format = ACL_FORMAT_ND) {
    dtype = d;
    g = std::move(geo);
    bytes.assign(static_cast<size_t>(g.storage_elems()) * esize(d) + 64, kSentinel);
    make_handle(format);
  }
  void make_handle(aclFormat format = ACL_FORMAT_ND, void* data = nullptr) {
    if (t != nullptr) aclDestroyTensor(t);
    t = aclCreateTensor(g.dims.data(), g.dims.size(), dtype, g.strides.data(), g.offset, format,
                        g.storage.data(), g.storage.size(), data ? data : bytes.data());
    ASSERT_NE(t, nullptr) << recent();
  }
  void set(int64_t index, float f) {
    mantissa::store_from_float(dt(dtype), bytes.data(), index, f);
  }
  // Raw bits of storage element `index`.
  uint32_t raw(int64_t index) const {
    uint32_t u = 0;
    std::memcpy(&u, bytes.data() + index * esize(dtype), esize(dtype));
    return u;
  }
};

// Logical inputs of one step, in fp32, already representable in the dtype.
struct Inputs {
  std::vector<float> var, m, v, grad;
  std::array<float, 6> scalars;  // beta1_power, beta2_power, lr, beta1, beta2, epsilon
};

Inputs make_inputs(aclDataType d, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> var(0.3f, 0.4f), m(0.0f, 0.1f), v(0.7f, 0.03f), g(0.1f, 0.2f);
  Inputs in;
  auto r = [&](float f) { return mantissa::round_to(dt(d), f); };
  for (int i = 0; i < kN; ++i) {
    in.var.push_back(r(var(rng)));
    in.m.push_back(r(m(rng)));
    in.v.push_back(r(std::abs(v(rng))));
    in.grad.push_back(r(g(rng)));
  }
  in.scalars = {r(0.9f), r(0.999f), r(0.001f), r(0.9f), r(0.999f), r(1e-7f)};
  return in;
}

// The C++ API on contiguous buffers with separate outputs: the reference bits (as raw storage
// words, row-major).
struct Result {
  std::vector<uint32_t> var, m, v;
};

Result reference(aclDataType d, const Inputs& in, bool nesterov) {
  const DType t = dt(d);
  const size_t es = esize(d);
  auto buffer = [&](const std::vector<float>& values) {
    std::vector<uint8_t> b(values.size() * es);
    for (size_t i = 0; i < values.size(); ++i)
      mantissa::store_from_float(t, b.data(), i, values[i]);
    return b;
  };
  std::vector<uint8_t> var = buffer(in.var), m = buffer(in.m), v = buffer(in.v),
                       grad = buffer(in.grad);
  std::vector<std::vector<uint8_t>> s;
  for (float f : in.scalars) s.push_back(buffer({f}));
  std::vector<uint8_t> var_out(var.size()), m_out(m.size()), v_out(v.size());
  const std::array<int64_t, 2> shape{kRows, kCols};
  const std::array<int64_t, 1> one{1};
  mantissa::ApplyAdamDTensors ts;
  ts.var = mantissa::TensorView(var.data(), t, shape);
  ts.m = mantissa::TensorView(m.data(), t, shape);
  ts.v = mantissa::TensorView(v.data(), t, shape);
  ts.grad = mantissa::TensorView(grad.data(), t, shape);
  mantissa::TensorView* scalars[] = {&ts.beta1_power, &ts.beta2_power, &ts.lr,
                                     &ts.beta1,       &ts.beta2,       &ts.epsilon};
  for (int k = 0; k < 6; ++k) *scalars[k] = mantissa::TensorView(s[k].data(), t, one);
  ts.var_out = mantissa::TensorView(var_out.data(), t, shape);
  ts.m_out = mantissa::TensorView(m_out.data(), t, shape);
  ts.v_out = mantissa::TensorView(v_out.data(), t, shape);
  mantissa::ApplyAdamDParams p;
  p.use_nesterov = nesterov;
  const mantissa::Status st = mantissa::apply_adam_d(ts, p);
  EXPECT_TRUE(st.ok()) << st.message();
  auto words = [&](const std::vector<uint8_t>& b) {
    std::vector<uint32_t> w(kN, 0);
    for (int i = 0; i < kN; ++i) std::memcpy(&w[i], b.data() + i * es, es);
    return w;
  };
  return {words(var_out), words(m_out), words(v_out)};
}

// One aclnn call: layouts of var, m, v, grad; per state tensor either in place or a separate
// output with its own layout.
struct CallLayout {
  std::array<Layout, 4> in_layout{};  // var, m, v, grad
  std::array<bool, 3> in_place{true, true, true};
  std::array<Layout, 3> out_layout{};  // for separate outputs
};

class AdamCall {
 public:
  AdamCall(aclDataType d, const Inputs& in, const CallLayout& setup) : d_(d), setup_(setup) {
    const std::vector<float>* values[] = {&in.var, &in.m, &in.v, &in.grad};
    const int index[] = {0, 1, 2, 9};
    for (int k = 0; k < 4; ++k) {
      Tensor& t = tensors_[index[k]];
      t.make(d, geometry(setup.in_layout[k]));
      for (int i = 0; i < kRows; ++i) {
        for (int j = 0; j < kCols; ++j) t.set(t.g.at(i, j), (*values[k])[i * kCols + j]);
      }
    }
    for (int k = 0; k < 6; ++k) {
      Tensor& t = tensors_[3 + k];
      t.make(d, Geometry{{1}, {1}, {1}, 0});
      t.set(0, in.scalars[k]);
    }
    for (int j = 0; j < 3; ++j) {
      if (!setup.in_place[j]) tensors_[10 + j].make(d, geometry(setup.out_layout[j]));
    }
  }

  aclTensor* handle(int k) {
    if (k >= 10 && setup_.in_place[k - 10]) return tensors_[k - 10].t;
    return tensors_[k].t;
  }
  Tensor& tensor(int k) { return tensors_[k]; }
  // The tensor holding output j's result.
  Tensor& output(int j) { return setup_.in_place[j] ? tensors_[j] : tensors_[10 + j]; }

  aclnnStatus phase_one(bool nesterov, uint64_t* ws, aclOpExecutor** executor,
                        std::array<aclTensor*, 13>* override_handles = nullptr) {
    std::array<aclTensor*, 13> h;
    for (int k = 0; k < 13; ++k) h[k] = handle(k);
    if (override_handles) h = *override_handles;
    return aclnnApplyAdamDGetWorkspaceSize(h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7], h[8],
                                           h[9], false, nesterov, h[10], h[11], h[12], ws,
                                           executor);
  }
  aclnnStatus run(bool nesterov, uint64_t* reported = nullptr) {
    uint64_t ws = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus s = phase_one(nesterov, &ws, &executor);
    if (s != ACLNN_SUCCESS) return s;
    if (reported) *reported = ws;
    void* workspace = nullptr;
    if (ws > 0) {
      EXPECT_EQ(aclrtMalloc(&workspace, ws, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
    }
    const aclnnStatus r = aclnnApplyAdamD(workspace, ws, executor, nullptr);
    if (workspace) aclrtFree(workspace);
    return r;
  }

  // Output j's logical elements (row-major raw words).
  std::vector<uint32_t> result(int j) {
    Tensor& t = output(j);
    std::vector<uint32_t> w;
    for (int i = 0; i < kRows; ++i) {
      for (int c = 0; c < kCols; ++c) w.push_back(t.raw(t.g.at(i, c)));
    }
    return w;
  }
  // Every byte of every storage, to prove what was (not) written.
  std::vector<std::vector<uint8_t>> snapshot() const {
    std::vector<std::vector<uint8_t>> s;
    for (const Tensor& t : tensors_) s.push_back(t.bytes);
    return s;
  }
  // Bytes of `t` outside its view are still the sentinel.
  static bool untouched_outside_view(const Tensor& t) {
    std::vector<bool> in_view(t.bytes.size(), false);
    const size_t es = esize(t.dtype);
    for (int i = 0; i < kRows; ++i) {
      for (int c = 0; c < kCols; ++c) {
        for (size_t b = 0; b < es; ++b) in_view[t.g.at(i, c) * es + b] = true;
      }
    }
    for (size_t b = 0; b < t.bytes.size(); ++b) {
      if (!in_view[b] && t.bytes[b] != kSentinel) return false;
    }
    return true;
  }

 private:
  aclDataType d_;
  CallLayout setup_;
  std::array<Tensor, 13> tensors_;
};

const char* kNames[] = {"var",   "m",       "v",    "beta1Power", "beta2Power", "lr",  "beta1",
                        "beta2", "epsilon", "grad", "varOut",     "mOut",       "vOut"};

struct Param {
  aclDataType dtype;
  bool nesterov;
};

class CompatApplyAdamD : public ::testing::TestWithParam<Param> {};

void expect_matches(AdamCall& call, const Result& want, const std::string& what) {
  EXPECT_EQ(call.result(0), want.var) << what;
  EXPECT_EQ(call.result(1), want.m) << what;
  EXPECT_EQ(call.result(2), want.v) << what;
  for (int j = 0; j < 3; ++j) {
    EXPECT_TRUE(AdamCall::untouched_outside_view(call.output(j))) << what << " output " << j;
  }
}

TEST_P(CompatApplyAdamD, InPlaceAndSeparateGiveTheCxxApiBits) {
  const auto [d, nesterov] = GetParam();
  const Inputs in = make_inputs(d, 7);
  const Result want = reference(d, in, nesterov);
  {
    AdamCall call(d, in, CallLayout{});
    uint64_t ws = 99;
    ASSERT_EQ(call.run(nesterov, &ws), ACLNN_SUCCESS) << recent();
    EXPECT_EQ(ws, 0u);
    expect_matches(call, want, "in place");
  }
  {
    CallLayout s;
    s.in_place = {false, false, false};
    AdamCall call(d, in, s);
    const auto before = call.snapshot();
    uint64_t ws = 99;
    ASSERT_EQ(call.run(nesterov, &ws), ACLNN_SUCCESS) << recent();
    EXPECT_EQ(ws, 0u);
    expect_matches(call, want, "separate");
    const auto after = call.snapshot();
    for (int k = 0; k < 10; ++k) EXPECT_EQ(after[k], before[k]) << kNames[k] << " was written";
  }
  {  // mixed: var in place, m and v separate
    CallLayout s;
    s.in_place = {true, false, false};
    AdamCall call(d, in, s);
    ASSERT_EQ(call.run(nesterov), ACLNN_SUCCESS) << recent();
    expect_matches(call, want, "mixed");
  }
}

TEST_P(CompatApplyAdamD, StridedTensorsGiveTheContiguousBits) {
  const auto [d, nesterov] = GetParam();
  const Inputs in = make_inputs(d, 11);
  const Result want = reference(d, in, nesterov);
  const Layout strided[] = {Layout::kPadded, Layout::kTransposed, Layout::kReversed};
  const uint64_t view_bytes = kN * esize(d);

  for (Layout l : strided) {
    {  // everything strided, in place: var, m, v and grad each get a slot
      CallLayout s;
      s.in_layout = {l, l, l, l};
      AdamCall call(d, in, s);
      uint64_t ws = 0;
      ASSERT_EQ(call.run(nesterov, &ws), ACLNN_SUCCESS) << recent();
      EXPECT_GE(ws, 4 * view_bytes);
      expect_matches(call, want, std::string("all in place ") + name(l));
      EXPECT_TRUE(AdamCall::untouched_outside_view(call.tensor(9)));
    }
    {  // only grad strided
      CallLayout s;
      s.in_layout = {Layout::kContiguous, Layout::kContiguous, Layout::kContiguous, l};
      AdamCall call(d, in, s);
      uint64_t ws = 0;
      ASSERT_EQ(call.run(nesterov, &ws), ACLNN_SUCCESS) << recent();
      EXPECT_GE(ws, view_bytes);
      EXPECT_LT(ws, 2 * view_bytes);
      expect_matches(call, want, std::string("grad ") + name(l));
    }
    {  // only var strided, in place
      CallLayout s;
      s.in_layout = {l, Layout::kContiguous, Layout::kContiguous, Layout::kContiguous};
      AdamCall call(d, in, s);
      ASSERT_EQ(call.run(nesterov), ACLNN_SUCCESS) << recent();
      expect_matches(call, want, std::string("var ") + name(l));
    }
    {  // contiguous inputs, strided separate outputs; the inputs stay as they were
      CallLayout s;
      s.in_place = {false, false, false};
      s.out_layout = {l, l, l};
      AdamCall call(d, in, s);
      const auto before = call.snapshot();
      ASSERT_EQ(call.run(nesterov), ACLNN_SUCCESS) << recent();
      expect_matches(call, want, std::string("outputs ") + name(l));
      const auto after = call.snapshot();
      for (int k = 0; k < 10; ++k) EXPECT_EQ(after[k], before[k]) << kNames[k];
    }
    {  // strided inputs, contiguous separate outputs
      CallLayout s;
      s.in_layout = {l, l, l, l};
      s.in_place = {false, false, false};
      AdamCall call(d, in, s);
      const auto before = call.snapshot();
      ASSERT_EQ(call.run(nesterov), ACLNN_SUCCESS) << recent();
      expect_matches(call, want, std::string("inputs ") + name(l));
      const auto after = call.snapshot();
      for (int k = 0; k < 10; ++k) EXPECT_EQ(after[k], before[k]) << kNames[k];
    }
  }
  {  // a bit of everything
    CallLayout s;
    s.in_layout = {Layout::kPadded, Layout::kTransposed, Layout::kContiguous, Layout::kReversed};
    s.in_place = {true, false, false};
    s.out_layout = {Layout::kContiguous, Layout::kReversed, Layout::kPadded};
    AdamCall call(d, in, s);
    ASSERT_EQ(call.run(nesterov), ACLNN_SUCCESS) << recent();
    expect_matches(call, want, "mixed layouts");
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, CompatApplyAdamD,
                         ::testing::Values(Param{ACL_FLOAT, false}, Param{ACL_FLOAT, true},
                                           Param{ACL_FLOAT16, false}, Param{ACL_FLOAT16, true},
                                           Param{ACL_BF16, false}, Param{ACL_BF16, true}),
                         [](const auto& param_info) {
                           return std::string(
                                      mantissa::dtype_short_name(dt(param_info.param.dtype))) +
                                  (param_info.param.nesterov ? "_nesterov" : "");
                         });

TEST(CompatApplyAdamDShapes, RankZeroAndEmpty) {
  const float values[] = {0.5f, 0.1f, 0.2f, 0.9f, 0.999f, 0.001f, 0.9f, 0.999f, 1e-7f, 0.3f};
  {  // rank 0: every tensor one element, in place
    std::array<Tensor, 10> t;
    for (int k = 0; k < 10; ++k) {
      t[k].make(ACL_FLOAT, Geometry{{}, {}, {}, 0});
      t[k].set(0, values[k]);
    }
    uint64_t ws = 1;
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(aclnnApplyAdamDGetWorkspaceSize(t[0].t, t[1].t, t[2].t, t[3].t, t[4].t, t[5].t,
                                              t[6].t, t[7].t, t[8].t, t[9].t, false, false, t[0].t,
                                              t[1].t, t[2].t, &ws, &e),
              ACLNN_SUCCESS)
        << recent();
    EXPECT_EQ(ws, 0u);
    ASSERT_EQ(aclnnApplyAdamD(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    // m_out = 0.1 + (1 - 0.9) * (0.3 - 0.1), in fp32 in this grouping.
    const float m_out = 0.1f + ((1.0f - 0.9f) * (0.3f - 0.1f));
    float got;
    std::memcpy(&got, t[1].bytes.data(), 4);
    EXPECT_EQ(got, m_out);
  }
  {  // empty var: succeeds, workspace 0, touches nothing
    std::array<Tensor, 13> t;
    for (int k = 0; k < 13; ++k) {
      const bool scalar = k >= 3 && k <= 8;
      t[k].make(ACL_FLOAT,
                scalar ? Geometry{{1}, {1}, {1}, 0} : Geometry{{0, 16}, {16, 1}, {0, 16}, 0});
    }
    const uint8_t before = t[10].bytes[0];
    uint64_t ws = 1;
    aclOpExecutor* e = nullptr;
    ASSERT_EQ(aclnnApplyAdamDGetWorkspaceSize(t[0].t, t[1].t, t[2].t, t[3].t, t[4].t, t[5].t,
                                              t[6].t, t[7].t, t[8].t, t[9].t, false, false, t[10].t,
                                              t[11].t, t[12].t, &ws, &e),
              ACLNN_SUCCESS)
        << recent();
    EXPECT_EQ(ws, 0u);
    ASSERT_EQ(aclnnApplyAdamD(nullptr, 0, e, nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(t[10].bytes[0], before);
  }
}

// --- Workspace rules -------------------------------------------------------------------------

TEST(CompatApplyAdamDWorkspace, TooSmallNullOrOverlappingWritesNothing) {
  const Inputs in = make_inputs(ACL_FLOAT, 3);
  CallLayout s;
  s.in_layout = {Layout::kPadded, Layout::kContiguous, Layout::kContiguous, Layout::kTransposed};
  AdamCall call(ACL_FLOAT, in, s);
  const auto before = call.snapshot();
  auto phase_one = [&](uint64_t* ws) {
    aclOpExecutor* e = nullptr;
    EXPECT_EQ(call.phase_one(false, ws, &e), ACLNN_SUCCESS) << recent();
    return e;
  };
  uint64_t ws = 0;
  aclOpExecutor* e = phase_one(&ws);
  ASSERT_GT(ws, 0u);
  std::vector<uint8_t> workspace(ws + 64, 0x3C);
  EXPECT_EQ(aclnnApplyAdamD(workspace.data(), ws - 1, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("smaller than"), std::string::npos) << recent();
  // The one-shot executor is spent even though it failed.
  EXPECT_EQ(aclnnApplyAdamD(workspace.data(), ws, e, nullptr), ACLNN_ERR_PARAM_INVALID);

  e = phase_one(&ws);
  EXPECT_EQ(aclnnApplyAdamD(nullptr, ws, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("workspace is null"), std::string::npos) << recent();

  // A workspace inside a tensor's storage would overwrite it: rejected before any copy.
  e = phase_one(&ws);
  Tensor& var = call.tensor(0);
  ASSERT_GE(var.bytes.size(), 64u);
  EXPECT_EQ(aclnnApplyAdamD(var.bytes.data() + 8, ws, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("workspace overlaps var"), std::string::npos) << recent();

  EXPECT_EQ(call.snapshot(), before);
  for (uint8_t b : workspace) ASSERT_EQ(b, 0x3C);

  // A repeatable executor runs with a right-sized workspace, twice.
  e = phase_one(&ws);
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(e), ACLNN_SUCCESS);
  EXPECT_EQ(aclnnApplyAdamD(workspace.data(), ws, e, nullptr), ACLNN_SUCCESS) << recent();
  EXPECT_EQ(aclnnApplyAdamD(workspace.data(), ws, e, nullptr), ACLNN_SUCCESS) << recent();
  EXPECT_EQ(aclDestroyAclOpExecutor(e), ACLNN_SUCCESS);
  EXPECT_NE(call.snapshot(), before);
}

TEST(CompatApplyAdamDWorkspace, ExecutorOfAnotherOperatorIsRejected) {
  const Inputs in = make_inputs(ACL_FLOAT, 5);
  AdamCall call(ACL_FLOAT, in, CallLayout{});
  const auto before = call.snapshot();
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  ASSERT_EQ(call.phase_one(false, &ws, &e), ACLNN_SUCCESS);
  // Passing it to a different operator's phase two: rejected and spent.
  EXPECT_EQ(aclnnAmpUpdateScale(nullptr, ws, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recent().find("aclnnApplyAdamDGetWorkspaceSize"), std::string::npos) << recent();
  EXPECT_EQ(aclnnApplyAdamD(nullptr, ws, e, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(call.snapshot(), before);
}

// --- Validation rows through aclnn, nothing written ------------------------------------------

struct Row {
  const char* what;
  void (*setup)(AdamCall&);
  aclnnStatus code;
  const char* reason;
};

TEST(CompatApplyAdamDValidation, EveryRowWritesNothing) {
  const Row rows[] = {
      {"dtype INT32",
       [](AdamCall& c) {
         for (int k = 0; k < 10; ++k) {  // in place: the outputs are these tensors
           c.tensor(k).dtype = ACL_INT32;
           c.tensor(k).make_handle();
         }
       },
       ACLNN_ERR_PARAM_INVALID, "var dtype INT32"},
      {"unknown dtype",
       [](AdamCall& c) {
         for (int k = 0; k < 10; ++k) {
           c.tensor(k).dtype = static_cast<aclDataType>(30);
           c.tensor(k).make_handle();
         }
       },
       ACLNN_ERR_PARAM_INVALID, "var dtype"},
      {"grad dtype differs",
       [](AdamCall& c) {
         c.tensor(9).dtype = ACL_FLOAT16;
         c.tensor(9).make_handle();
       },
       ACLNN_ERR_PARAM_INVALID, "grad dtype FLOAT16"},
      {"rank 9",
       [](AdamCall& c) {
         for (int k : {0, 1, 2, 9}) {
           c.tensor(k).g = Geometry{{1, 1, 1, 1, 1, 4, 1, 1, 16}, {}, {kRows, kCols}, 0};
           c.tensor(k).g.strides.assign(9, 1);
           c.tensor(k).g.strides[5] = 16;
           c.tensor(k).make_handle();
         }
       },
       ACLNN_ERR_PARAM_INVALID, "rank 9"},
      {"m shape differs",
       [](AdamCall& c) {
         c.tensor(1).g.dims = {kRows, kCols - 1};
         c.tensor(1).make_handle();
       },
       ACLNN_ERR_PARAM_INVALID, "m shape [4, 15] differs from var shape [4, 16]"},
      {"lr holds two elements",
       [](AdamCall& c) {
         c.tensor(5).g = Geometry{{2}, {1}, {2}, 0};
         c.tensor(5).bytes.resize(64, kSentinel);
         c.tensor(5).make_handle();
       },
       ACLNN_ERR_PARAM_INVALID, "lr must hold exactly one element"},
      {"format NCHW", [](AdamCall& c) { c.tensor(9).make_handle(ACL_FORMAT_NCHW); },
       ACLNN_ERR_PARAM_INVALID, "grad format"},
      {"var data null",
       [](AdamCall& c) {
         Tensor& t = c.tensor(0);
         aclDestroyTensor(t.t);
         t.t = aclCreateTensor(t.g.dims.data(), 2, t.dtype, t.g.strides.data(), 0, ACL_FORMAT_ND,
                               t.g.storage.data(), t.g.storage.size(), nullptr);
       },
       ACLNN_ERR_PARAM_NULLPTR, "var has a null data pointer"},
      {"strided var data null",
       [](AdamCall& c) {
         Tensor& t = c.tensor(0);
         t.g = geometry(Layout::kTransposed);
         aclDestroyTensor(t.t);
         t.t = aclCreateTensor(t.g.dims.data(), 2, t.dtype, t.g.strides.data(), 0, ACL_FORMAT_ND,
                               t.g.storage.data(), t.g.storage.size(), nullptr);
       },
       ACLNN_ERR_PARAM_NULLPTR, "var has a null data pointer"},
  };
  const Inputs in = make_inputs(ACL_FLOAT, 21);
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    AdamCall call(ACL_FLOAT, in, CallLayout{});
    row.setup(call);
    const auto before = call.snapshot();
    EXPECT_EQ(call.run(false), row.code);
    EXPECT_NE(recent().find(row.reason), std::string::npos) << recent();
    EXPECT_EQ(call.snapshot(), before);
  }
}

TEST(CompatApplyAdamDValidation, NullPointersNameTheArgument) {
  const Inputs in = make_inputs(ACL_FLOAT, 1);
  AdamCall call(ACL_FLOAT, in, CallLayout{});
  const auto before = call.snapshot();
  for (int k = 0; k < 13; ++k) {
    std::array<aclTensor*, 13> h;
    for (int i = 0; i < 13; ++i) h[i] = call.handle(i);
    h[k] = nullptr;
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    EXPECT_EQ(call.phase_one(false, &ws, &e, &h), ACLNN_ERR_PARAM_NULLPTR) << kNames[k];
    EXPECT_NE(recent().find(std::string(kNames[k]) + " is null"), std::string::npos) << recent();
  }
  uint64_t ws = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(call.phase_one(false, nullptr, &e), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(call.phase_one(false, &ws, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(call.snapshot(), before);
}

// Outputs that overlap what they must not, with strided and contiguous views.
TEST(CompatApplyAdamDValidation, OverlappingOutputsAreRejected) {
  const Inputs in = make_inputs(ACL_FLOAT, 2);
  struct Case {
    const char* what;
    void (*setup)(AdamCall&, std::array<aclTensor*, 13>&, std::vector<aclTensor*>&);
    const char* reason;
  };
  const Case cases[] = {
      {"varOut is var shifted by one element",
       [](AdamCall& c, std::array<aclTensor*, 13>& h, std::vector<aclTensor*>& made) {
         Tensor& var = c.tensor(0);
         const int64_t storage[] = {kN + 1};
         made.push_back(aclCreateTensor(var.g.dims.data(), 2, ACL_FLOAT, var.g.strides.data(), 1,
                                        ACL_FORMAT_ND, storage, 1, var.bytes.data()));
         h[10] = made.back();
       },
       "var_out partially overlaps var"},
      {"strided vOut interleaved with strided grad",
       [](AdamCall& c, std::array<aclTensor*, 13>& h, std::vector<aclTensor*>& made) {
         // grad is the even columns of an [4, 32] buffer, vOut the odd ones: disjoint elements
         // but overlapping spans, which the rule compares.
         Tensor& grad = c.tensor(9);
         grad.g = Geometry{{kRows, kCols}, {32, 2}, {kRows, 32}, 0};
         grad.bytes.assign(kRows * 32 * 4 + 64, kSentinel);
         grad.make_handle();
         h[9] = grad.t;
         const int64_t dims[] = {kRows, kCols}, strides[] = {32, 2}, storage[] = {kRows, 32};
         made.push_back(aclCreateTensor(dims, 2, ACL_FLOAT, strides, 1, ACL_FORMAT_ND, storage, 2,
                                        grad.bytes.data()));
         h[12] = made.back();
       },
       "vOut overlaps grad"},
      {"separate mOut with a zero stride writes one element twice",
       [](AdamCall& c, std::array<aclTensor*, 13>& h, std::vector<aclTensor*>& made) {
         static float out[kCols];
         (void)c;
         const int64_t dims[] = {kRows, kCols}, strides[] = {0, 1}, storage[] = {kCols};
         made.push_back(
             aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1, out));
         h[11] = made.back();
       },
       "mOut (shape [4, 16]) has strides that address some element twice"},
      {"in-place var overlapping a strided m",
       [](AdamCall& c, std::array<aclTensor*, 13>& h, std::vector<aclTensor*>& made) {
         // m viewed transposed over var's own storage.
         Tensor& var = c.tensor(0);
         const int64_t dims[] = {kRows, kCols}, strides[] = {1, kRows}, storage[] = {kN};
         made.push_back(aclCreateTensor(dims, 2, ACL_FLOAT, strides, 0, ACL_FORMAT_ND, storage, 1,
                                        var.bytes.data()));
         h[1] = made.back();
         h[11] = made.back();
       },
       "overlaps"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    AdamCall call(ACL_FLOAT, in, CallLayout{});
    std::array<aclTensor*, 13> h;
    std::vector<aclTensor*> made;
    for (int i = 0; i < 13; ++i) h[i] = call.handle(i);
    c.setup(call, h, made);
    const auto before = call.snapshot();
    uint64_t ws = 0;
    aclOpExecutor* e = nullptr;
    EXPECT_EQ(call.phase_one(false, &ws, &e, &h), ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(recent().find(c.reason), std::string::npos) << recent();
    EXPECT_EQ(call.snapshot(), before);
    for (aclTensor* t : made) aclDestroyTensor(t);
  }
}

}  // namespace
