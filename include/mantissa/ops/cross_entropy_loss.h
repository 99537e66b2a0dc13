// CrossEntropyLoss and CrossEntropyLossGrad (CANN's aclnnCrossEntropyLoss and
// aclnnCrossEntropyLossGrad, op types of the same names): PyTorch's F.cross_entropy over class
// indices fused with its log-softmax, with class weights, ignore_index, label smoothing and
// z-loss, and its gradient with respect to the logits from the log-probabilities it saved.
//
// Per row i of C logits x, target t_i, mask_i = (t_i != ignore_index), weights w (1 when absent),
// eps = label_smoothing, s = lse_square_scale_for_zloss:
//   lse_i        = log(sum_j exp(x_ij))                    (max-shifted, see below)
//   log_prob_ij  = x_ij - lse_i
//   ce_i         = mask_i * ((1 - eps) * w[t_i] * -log_prob[i, t_i]
//                            + eps / C * sum_j w_j * -log_prob_ij)      (eps = 0: first term only)
//   z_i          = mask_i * s * lse_i^2
//   loss         none: ce_i + z_i per row;  sum: sum_i ce_i + sum_i z_i;
//                mean: sum_i ce_i / sum_i mask_i w[t_i] + sum_i z_i / sum_i mask_i
//   zloss        the z_i reduced as loss reduces them (none: per row)
// The z terms take part only when s != 0. Every target ignored (or weights summing to 0) makes the
// mean 0 / 0 = NaN, as PyTorch's; the gradient is then 0 for every ignored row.
//
// The rounding order is normative (docs/ops/cross_entropy_loss.md): per row, m = max(x) (exact);
// e_j = exp(x_j - m) in fp32 (the library's Exp); S = their fp64 sum in core/reduce.h's order
// (naive); L = log(hi) + (S - hi) / hi with hi = fp32(S) (the library's Log in fp32, the
// correction in fp64), rounded to fp32; lse = m + L and log_prob_j =
// (x_j - m) - L in fp32, rounded once to the dtype; the loss sums (products of fp32 values exact in
// fp64) and the reductions over rows in fp64 in core/reduce.h's order, each result rounded once
// from fp64 to the dtype. label_smoothing and lse_square_scale_for_zloss enter as their fp32 values
// (CANN's graph attributes are Float), so aclnn and op-by-name give the same bits. The same bits
// for every SIMD target and thread count.
#pragma once

#include <cstdint>
#include <optional>

#include "mantissa/export.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa {

// The reduction over rows, numbered as PyTorch numbers them (at::Reduction).
enum class LossReduction : int32_t { kNone = 0, kMean = 1, kSum = 2 };

// "none", "mean", "sum" -> the reduction; false for any other string (null included).
MANTISSA_API bool loss_reduction_from_name(const char* name, LossReduction& reduction) noexcept;
// The name of a reduction ("mean"), or null for a value that is none of them.
MANTISSA_API const char* loss_reduction_name(LossReduction reduction) noexcept;

struct CrossEntropyLossTensors {
  TensorView input;                  // FLOAT, FLOAT16 or BFLOAT16; [N, C], C >= 1 (N may be 0)
  TensorView target;                 // INT64 or INT32; [N]: each in [0, C) or ignore_index
  std::optional<TensorView> weight;  // FLOAT; [C]. Absent: every class weighs 1
  TensorView loss;                   // input's dtype; [N] for none, else one element
  TensorView log_prob;               // input's dtype and shape
  TensorView zloss;                  // input's dtype; loss's shape
  TensorView lse_for_zloss;          // input's dtype; [N] (or [N, 1]): lse_i
};

struct CrossEntropyLossParams {
  LossReduction reduction = LossReduction::kMean;
  int64_t ignore_index = -100;              // any value; a target equal to it is ignored
  double label_smoothing = 0.0;             // in [0, 1]
  double lse_square_scale_for_zloss = 0.0;  // in [0, 1)
  bool return_zloss = false;  // accepted as upstream takes it: zloss is written anyway
};

// Validates everything first, then reads every target (one outside [0, C) that is not
// ignore_index: 161002 naming its row and value) before writing anything. The C++ API requires
// contiguous tensors (the aclnn layer copies strided ones). The workspace (optional: allocated
// when too small) holds the per-row values of the reductions.
MANTISSA_API Status cross_entropy_loss(const CrossEntropyLossTensors& t,
                                       const CrossEntropyLossParams& p = {}, Workspace ws = {});
// The checks that need no tensor data (the targets' values are checked by the call).
MANTISSA_API Status cross_entropy_loss_validate(const CrossEntropyLossTensors& t,
                                                const CrossEntropyLossParams& p = {});
// Bytes of workspace the call uses (0 for an empty input; valid tensors assumed).
MANTISSA_API uint64_t cross_entropy_loss_workspace_size(const CrossEntropyLossTensors& t,
                                                        const CrossEntropyLossParams& p = {});

// The gradient with respect to the logits: with p_ij = exp(log_prob_ij), g the loss gradient
// (grad_loss[0], or grad_loss[i] for none), per row not ignored
//   a    = g / sum_i mask_i w[t_i] (mean) or g
//   c1   = a * (1 - eps) * w[t_i],   c2 = a * eps / C,   c3 = 2 * s * lse_i * gz (s != 0), where
//   gz   = (g + grad_zloss) / sum_i mask_i (mean; grad_zloss 0 when absent), or g + grad_zloss
//   out_ij = p_ij * (c1 + c2 * sum_k w_k + c3) - c2 * w_j - (j == t_i ? c1 : 0)
// and out = +0 on every ignored row. The row's coefficients are computed in fp64 and rounded
// once to fp32; the elementwise part in fp32 in the order written, rounded once to the dtype
// (docs/ops/cross_entropy_loss.md).
struct CrossEntropyLossGradTensors {
  TensorView grad_loss;              // FLOAT, FLOAT16 or BFLOAT16; [N] for none, else one element
  TensorView log_prob;               // grad_loss's dtype; [N, C], C >= 1: the forward's log_prob
  TensorView target;                 // INT64 or INT32; [N]: each in [0, C) or ignore_index
  std::optional<TensorView> weight;  // FLOAT; [C]. Absent: every class weighs 1
  std::optional<TensorView> grad_zloss;     // grad_loss's dtype and shape. Absent: 0
  std::optional<TensorView> lse_for_zloss;  // grad_loss's dtype; [N]. Required when s != 0
  TensorView out;                           // grad_loss's dtype; log_prob's shape
};

struct CrossEntropyLossGradParams {
  LossReduction reduction = LossReduction::kMean;
  int64_t ignore_index = -100;
  double label_smoothing = 0.0;             // in [0, 1]
  double lse_square_scale_for_zloss = 0.0;  // in [0, 1)
};

// As cross_entropy_loss: validation, then the targets, before anything is written.
MANTISSA_API Status cross_entropy_loss_grad(const CrossEntropyLossGradTensors& t,
                                            const CrossEntropyLossGradParams& p = {},
                                            Workspace ws = {});
MANTISSA_API Status cross_entropy_loss_grad_validate(const CrossEntropyLossGradTensors& t,
                                                     const CrossEntropyLossGradParams& p = {});
MANTISSA_API uint64_t cross_entropy_loss_grad_workspace_size(
    const CrossEntropyLossGradTensors& t, const CrossEntropyLossGradParams& p = {});

}  // namespace mantissa
