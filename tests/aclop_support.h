// Test helpers for op-by-name execution: a call builder that owns its descriptors, buffers and
// memory, sentinel fills, and byte snapshots to prove that a rejected call wrote nothing.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "mantissa/dtype.h"
#include "mantissa/tensor.h"

namespace mantissa::testing::aclop_support {

inline size_t elem_size(aclDataType dt) {
  const size_t s = mantissa::dtype_size(static_cast<mantissa::DType>(dt));
  return s == 0 ? 4 : s;
}

inline size_t count_of(const std::vector<int64_t>& dims) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return n;
}

// One tensor argument: descriptor fields, its memory, and optional overrides.
struct Arg {
  aclDataType dtype = ACL_FLOAT;
  std::vector<int64_t> dims;
  aclFormat format = ACL_FORMAT_ND;
  int alias_input = -1;  // use input k's memory (from alias_offset bytes on)
  // alias_offset without alias_input: the data starts that many bytes into its own memory.
  size_t alias_offset = 0;
  std::optional<size_t> buffer_size;  // bytes reported by the data buffer (default: all of mem)
  bool null_data = false;             // the data buffer holds a null address
  std::vector<uint8_t> mem;

  size_t bytes() const { return count_of(dims) * elem_size(dtype); }
  mantissa::DType dt() const { return static_cast<mantissa::DType>(dtype); }
  mantissa::TensorView view() {
    return mantissa::TensorView(mem.data(), dt(), std::span<const int64_t>(dims));
  }
  // Element i as fp32 (fp32/fp16/bf16 only).
  float get(size_t i) const { return mantissa::load_as_float(dt(), mem.data(), i); }
  void set(size_t i, float f) { mantissa::store_from_float(dt(), mem.data(), i, f); }
  void set_all(float f) {
    for (size_t i = 0; i < count_of(dims); ++i) set(i, f);
  }
  void set_i32(int32_t v) { std::memcpy(mem.data(), &v, sizeof v); }
  int32_t get_i32() const {
    int32_t v;
    std::memcpy(&v, mem.data(), sizeof v);
    return v;
  }
};

struct Attr {
  std::string name;
  char kind;  // 'b', 'i', 'f'
  int64_t i = 0;
  float f = 0.0f;
};

// An op-by-name call. Configure inputs, outputs and attributes, then allocate() (memory sized
// from the final dims), fill, and run().
class Call {
 public:
  explicit Call(std::string op) : op_(std::move(op)) {}

  Arg& in(int i) { return ins_.at(i); }
  Arg& out(int i) { return outs_.at(i); }
  std::vector<Arg>& ins() { return ins_; }
  std::vector<Arg>& outs() { return outs_; }
  std::vector<Attr>& attrs() { return attrs_; }
  std::string& op() { return op_; }

  Arg& add_in(aclDataType dt, std::vector<int64_t> dims) {
    Arg a;
    a.dtype = dt;
    a.dims = std::move(dims);
    ins_.push_back(std::move(a));
    return ins_.back();
  }
  Arg& add_out(aclDataType dt, std::vector<int64_t> dims, int alias_input = -1) {
    Arg a;
    a.dtype = dt;
    a.dims = std::move(dims);
    a.alias_input = alias_input;
    outs_.push_back(std::move(a));
    return outs_.back();
  }
  void set_bool(std::string name, bool v) { attrs_.push_back({std::move(name), 'b', v, 0.0f}); }
  void set_int(std::string name, int64_t v) { attrs_.push_back({std::move(name), 'i', v, 0.0f}); }
  void set_float(std::string name, float v) { attrs_.push_back({std::move(name), 'f', 0, v}); }
  void remove_attr(const std::string& name) {
    std::erase_if(attrs_, [&](const Attr& a) { return a.name == name; });
  }

  // Memory for every non-aliased argument, sized from its dims (at least 8 bytes so that empty
  // tensors still have an address), filled with `fill`.
  void allocate(uint8_t fill = 0) {
    for (auto* side : {&ins_, &outs_}) {
      for (Arg& a : *side) {
        if (a.alias_input < 0) a.mem.assign(std::max<size_t>(a.bytes(), 8), fill);
      }
    }
  }
  // Every byte of every non-aliased argument set from a seeded generator.
  void fill_random(uint32_t seed) {
    std::mt19937 gen(seed);
    for (auto* side : {&ins_, &outs_}) {
      for (Arg& a : *side) {
        for (uint8_t& b : a.mem) b = static_cast<uint8_t>(gen());
      }
    }
  }
  // All memory, to compare before and after a call.
  std::vector<std::vector<uint8_t>> snapshot() const {
    std::vector<std::vector<uint8_t>> s;
    for (const auto* side : {&ins_, &outs_}) {
      for (const Arg& a : *side) s.push_back(a.mem);
    }
    return s;
  }

  void* data_of(const Arg& a) {
    if (a.null_data) return nullptr;
    if (a.alias_input >= 0) return ins_.at(a.alias_input).mem.data() + a.alias_offset;
    return const_cast<uint8_t*>(a.mem.data()) + a.alias_offset;
  }
  size_t size_of(const Arg& a) {
    if (a.buffer_size) return *a.buffer_size;
    if (a.alias_input >= 0) return ins_.at(a.alias_input).mem.size() - a.alias_offset;
    return a.mem.size() - a.alias_offset;
  }

  aclError run(aclopEngineType engine = ACL_ENGINE_SYS, aclopCompileType compile = ACL_COMPILE_SYS,
               bool pass_attr = true) {
    std::vector<aclTensorDesc*> in_desc, out_desc;
    std::vector<aclDataBuffer*> in_buf, out_buf;
    for (Arg& a : ins_) {
      in_desc.push_back(
          aclCreateTensorDesc(a.dtype, static_cast<int>(a.dims.size()), a.dims.data(), a.format));
      in_buf.push_back(aclCreateDataBuffer(data_of(a), size_of(a)));
    }
    for (Arg& a : outs_) {
      out_desc.push_back(
          aclCreateTensorDesc(a.dtype, static_cast<int>(a.dims.size()), a.dims.data(), a.format));
      out_buf.push_back(aclCreateDataBuffer(data_of(a), size_of(a)));
    }
    aclopAttr* attr = aclopCreateAttr();
    for (const Attr& a : attrs_) {
      aclError e = ACL_SUCCESS;
      if (a.kind == 'b') e = aclopSetAttrBool(attr, a.name.c_str(), static_cast<uint8_t>(a.i));
      if (a.kind == 'i') e = aclopSetAttrInt(attr, a.name.c_str(), a.i);
      if (a.kind == 'f') e = aclopSetAttrFloat(attr, a.name.c_str(), a.f);
      EXPECT_EQ(e, ACL_SUCCESS);
    }
    const aclError rc = aclopCompileAndExecuteV2(
        op_.c_str(), static_cast<int>(ins_.size()), in_desc.data(), in_buf.data(),
        static_cast<int>(outs_.size()), out_desc.data(), out_buf.data(), pass_attr ? attr : nullptr,
        engine, compile, nullptr, nullptr);
    for (auto* d : in_desc) aclDestroyTensorDesc(d);
    for (auto* d : out_desc) aclDestroyTensorDesc(d);
    for (auto* b : in_buf) EXPECT_EQ(aclDestroyDataBuffer(b), ACL_SUCCESS);
    for (auto* b : out_buf) EXPECT_EQ(aclDestroyDataBuffer(b), ACL_SUCCESS);
    aclopDestroyAttr(attr);
    return rc;
  }

 private:
  std::string op_;
  std::vector<Arg> ins_, outs_;
  std::vector<Attr> attrs_;
};

// Runs a call that must be rejected with `code` on sentinel-filled memory and checks that every
// byte of every buffer is unchanged and that the recorded reason mentions `needle` (the
// argument or value at fault).
inline void expect_rejected_untouched(Call& c, aclError code, const std::string& what,
                                      const std::string& needle, uint32_t seed = 7) {
  c.allocate();
  c.fill_random(seed);
  const auto before = c.snapshot();
  EXPECT_EQ(c.run(), code) << what << ": " << aclGetRecentErrMsg();
  EXPECT_TRUE(c.snapshot() == before) << what << ": a rejected call wrote memory";
  const std::string msg = aclGetRecentErrMsg();
  EXPECT_NE(msg.find(needle), std::string::npos)
      << what << ": message \"" << msg << "\" does not mention \"" << needle << "\"";
}

inline std::vector<aclDataType> training_dtypes() { return {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}; }

}  // namespace mantissa::testing::aclop_support
