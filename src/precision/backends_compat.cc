// The C API backends: "aclnn" (two-phase calls; AmpUpdateScale and ApplyAdamD have them) and
// "aclop" (op-by-name execution; all three operators). Each runs in place on copies of the
// generated inputs, as programs written for CANN do.
#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "acl/acl_op_compiler.h"
#include "aclnn/acl_meta.h"
#include "aclnnop/aclnn_amp_update_scale.h"
#include "aclnnop/aclnn_apply_adam_d.h"
#include "precision/op_defs.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

aclDataType acl_dtype(DType d) { return static_cast<aclDataType>(static_cast<int32_t>(d)); }

std::string acl_error(const char* what, int code) {
  const char* msg = aclGetRecentErrMsg();
  return fmt::format("{} returned {}: {}", what, code, msg ? msg : "");
}

// ---- aclnn ----------------------------------------------------------------------------------

struct TensorDeleter {
  void operator()(aclTensor* t) const { aclDestroyTensor(t); }
};
using TensorPtr = std::unique_ptr<aclTensor, TensorDeleter>;

// A contiguous ND aclTensor over a host tensor.
TensorPtr make_tensor(HostTensor& t) {
  std::vector<int64_t> strides(t.shape.size(), 1);
  for (std::size_t i = t.shape.size(); i-- > 1;) strides[i - 1] = strides[i] * t.shape[i];
  return TensorPtr(aclCreateTensor(t.shape.data(), t.shape.size(), acl_dtype(t.dtype),
                                   strides.data(), 0, ACL_FORMAT_ND, t.shape.data(), t.shape.size(),
                                   data_or_dummy(t)));
}

// Phase two of a two-phase call, with a workspace of the reported size.
template <class PhaseTwo>
std::string run_phase_two(const char* name, uint64_t workspace_size, aclOpExecutor* executor,
                          PhaseTwo phase_two) {
  std::vector<uint64_t> workspace((workspace_size + 7) / 8);
  const aclnnStatus s =
      phase_two(workspace.empty() ? nullptr : workspace.data(), workspace_size, executor, nullptr);
  return s == ACLNN_SUCCESS ? "" : acl_error(name, s);
}

std::string aclnn_amp_update_scale(const OpInputs& in, std::vector<HostTensor>& out) {
  std::vector<HostTensor> w = in.tensors;
  TensorPtr scale = make_tensor(w[0]), tracker = make_tensor(w[1]), found = make_tensor(w[2]);
  if (!scale || !tracker || !found) return acl_error("aclCreateTensor", -1);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus s = aclnnAmpUpdateScaleGetWorkspaceSize(
      scale.get(), tracker.get(), found.get(), in.attrs[0].f, in.attrs[1].f, in.attrs[2].i,
      scale.get(), tracker.get(), &size, &executor);
  if (s != ACLNN_SUCCESS) return acl_error("aclnnAmpUpdateScaleGetWorkspaceSize", s);
  if (std::string e = run_phase_two("aclnnAmpUpdateScale", size, executor, aclnnAmpUpdateScale);
      !e.empty()) {
    return e;
  }
  out = {w[0], w[1]};
  return "";
}

std::string aclnn_apply_adam_d(const OpInputs& in, std::vector<HostTensor>& out) {
  std::vector<HostTensor> w = in.tensors;
  std::vector<TensorPtr> t;
  for (HostTensor& h : w) {
    t.push_back(make_tensor(h));
    if (!t.back()) return acl_error("aclCreateTensor", -1);
  }
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus s = aclnnApplyAdamDGetWorkspaceSize(
      t[0].get(), t[1].get(), t[2].get(), t[3].get(), t[4].get(), t[5].get(), t[6].get(),
      t[7].get(), t[8].get(), t[9].get(), in.attrs[0].b, in.attrs[1].b, t[0].get(), t[1].get(),
      t[2].get(), &size, &executor);
  if (s != ACLNN_SUCCESS) return acl_error("aclnnApplyAdamDGetWorkspaceSize", s);
  if (std::string e = run_phase_two("aclnnApplyAdamD", size, executor, aclnnApplyAdamD);
      !e.empty()) {
    return e;
  }
  out = {w[0], w[1], w[2]};
  return "";
}

// ---- aclop (op by name) ---------------------------------------------------------------------

// Descriptors, buffers and attributes of one op-by-name call, destroyed together.
class AclopCall {
 public:
  ~AclopCall() {
    for (auto* d : descs_) aclDestroyTensorDesc(d);
    for (auto* b : buffers_) aclDestroyDataBuffer(b);
    if (attr_) aclopDestroyAttr(attr_);
  }
  void add_input(HostTensor& t) { add(t, in_desc_, in_buf_); }
  void add_output(HostTensor& t) { add(t, out_desc_, out_buf_); }
  aclopAttr* attr() {
    if (!attr_) attr_ = aclopCreateAttr();
    return attr_;
  }
  std::string execute(const char* op_type) {
    for (auto* d : descs_) {
      if (!d) return acl_error("aclCreateTensorDesc", -1);
    }
    for (auto* b : buffers_) {
      if (!b) return acl_error("aclCreateDataBuffer", -1);
    }
    const aclError e = aclopCompileAndExecuteV2(
        op_type, static_cast<int>(in_desc_.size()), in_desc_.data(), in_buf_.data(),
        static_cast<int>(out_desc_.size()), out_desc_.data(), out_buf_.data(), attr(),
        ACL_ENGINE_SYS, ACL_COMPILE_SYS, nullptr, nullptr);
    return e == ACL_SUCCESS ? "" : acl_error("aclopCompileAndExecuteV2", e);
  }

 private:
  void add(HostTensor& t, std::vector<aclTensorDesc*>& descs, std::vector<aclDataBuffer*>& bufs) {
    aclTensorDesc* d = aclCreateTensorDesc(acl_dtype(t.dtype), static_cast<int>(t.shape.size()),
                                           t.shape.data(), ACL_FORMAT_ND);
    aclDataBuffer* b = aclCreateDataBuffer(data_or_dummy(t), t.bytes.size());
    descs_.push_back(d);
    buffers_.push_back(b);
    descs.push_back(d);
    bufs.push_back(b);
  }
  std::vector<aclTensorDesc*> descs_, in_desc_, out_desc_;
  std::vector<aclDataBuffer*> buffers_, in_buf_, out_buf_;
  aclopAttr* attr_ = nullptr;
};

std::string aclop_amp_update_scale(const OpInputs& in, std::vector<HostTensor>& out) {
  std::vector<HostTensor> w = in.tensors;
  AclopCall call;
  for (HostTensor& t : w) call.add_input(t);
  call.add_output(w[0]);
  call.add_output(w[1]);
  aclopSetAttrFloat(call.attr(), "growth_factor", static_cast<float>(in.attrs[0].f));
  aclopSetAttrFloat(call.attr(), "backoff_factor", static_cast<float>(in.attrs[1].f));
  aclopSetAttrInt(call.attr(), "growth_interval", in.attrs[2].i);
  if (std::string e = call.execute("AmpUpdateScale"); !e.empty()) return e;
  out = {w[0], w[1]};
  return "";
}

std::string aclop_sgd(const OpInputs& in, std::vector<HostTensor>& out) {
  std::vector<HostTensor> w = in.tensors;
  AclopCall call;
  for (HostTensor& t : w) call.add_input(t);
  call.add_output(w[0]);  // parameters, in place; accum and stat update through their inputs
  aclopSetAttrFloat(call.attr(), "dampening", static_cast<float>(in.attrs[0].f));
  aclopSetAttrFloat(call.attr(), "weight_decay", static_cast<float>(in.attrs[1].f));
  aclopSetAttrBool(call.attr(), "nesterov", in.attrs[2].b ? 1 : 0);
  if (std::string e = call.execute("SGD"); !e.empty()) return e;
  out = {w[0], w[3], w[5]};
  return "";
}

std::string aclop_apply_adam_d(const OpInputs& in, std::vector<HostTensor>& out) {
  std::vector<HostTensor> w = in.tensors;
  AclopCall call;
  for (HostTensor& t : w) call.add_input(t);
  for (int k = 0; k < 3; ++k) call.add_output(w[static_cast<std::size_t>(k)]);
  aclopSetAttrBool(call.attr(), "use_locking", in.attrs[0].b ? 1 : 0);
  aclopSetAttrBool(call.attr(), "use_nesterov", in.attrs[1].b ? 1 : 0);
  if (std::string e = call.execute("ApplyAdamD"); !e.empty()) return e;
  out = {w[0], w[1], w[2]};
  return "";
}

}  // namespace

void add_compat_backends(std::map<std::string, OpEntry>& ops) {
  auto add = [&](const char* op, Backend b, BackendFn fn) {
    if (auto it = ops.find(op); it != ops.end()) it->second.backends[b] = std::move(fn);
  };
  add("AmpUpdateScale", Backend::kAclnn, aclnn_amp_update_scale);
  add("AmpUpdateScale", Backend::kAclop, aclop_amp_update_scale);
  add("SGD", Backend::kAclop, aclop_sgd);  // SGD has no aclnn entry upstream
  add("ApplyAdamD", Backend::kAclnn, aclnn_apply_adam_d);
  add("ApplyAdamD", Backend::kAclop, aclop_apply_adam_d);
}

}  // namespace mantissa::precision
