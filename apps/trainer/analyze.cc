// The GPT's precision analysis (analyze.h).
#include "trainer/analyze.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mantissa::trainer {

namespace {

const char* dtype_label(DType t) {
  switch (t) {
    case DType::kFloat16: return "fp16";
    case DType::kBFloat16: return "bf16";
    default: return "fp32";
  }
}

// The spacing of `t`'s values at magnitude a (subnormal spacing below the normal range).
double ulp_at(DType t, double a) {
  const int mant = t == DType::kFloat16 ? 10 : t == DType::kBFloat16 ? 7 : 23;
  const int emin = t == DType::kFloat16 ? -14 : -126;
  int e = a > 0 ? std::ilogb(a) : emin;
  e = std::max(e, emin);
  return std::ldexp(1.0, e - mant);
}

// Errors of m (`row` values a row, `width` of them from `offset`) against the shadow s and the
// local result l (empty: s).
GptTensorError compare(const std::string& name, const Tensor& t, const std::vector<double>& sv,
                       const std::vector<double>& lv, int64_t row, int64_t offset, int64_t width) {
  GptTensorError e;
  e.name = name;
  e.dtype = dtype_label(t.dtype());
  const int64_t n = t.numel();
  std::vector<double> m, s, l;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t col = i % row;
    if (col < offset || col >= offset + width) continue;
    m.push_back(load_as_float(t.dtype(), t.data(), i));
    s.push_back(sv[i]);
    l.push_back(lv.empty() ? sv[i] : lv[i]);
  }
  e.count = static_cast<int64_t>(m.size());
  double ss = 0.0, dd = 0.0, ll = 0.0, ls = 0.0;
  for (std::size_t i = 0; i < m.size(); ++i) {
    ss += s[i] * s[i];
    dd += (m[i] - s[i]) * (m[i] - s[i]);
    ll += (m[i] - l[i]) * (m[i] - l[i]);
    ls += l[i] * l[i];
  }
  e.shadow_rms = m.empty() ? 0.0 : std::sqrt(ss / static_cast<double>(m.size()));
  e.rel_norm = ss > 0 ? std::sqrt(dd / ss) : (dd > 0 ? INFINITY : 0.0);
  e.local_norm = ls > 0 ? std::sqrt(ll / ls) : (ll > 0 ? INFINITY : 0.0);
  const double floor = 1e-3 * e.shadow_rms;
  double sum = 0.0, usum = 0.0;
  for (std::size_t i = 0; i < m.size(); ++i) {
    const double d = std::fabs(m[i] - s[i]);
    const double at = std::max(std::fabs(s[i]), floor);
    const double r = at > 0 ? d / at : (d > 0 ? INFINITY : 0.0);
    const double u = at > 0 ? d / ulp_at(t.dtype(), at) : 0.0;
    e.rel_max = std::max(e.rel_max, r);
    e.ulp_max = std::max(e.ulp_max, u);
    sum += r;
    usum += u;
  }
  const double cnt = std::max<double>(1.0, static_cast<double>(m.size()));
  e.rel_mean = sum / cnt;
  e.ulp_mean = usum / cnt;
  return e;
}

int block_of(const std::string& name) {
  if (name.rfind("block", 0) != 0) return -1;
  return std::atoi(name.c_str() + 5);
}

}  // namespace

Status analyze_gpt(Gpt& model, const int32_t* tokens, const int32_t* targets, int64_t batch,
                   float loss_scale, GptAnalysis* out) {
  GptAnalysis a;
  // A validation batch: the FP8 scalings cast with their scales and record nothing.
  model.set_pass(false, 0);
  model.set_collect_stats(true);
  Status st = model.forward(tokens, targets, batch, &a.loss);
  if (st.ok()) st = model.backward(loss_scale);
  model.set_collect_stats(false);
  TRAINER_TRY(st);
  for (const LowpGemm* q : model.gemms()) {
    for (const OperandStats& s : q->stats()) a.quantized.push_back({q->name(), s});
  }
  model.set_grads(model.grad32().data());
  Graph& g = model.graph();
  Context ctx;
  ctx.batch = batch;
  ctx.context = model.config().context;
  ctx.tokens = tokens;
  ctx.targets = targets;
  ctx.loss_scale = loss_scale;
  g.shadow(ctx);
  ShadowGrads params, params_local;
  g.shadow_backward(ctx, &params, &params_local);
  a.batch = batch;
  a.loss_scale = loss_scale;
  // q, k and v apart (the columns of qkv).
  auto add_value = [&](std::vector<GptTensorError>* rows, const std::string& prefix, const Value& v,
                       const Tensor& t, const std::vector<double>& s, const std::vector<double>& l,
                       int depth) {
    const int64_t cols = t.shape().size() > 1 ? t.shape().back() : 1;
    auto add = [&](GptTensorError e) {
      e.depth = depth;
      e.block = block_of(v.name);
      rows->push_back(std::move(e));
    };
    if (v.name.ends_with(".attn.qkv")) {
      const std::string base = prefix + v.name.substr(0, v.name.size() - 3);
      const int64_t d = cols / 3;
      add(compare(base + "q", t, s, l, cols, 0, d));
      add(compare(base + "k", t, s, l, cols, d, d));
      add(compare(base + "v", t, s, l, cols, 2 * d, d));
    } else {
      add(compare(prefix + v.name, t, s, l, cols, 0, cols));
    }
  };
  for (std::size_t layer = 0; layer < g.layers(); ++layer) {
    for (int id : g.outputs(layer)) {
      const Value& v = g.value(id);
      add_value(&a.rows, "", v, v.data, v.shadow, v.local, static_cast<int>(layer));
      if (v.name == "loss") a.shadow_loss = v.shadow[0];
    }
  }
  // Value gradients, from the loss back; a value no gradient reached is left out.
  const int layers = static_cast<int>(g.layers());
  for (int layer = layers - 1; layer >= 0; --layer) {
    for (int id : g.outputs(static_cast<std::size_t>(layer))) {
      const Value& v = g.value(id);
      if (!v.has_grad || v.grad_shadow.empty()) continue;
      add_value(&a.grads, "d:", v, v.grad, v.grad_shadow, v.grad_local, layers - 1 - layer);
    }
  }
  for (const auto& p : model.params()) {
    const auto s = params.find(p.get());
    if (s == params.end()) continue;
    const auto l = params_local.find(p.get());
    const int64_t cols = p->grad.shape().size() > 1 ? p->grad.shape().back() : 1;
    GptTensorError e =
        compare("dW:" + p->name, p->grad, s->second,
                l == params_local.end() ? std::vector<double>() : l->second, cols, 0, cols);
    e.block = block_of(p->name);
    e.depth = layers;
    a.grads.push_back(std::move(e));
  }
  *out = std::move(a);
  return {};
}

}  // namespace mantissa::trainer
