// What the CrossEntropyLoss and CrossEntropyLossGrad kernels receive (validated, contiguous
// [rows, classes] tensors, the targets already checked), and the scalar steps both operators
// share: the targets' check, the fp64 sums of per-row values, and the once-rounded stores.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string_view>

#include "mantissa/dtype.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "mantissa/workspace.h"

namespace mantissa::detail {

// Rows of at least this many reduction blocks are cut into pieces of kCrossEntropyPieceBlocks
// blocks when there are fewer than kCrossEntropySplitRowsBelow rows, so that one long row does
// not run on one thread. Shape-only rules; a row's values do not depend on the cut (its sums
// combine the same block partials along the same tree either way).
inline constexpr int64_t kCrossEntropyPieceBlocks = 16;
inline constexpr int64_t kCrossEntropySplitRowsBelow = 16;

struct CrossEntropyLossKernelArgs {
  DType dtype = DType::kFloat32;  // input and log_prob
  int64_t rows = 0, classes = 0;  // classes >= 1
  const void* input = nullptr;
  void* log_prob = nullptr;
  const float* weight = nullptr;    // [classes], or null: every class weighs 1
  const int64_t* column = nullptr;  // per row: its target class, or -1 when ignored
  double label_smoothing = 0.0;     // eps
  double smooth_keep = 1.0;         // 1 - eps (fp64)
  double smooth_share = 0.0;        // eps / C (fp64)
  // Rows up to this many bytes fetch the next row during their sum (a third of L2).
  int64_t fetched_row_bytes = 0;
  // Per row (out): ce_i in fp64 (+0 when ignored) and lse_i in fp32.
  double* ce = nullptr;
  float* lse = nullptr;
  // Split rows only: rows * blocks partials of each pass (the max, the sum, the smoothing sum).
  void* block_max = nullptr;     // MaxPartial per block (8 bytes)
  double* block_sum = nullptr;   // exp sums per block
  double* block_wsum = nullptr;  // sum of w_j * log_prob_j per block
};

struct CrossEntropyLossGradKernelArgs {
  DType dtype = DType::kFloat32;  // log_prob and out
  int64_t rows = 0, classes = 0;
  const void* log_prob = nullptr;
  void* out = nullptr;
  const float* weight = nullptr;    // null: every class weighs 1
  const int64_t* column = nullptr;  // per row: its target class, or -1 when ignored (row of +0)
  bool smoothing = false;           // label_smoothing > 0: the c2 * w_j term
  // Per row: A = c1 + c2 sum w + c3, B = c1, D = c2 (fp32; see cross_entropy_loss_grad.cc).
  const float* coef_a = nullptr;
  const float* coef_b = nullptr;
  const float* coef_d = nullptr;
};

// Whether a cross-entropy call cuts its rows into pieces.
constexpr bool cross_entropy_split(int64_t rows, int64_t classes) noexcept {
  const int64_t blocks = (classes + 4095) / 4096;
  return rows < kCrossEntropySplitRowsBelow && blocks > kCrossEntropyPieceBlocks;
}

// Reads every target: row i's class (target[i] when in [0, classes)), or -1 when it equals
// ignore_index; any other value is 161002 naming the operator, the row and the value. Writes
// column[i] and weight_of[i] = the target's weight in fp64 (0 when ignored, 1 without weights);
// returns the count of rows not ignored in `kept`.
Status read_targets(std::string_view op, const TensorView& target, int64_t classes,
                    int64_t ignore_index, const float* weight, int64_t* column, double* weight_of,
                    int64_t& kept);

// The longest row (bytes) whose successor the forward fetches while it sums the row: a third of
// this CPU's L2 (256 KiB when unknown), so the row, the next one and the row's log_prob fit.
// Speed only: the bits do not depend on it.
int64_t cross_entropy_fetched_row_bytes();

// The fp64 sum of v[0, n) in core/reduce.h's order (naive; +0 when n is 0).
double documented_sum_f64(const double* v, int64_t n);

// v rounded once to `dtype` (fp32, fp16, bf16) into element i of data: fp32 by nearest even
// (inf beyond FLT_MAX and half its ulp), the 16-bit dtypes through fp32 rounded to odd and then to
// nearest even (the same as rounding v directly); NaN canonical.
void store_rounded_once(DType dtype, void* data, std::size_t i, double v) noexcept;

// v rounded to fp32 (nearest even, inf beyond FLT_MAX and half its ulp; no undefined cast).
float to_f32(double v) noexcept;

// 64-byte aligned scratch memory for one call: the lent workspace when it is large enough (from
// its first 64-byte boundary), else owned. data() is null when `bytes` could not be allocated
// (the operator reports it before writing anything) or none were asked for.
class AlignedScratch {
 public:
  AlignedScratch(Workspace ws, uint64_t bytes) {
    if (bytes == 0) return;
    auto* const lent = static_cast<std::byte*>(ws.data);
    const uint64_t pad = lent == nullptr ? 0 : (64 - reinterpret_cast<uintptr_t>(lent) % 64) % 64;
    if (lent != nullptr && ws.size >= pad && ws.size - pad >= bytes) {
      data_ = lent + pad;
      return;
    }
    owned_.reset(new (std::nothrow) std::byte[bytes + 64]);
    if (owned_ != nullptr) {
      data_ = owned_.get() + (64 - reinterpret_cast<uintptr_t>(owned_.get()) % 64) % 64;
    }
  }
  std::byte* data() const noexcept { return data_; }
  // The region at `offset` bytes, as T (offsets are multiples of 64).
  template <class T>
  T* at(uint64_t offset) const noexcept {
    return reinterpret_cast<T*>(data_ + offset);
  }

 private:
  std::unique_ptr<std::byte[]> owned_;
  std::byte* data_ = nullptr;
};

}  // namespace mantissa::detail
