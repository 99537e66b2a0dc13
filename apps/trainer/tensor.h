// The trainer's owned tensors and the few element-wise passes it runs itself (casts, residual
// adds, ReLU, copies between layouts). Everything else goes through the library's operators.
//
// Glossary: the "compute dtype" (c) of a precision mode is the 16-bit format (or fp32) that GEMM
// operands, activations and gradients are stored in; every value stored in it is computed in
// fp32 and rounded once to nearest-even. docs/training_gpt.md maps every tensor of the model.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mantissa/dtype.h"
#include "mantissa/status.h"
#include "mantissa/tensor.h"
#include "trainer/status.h"

namespace mantissa::trainer {

// An owned, row-major buffer of fp32, fp16 or bf16 elements.
class Tensor {
 public:
  Tensor() = default;
  Tensor(DType dtype, std::vector<int64_t> shape) { reset(dtype, std::move(shape)); }
  // Zero-filled.
  void reset(DType dtype, std::vector<int64_t> shape);
  // Keeps the storage when it is large enough (the contents are then unspecified).
  void ensure(DType dtype, std::vector<int64_t> shape);
  void release();
  bool empty() const { return shape_.empty(); }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  int64_t numel() const { return numel_; }
  int64_t bytes() const { return numel_ * static_cast<int64_t>(dtype_size(dtype_)); }
  void* data() { return words_.data(); }
  const void* data() const { return words_.data(); }
  float* f32() { return reinterpret_cast<float*>(words_.data()); }
  const float* f32() const { return reinterpret_cast<const float*>(words_.data()); }
  uint16_t* u16() { return reinterpret_cast<uint16_t*>(words_.data()); }
  const uint16_t* u16() const { return reinterpret_cast<const uint16_t*>(words_.data()); }
  TensorView view() const;
  TensorView view(std::span<const int64_t> shape) const;  // the same elements, another shape
  TensorView view(std::initializer_list<int64_t> shape) const {
    return view(std::span<const int64_t>(shape.begin(), shape.size()));
  }

 private:
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> shape_;
  int64_t numel_ = 0;
  std::vector<uint32_t> words_;  // 4-byte words: aligned for fp32, two 16-bit elements each
};

// Counts of gradient values rounded to a 16-bit dtype: how many were nonzero in fp32 and became
// zero (underflow), out of how many.
// With fp32_values, a "rounding" to fp32 (a copy) counts its values too: the denominator is then
// every gradient value the pass produced, as the MLP reports it.
struct UnderflowCount {
  int64_t values = 0, underflows = 0;
  bool fp32_values = false;
};

// dst (resized to src's shape, `dtype`) = src converted: widened exactly, or rounded once to
// nearest-even. With `count`, a narrowing also counts its underflows.
void cast(const Tensor& src, DType dtype, Tensor* dst, UnderflowCount* count = nullptr);
// src (fp32, n elements) rounded into dst of `dtype` (fp32: copied).
void narrow(const float* src, DType dtype, void* dst, int64_t n, UnderflowCount* count = nullptr);
// dst = fp32(src), n elements of `dtype`.
void widen(const void* src, DType dtype, float* dst, int64_t n);
// How many of n elements (4 or 2 bytes each) have the same bits in a and b.
int64_t count_equal(const void* a, const void* b, int64_t n, std::size_t element_size);
// out[i] = a[i] + b[i] and x[i] = x[i] * factor: one fp32 operation per element.
void add(const float* a, const float* b, float* out, int64_t n);
void scale(float* x, float factor, int64_t n);
// acc[i] += fp32(src[i]): one fp32 addition per element.
void accumulate(const void* src, DType dtype, float* acc, int64_t n);

// ReLU on the stored bits of n elements of `dtype` (it only selects, so it is exact in every
// dtype): y = max(x, 0) with -0 and negatives to +0 and NaN kept, as torch.relu; and its
// gradient dx = dy where x > 0, else +0 (NaN x included).
void relu(const void* x, DType dtype, void* y, int64_t n);
void relu_grad(const void* x, const void* dy, DType dtype, void* dx, int64_t n);

// FNV-1a 64 over bytes, continuing from `h`.
uint64_t fnv1a(const void* data, std::size_t bytes, uint64_t h = 0xcbf29ce484222325ull);
std::string hex16(uint64_t h);

}  // namespace mantissa::trainer
