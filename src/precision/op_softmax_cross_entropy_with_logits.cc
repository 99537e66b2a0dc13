// SoftmaxCrossEntropyWithLogits in the kit: the fp64 golden (std::exp / std::log in long double,
// shares nothing with the kernel) and golden32, the kernel's rounding order written out in scalar
// code: exact max, exp(x - max) by the library's exp_f32 and its Kahan fp32 sum (mantissa::sum),
// log_f32, backprop = e / s - y in fp32, loss = the naive fp64 dot product of y and (l - (x - m))
// (mantissa::dot: products exact, core/reduce.h's order), rounded once to fp32.
#include <cmath>
#include <limits>
#include <vector>

#include "mantissa/math.h"
#include "mantissa/reduce.h"
#include "mantissa/tensor.h"
#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kFeatures, kLabels };

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &x = in.tensors[kFeatures], &y = in.tensors[kLabels];
  const int64_t rows = x.shape[0], n = x.shape[1];
  std::vector<double> loss(static_cast<std::size_t>(rows)), backprop(x.numel());
  for (int64_t r = 0; r < rows; ++r) {
    long double max = -std::numeric_limits<long double>::infinity();
    bool nan = false;
    for (int64_t i = 0; i < n; ++i) {
      const long double v = in_f64(x, r * n + i);
      nan |= std::isnan(v);
      if (v > max) max = v;
    }
    if (nan) max = std::numeric_limits<long double>::quiet_NaN();
    long double sum = 0.0L;
    for (int64_t i = 0; i < n; ++i) sum += std::exp(in_f64(x, r * n + i) - max);
    const long double log_sum = std::log(sum);
    long double l = 0.0L;
    for (int64_t i = 0; i < n; ++i) {
      const long double shifted = in_f64(x, r * n + i) - max;
      const long double label = in_f64(y, r * n + i);
      backprop[r * n + i] = static_cast<double>(std::exp(shifted) / sum - label);
      l += label * (log_sum - shifted);
    }
    loss[r] = static_cast<double>(l);
  }
  return {loss, backprop};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &x = in.tensors[kFeatures], &y = in.tensors[kLabels];
  const int64_t rows = x.shape[0], n = x.shape[1];
  HostTensor loss(x.dtype, {rows, 1}),
      backprop(x.dtype, x.shape);  // the kit keeps the class dim as 1
  std::vector<float> shifted(n), e(n), label(n), neg_log(n);
  for (int64_t r = 0; r < rows; ++r) {
    float max = -std::numeric_limits<float>::infinity();
    bool nan = false;
    for (int64_t i = 0; i < n; ++i) {
      const float v = in_f32(x, r * n + i);
      nan |= std::isnan(v);
      if (v > max) max = v;
    }
    if (nan) max = std::numeric_limits<float>::quiet_NaN();
    for (int64_t i = 0; i < n; ++i) {
      shifted[i] = in_f32(x, r * n + i) - max;
      label[i] = in_f32(y, r * n + i);
    }
    exp_f32(shifted.data(), e.data(), static_cast<std::size_t>(n));
    double sum64 = 0.0;
    if (!sum(TensorView(e.data(), DType::kFloat32, {n}), &sum64,
             {.method = ReduceMethod::kKahan, .accumulator = ReduceAccumulator::kFloat32})
             .ok()) {
      return {};
    }
    const float s = static_cast<float>(sum64);
    float log_sum = 0.0f;
    log_f32(&s, &log_sum, 1);
    for (int64_t i = 0; i < n; ++i) {
      backprop.set_bits(r * n + i, narrow_result(e[i] / s - label[i], x.dtype));
      neg_log[i] = log_sum - shifted[i];
    }
    double l = 0.0;
    if (n > 0 && !dot(TensorView(label.data(), DType::kFloat32, {n}),
                      TensorView(neg_log.data(), DType::kFloat32, {n}), &l,
                      {.method = ReduceMethod::kNaive, .accumulator = ReduceAccumulator::kFloat64})
                      .ok()) {
      return {};
    }
    loss.set_bits(r, narrow_result(static_cast<float>(l), x.dtype));
  }
  return {loss, backprop};
}

}  // namespace

template <>
Goldens goldens<detail::SoftmaxCrossEntropyWithLogitsOp>() {
  return {golden, golden32, StandardKind::kSingleBm};
}

}  // namespace mantissa::precision
