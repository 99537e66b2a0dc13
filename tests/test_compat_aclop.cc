// Op-by-name execution, the generic layer: descriptor, buffer and attribute handles, and the
// status codes of aclopCompileAndExecuteV2 that do not depend on one operator's contract.
#include <gtest/gtest.h>

#include <array>
#include <string>
#include <vector>

#include "aclop_support.h"

namespace mantissa::testing {

namespace {

using mantissa::testing::aclop_support::Call;
using mantissa::testing::aclop_support::expect_rejected_untouched;

constexpr aclError kNullptr = 161001;
constexpr aclError kInvalid = 161002;
constexpr aclError kFindKernel = 561003;

std::string recent() { return aclGetRecentErrMsg(); }

// A valid AmpUpdateScale call (scale 65536, tracker 900, no inf), outputs in separate buffers.
Call amp_call() {
  Call c("AmpUpdateScale");
  c.add_in(ACL_FLOAT, {1});
  c.add_in(ACL_INT32, {1});
  c.add_in(ACL_FLOAT, {1});
  c.add_out(ACL_FLOAT, {1});
  c.add_out(ACL_INT32, {1});
  c.set_float("growth_factor", 2.0f);
  c.set_float("backoff_factor", 0.5f);
  c.set_int("growth_interval", 1000);
  return c;
}

void fill_amp(Call& c) {
  c.allocate(0xA5);
  c.in(0).set(0, 65536.0f);
  c.in(1).set_i32(900);
  c.in(2).set(0, 0.0f);
}

// A valid ApplyAdamD call on [2, 3] fp32 tensors with separate outputs.
Call adam_call(aclDataType dt = ACL_FLOAT) {
  Call c("ApplyAdamD");
  for (int i = 0; i < 3; ++i) c.add_in(dt, {2, 3});
  for (int i = 0; i < 6; ++i) c.add_in(dt, {});
  c.add_in(dt, {2, 3});
  for (int i = 0; i < 3; ++i) c.add_out(dt, {2, 3});
  return c;
}

void fill_adam(Call& c) {
  c.allocate();
  for (int k : {0, 1, 2, 9}) {
    for (size_t i = 0; i < 6; ++i) c.in(k).set(i, 0.25f * static_cast<float>(i + k + 1));
  }
  const std::array<float, 6> scalars{0.9f, 0.999f, 0.001f, 0.9f, 0.999f, 1e-7f};
  for (int k = 0; k < 6; ++k) c.in(3 + k).set(0, scalars[k]);
}

// ---- Handles --------------------------------------------------------------------------------

TEST(AclopHandles, TensorDescAcceptsAnyRankAndScalars) {
  aclTensorDesc* scalar = aclCreateTensorDesc(ACL_FLOAT, 0, nullptr, ACL_FORMAT_ND);
  EXPECT_NE(scalar, nullptr);
  aclDestroyTensorDesc(scalar);
  const std::vector<int64_t> nine(9, 1);
  aclTensorDesc* rank9 = aclCreateTensorDesc(ACL_FLOAT16, 9, nine.data(), ACL_FORMAT_ND);
  EXPECT_NE(rank9, nullptr);
  aclDestroyTensorDesc(rank9);
  const int64_t empty[] = {0, 3};
  aclTensorDesc* e = aclCreateTensorDesc(ACL_BF16, 2, empty, ACL_FORMAT_NCHW);
  EXPECT_NE(e, nullptr);  // formats are checked by operators, not at creation
  aclDestroyTensorDesc(e);
  aclDestroyTensorDesc(nullptr);  // a no-op
}

TEST(AclopHandles, TensorDescRejectsBadArguments) {
  const int64_t dims[] = {2, -1};
  EXPECT_EQ(aclCreateTensorDesc(ACL_FLOAT, -1, dims, ACL_FORMAT_ND), nullptr);
  EXPECT_NE(recent().find("numDims -1"), std::string::npos) << recent();
  EXPECT_EQ(aclCreateTensorDesc(ACL_FLOAT, 2, nullptr, ACL_FORMAT_ND), nullptr);
  EXPECT_NE(recent().find("dims is null"), std::string::npos) << recent();
  EXPECT_EQ(aclCreateTensorDesc(ACL_FLOAT, 2, dims, ACL_FORMAT_ND), nullptr);
  EXPECT_NE(recent().find("dims[1] is -1"), std::string::npos) << recent();
}

TEST(AclopHandles, DataBuffer) {
  float x = 1.0f;
  aclDataBuffer* b = aclCreateDataBuffer(&x, sizeof x);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(aclGetDataBufferAddr(b), &x);
  EXPECT_EQ(aclGetDataBufferSizeV2(b), sizeof x);
  EXPECT_EQ(aclDestroyDataBuffer(b), ACL_SUCCESS);
  aclDataBuffer* empty = aclCreateDataBuffer(nullptr, 0);
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(aclGetDataBufferAddr(empty), nullptr);
  EXPECT_EQ(aclGetDataBufferSizeV2(empty), 0u);
  EXPECT_EQ(aclDestroyDataBuffer(empty), ACL_SUCCESS);
  EXPECT_EQ(aclGetDataBufferAddr(nullptr), nullptr);
  EXPECT_EQ(aclGetDataBufferSizeV2(nullptr), 0u);
  EXPECT_EQ(aclDestroyDataBuffer(nullptr), ACL_ERROR_INVALID_PARAM);
}

TEST(AclopHandles, Attributes) {
  aclopAttr* attr = aclopCreateAttr();
  ASSERT_NE(attr, nullptr);
  EXPECT_EQ(aclopSetAttrBool(attr, "use_nesterov", 1), ACL_SUCCESS);
  EXPECT_EQ(aclopSetAttrInt(attr, "growth_interval", 5), ACL_SUCCESS);
  EXPECT_EQ(aclopSetAttrFloat(attr, "growth_factor", 2.0f), ACL_SUCCESS);
  EXPECT_EQ(aclopSetAttrFloat(attr, "growth_factor", 3.0f), ACL_SUCCESS);  // replaces
  EXPECT_EQ(aclopSetAttrBool(nullptr, "x", 1), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclopSetAttrInt(nullptr, "x", 1), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclopSetAttrFloat(nullptr, "x", 1.0f), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("attr is null"), std::string::npos) << recent();
  EXPECT_EQ(aclopSetAttrBool(attr, nullptr, 1), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclopSetAttrInt(attr, nullptr, 1), ACL_ERROR_INVALID_PARAM);
  EXPECT_EQ(aclopSetAttrFloat(attr, nullptr, 1.0f), ACL_ERROR_INVALID_PARAM);
  EXPECT_NE(recent().find("attrName is null"), std::string::npos) << recent();
  aclopDestroyAttr(attr);
  aclopDestroyAttr(nullptr);  // a no-op
}

// A later set of the same name replaces the earlier value and its type.
TEST(AclopHandles, LaterSetReplacesValueAndType) {
  Call c = amp_call();
  c.remove_attr("growth_interval");
  c.set_float("growth_interval", 1000.0f);
  c.set_int("growth_interval", 901);  // tracker 900 + 1 == 901: grows
  fill_amp(c);
  ASSERT_EQ(c.run(), ACL_SUCCESS) << recent();
  EXPECT_EQ(c.out(0).get(0), 131072.0f);
  EXPECT_EQ(c.out(1).get_i32(), 0);
}

// ---- Op type, counts, handles ---------------------------------------------------------------

TEST(AclopExecute, ValidCallRunsAndStreamAndOpPathAreIgnored) {
  Call c = amp_call();
  fill_amp(c);
  ASSERT_EQ(c.run(), ACL_SUCCESS) << recent();
  EXPECT_EQ(c.out(0).get(0), 65536.0f);
  EXPECT_EQ(c.out(1).get_i32(), 901);

  // The same call through the raw API with an opPath and a non-null stream handle.
  fill_amp(c);
  std::vector<aclTensorDesc*> in_desc, out_desc;
  std::vector<aclDataBuffer*> in_buf, out_buf;
  for (auto& a : c.ins()) {
    in_desc.push_back(aclCreateTensorDesc(a.dtype, 1, a.dims.data(), ACL_FORMAT_ND));
    in_buf.push_back(aclCreateDataBuffer(a.mem.data(), a.mem.size()));
  }
  for (auto& a : c.outs()) {
    out_desc.push_back(aclCreateTensorDesc(a.dtype, 1, a.dims.data(), ACL_FORMAT_ND));
    out_buf.push_back(aclCreateDataBuffer(a.mem.data(), a.mem.size()));
  }
  aclopAttr* attr = aclopCreateAttr();
  aclopSetAttrFloat(attr, "growth_factor", 2.0f);
  aclopSetAttrFloat(attr, "backoff_factor", 0.5f);
  aclopSetAttrInt(attr, "growth_interval", 901);
  int fake_stream = 0;
  EXPECT_EQ(aclopCompileAndExecuteV2("AmpUpdateScale", 3, in_desc.data(), in_buf.data(), 2,
                                     out_desc.data(), out_buf.data(), attr, ACL_ENGINE_SYS,
                                     ACL_COMPILE_SYS, "/nonexistent/op/path", &fake_stream),
            ACL_SUCCESS)
      << recent();
  EXPECT_EQ(c.out(0).get(0), 131072.0f);
  EXPECT_EQ(c.out(1).get_i32(), 0);
  for (auto* d : in_desc) aclDestroyTensorDesc(d);
  for (auto* d : out_desc) aclDestroyTensorDesc(d);
  for (auto* b : in_buf) aclDestroyDataBuffer(b);
  for (auto* b : out_buf) aclDestroyDataBuffer(b);
  aclopDestroyAttr(attr);
}

TEST(AclopExecute, NullOpType) {
  EXPECT_EQ(aclopCompileAndExecuteV2(nullptr, 0, nullptr, nullptr, 0, nullptr, nullptr, nullptr,
                                     ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr),
            kNullptr);
  EXPECT_NE(recent().find("opType is null"), std::string::npos) << recent();
}

TEST(AclopExecute, UnknownOpType) {
  for (const char* name : {"Foo", "ampupdatescale", "", "ApplyAdam", "AmpUpdateScale "}) {
    Call c = amp_call();
    c.op() = name;
    expect_rejected_untouched(c, kFindKernel, name, "unknown op type \"" + std::string(name));
  }
}

TEST(AclopExecute, WrongCounts) {
  {
    Call c = amp_call();
    c.ins().pop_back();
    expect_rejected_untouched(c, kInvalid, "2 inputs", "numInputs is 2 but the operator takes 3");
  }
  {
    Call c = amp_call();
    c.add_in(ACL_FLOAT, {1});
    expect_rejected_untouched(c, kInvalid, "4 inputs", "numInputs is 4");
  }
  {
    Call c = amp_call();
    c.outs().pop_back();
    expect_rejected_untouched(c, kInvalid, "1 output", "numOutputs is 1 but the operator has 2");
  }
  {
    Call c = adam_call();
    c.add_out(ACL_FLOAT, {2, 3});
    expect_rejected_untouched(c, kInvalid, "4 outputs", "numOutputs is 4");
  }
  EXPECT_EQ(aclopCompileAndExecuteV2("AmpUpdateScale", -1, nullptr, nullptr, 2, nullptr, nullptr,
                                     nullptr, ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr),
            kInvalid);
  EXPECT_NE(recent().find("numInputs is -1"), std::string::npos) << recent();
}

// Null arrays and null elements: 161001, nothing written.
TEST(AclopExecute, NullDescriptorsAndBuffers) {
  enum Which {
    kInDescArray,
    kInBufArray,
    kOutDescArray,
    kOutBufArray,
    kInDesc,
    kInBuf,
    kOutDesc,
    kOutBuf
  };
  const std::array<std::pair<Which, const char*>, 8> cases{{
      {kInDescArray, "inputDesc array is null"},
      {kInBufArray, "inputs array is null"},
      {kOutDescArray, "outputDesc array is null"},
      {kOutBufArray, "outputs array is null"},
      {kInDesc, "inputDesc[1] (growth_tracker) is null"},
      {kInBuf, "inputs[2] (found_inf) is null"},
      {kOutDesc, "outputDesc[0] (updated_scale) is null"},
      {kOutBuf, "outputs[1] (updated_growth_tracker) is null"},
  }};
  for (const auto& [which, needle] : cases) {
    Call c = amp_call();
    fill_amp(c);
    const auto before = c.snapshot();
    std::vector<aclTensorDesc*> in_desc, out_desc;
    std::vector<aclDataBuffer*> in_buf, out_buf;
    for (auto& a : c.ins()) {
      in_desc.push_back(aclCreateTensorDesc(a.dtype, 1, a.dims.data(), ACL_FORMAT_ND));
      in_buf.push_back(aclCreateDataBuffer(a.mem.data(), a.mem.size()));
    }
    for (auto& a : c.outs()) {
      out_desc.push_back(aclCreateTensorDesc(a.dtype, 1, a.dims.data(), ACL_FORMAT_ND));
      out_buf.push_back(aclCreateDataBuffer(a.mem.data(), a.mem.size()));
    }
    auto call_in_desc = in_desc, call_out_desc = out_desc;
    auto call_in_buf = in_buf, call_out_buf = out_buf;
    if (which == kInDesc) call_in_desc[1] = nullptr;
    if (which == kInBuf) call_in_buf[2] = nullptr;
    if (which == kOutDesc) call_out_desc[0] = nullptr;
    if (which == kOutBuf) call_out_buf[1] = nullptr;
    aclopAttr* attr = aclopCreateAttr();
    aclopSetAttrFloat(attr, "growth_factor", 2.0f);
    aclopSetAttrFloat(attr, "backoff_factor", 0.5f);
    aclopSetAttrInt(attr, "growth_interval", 901);
    const aclError rc = aclopCompileAndExecuteV2(
        "AmpUpdateScale", 3, which == kInDescArray ? nullptr : call_in_desc.data(),
        which == kInBufArray ? nullptr : call_in_buf.data(), 2,
        which == kOutDescArray ? nullptr : call_out_desc.data(),
        which == kOutBufArray ? nullptr : call_out_buf.data(), attr, ACL_ENGINE_SYS,
        ACL_COMPILE_SYS, nullptr, nullptr);
    EXPECT_EQ(rc, kNullptr) << needle;
    EXPECT_NE(recent().find(needle), std::string::npos) << recent();
    EXPECT_TRUE(c.snapshot() == before) << needle;
    for (auto* d : in_desc) aclDestroyTensorDesc(d);
    for (auto* d : out_desc) aclDestroyTensorDesc(d);
    for (auto* b : in_buf) aclDestroyDataBuffer(b);
    for (auto* b : out_buf) aclDestroyDataBuffer(b);
    aclopDestroyAttr(attr);
  }
}

// Null handles are found before formats, attributes and the operator's own rows.
TEST(AclopExecute, NullHandlesBeforeOtherChecks) {
  Call c = amp_call();
  fill_amp(c);
  c.in(0).format = ACL_FORMAT_NCHW;
  c.remove_attr("growth_interval");
  std::vector<aclTensorDesc*> in_desc;
  std::vector<aclDataBuffer*> in_buf;
  for (auto& a : c.ins()) {
    in_desc.push_back(aclCreateTensorDesc(a.dtype, 1, a.dims.data(), a.format));
    in_buf.push_back(aclCreateDataBuffer(a.mem.data(), a.mem.size()));
  }
  aclTensorDesc* out_desc[2] = {in_desc[0], nullptr};
  aclDataBuffer* out_buf[2] = {in_buf[0], in_buf[1]};
  EXPECT_EQ(
      aclopCompileAndExecuteV2("AmpUpdateScale", 3, in_desc.data(), in_buf.data(), 2, out_desc,
                               out_buf, nullptr, ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr),
      kNullptr);
  EXPECT_NE(recent().find("outputDesc[1]"), std::string::npos) << recent();
  // With the handle present, the format is next; then the attributes.
  out_desc[1] = in_desc[1];
  EXPECT_EQ(
      aclopCompileAndExecuteV2("AmpUpdateScale", 3, in_desc.data(), in_buf.data(), 2, out_desc,
                               out_buf, nullptr, ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr),
      kInvalid);
  EXPECT_NE(recent().find("inputDesc[0] (current_scale) format is 0"), std::string::npos)
      << recent();
  for (auto* d : in_desc) aclDestroyTensorDesc(d);
  for (auto* b : in_buf) aclDestroyDataBuffer(b);
}

// A buffer with a null address whose descriptor needs bytes: the operator's null-pointer row.
TEST(AclopExecute, NullDataAddress) {
  for (int k = 0; k < 5; ++k) {
    Call c = amp_call();
    (k < 3 ? c.in(k) : c.out(k - 3)).null_data = true;
    expect_rejected_untouched(c, kNullptr, "null address " + std::to_string(k),
                              "null data pointer");
  }
}

TEST(AclopExecute, EngineAndCompileTypes) {
  for (aclopEngineType e : {ACL_ENGINE_SYS, ACL_ENGINE_AICORE, ACL_ENGINE_VECTOR}) {
    Call c = amp_call();
    fill_amp(c);
    EXPECT_EQ(c.run(e), ACL_SUCCESS) << recent();
    EXPECT_EQ(c.out(1).get_i32(), 901);
  }
  for (int e : {-1, 3, 100}) {
    Call c = amp_call();
    c.allocate();
    c.fill_random(3);
    const auto before = c.snapshot();
    EXPECT_EQ(c.run(static_cast<aclopEngineType>(e)), kInvalid);
    EXPECT_NE(recent().find("engineType " + std::to_string(e)), std::string::npos) << recent();
    EXPECT_TRUE(c.snapshot() == before);
  }
  for (int t : {1, -1, 2}) {
    Call c = amp_call();
    c.allocate();
    c.fill_random(4);
    const auto before = c.snapshot();
    EXPECT_EQ(c.run(ACL_ENGINE_SYS, static_cast<aclopCompileType>(t)), kInvalid);
    EXPECT_NE(recent().find("compileType " + std::to_string(t)), std::string::npos) << recent();
    EXPECT_TRUE(c.snapshot() == before);
  }
}

TEST(AclopExecute, FormatMustBeND) {
  // Upstream's formats beyond the first three (FRACTAL_NZ is 29) are held as the integers given
  // (no enum-typed field holds them) and refused with their number.
  for (aclFormat f : {ACL_FORMAT_NCHW, ACL_FORMAT_NHWC, ACL_FORMAT_UNDEFINED, ACL_FORMAT_FRACTAL_NZ,
                      ACL_FORMAT_NC1HWC0, ACL_FORMAT_NCL}) {
    for (int k = 0; k < 5; ++k) {
      Call c = amp_call();
      (k < 3 ? c.in(k) : c.out(k - 3)).format = f;
      expect_rejected_untouched(c, kInvalid, "format", "format is " + std::to_string(f));
    }
  }
}

// fp32 data at an address that is not a multiple of 4 is refused (kernels read through typed
// pointers), naming the argument, and nothing is written.
TEST(AclopExecute, MisalignedDataRejected) {
  for (int k = 0; k < 5; ++k) {
    Call c = amp_call();
    (k < 3 ? c.in(k) : c.out(k - 3)).alias_offset = 2;  // 4-byte elements at an odd multiple of 2
    expect_rejected_untouched(c, kInvalid, "misaligned", "is not aligned to its 4-byte elements");
  }
}

// ---- Attributes -----------------------------------------------------------------------------

TEST(AclopAttributes, MissingRequired) {
  for (const char* name : {"growth_factor", "backoff_factor", "growth_interval"}) {
    Call c = amp_call();
    c.remove_attr(name);
    expect_rejected_untouched(c, kInvalid, name,
                              "attribute \"" + std::string(name) + "\" is not set");
  }
  // No attribute object at all.
  Call c = amp_call();
  c.allocate();
  c.fill_random(5);
  const auto before = c.snapshot();
  EXPECT_EQ(c.run(ACL_ENGINE_SYS, ACL_COMPILE_SYS, /*pass_attr=*/false), kInvalid);
  EXPECT_NE(recent().find("is not set"), std::string::npos) << recent();
  EXPECT_TRUE(c.snapshot() == before);
}

TEST(AclopAttributes, WrongType) {
  struct Case {
    const char* name;
    char kind;
    const char* needle;
  };
  for (const Case& k : {Case{"growth_factor", 'i', "set as int but must be float"},
                        Case{"growth_factor", 'b', "set as bool but must be float"},
                        Case{"backoff_factor", 'i', "set as int but must be float"},
                        Case{"growth_interval", 'f', "set as float but must be int"},
                        Case{"growth_interval", 'b', "set as bool but must be int"}}) {
    Call c = amp_call();
    c.remove_attr(k.name);
    if (k.kind == 'i') c.set_int(k.name, 2);
    if (k.kind == 'f') c.set_float(k.name, 1000.0f);
    if (k.kind == 'b') c.set_bool(k.name, true);
    expect_rejected_untouched(c, kInvalid, k.name, k.needle);
  }
  for (const char* name : {"use_locking", "use_nesterov"}) {
    Call c = adam_call();
    c.set_int(name, 1);
    expect_rejected_untouched(c, kInvalid, name, "set as int but must be bool");
    Call f = adam_call();
    f.set_float(name, 1.0f);
    expect_rejected_untouched(f, kInvalid, name, "set as float but must be bool");
  }
}

// Unknown attribute names are rejected (a misspelt name must not silently take a default).
TEST(AclopAttributes, UnknownNameRejected) {
  {
    Call c = amp_call();
    c.set_int("growth_intervall", 5);
    expect_rejected_untouched(c, kInvalid, "misspelt", "unknown attribute \"growth_intervall\"");
  }
  {
    Call c = adam_call();
    c.set_bool("nesterov", true);
    expect_rejected_untouched(c, kInvalid, "other op's name", "unknown attribute \"nesterov\"");
    EXPECT_NE(recent().find("use_locking, use_nesterov"), std::string::npos) << recent();
  }
}

// Optional attributes: absent, or no attribute object at all, means their defaults.
TEST(AclopAttributes, DefaultsOfOptionalAttributes) {
  Call with_defaults = adam_call();
  fill_adam(with_defaults);
  ASSERT_EQ(with_defaults.run(ACL_ENGINE_SYS, ACL_COMPILE_SYS, /*pass_attr=*/false), ACL_SUCCESS)
      << recent();
  Call explicit_false = adam_call();
  explicit_false.set_bool("use_locking", false);
  explicit_false.set_bool("use_nesterov", false);
  fill_adam(explicit_false);
  ASSERT_EQ(explicit_false.run(), ACL_SUCCESS) << recent();
  Call nesterov = adam_call();
  nesterov.set_bool("use_nesterov", true);
  fill_adam(nesterov);
  ASSERT_EQ(nesterov.run(), ACL_SUCCESS) << recent();
  EXPECT_TRUE(with_defaults.snapshot() == explicit_false.snapshot());
  EXPECT_FALSE(with_defaults.snapshot() == nesterov.snapshot());  // the attribute is applied
}

// ---- Buffer sizes ---------------------------------------------------------------------------

TEST(AclopBuffers, SmallerThanDescriptorRejected) {
  for (int k = 0; k < 5; ++k) {
    Call c = amp_call();
    (k < 3 ? c.in(k) : c.out(k - 3)).buffer_size = 3;
    expect_rejected_untouched(c, kInvalid, "short buffer " + std::to_string(k),
                              "holds 3 bytes but its descriptor");
  }
  for (int k = 0; k < 13; ++k) {
    Call c = adam_call(ACL_FLOAT16);
    mantissa::testing::aclop_support::Arg& a = k < 10 ? c.in(k) : c.out(k - 10);
    a.buffer_size = a.bytes() - 1;
    expect_rejected_untouched(c, kInvalid, "short buffer " + std::to_string(k),
                              "holds " + std::to_string(a.bytes() - 1) + " bytes");
  }
  {  // a zero-size buffer for a descriptor that needs bytes
    Call c = adam_call();
    c.in(5).buffer_size = 0;
    expect_rejected_untouched(c, kInvalid, "zero-size lr", "inputs[5] (lr) holds 0 bytes");
  }
}

TEST(AclopBuffers, ExactOrLargerBuffersAccepted) {
  Call exact = adam_call();
  fill_adam(exact);
  for (auto& a : exact.ins()) a.buffer_size = a.bytes();
  for (auto& a : exact.outs()) a.buffer_size = a.bytes();
  ASSERT_EQ(exact.run(), ACL_SUCCESS) << recent();
  Call larger = adam_call();
  fill_adam(larger);
  for (auto& a : larger.ins()) a.mem.resize(a.mem.size() + 64, 0);
  ASSERT_EQ(larger.run(), ACL_SUCCESS) << recent();
  for (int k = 0; k < 3; ++k) {
    const auto& x = exact.out(k).mem;
    const auto& y = larger.out(k).mem;
    EXPECT_TRUE(std::equal(x.begin(), x.end(), y.begin())) << k;
  }
}

// Empty tensors need no bytes: a null address and size 0 are fine.
TEST(AclopBuffers, EmptyTensorsNeedNoBytes) {
  Call c("ApplyAdamD");
  for (int i = 0; i < 3; ++i) c.add_in(ACL_FLOAT, {0, 4});
  for (int i = 0; i < 6; ++i) c.add_in(ACL_FLOAT, {1});
  c.add_in(ACL_FLOAT, {0, 4});
  for (int i = 0; i < 3; ++i) c.add_out(ACL_FLOAT, {0, 4});
  c.allocate();
  for (int k : {0, 1, 2, 9}) {
    c.in(k).null_data = true;
    c.in(k).buffer_size = 0;
  }
  for (int k = 0; k < 3; ++k) {
    c.out(k).null_data = true;
    c.out(k).buffer_size = 0;
  }
  EXPECT_EQ(c.run(), ACL_SUCCESS) << recent();
}

// Rank limits are the operators': descriptors of any rank are accepted by the handle layer.
TEST(AclopExecute, RankNineRejectedByOperator) {
  Call c = adam_call();
  const std::vector<int64_t> nine{1, 1, 1, 1, 1, 1, 2, 1, 3};
  for (int k : {0, 1, 2, 9}) c.in(k).dims = nine;
  for (int k = 0; k < 3; ++k) c.out(k).dims = nine;
  expect_rejected_untouched(c, kInvalid, "rank 9", "rank 9");
}

}  // namespace

}  // namespace mantissa::testing
