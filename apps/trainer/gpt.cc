// The GPT as a layer graph (gpt.h).
#include "trainer/gpt.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "trainer/layers.h"
#include "trainer/rng.h"

namespace mantissa::trainer {

const char* mlp_name(MlpKind k) { return k == MlpKind::kSwiGlu ? "swiglu" : "gelu"; }
const char* norm_name(NormKind k) { return k == NormKind::kRmsNorm ? "rmsnorm" : "layernorm"; }

int64_t GptConfig::mlp_hidden() const {
  if (mlp == MlpKind::kGelu) return 4 * d_model;
  return (8 * d_model / 3 + 31) / 32 * 32;
}

Status GptConfig::validate() const {
  auto bad = [](const char* what, int64_t v, const char* rule) {
    return invalid(std::string("train --model gpt: ") + what + " must be " + rule + ", got " +
                   std::to_string(v));
  };
  if (vocab < 256 || vocab > 65536) return bad("--vocab", vocab, "in [256, 65536] (byte tokens)");
  if (context < 1 || context > 4096) return bad("--context", context, "in [1, 4096]");
  if (d_model < 1 || d_model > 8192) return bad("--d-model", d_model, "in [1, 8192]");
  if (layers < 1 || layers > 64) return bad("--layers", layers, "in [1, 64]");
  if (heads < 1 || d_model % heads != 0) {
    return invalid("train --model gpt: --heads must divide --d-model (" + std::to_string(d_model) +
                   "), got " + std::to_string(heads));
  }
  return {};
}

std::vector<std::string> unit_names(const GptConfig& config) {
  std::vector<std::string> names{"embeddings"};
  for (int64_t l = 0; l < config.layers; ++l) names.push_back("block" + std::to_string(l));
  return names;
}

std::size_t unit_of(const std::string& name) {
  if (!name.starts_with("block")) return 0;
  return 1 + static_cast<std::size_t>(std::atoll(name.c_str() + 5));
}

GptPrecision GptPrecision::uniform(const Precision& p, int64_t layers) {
  GptPrecision g;
  g.units.assign(static_cast<std::size_t>(layers + 1), p);
  g.loss_scaling = p.loss_scaling;
  return g;
}

bool GptPrecision::any_compute(DType d) const {
  for (const Precision& p : units) {
    if (p.compute == d) return true;
  }
  return false;
}

Gpt::Gpt(const GptConfig& config, const Precision& precision, uint64_t seed)
    : Gpt(config, GptPrecision::uniform(precision, config.layers), seed) {}

Gpt::Gpt(const GptConfig& config, const GptPrecision& precision, uint64_t seed)
    : config_(config), precision_(precision) {
  // The caller sized the units from unit_names(); one too few would index out of bounds.
  precision_.units.resize(static_cast<std::size_t>(config.layers + 1),
                          precision_.units.empty() ? Precision{} : precision_.units.back());
  const int64_t V = config.vocab, T = config.context, d = config.d_model, L = config.layers;
  const double s = 0.02, sr = 0.02 / std::sqrt(2.0 * static_cast<double>(L));
  uint64_t tag = 0;
  auto next = [&] { return stream_seed(seed, 100 + tag++); };
  add_param("wte", {V, d}, false, s, 0.0, next());
  add_param("wpe", {T, d}, false, s, 0.0, next());
  const bool ln = config.norm == NormKind::kLayerNorm;
  const int64_t hidden = config.mlp_hidden();
  const int64_t up = config.mlp == MlpKind::kSwiGlu ? 2 * hidden : hidden;
  for (int64_t l = 0; l < L; ++l) {
    const std::string b = "block" + std::to_string(l) + ".";
    add_param(b + "norm1.weight", {d}, false, 0.0, 1.0, next());
    if (ln) add_param(b + "norm1.bias", {d}, false, 0.0, 0.0, next());
    add_param(b + "attn.qkv", {d, 3 * d}, true, s, 0.0, next());
    add_param(b + "attn.proj", {d, d}, true, sr, 0.0, next());
    add_param(b + "norm2.weight", {d}, false, 0.0, 1.0, next());
    if (ln) add_param(b + "norm2.bias", {d}, false, 0.0, 0.0, next());
    add_param(b + "mlp.up", {d, up}, true, s, 0.0, next());
    add_param(b + "mlp.down", {hidden, d}, true, sr, 0.0, next());
  }
  add_param("norm_f.weight", {d}, false, 0.0, 1.0, next());
  if (ln) add_param("norm_f.bias", {d}, false, 0.0, 0.0, next());
  if (!config.tied) add_param("head", {V, d}, true, s, 0.0, next());
  grad_flat_.assign(static_cast<std::size_t>(param_count()), 0.0f);
  int64_t at = 0;
  for (auto& p : params_) {
    p->grad32 = grad_flat_.data() + at;
    at += p->var.numel();
  }
  build();
}

Parameter* Gpt::add_param(std::string name, std::vector<int64_t> shape, bool decay, double std_dev,
                          double constant, uint64_t seed) {
  auto p = std::make_unique<Parameter>();
  p->name = std::move(name);
  p->decay = decay;
  const Precision& u = unit(p->name);
  const DType c = u.compute, vd = u.var_dtype();
  p->var.reset(vd, shape);
  int64_t n = p->var.numel();
  std::vector<float> init(static_cast<std::size_t>(n));
  Rng rng(seed);
  for (float& x : init) {
    x = static_cast<float>(std_dev > 0.0 ? std_dev * rng.normal() : constant);
  }
  narrow(init.data(), vd, p->var.data(), n);
  if (u.master && c != DType::kFloat32) p->working.reset(c, shape);
  p->grad.reset(c, shape);
  p->m.reset(vd, shape);
  p->v.reset(vd, shape);
  if (!u.master && vd == DType::kBFloat16) {
    p->rounding = u.rounding;
    if (p->rounding == WeightRounding::kKahan) p->compensation.reset(DType::kBFloat16, shape);
  }
  params_.push_back(std::move(p));
  return params_.back().get();
}

void Gpt::refresh_working() {
  for (auto& p : params_) {
    if (p->working.empty()) continue;
    narrow(p->var.f32(), p->working.dtype(), p->working.data(), p->var.numel());
  }
}

void Gpt::build() {
  refresh_working();
  const DType f32 = DType::kFloat32;
  // The compute dtype of the unit a layer belongs to.
  auto cd = [&](const std::string& layer) { return unit(layer).compute; };
  auto param = [&](const std::string& name) -> Parameter* {
    for (auto& p : params_) {
      if (p->name == name) return p.get();
    }
    return nullptr;
  };
  const bool ln = config_.norm == NormKind::kLayerNorm;
  Graph& g = graph_;
  Parameter* wte = param("wte");
  int x = g.add({std::make_unique<Embedding>("embed", wte, param("wpe"))}, {}, {"embed"})[0];
  // A norm of the residual stream, fused with the add that precedes it (RMSNorm): returns the
  // normed value; *x becomes the stream after the add.
  auto norm = [&](const std::string& name, int* stream, int branch) {
    if (ln) {
      if (branch >= 0) {
        *stream =
            g.add(std::make_unique<Add>(name + ".add"), {*stream, branch}, {name + ".residual"})[0];
      }
      return g.add(std::make_unique<LayerNormLayer>(name, param(name + ".weight"),
                                                    param(name + ".bias"), cd(name)),
                   {*stream}, {name + ".out"})[0];
    }
    if (branch < 0) {
      return g.add(std::make_unique<RmsNormLayer>(name, param(name + ".weight"), cd(name), false),
                   {*stream}, {name + ".out"})[0];
    }
    auto ids = g.add(std::make_unique<RmsNormLayer>(name, param(name + ".weight"), cd(name), true),
                     {*stream, branch}, {name + ".residual", name + ".out"});
    *stream = ids[0];
    return ids[1];
  };
  int branch = -1;
  for (int64_t l = 0; l < config_.layers; ++l) {
    const std::string b = "block" + std::to_string(l) + ".";
    const DType c = cd(b);
    int n1 = norm(b + "norm1", &x, branch);
    // The block's Linear layers, in the GEMM recipe's format when there is one.
    auto linear = [&](const std::string& name, int in, DType out) {
      auto layer = std::make_unique<Linear>(b + name, param(b + name), out, false, &precision_.gemm,
                                            1 + gemms_.size());
      if (layer->gemm() != nullptr) gemms_.push_back(layer->gemm());
      return g.add(std::move(layer), {in}, {b + name})[0];
    };
    int qkv = linear("attn.qkv", n1, c);
    int att = g.add(std::make_unique<Attention>(b + "attn", config_.heads, c), {qkv},
                    {b + "attn.out", b + "attn.probs"})[0];
    int proj = linear("attn.proj", att, f32);
    int n2 = norm(b + "norm2", &x, proj);
    int up = linear("mlp.up", n2, c);
    int act =
        config_.mlp == MlpKind::kGelu
            ? g.add(std::make_unique<Gelu>(b + "mlp.gelu"), {up}, {b + "mlp.act"})[0]
            : g.add(std::make_unique<SwiGluLayer>(b + "mlp.swiglu"), {up}, {b + "mlp.act"})[0];
    branch = linear("mlp.down", act, f32);
  }
  int nf = norm("norm_f", &x, branch);
  Parameter* head = config_.tied ? wte : param("head");
  int logits = g.add(std::make_unique<Linear>("head", head, f32, true), {nf}, {"logits"})[0];
  loss_id_ = g.add(std::make_unique<CrossEntropy>("loss"), {logits}, {"loss"})[0];
}

int64_t Gpt::param_count() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p->var.numel();
  return n;
}

int64_t Gpt::state_bytes() const {
  int64_t n = 0;
  for (const auto& p : params_) n += p->state_bytes();
  return n;
}

Status Gpt::forward(const int32_t* tokens, const int32_t* targets, int64_t batch, double* loss) {
  const int64_t rows = batch * config_.context;
  for (int64_t i = 0; i < rows; ++i) {
    if (tokens[i] < 0 || tokens[i] >= config_.vocab || targets[i] < 0 ||
        targets[i] >= config_.vocab) {
      return invalid("train --model gpt: token " + std::to_string(tokens[i]) + " or target " +
                     std::to_string(targets[i]) + " at position " + std::to_string(i) +
                     " is outside [0, " + std::to_string(config_.vocab) + ")");
    }
  }
  ctx_.batch = batch;
  ctx_.context = config_.context;
  ctx_.tokens = tokens;
  ctx_.targets = targets;
  ctx_.underflow = &underflow_;
  Status st = graph_.forward(ctx_);
  if (!st.ok()) return st;
  *loss = graph_.value(loss_id_).data.f32()[0];
  return {};
}

Status Gpt::backward(float loss_scale, int64_t grad_rows) {
  ctx_.loss_scale = loss_scale;
  ctx_.grad_rows = grad_rows;
  for (auto& p : params_) p->begin_backward();
  return graph_.backward(ctx_);
}

void Gpt::set_grads(const float* flat) {
  for (auto& p : params_) {
    narrow(flat, p->grad.dtype(), p->grad.data(), p->var.numel(), &underflow_);
    flat += p->var.numel();
  }
}

std::vector<TensorView> Gpt::grad_views() const {
  std::vector<TensorView> v;
  for (const auto& p : params_) v.push_back(p->grad.view());
  return v;
}

std::vector<std::string> Gpt::param_names() const {
  std::vector<std::string> v;
  for (const auto& p : params_) v.push_back(p->name);
  return v;
}

std::string Gpt::digest() const {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& p : params_)
    h = fnv1a(p->var.data(), static_cast<std::size_t>(p->var.bytes()), h);
  return hex16(h);
}

}  // namespace mantissa::trainer
