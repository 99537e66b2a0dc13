// ApplyAdamWQuant: bits on every target and thread count (against the kit's golden32) for every
// dtype, block sizes from 1 to beyond the tensor, partial last blocks and maps that are not
// ascending; the search's tie rule, m's sign rule, NaN and zero blocks against codes worked out
// by hand; the dynamic maps; validation through the C++ API; aclnn with a strided gradient and
// CANN's sample call; op-by-name.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_apply_adam_w_quant.h"
#include "mantissa/ops/apply_adam_w_quant.h"
#include "op_support.h"
#include "ops/apply_adam_w_quant/apply_adam_w_quant_desc.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::StatusCode;
using mantissa::detail::ApplyAdamWQuantOp;
using mantissa::precision::HostTensor;
namespace mt = mantissa::testing;
using mt::acl;
using mt::expect_same_bits;
using mt::filled;
using mt::run_two_phases;
using mt::view;

HostTensor map_tensor(const std::array<float, 256>& map) {
  HostTensor h(DType::kFloat32, {256});
  for (int64_t k = 0; k < 256; ++k) h.set_bits(k, std::bit_cast<uint32_t>(map[k]));
  return h;
}

HostTensor codes(std::vector<int64_t> shape, uint32_t seed, int lo, int hi) {
  HostTensor h(DType::kUInt8, std::move(shape));
  for (int64_t i = 0; i < h.numel(); ++i) {
    h.set_bits(i, static_cast<uint32_t>(lo + (i * 2654435761u + seed * 40503u) % (hi - lo + 1)));
  }
  return h;
}

HostTensor f32(std::vector<float> values) {
  HostTensor h(DType::kFloat32, {static_cast<int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) h.set_bits(i, std::bit_cast<uint32_t>(values[i]));
  return h;
}

HostTensor absmax(int64_t blocks, float lo, float hi, uint32_t seed) {
  HostTensor h(DType::kFloat32, {blocks});
  for (int64_t b = 0; b < blocks; ++b) {
    const float u = static_cast<float>((b * 7919 + seed * 104729) % 1000) / 1000.0f;
    h.set_bits(b, std::bit_cast<uint32_t>(lo + (hi - lo) * u));
  }
  return h;
}

HostTensor step_tensor(int64_t step) {
  HostTensor h(DType::kInt64, {1});
  std::memcpy(h.data(), &step, sizeof step);
  return h;
}

// One call's tensors, held.
struct Call {
  HostTensor var, grad, m, v, qm, qv, am, av, step;
  mantissa::ApplyAdamWQuantParams p;
  Call(DType d, std::vector<int64_t> shape, int64_t block, int64_t steps = 9,
       const std::array<float, 256>& map_m = mantissa::dynamic_quant_map(true),
       const std::array<float, 256>& map_v = mantissa::dynamic_quant_map(false))
      : var(filled(d, shape, 0.0, 1.0, 1)),
        grad(filled(d, shape, 0.0, 0.05, 2)),
        m(codes(shape, 3, 0, 255)),
        v(codes(shape, 4, 128, 255)),
        qm(map_tensor(map_m)),
        qv(map_tensor(map_v)),
        step(step_tensor(steps)) {
    const int64_t blocks = (var.numel() + block - 1) / block;
    am = absmax(blocks, 0.005f, 0.05f, 5);
    av = absmax(blocks, 1e-5f, 1e-3f, 6);
    p.block_size = block;
  }
  mantissa::ApplyAdamWQuantTensors tensors() {
    return {.var = view(var),
            .grad = view(grad),
            .m = view(m),
            .v = view(v),
            .qmap_m = view(qm),
            .qmap_v = view(qv),
            .absmax_m = view(am),
            .absmax_v = view(av),
            .step = view(step)};
  }
  void expect_same(const Call& o, const std::string& what) const {
    expect_same_bits(var, o.var, what + " var");
    expect_same_bits(m, o.m, what + " m");
    expect_same_bits(v, o.v, what + " v");
    expect_same_bits(am, o.am, what + " absmax_m");
    expect_same_bits(av, o.av, what + " absmax_v");
  }
};

struct Problem {
  DType dtype;
  std::vector<int64_t> shape;
  int64_t block;
  int64_t step;
  float weight_decay;
};

std::vector<Problem> problems() {
  std::vector<Problem> p;
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    p.push_back({d, {3, 70001}, 256, 9, 0.01f});  // several chunks, a partial last block
    p.push_back({d, {5}, 256, 0, 0.01f});         // one block shorter than a vector
    p.push_back({d, {7, 61}, 128, 99, 0.0f});     // no decay
    p.push_back({d, {37}, 1, 3, 0.01f});          // a block per element
    p.push_back({d, {1000}, 4096, 3, 0.01f});     // one block beyond the tensor
  }
  p.push_back({DType::kFloat32, {2, 33, 65}, 64, 1, -0.5f});  // negative weight decay: none
  return p;
}

TEST(ApplyAdamWQuant, BitExactOnEveryTargetAndThreadCount) {
  for (const Problem& pr : problems()) {
    SCOPED_TRACE(std::string(mantissa::dtype_name(pr.dtype)) + " n " +
                 std::to_string(pr.shape.back()) + " block " + std::to_string(pr.block));
    Call ref(pr.dtype, pr.shape, pr.block, pr.step);
    ref.p.weight_decay = pr.weight_decay;
    ref.p.gnorm_scale = 0.5f;
    mt::apply_golden32<ApplyAdamWQuantOp>(ref.tensors(), ref.p);
    mt::for_each_target_and_thread_count([&](const std::string& target, int threads) {
      Call got(pr.dtype, pr.shape, pr.block, pr.step);
      got.p = ref.p;
      const mantissa::Status s = mantissa::apply_adam_w_quant(got.tensors(), got.p);
      ASSERT_TRUE(s.ok()) << s.message();
      got.expect_same(ref, target + " threads " + std::to_string(threads));
    });
  }
}

// A map that is not ascending: the search is a fixed sequence of comparisons, so the codes are
// the same on every target, though not the nearest entries.
TEST(ApplyAdamWQuant, MapsThatAreNotAscendingGiveTheSameBitsEverywhere) {
  std::array<float, 256> reversed = mantissa::dynamic_quant_map(true), shuffled{};
  std::reverse(reversed.begin(), reversed.end());
  const std::array<float, 256> unsigned_map = mantissa::dynamic_quant_map(false);
  for (int k = 0; k < 256; ++k) shuffled[k] = unsigned_map[(k * 77) % 256];
  Call ref(DType::kFloat32, {4, 300}, 256, 5, reversed, shuffled);
  mt::apply_golden32<ApplyAdamWQuantOp>(ref.tensors(), ref.p);
  mt::for_each_target_and_thread_count([&](const std::string& target, int) {
    Call got(DType::kFloat32, {4, 300}, 256, 5, reversed, shuffled);
    ASSERT_TRUE(mantissa::apply_adam_w_quant(got.tensors(), got.p).ok());
    got.expect_same(ref, target);
  });
}

// beta1 = beta2 = 0 makes m = grad and v = grad * grad exactly, so each moment / absmax is a
// value chosen here: the codes are worked out by hand.
struct HandCall {
  HostTensor var, grad, m, v, qm, qv, am, av, step;
  mantissa::ApplyAdamWQuantParams p;
  HandCall(std::vector<float> g, const std::array<float, 256>& map)
      : var(f32(std::vector<float>(g.size(), 1.0f))),
        grad(f32(g)),
        m(codes({static_cast<int64_t>(g.size())}, 1, 0, 255)),
        v(codes({static_cast<int64_t>(g.size())}, 2, 0, 255)),
        qm(map_tensor(map)),
        qv(map_tensor(map)),
        am(f32({0.25f})),
        av(f32({0.25f})),
        step(step_tensor(0)) {
    p.beta1 = 0.0f, p.beta2 = 0.0f, p.weight_decay = 0.0f;
    p.block_size = static_cast<int64_t>(g.size());
  }
  // Runs the call on every target and thread count, expecting the same bits from each; returns
  // the first run's tensors.
  HandCall run() const {
    std::optional<HandCall> first;
    mt::for_each_target_and_thread_count([&](const std::string& target, int) {
      HandCall c = *this;
      const mantissa::Status s =
          mantissa::apply_adam_w_quant({view(c.var), view(c.grad), view(c.m), view(c.v), view(c.qm),
                                        view(c.qv), view(c.am), view(c.av), view(c.step)},
                                       c.p);
      ASSERT_TRUE(s.ok()) << s.message();
      if (!first) {
        first = c;
        return;
      }
      for (auto [a, b, what] : {std::tuple{&c.var, &first->var, "var"},
                                {&c.m, &first->m, "m"},
                                {&c.v, &first->v, "v"},
                                {&c.am, &first->am, "absmax_m"},
                                {&c.av, &first->av, "absmax_v"}}) {
        expect_same_bits(*a, *b, target + " " + what);
      }
    });
    return *first;
  }
};

TEST(ApplyAdamWQuant, TieGoesToTheLowerCodeAndMsSignRuleMovesTowardsItsSign) {
  // Entries (k - 128) / 128 except entry 128, which is -1/1024: ascending, no zero.
  std::array<float, 256> map{};
  for (int k = 0; k < 256; ++k) map[k] = static_cast<float>(k - 128) / 128.0f;
  map[128] = -1.0f / 1024;
  // m / absmax with absmax = 1 (the first gradient):
  //   1                  -> 255 is 127/128 (nearest)
  //   3/256 = 1.5/128    -> a tie between 129 (1/128) and 130 (2/128): the lower, 129
  //   1/4096             -> nearest entry is 128 (-1/1024), negative: m moves to 129; v stays
  //   -1/4096            -> 128, same sign: stays
  //   -127.5/128         -> a tie between 0 (-1) and 1 (-127/128): 0
  //   0                  -> 128 (-1/1024, nearest); zero has no sign: stays
  const HandCall r =
      HandCall({1.0f, 3.0f / 256, 1.0f / 4096, -1.0f / 4096, -127.5f / 128, 0.0f}, map).run();
  const HostTensor& m = r.m;
  EXPECT_EQ(m.value(0), 255);
  EXPECT_EQ(m.value(1), 129);
  EXPECT_EQ(m.value(2), 129);
  EXPECT_EQ(m.value(3), 128);
  EXPECT_EQ(m.value(4), 0);
  EXPECT_EQ(m.value(5), 128);
  EXPECT_EQ(r.am.bits(0), std::bit_cast<uint32_t>(1.0f));
  // v = g * g over absmax 1: 1 -> 255; 9/65536 -> nearest 128 (-1/1024)? |x + 1/1024| vs
  // |x - 1/128|: 0.00112 < 0.0077, so 128, and v keeps it (no sign rule).
  EXPECT_EQ(r.v.value(0), 255);
  EXPECT_EQ(r.v.value(1), 128);
  EXPECT_EQ(r.v.value(2), 128);
}

TEST(ApplyAdamWQuant, AllNegativeMapClampsAtTheLastCode) {
  std::array<float, 256> map{};
  for (int k = 0; k < 256; ++k) map[k] = static_cast<float>(k - 256) / 256.0f;
  const HandCall r = HandCall({0.5f, 1.0f}, map).run();
  // 0.5 and 1 are above every entry: code 255, whose entry is negative; m's rule would move it
  // up, and the clamp keeps 255.
  EXPECT_EQ(r.m.value(0), 255);
  EXPECT_EQ(r.m.value(1), 255);
}

TEST(ApplyAdamWQuant, NanAndZeroBlocks) {
  // Three blocks of 4: a NaN gradient, all zeros, ordinary values.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  HandCall c({0.1f, nan, 0.2f, 0.3f, 0.0f, 0.0f, -0.0f, 0.0f, 0.5f, -0.25f, 0.125f, 1.0f},
             mantissa::dynamic_quant_map(true));
  c.p.block_size = 4;
  c.am = f32({0.25f, 0.25f, 0.25f});
  c.av = f32({0.25f, 0.25f, 0.25f});
  const HandCall r = c.run();
  // The NaN block: canonical NaN absmax, every code 0 (NaN compares false: the search ends at 0).
  EXPECT_EQ(r.am.bits(0), 0x7FC00000u);
  EXPECT_EQ(r.av.bits(0), 0x7FC00000u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r.m.value(i), 0) << i;
  EXPECT_EQ(r.var.bits(1), 0x7FC00000u);
  // The zero block: absmax 0, 0 / 0 is NaN: code 0, which decodes to 0 next step (entry * 0).
  EXPECT_EQ(r.am.bits(1), 0u);
  for (int i = 4; i < 8; ++i) EXPECT_EQ(r.m.value(i), 0) << i;
  EXPECT_EQ(r.var.bits(4), std::bit_cast<uint32_t>(1.0f));
  // The ordinary block is unaffected: absmax 1, and 1 is the signed map's last entry.
  EXPECT_EQ(r.am.bits(2), std::bit_cast<uint32_t>(1.0f));
  EXPECT_EQ(r.m.value(11), 255);
}

TEST(ApplyAdamWQuant, DynamicMapsFollowTheirRule) {
  const std::array<float, 256> s = mantissa::dynamic_quant_map(true);
  const std::array<float, 256> u = mantissa::dynamic_quant_map(false);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
  EXPECT_TRUE(std::is_sorted(u.begin(), u.end()));
  // Signed: 127 negative, 0, 127 positive below 1, then 1; each the negative of another.
  EXPECT_EQ(std::count_if(s.begin(), s.end(), [](float x) { return x < 0; }), 127);
  EXPECT_EQ(s[127], 0.0f);
  EXPECT_EQ(s[255], 1.0f);
  for (int k = 0; k < 127; ++k) EXPECT_EQ(s[k], -s[254 - k]) << k;
  // Smallest magnitude: 1e-6 * 0.55 (one part at e = -6); largest below 1: the last of 64.
  EXPECT_EQ(s[128], static_cast<float>(1e-6 * 0.55));
  EXPECT_EQ(s[254], static_cast<float>(0.1 + 0.9 * 127.0 / 128.0));
  // Unsigned: 0, 254 positive below 1, then 1.
  EXPECT_EQ(u[0], 0.0f);
  EXPECT_EQ(u[255], 1.0f);
  EXPECT_EQ(u[1], static_cast<float>(1e-6 * (0.1 + 0.9 / 4)));
  EXPECT_EQ(u[254], static_cast<float>(0.1 + 0.9 * 255.0 / 256.0));
  EXPECT_EQ(std::adjacent_find(u.begin(), u.end()), u.end());  // no repeated entry
}

// ---- Validation ------------------------------------------------------------------------------

TEST(ApplyAdamWQuantValidation, RowsThroughTheCppApi) {
  struct Row {
    const char* what;
    void (*mutate)(Call&, mantissa::ApplyAdamWQuantTensors&, mantissa::ApplyAdamWQuantParams&);
    StatusCode code;
    const char* named;
  };
  const std::vector<Row> rows{
      {"var missing", [](Call&, auto& t, auto&) { t.var.data = nullptr; },
       StatusCode::kParamNullptr, "var"},
      {"absmax_v missing", [](Call&, auto& t, auto&) { t.absmax_v.data = nullptr; },
       StatusCode::kParamNullptr, "absmax_v"},
      {"var int8", [](Call&, auto& t, auto&) { t.var.dtype = DType::kInt8; },
       StatusCode::kParamInvalid, "var"},
      {"grad dtype", [](Call&, auto& t, auto&) { t.grad.dtype = DType::kFloat16; },
       StatusCode::kParamInvalid, "grad"},
      {"m fp32", [](Call&, auto& t, auto&) { t.m.dtype = DType::kInt8; }, StatusCode::kParamInvalid,
       "m"},
      {"v shape", [](Call&, auto& t, auto&) { t.v.shape[1] = 99; }, StatusCode::kParamInvalid, "v"},
      {"qmap_m size", [](Call&, auto& t, auto&) { t.qmap_m.shape[0] = 255; },
       StatusCode::kParamInvalid, "qmap_m"},
      {"qmap_v dtype", [](Call&, auto& t, auto&) { t.qmap_v.dtype = DType::kFloat16; },
       StatusCode::kParamInvalid, "qmap_v"},
      {"absmax_m size", [](Call&, auto& t, auto&) { t.absmax_m.shape[0] = 1; },
       StatusCode::kParamInvalid, "absmax_m"},
      {"absmax_v rank 2",
       [](Call&, auto& t, auto&) {
         t.absmax_v.rank = 2, t.absmax_v.shape = {1, 2};
       },
       StatusCode::kParamInvalid, "absmax_v"},
      {"step int32", [](Call&, auto& t, auto&) { t.step.dtype = DType::kInt32; },
       StatusCode::kParamInvalid, "step"},
      {"step negative",
       [](Call& c, auto&, auto&) {
         const int64_t s = -1;
         std::memcpy(c.step.data(), &s, 8);
       },
       StatusCode::kParamInvalid, "step"},
      {"block_size 0", [](Call&, auto&, auto& p) { p.block_size = 0; }, StatusCode::kParamInvalid,
       "block_size"},
      {"block_size 512: absmax sizes", [](Call&, auto&, auto& p) { p.block_size = 512; },
       StatusCode::kParamInvalid, "absmax_m"},
      {"quant_mode 1", [](Call&, auto&, auto& p) { p.quant_mode = 1; }, StatusCode::kParamInvalid,
       "quant_mode"},
      {"m overlaps v", [](Call& c, auto& t, auto&) { t.m.data = c.v.data(); },
       StatusCode::kParamInvalid, "m"},
      {"absmax_m is absmax_v", [](Call& c, auto& t, auto&) { t.absmax_m.data = c.av.data(); },
       StatusCode::kParamInvalid, "absmax"},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    Call c(DType::kFloat32, {2, 300}, 256);
    const Call before = c;
    mantissa::ApplyAdamWQuantTensors t = c.tensors();
    r.mutate(c, t, c.p);
    const mantissa::Status s = mantissa::apply_adam_w_quant(t, c.p);
    EXPECT_EQ(s.code(), r.code) << s.message();
    EXPECT_NE(s.message().find(r.named), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("ApplyAdamWQuant"), std::string::npos) << s.message();
    // Nothing written.
    expect_same_bits(c.var, before.var, "var");
    expect_same_bits(c.m, before.m, "m");
    expect_same_bits(c.v, before.v, "v");
    expect_same_bits(c.am, before.am, "absmax_m");
    expect_same_bits(c.av, before.av, "absmax_v");
  }
}

// Empty var: no blocks, nothing read or written.
TEST(ApplyAdamWQuantValidation, EmptyVarIsAccepted) {
  Call c(DType::kBFloat16, {0, 8}, 256);
  ASSERT_EQ(c.am.numel(), 0);
  EXPECT_TRUE(mantissa::apply_adam_w_quant(c.tensors(), c.p).ok());
}

// ---- aclnn and op-by-name --------------------------------------------------------------------

aclnnStatus call_aclnn(Call& c, aclTensor* grad, char* quant_mode) {
  aclTensor* var = acl(view(c.var));
  aclTensor* m = acl(view(c.m));
  aclTensor* v = acl(view(c.v));
  aclTensor* qm = acl(view(c.qm));
  aclTensor* qv = acl(view(c.qv));
  aclTensor* am = acl(view(c.am));
  aclTensor* av = acl(view(c.av));
  aclTensor* step = acl(view(c.step));
  const aclnnStatus s = run_two_phases(
      [&](uint64_t* size, aclOpExecutor** e) {
        return aclnnApplyAdamWQuantGetWorkspaceSize(
            var, grad, m, v, qm, qv, am, av, step, c.p.lr, c.p.beta1, c.p.beta2, c.p.weight_decay,
            c.p.eps, c.p.gnorm_scale, quant_mode, c.p.block_size, size, e);
      },
      [](void* ws, uint64_t size, aclOpExecutor* e) {
        return aclnnApplyAdamWQuant(ws, size, e, nullptr);
      });
  for (aclTensor* t : {var, m, v, qm, qv, am, av, step}) aclDestroyTensor(t);
  return s;
}

TEST(ApplyAdamWQuantAclnn, StridedGradAndAnyQuantMode) {
  Call ref(DType::kFloat16, {4, 96}, 128);
  ASSERT_TRUE(mantissa::apply_adam_w_quant(ref.tensors(), ref.p).ok());
  // grad^T stored as [96][4] and viewed as [4, 96] with strides {1, 4}; quantMode "BLOCKWISE".
  Call c(DType::kFloat16, {4, 96}, 128);
  HostTensor gt(DType::kFloat16, {96, 4});
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t i = 0; i < 96; ++i) gt.set_bits(i * 4 + r, c.grad.bits(r * 96 + i));
  }
  mantissa::TensorView gv = view(gt);
  gv.shape = {4, 96};
  aclTensor* grad = acl(gv, {1, 4}, {96, 4});
  char blockwise[] = "BLOCKWISE";
  ASSERT_EQ(call_aclnn(c, grad, blockwise), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  c.expect_same(ref, "strided grad");
  // quantModeOptional is reserved: null gives the same bits.
  Call c2(DType::kFloat16, {4, 96}, 128);
  aclTensor* grad2 = acl(view(c2.grad));
  ASSERT_EQ(call_aclnn(c2, grad2, nullptr), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  c2.expect_same(ref, "null quantMode");
  // A null tensor handle: 161001.
  uint64_t size = 0;
  aclOpExecutor* e = nullptr;
  EXPECT_EQ(aclnnApplyAdamWQuantGetWorkspaceSize(nullptr, grad2, nullptr, nullptr, nullptr, nullptr,
                                                 nullptr, nullptr, nullptr, 1e-3, 0.9, 0.999, 0.0,
                                                 1e-8, 1.0, nullptr, 128, &size, &e),
            ACLNN_ERR_PARAM_NULLPTR);
  for (aclTensor* t : {grad, grad2}) aclDestroyTensor(t);
}

// By name: the graph's nine inputs, no outputs (the state is updated in place), quant_mode as
// CANN's String.
TEST(ApplyAdamWQuantByName, InputsAndAttributes) {
  Call ref(DType::kFloat32, {2, 300}, 256);
  ref.p.lr = 0.01f, ref.p.gnorm_scale = 0.5f;
  ASSERT_TRUE(mantissa::apply_adam_w_quant(ref.tensors(), ref.p).ok());
  Call c(DType::kFloat32, {2, 300}, 256);
  HostTensor* in[] = {&c.var, &c.grad, &c.m, &c.v, &c.qm, &c.qv, &c.am, &c.av, &c.step};
  std::vector<aclTensorDesc*> id;
  std::vector<aclDataBuffer*> ib;
  auto desc = [](HostTensor* h) {
    return aclCreateTensorDesc(static_cast<aclDataType>(h->dtype),
                               static_cast<int>(h->shape.size()), h->shape.data(), ACL_FORMAT_ND);
  };
  for (HostTensor* h : in) {
    id.push_back(desc(h));
    ib.push_back(aclCreateDataBuffer(h->data(), h->bytes.size()));
  }
  aclopAttr* attr = aclopCreateAttr();
  ASSERT_EQ(aclopSetAttrFloat(attr, "lr", 0.01f), ACL_SUCCESS);
  ASSERT_EQ(aclopSetAttrFloat(attr, "gnorm_scale", 0.5f), ACL_SUCCESS);
  ASSERT_EQ(aclopSetAttrString(attr, "quant_mode", "BLOCKWISE"), ACL_SUCCESS);
  ASSERT_EQ(aclopSetAttrInt(attr, "block_size", 256), ACL_SUCCESS);
  EXPECT_EQ(aclopCompileAndExecuteV2("ApplyAdamWQuant", static_cast<int>(id.size()), id.data(),
                                     ib.data(), 0, nullptr, nullptr, attr, ACL_ENGINE_SYS,
                                     ACL_COMPILE_SYS, nullptr, nullptr),
            ACL_SUCCESS)
      << aclGetRecentErrMsg();
  c.expect_same(ref, "by name");
  aclopDestroyAttr(attr);
  for (auto* d : id) aclDestroyTensorDesc(d);
  for (auto* b : ib) aclDestroyDataBuffer(b);
}

}  // namespace

}  // namespace mantissa::testing
