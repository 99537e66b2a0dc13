// FusedAdamw and FusedSgd in the kit: schemas, fp64 goldens, golden32 (fp32 transcriptions of
// CANN's contracts, sharing no code with the kernels) and the C++ API backend. Their several
// lists with element-by-element rules are not something the operator declarations describe, so
// these entries are written here; the aclnn backends are in backends_compat.cc.
//
// Inputs, in slot order (a case names list elements "<list>[i]"):
//   FusedAdamw: params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs (may have no elements),
//               state_steps (FLOAT, one element each), grad_scale, found_inf (optional)
//   FusedSgd:   params, grads, momentum_buffers (may have no elements), grad_scale (optional)
// Outputs: the updated lists, element by element, in the same order.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mantissa/ops/fused_adamw.h"
#include "mantissa/ops/fused_sgd.h"
#include "precision/op_defs.h"
#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

constexpr uint64_t kFloatOnly = uint64_t{1} << static_cast<uint32_t>(DType::kFloat32);
constexpr uint64_t kStepDtypes = kFloatOnly | uint64_t{1} << static_cast<uint32_t>(DType::kInt64);

TensorSlot list_slot(std::string name, std::string like) {
  TensorSlot s(std::move(name), TensorSlot::Kind::kFloat, TensorSlot::Shape::kAny, like, 0, 8);
  s.list = true;
  if (!like.empty()) {
    s.shape = TensorSlot::Shape::kLike;
    s.dtype_like = like;
  }
  return s;
}

// One element (the step tensors take more: CANN's sample passes eight, element 0 is read).
TensorSlot one_element(std::string name, uint64_t dtypes, bool optional) {
  TensorSlot s(std::move(name), TensorSlot::Kind::kFloat, TensorSlot::Shape::kOneElement, "", 0, 8);
  if (dtypes != 0) s.kind = TensorSlot::Kind::kOneOf, s.dtypes = dtypes;
  s.optional = optional;
  return s;
}

AttrSlot float_attr(std::string name, double value) {
  AttrValue v;
  v.kind = AttrKind::kFloat;
  v.f = value;
  return {std::move(name), AttrKind::kFloat, v, false};
}

AttrSlot bool_attr(std::string name) {
  AttrValue v;
  v.kind = AttrKind::kBool;
  return {std::move(name), AttrKind::kBool, v, false};
}

// Where each slot's tensors are in a case's flat inputs: list slot k has in.list_sizes[k]
// elements from first[k]; the scalars follow the lists.
struct Lists {
  std::vector<std::size_t> first, count;
  std::size_t after = 0;  // the first scalar's index
  const HostTensor& at(const OpInputs& in, std::size_t k, std::size_t i) const {
    return in.tensors[first[k] + i];
  }
};

Lists lists(const OpInputs& in, std::size_t n_lists) {
  Lists l;
  std::size_t next = 0;
  for (std::size_t k = 0; k < n_lists; ++k) {
    l.first.push_back(next);
    l.count.push_back(static_cast<std::size_t>(in.list_sizes.at(k)));
    next += l.count.back();
  }
  l.after = next;
  return l;
}

// The parameters a case steps: every list of `needed` holds element i (a malformed case, which
// the operator refuses, still gets goldens of the right count: its other elements are copied).
std::size_t stepped(const Lists& l, std::initializer_list<std::size_t> needed) {
  std::size_t n = l.count[0];
  for (std::size_t k : needed) n = std::min(n, l.count[k]);
  return n;
}

std::vector<double> as_f64(const HostTensor& t) {
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<std::size_t>(i)] = in_f64(t, i);
  return v;
}

// An optional scalar: element 0 as fp32, or nullopt when the case leaves it out.
std::optional<float> scalar_f32(const HostTensor& t) {
  if (absent(t) || t.numel() == 0) return std::nullopt;
  return in_f32(t, 0);
}

// ---- FusedAdamw ---------------------------------------------------------------------------

enum { kParams, kGrads, kExpAvgs, kExpAvgSqs, kMaxExpAvgSqs, kSteps, kAdamwLists };

// A state step tensor's element 0 read as CANN's kernel reads it: as fp32 (an INT64 rounded to
// nearest even).
double steps_taken(const HostTensor& step) {
  return static_cast<double>(static_cast<float>(step.value(0)));
}
enum { kLr, kBeta1, kBeta2, kWeightDecay, kEps, kAmsgrad, kMaximize };

struct AdamwCall {
  Lists l;
  std::size_t n;  // parameters stepped
  bool amsgrad, skip;
  std::optional<float> grad_scale;
  float lr, beta1, beta2, weight_decay, eps;
  bool maximize;
};

AdamwCall adamw_call(const OpInputs& in) {
  AdamwCall c;
  c.l = lists(in, kAdamwLists);
  c.amsgrad = in.attrs[kAmsgrad].b;
  c.n = stepped(c.l, {kGrads, kExpAvgs, kExpAvgSqs, kSteps});
  if (c.amsgrad) c.n = std::min(c.n, c.l.count[kMaxExpAvgSqs]);
  c.grad_scale = scalar_f32(in.tensors[c.l.after]);
  const std::optional<float> found_inf = scalar_f32(in.tensors[c.l.after + 1]);
  c.skip = found_inf && *found_inf == 1.0f;  // CANN's rule: exactly 1.0 skips the step
  auto f = [&](int k) { return static_cast<float>(in.attrs[k].f); };
  c.lr = f(kLr), c.beta1 = f(kBeta1), c.beta2 = f(kBeta2), c.weight_decay = f(kWeightDecay);
  c.eps = f(kEps);
  c.maximize = in.attrs[kMaximize].b;
  return c;
}

// The outputs: the elements of the written lists, list after list in `written` order.
struct Outputs {
  std::vector<std::size_t> written;
  std::map<std::size_t, std::size_t> first;  // list slot -> its first output
  Outputs(const Lists& l, std::vector<std::size_t> lists_written) : written(lists_written) {
    std::size_t next = 0;
    for (std::size_t k : written) first[k] = next, next += l.count[k];
  }
  // The output of element i of written list k.
  std::size_t at(std::size_t k, std::size_t i) const { return first.at(k) + i; }
  // Every output as its input: the starting point of both goldens.
  template <class Out, class Copy>
  std::vector<Out> unchanged(const OpInputs& in, const Lists& l, Copy copy) const {
    std::vector<Out> out;
    for (std::size_t k : written) {
      for (std::size_t i = 0; i < l.count[k]; ++i) out.push_back(copy(l.at(in, k, i)));
    }
    return out;
  }
};

HostTensor copy_of(const HostTensor& t) { return t; }

Outputs adamw_outputs(const Lists& l) {
  return Outputs(l, {kParams, kExpAvgs, kExpAvgSqs, kMaxExpAvgSqs});
}

// The mathematical step in double: t = steps taken + 1, the bias corrections as powers, the
// gradient divided by the scale.
std::vector<std::vector<double>> adamw_golden(const OpInputs& in) {
  const AdamwCall c = adamw_call(in);
  const Outputs o = adamw_outputs(c.l);
  auto out = o.unchanged<std::vector<double>>(in, c.l, as_f64);
  if (c.skip) return out;
  const double lr = c.lr, b1 = c.beta1, b2 = c.beta2, wd = c.weight_decay, eps = c.eps;
  for (std::size_t p = 0; p < c.n; ++p) {
    const double t = steps_taken(c.l.at(in, kSteps, p)) + 1.0;
    const double bias1 = 1 - std::pow(b1, t), bias2 = 1 - std::pow(b2, t);
    const HostTensor& grad = c.l.at(in, kGrads, p);
    std::vector<double>& var = out[o.at(kParams, p)];
    std::vector<double>& m = out[o.at(kExpAvgs, p)];
    std::vector<double>& v = out[o.at(kExpAvgSqs, p)];
    for (std::size_t i = 0; i < var.size(); ++i) {
      double g = in_f64(grad, static_cast<int64_t>(i));
      if (c.grad_scale) g /= static_cast<double>(*c.grad_scale);
      if (c.maximize) g = -g;
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      double vmax = v[i];
      if (c.amsgrad) {
        double& mx = out[o.at(kMaxExpAvgSqs, p)][i];
        mx = std::isnan(mx) || std::isnan(v[i]) ? NAN : std::fmax(mx, v[i]);
        vmax = mx;
      }
      const double denom = std::sqrt(vmax) / std::sqrt(bias2) + eps;
      var[i] = var[i] * (1 - lr * wd) - (lr / bias1) * (m[i] / denom);
    }
  }
  return out;
}

// CANN's kernel in fp32: the constants computed in double from the fp32 attributes and rounded
// once (as ApplyAdamWV2), g = fp32(grad) * fp32(1 / grad_scale), ApplyAdamWV2's grouping.
std::vector<HostTensor> adamw_golden32(const OpInputs& in) {
  const AdamwCall c = adamw_call(in);
  const Outputs o = adamw_outputs(c.l);
  auto out = o.unchanged<HostTensor>(in, c.l, copy_of);
  if (c.skip) return out;
  const bool scaled = c.grad_scale.has_value();
  const float inv = scaled ? 1.0f / *c.grad_scale : 1.0f;
  const double lr = c.lr, b1 = c.beta1, b2 = c.beta2, wd = c.weight_decay;
  const auto decay = static_cast<float>(1 - lr * wd);
  const auto one_m_b1 = static_cast<float>(1 - b1), one_m_b2 = static_cast<float>(1 - b2);
  for (std::size_t p = 0; p < c.n; ++p) {
    const double t = steps_taken(c.l.at(in, kSteps, p)) + 1.0;
    const auto step_size = static_cast<float>(lr / (1 - std::pow(b1, t)));
    const auto inv_bc2_sqrt = static_cast<float>(1 / std::sqrt(1 - std::pow(b2, t)));
    const HostTensor& grad = c.l.at(in, kGrads, p);
    HostTensor& var = out[o.at(kParams, p)];
    HostTensor& m = out[o.at(kExpAvgs, p)];
    HostTensor& v = out[o.at(kExpAvgSqs, p)];
    const DType dt = var.dtype;
    for (int64_t i = 0; i < var.numel(); ++i) {
      float g = in_f32(grad, i);
      if (scaled) g = g * inv;
      if (c.maximize) g = -g;
      const float mi = in_f32(m, i), vi = in_f32(v, i);
      const float var1 = in_f32(var, i) * decay;
      const float m_new = mi + ((g - mi) * one_m_b1);
      const float v_new = (vi * c.beta2) + ((g * g) * one_m_b2);
      float vmax = v_new;
      if (c.amsgrad) {
        HostTensor& mx = out[o.at(kMaxExpAvgSqs, p)];
        const float old = in_f32(mx, i);
        vmax = (v_new > old || std::isnan(v_new)) ? v_new : old;
        mx.set_bits(i, narrow_result(vmax, dt));
      }
      const float denom = (std::sqrt(vmax) * inv_bc2_sqrt) + c.eps;
      var.set_bits(i, narrow_result(var1 - ((m_new / denom) * step_size), dt));
      m.set_bits(i, narrow_result(m_new, dt));
      v.set_bits(i, narrow_result(v_new, dt));
    }
  }
  return out;
}

// The C++ API, in place on copies of the inputs.
std::string adamw_kernel(const OpInputs& in, std::vector<HostTensor>& out) {
  std::vector<HostTensor> w = in.tensors;
  const AdamwCall c = adamw_call(in);
  std::vector<FusedAdamwParamTensors> params;
  for (std::size_t p = 0; p < c.l.count[kParams]; ++p) {
    auto view = [&](std::size_t k) {
      return p < c.l.count[k] ? view_of(w[c.l.first[k] + p]) : TensorView{};
    };
    FusedAdamwParamTensors t{view(kParams),    view(kGrads), view(kExpAvgs),
                             view(kExpAvgSqs), std::nullopt, view(kSteps)};
    if (p < c.l.count[kMaxExpAvgSqs]) t.max_exp_avg_sq = view(kMaxExpAvgSqs);
    params.push_back(t);
  }
  FusedAdamwParams h;
  h.lr = c.lr, h.beta1 = c.beta1, h.beta2 = c.beta2, h.weight_decay = c.weight_decay;
  h.eps = c.eps, h.amsgrad = c.amsgrad, h.maximize = c.maximize;
  if (!absent(w[c.l.after])) h.grad_scale = view_of(w[c.l.after]);
  if (!absent(w[c.l.after + 1])) h.found_inf = view_of(w[c.l.after + 1]);
  const Status st = fused_adamw(params, h);
  if (!st.ok()) return st.message();
  out = fused_optim_written("FusedAdamw", in, std::move(w));
  return "";
}

OpEntry fused_adamw_entry() {
  OpEntry e;
  e.name = "FusedAdamw";
  e.inputs = {list_slot("params", ""),
              list_slot("grads", "params"),
              list_slot("exp_avgs", "params"),
              list_slot("exp_avg_sqs", "params"),
              list_slot("max_exp_avg_sqs", "params"),
              one_element("state_steps", kStepDtypes, false),
              one_element("grad_scale", 0, true),
              one_element("found_inf", kFloatOnly, true)};
  e.inputs[kSteps].list = true;
  e.attrs = {float_attr("lr", 1e-3),     float_attr("beta1", 0.9),
             float_attr("beta2", 0.999), float_attr("weight_decay", 1e-2),
             float_attr("eps", 1e-8),    bool_attr("amsgrad"),
             bool_attr("maximize")};
  e.outputs = {{"params_out", kParams, {}},
               {"exp_avgs_out", kExpAvgs, {}},
               {"exp_avg_sqs_out", kExpAvgSqs, {}},
               {"max_exp_avg_sqs_out", kMaxExpAvgSqs, {}}};
  e.golden = adamw_golden;
  e.golden32 = adamw_golden32;
  e.backends[Backend::kKernel] = adamw_kernel;
  return e;
}

// ---- FusedSgd -----------------------------------------------------------------------------

enum { kSgdParams, kSgdGrads, kBuffers, kSgdLists };
Outputs sgd_outputs(const Lists& l) { return Outputs(l, {kSgdParams, kSgdGrads, kBuffers}); }
enum { kSgdWeightDecay, kMomentum, kSgdLr, kDampening, kNesterov, kSgdMaximize, kFirstStep };

struct SgdCall {
  Lists l;
  std::size_t n;
  bool buffers;
  std::optional<float> grad_scale;
  float wd, momentum, lr, dampening;
  bool nesterov, maximize, first;
};

SgdCall sgd_call(const OpInputs& in) {
  SgdCall c;
  c.l = lists(in, kSgdLists);
  c.buffers = c.l.count[kBuffers] > 0;
  c.n = stepped(c.l, {kSgdGrads});
  if (c.buffers) c.n = std::min(c.n, c.l.count[kBuffers]);
  c.grad_scale = scalar_f32(in.tensors[c.l.after]);
  auto f = [&](int k) { return static_cast<float>(in.attrs[k].f); };
  c.wd = f(kSgdWeightDecay), c.momentum = f(kMomentum), c.lr = f(kSgdLr);
  c.dampening = f(kDampening);
  c.nesterov = in.attrs[kNesterov].b, c.maximize = in.attrs[kSgdMaximize].b;
  c.first = in.attrs[kFirstStep].b;
  return c;
}

// torch's SGD in double: the gradient unscaled (and written back when a scale is given), weight
// decay, the momentum buffer (the gradient on the first step), Nesterov, the update.
std::vector<std::vector<double>> sgd_golden(const OpInputs& in) {
  const SgdCall c = sgd_call(in);
  const Outputs o = sgd_outputs(c.l);
  auto out = o.unchanged<std::vector<double>>(in, c.l, as_f64);
  const double wd = c.wd, mom = c.momentum, lr = c.lr, damp = c.dampening;
  for (std::size_t p = 0; p < c.n; ++p) {
    std::vector<double>& var = out[o.at(kSgdParams, p)];
    std::vector<double>& grad = out[o.at(kSgdGrads, p)];
    for (std::size_t i = 0; i < var.size(); ++i) {
      double g = grad[i];
      if (c.grad_scale) grad[i] = g = g / static_cast<double>(*c.grad_scale);
      if (c.maximize) g = -g;
      if (wd != 0) g += wd * var[i];
      if (c.buffers) {
        double& buf = out[o.at(kBuffers, p)][i];
        buf = c.first ? g : mom * buf + (1 - damp) * g;
        g = c.nesterov ? g + mom * buf : buf;
      }
      var[i] -= lr * g;
    }
  }
  return out;
}

// CANN's kernel in fp32, each line one rounding.
std::vector<HostTensor> sgd_golden32(const OpInputs& in) {
  const SgdCall c = sgd_call(in);
  const Outputs o = sgd_outputs(c.l);
  auto out = o.unchanged<HostTensor>(in, c.l, copy_of);
  const bool scaled = c.grad_scale.has_value();
  const float inv = scaled ? 1.0f / *c.grad_scale : 1.0f;
  const float one_m_damp = 1.0f - c.dampening;
  for (std::size_t p = 0; p < c.n; ++p) {
    HostTensor& var = out[o.at(kSgdParams, p)];
    HostTensor& grad = out[o.at(kSgdGrads, p)];
    const DType dt = var.dtype;
    for (int64_t i = 0; i < var.numel(); ++i) {
      float g = in_f32(grad, i);
      if (scaled) {
        g = g * inv;
        grad.set_bits(i, narrow_result(g, dt));
      }
      if (c.maximize) g = -g;
      const float pi = in_f32(var, i);
      if (c.wd != 0.0f) g = g + c.wd * pi;
      if (c.buffers) {
        HostTensor& b = out[o.at(kBuffers, p)];
        const float buf = c.first ? g : c.momentum * in_f32(b, i) + one_m_damp * g;
        b.set_bits(i, narrow_result(buf, dt));
        g = c.nesterov ? g + c.momentum * buf : buf;
      }
      var.set_bits(i, narrow_result(pi - c.lr * g, dt));
    }
  }
  return out;
}

std::string sgd_kernel(const OpInputs& in, std::vector<HostTensor>& out) {
  std::vector<HostTensor> w = in.tensors;
  const SgdCall c = sgd_call(in);
  std::vector<FusedSgdParamTensors> params;
  for (std::size_t p = 0; p < c.l.count[kSgdParams]; ++p) {
    auto view = [&](std::size_t k) {
      return p < c.l.count[k] ? view_of(w[c.l.first[k] + p]) : TensorView{};
    };
    FusedSgdParamTensors t{view(kSgdParams), view(kSgdGrads), std::nullopt};
    if (p < c.l.count[kBuffers]) t.momentum_buffer = view(kBuffers);
    params.push_back(t);
  }
  FusedSgdParams h;
  h.weight_decay = c.wd, h.momentum = c.momentum, h.lr = c.lr, h.dampening = c.dampening;
  h.nesterov = c.nesterov, h.maximize = c.maximize, h.is_first_step = c.first;
  if (!absent(w[c.l.after])) h.grad_scale = view_of(w[c.l.after]);
  const Status st = fused_sgd(params, h);
  if (!st.ok()) return st.message();
  out = fused_optim_written("FusedSgd", in, std::move(w));
  return "";
}

OpEntry fused_sgd_entry() {
  OpEntry e;
  e.name = "FusedSgd";
  e.inputs = {list_slot("params", ""), list_slot("grads", "params"),
              list_slot("momentum_buffers", "params"), one_element("grad_scale", 0, true)};
  e.attrs = {float_attr("weight_decay", 0.0), float_attr("momentum", 0.0), float_attr("lr", 1e-3),
             float_attr("dampening", 0.0),    bool_attr("nesterov"),       bool_attr("maximize"),
             bool_attr("is_first_step")};
  e.outputs = {{"params_out", kSgdParams, {}},
               {"grads_out", kSgdGrads, {}},
               {"momentum_buffers_out", kBuffers, {}}};
  e.golden = sgd_golden;
  e.golden32 = sgd_golden32;
  e.backends[Backend::kKernel] = sgd_kernel;
  return e;
}

}  // namespace

std::vector<HostTensor> fused_optim_written(const std::string& op, const OpInputs& in,
                                            std::vector<HostTensor> w) {
  const bool adamw = op == "FusedAdamw";
  const Lists l = lists(in, adamw ? std::size_t{kAdamwLists} : std::size_t{kSgdLists});
  const OpInputs after{std::move(w), in.attrs, in.list_sizes};
  const Outputs o = adamw ? adamw_outputs(l) : sgd_outputs(l);
  return o.unchanged<HostTensor>(after, l, copy_of);
}

void add_fused_optim_ops(std::map<std::string, OpEntry>& ops) {
  for (OpEntry e : {fused_adamw_entry(), fused_sgd_entry()}) ops.emplace(e.name, std::move(e));
}

}  // namespace mantissa::precision
