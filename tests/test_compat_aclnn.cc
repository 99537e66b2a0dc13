// The generic aclnn two-phase entry (compat/aclnn_op.h) on a test operator declared in this
// file: the operator's own workspace follows the staging slots and reaches the kernel; strided
// tensors are staged and copied back only on success; anything thrown becomes
// ACLNN_ERR_INNER (561000) with a message, in phase one and in phase two, and writes nothing.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "compat/aclnn_op.h"
#include "core/op_desc.h"
#include "mantissa/workspace.h"

namespace mantissa::testing {

namespace {

using mantissa::DType;
using mantissa::Status;
using mantissa::TensorView;
using mantissa::Workspace;

// y = 2 * x through a scratch copy of x in the caller's workspace.
struct DoubleTensors {
  TensorView x;
  std::optional<TensorView> offset;  // optional input: y = 2x + offset[0]
  std::optional<TensorView> y;
};
struct DoubleParams {
  bool throw_in_run = false;
  bool throw_in_size = false;
};

struct Seen {
  Workspace workspace;
  int runs = 0;
};
Seen g_seen;

struct DoubleOp {
  using Tensors = DoubleTensors;
  using Params = DoubleParams;
  static constexpr std::string_view kType = "TestDouble";
  static constexpr std::string_view kAclnn = "aclnnTestDouble";
  enum Arg { kX, kOffset, kY };
  static constexpr std::array kArgs{
      mantissa::detail::In("x", "x").rank(1, 8),
      mantissa::detail::In("offset", "offset")
          .dtype_in({DType::kFloat32, DType::kFloat64})
          .one_element()
          .optional_input(),
      mantissa::detail::Out("y", "y", "y").like(kX).in_place_of(kX).optional_output(),
  };
  MANTISSA_TENSOR_MEMBERS(x, offset, y);
  static constexpr std::array kAttrs{
      mantissa::detail::AttrSpec{"throw_in_run", mantissa::detail::AttrType::kBool, false, 0.0},
      mantissa::detail::AttrSpec{"throw_in_size", mantissa::detail::AttrType::kBool, false, 0.0},
  };
  MANTISSA_ATTR_MEMBERS(throw_in_run, throw_in_size);
  static constexpr mantissa::detail::OpHooks<Tensors, Params> kHooks{};
  static constexpr mantissa::detail::AclHooks<Tensors, Params> kAclHooks{};
  static Status check_params(const Tensors&, const Params&) { return {}; }
  static uint64_t workspace_size(const Tensors& t, const Params& p) {
    if (p.throw_in_size) throw std::bad_alloc();
    return static_cast<uint64_t>(t.x.nbytes().value_or(0));
  }
  static Status run(const Tensors& t, const Params& p, Workspace ws) {
    if (p.throw_in_run) throw std::bad_alloc();
    g_seen.workspace = ws;
    ++g_seen.runs;
    const int64_t n = *t.x.numel();
    auto* scratch = static_cast<float*>(ws.data);
    std::memcpy(scratch, t.x.data, static_cast<size_t>(n) * 4);
    auto* y = static_cast<float*>((t.y ? *t.y : t.x).data);
    const float offset = t.offset ? *static_cast<const float*>(t.offset->data) : 0.0f;
    for (int64_t i = 0; i < n; ++i) y[i] = 2.0f * scratch[i] + offset;
    return {};
  }
};
static_assert(mantissa::detail::well_formed<DoubleOp>());

aclTensor* make(std::vector<float>& storage, std::vector<int64_t> dims,
                std::vector<int64_t> strides) {
  const int64_t storage_dims[] = {static_cast<int64_t>(storage.size())};
  return aclCreateTensor(dims.data(), dims.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND,
                         storage_dims, 1, storage.data());
}

aclnnStatus prepare(const aclTensor* x, const aclTensor* y, DoubleParams p, uint64_t* size,
                    aclOpExecutor** executor, const aclTensor* offset = nullptr) {
  return mantissa::compat::aclnn_prepare<DoubleOp>(MANTISSA_ACLNN_HANDLES(x, offset, y), p, size,
                                                   executor);
}
aclnnStatus execute(void* ws, uint64_t size, aclOpExecutor* executor) {
  return mantissa::compat::aclnn_execute<DoubleOp>(ws, size, executor, nullptr);
}

TEST(AclnnGeneric, OperatorWorkspaceFollowsTheSlotsAndReachesTheKernel) {
  std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8};
  aclTensor* t = make(x, {8}, {1});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(prepare(t, t, {}, &size, &executor), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(size, 64u);  // no staging; the operator's 32 bytes, padded to 64
  std::vector<uint64_t> ws(size / 8);
  g_seen = {};
  ASSERT_EQ(execute(ws.data(), size, executor), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(g_seen.workspace.data, static_cast<void*>(ws.data()));
  EXPECT_EQ(g_seen.workspace.size, 32u);
  EXPECT_EQ(x, (std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16}));
  aclDestroyTensor(t);
}

TEST(AclnnGeneric, StridedInPlaceTensorIsStagedBeforeTheOperatorWorkspace) {
  // x is every other element of a 16-element storage, updated in place.
  std::vector<float> storage(16);
  for (int i = 0; i < 16; ++i) storage[i] = static_cast<float>(i);
  aclTensor* t = make(storage, {8}, {2});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(prepare(t, t, {}, &size, &executor), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(size, 128u);  // one 64-byte slot, then the operator's 32 bytes padded to 64
  std::vector<uint64_t> ws(size / 8);
  g_seen = {};
  ASSERT_EQ(execute(ws.data(), size, executor), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(g_seen.workspace.data, static_cast<void*>(reinterpret_cast<char*>(ws.data()) + 64));
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(storage[i], i % 2 == 0 ? 2.0f * i : static_cast<float>(i)) << i;
  }
  aclDestroyTensor(t);
}

TEST(AclnnGeneric, ExceptionInPhaseOneIsAnInnerError) {
  std::vector<float> x(8, 1.0f);
  aclTensor* t = make(x, {8}, {1});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  DoubleParams p;
  p.throw_in_size = true;
  EXPECT_EQ(prepare(t, t, p, &size, &executor), ACLNN_ERR_INNER);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclnnTestDoubleGetWorkspaceSize"),
            std::string::npos)
      << aclGetRecentErrMsg();
  EXPECT_EQ(executor, nullptr);
  aclDestroyTensor(t);
}

TEST(AclnnGeneric, ExceptionInPhaseTwoIsAnInnerErrorAndWritesNothing) {
  std::vector<float> storage(16, 3.0f);
  aclTensor* t = make(storage, {8}, {2});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  DoubleParams p;
  p.throw_in_run = true;
  ASSERT_EQ(prepare(t, t, p, &size, &executor), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  std::vector<uint64_t> ws(size / 8);
  EXPECT_EQ(execute(ws.data(), size, executor), ACLNN_ERR_INNER);
  EXPECT_NE(std::string(aclGetRecentErrMsg()).find("aclnnTestDouble"), std::string::npos);
  EXPECT_EQ(storage, std::vector<float>(16, 3.0f));
  // The one-shot executor is spent even so.
  EXPECT_EQ(execute(ws.data(), size, executor), ACLNN_ERR_PARAM_INVALID);
  aclDestroyTensor(t);
}

TEST(AclnnGeneric, SeparateStridedOutputIsCopiedBackAndInputLeftAlone) {
  std::vector<float> xs{1, 2, 3, 4};
  std::vector<float> ys(8, -1.0f);
  aclTensor* x = make(xs, {4}, {1});
  aclTensor* y = make(ys, {4}, {2});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(prepare(x, y, {}, &size, &executor), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  std::vector<uint64_t> ws(size / 8);
  ASSERT_EQ(execute(ws.data(), size, executor), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(xs, (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(ys, (std::vector<float>{2, -1, 4, -1, 6, -1, 8, -1}));
  aclDestroyTensor(x);
  aclDestroyTensor(y);
}

TEST(AclnnGeneric, OptionalInputMayBeNullOrGiven) {
  std::vector<float> xs{1, 2, 3, 4};
  std::vector<float> off{0.5f};
  aclTensor* x = make(xs, {4}, {1});
  aclTensor* o = make(off, {1}, {1});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(prepare(x, x, {}, &size, &executor, o), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  std::vector<uint64_t> ws(size / 8);
  ASSERT_EQ(execute(ws.data(), size, executor), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(xs, (std::vector<float>{2.5f, 4.5f, 6.5f, 8.5f}));
  // The C++ API: the same operator with the optional input left unset.
  DoubleTensors t{.x = TensorView(xs.data(), DType::kFloat32, {4}), .offset = {}, .y = {}};
  EXPECT_TRUE(mantissa::detail::validate<DoubleOp>(t, {}).ok());
  aclDestroyTensor(x);
  aclDestroyTensor(o);
}

TEST(AclnnGeneric, DtypeSetRejectsOthersNamingTheAcceptedOnes) {
  std::vector<float> xs{1, 2, 3, 4};
  int32_t bad = 1;
  aclTensor* x = make(xs, {4}, {1});
  const int64_t one[] = {1};
  aclTensor* o = aclCreateTensor(one, 1, ACL_INT32, one, 0, ACL_FORMAT_ND, one, 1, &bad);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(prepare(x, x, {}, &size, &executor, o), ACLNN_ERR_PARAM_INVALID);
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find("offset dtype INT32 is not supported (expected FLOAT or DOUBLE)"),
            std::string::npos)
      << msg;
  aclDestroyTensor(x);
  aclDestroyTensor(o);
}

}  // namespace

}  // namespace mantissa::testing
