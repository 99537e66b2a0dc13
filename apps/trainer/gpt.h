// A decoder-only transformer (docs/training_gpt.md): byte tokens, learned positions, pre-norm
// blocks of causal multi-head attention and an MLP (GELU or SwiGLU) with LayerNorm or RMSNorm
// (AddRmsNorm where the residual add precedes the norm), a final norm, the output head tied to
// the token embedding, and the cross-entropy over the vocabulary. Built as a layer graph.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "trainer/graph.h"
#include "trainer/lowp_gemm.h"

namespace mantissa::trainer {

enum class MlpKind { kGelu, kSwiGlu };
enum class NormKind { kLayerNorm, kRmsNorm };
const char* mlp_name(MlpKind k);
const char* norm_name(NormKind k);

struct GptConfig {
  int64_t vocab = 256;
  int64_t context = 128;
  int64_t d_model = 128;
  int64_t layers = 4;
  int64_t heads = 4;
  MlpKind mlp = MlpKind::kGelu;
  NormKind norm = NormKind::kLayerNorm;
  bool tied = true;  // the output head reads the token embedding
  // SwiGLU's hidden width: 8d/3 rounded up to a multiple of 32 (about GELU's 4d MLP's
  // parameters); GELU's is 4d.
  int64_t mlp_hidden() const;
  // The checks: every size positive, heads dividing d_model, vocab >= 256 (byte tokens).
  Status validate() const;
};

// The units a precision policy sets (docs/training_gpt.md, "Per-unit precision"):
// "embeddings" (the token and position embeddings, the final norm and the output head, which a
// tied head shares with the token embedding), then "block0" .. "block{L-1}". A unit's layers
// compute in its dtype and its parameters take its update form; units meet only on the fp32
// residual stream, so no value crosses from one compute dtype to another.
std::vector<std::string> unit_names(const GptConfig& config);
// The unit a parameter or layer name belongs to: 1 + l for "block{l}.*", else 0.
std::size_t unit_of(const std::string& name);

// Every unit's precision, and whether the loss is scaled.
struct GptPrecision {
  std::vector<Precision> units;  // one per unit_names(), in that order
  bool loss_scaling = false;
  // The blocks' four Linear layers' products in FP8 or an MX format (the FP8 and MX modes;
  // none: as the unit computes). The tied head and the embeddings stay in their unit's dtype.
  GemmRecipe gemm;
  // Every unit alike (a precision mode).
  static GptPrecision uniform(const Precision& p, int64_t layers);
  bool any_compute(DType d) const;
};

class Gpt {
 public:
  // Initial weights: normal(0, 0.02) for the embeddings and matrices, 0.02 / sqrt(2 layers) for
  // the two that write the residual stream (GPT-2's), norms' weights 1 and biases 0; each drawn
  // in fp64 from the seed (Irwin-Hall: the sum of 12 uniforms - 6, no libm), rounded once to
  // fp32, then to the var's dtype. Optimizer state zero.
  Gpt(const GptConfig& config, const GptPrecision& precision, uint64_t seed);
  // Every unit in `precision`.
  Gpt(const GptConfig& config, const Precision& precision, uint64_t seed);

  const GptConfig& config() const { return config_; }
  const GptPrecision& precision() const { return precision_; }
  std::vector<std::unique_ptr<Parameter>>& params() { return params_; }
  const std::vector<std::unique_ptr<Parameter>>& params() const { return params_; }
  int64_t param_count() const;
  int64_t state_bytes() const;
  Graph& graph() { return graph_; }

  // tokens, targets: [batch, context] byte values < vocab (checked). The mean loss (nats per
  // token) of the batch.
  Status forward(const int32_t* tokens, const int32_t* targets, int64_t batch, double* loss);
  // After forward(): every parameter's gradient of loss * loss_scale (the mean over grad_rows
  // rows when the batch is one micro-batch of a larger one; 0: this batch's), in fp32, in
  // grad32() (the parameters in order, each row-major). set_grads() then rounds them once.
  Status backward(float loss_scale, int64_t grad_rows = 0);
  std::span<const float> grad32() const { return grad_flat_; }
  // Every parameter's gradient (c) from fp32 values laid out as grad32(): rounded once to
  // nearest-even, the underflows counted.
  void set_grads(const float* flat);
  // The master weights' c working copies, refreshed after each optimizer step (the optimizer
  // writes them itself; this is for loaded or initial weights).
  void refresh_working();
  std::vector<TensorView> grad_views() const;
  std::vector<std::string> param_names() const;
  const UnderflowCount& underflow() const { return underflow_; }
  // FNV-1a 64 over every parameter's var, in parameter order (16 hex digits).
  std::string digest() const;

  // The blocks' FP8/MX products in graph order (empty without a GEMM recipe).
  const std::vector<LowpGemm*>& gemms() const { return gemms_; }
  // What the next passes are: training (amaxes recorded) or validation; the micro-batch index
  // keying stochastic rounding; whether the quantizations keep statistics.
  void set_pass(bool training, uint64_t pass) { ctx_.training = training, ctx_.pass = pass; }
  void set_collect_stats(bool on) { ctx_.collect_stats = on; }

 private:
  Parameter* add_param(std::string name, std::vector<int64_t> shape, bool decay, double std_dev,
                       double constant, uint64_t seed);
  void build();
  const Precision& unit(const std::string& name) const { return precision_.units[unit_of(name)]; }

  GptConfig config_;
  GptPrecision precision_;
  std::vector<std::unique_ptr<Parameter>> params_;
  Graph graph_;
  int loss_id_ = -1;
  Context ctx_;
  UnderflowCount underflow_;
  std::vector<float> grad_flat_;
  std::vector<LowpGemm*> gemms_;
};

}  // namespace mantissa::trainer
