// The GPT's precision analysis (`mantissa train --model gpt --analyze`): one batch through the
// mode's forward and backward passes and through fp64 shadows of both with the same weights;
// every value of the graph compared (q, k and v apart, the attention probabilities, the norms'
// outputs, the residual stream, the MLP, the logits, the loss), every value's gradient, and
// every parameter's gradient as the optimizer receives it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/gpt.h"

namespace mantissa::trainer {

// One value of the graph: the mode's values m against the shadow s. Relative errors per element
// e_i = |m_i - s_i| / max(|s_i|, 1e-3 rms(s)) (max, mean); normwise ||m - s|| / ||s||; ulps in
// units of the value's dtype's spacing at max(|s_i|, 1e-3 rms(s)).
struct GptTensorError {
  std::string name;  // "block0.attn.q", "block1.norm2.out", "logits", "loss", ...
  int block = -1;    // -1: before the first block (embedding) or after the last
  int depth = 0;     // the producing layer's position in the graph
  std::string dtype;
  int64_t count = 0;
  double shadow_rms = 0.0;
  double rel_norm = 0.0;    // against the shadow (everything inherited from the layers before)
  double local_norm = 0.0;  // against fp64 on the mode's own inputs: what this layer adds
  double rel_max = 0.0, rel_mean = 0.0, ulp_mean = 0.0, ulp_max = 0.0;
};

struct GptAnalysis {
  std::string mode;
  int64_t batch = 0, step = 0;
  double loss = 0.0, shadow_loss = 0.0;
  float loss_scale = 1.0f;
  std::vector<GptTensorError> rows;  // forward values, in graph order
  // Gradients, as the backward pass produces them: "d:" + a value's name (the gradient of the
  // loss times the loss scale with respect to it, in the dtype the mode keeps it), in reverse
  // graph order; then "dW:" + a parameter's name (after its one rounding to the gradient's
  // dtype: what the optimizer reads), in parameter order. depth counts backward from the loss.
  std::vector<GptTensorError> grads;
  // The FP8 and MX modes: every quantized operand of the blocks' products in this pass (layer
  // name, then its operands in the order quantized: forward, dgrad, wgrad).
  struct Quantized {
    std::string layer;
    OperandStats stats;
  };
  std::vector<Quantized> quantized;
};

// After `model` has trained (or not), its forward and backward passes (the gradient of loss *
// loss_scale: the scale the run trains with) and the shadows on the batch.
Status analyze_gpt(Gpt& model, const int32_t* tokens, const int32_t* targets, int64_t batch,
                   float loss_scale, GptAnalysis* out);

}  // namespace mantissa::trainer
