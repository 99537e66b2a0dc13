// SoftmaxV2 and LogSoftmaxV2 in the kit: the fp64 golden (std::exp / std::log in double, an
// exact-enough fp64 sum; shares nothing with the kernels), and golden32, the kernels' rounding
// order written out in scalar fp32: exact max, exp(x - max) by the library's exp_f32, its Kahan
// fp32 sum (mantissa::sum) over the row in axis order, one division (or (x - max) - log(sum) by
// log_f32), one rounding to the output dtype.
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

enum { kSelf };
enum { kDim };

struct RowShape {
  int64_t outer = 1, axis = 1, inner = 1;
};

// The rows over dim (validated by the schema run; an out-of-range dim never reaches here).
RowShape row_shape(const HostTensor& x, int64_t dim) {
  RowShape r;
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  if (rank == 0) return r;
  const int64_t d = dim < 0 ? dim + rank : dim;
  for (int64_t k = 0; k < d; ++k) r.outer *= x.shape[k];
  r.axis = x.shape[d];
  for (int64_t k = d + 1; k < rank; ++k) r.inner *= x.shape[k];
  return r;
}

template <bool kLog>
std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor& x = in.tensors[kSelf];
  const RowShape r = row_shape(x, in.attrs[kDim].i);
  std::vector<double> y(x.numel());
  std::vector<double> row(r.axis);
  for (int64_t o = 0; o < r.outer; ++o) {
    for (int64_t i = 0; i < r.inner; ++i) {
      const int64_t base = o * r.axis * r.inner + i;
      double max = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t a = 0; a < r.axis; ++a) {
        row[a] = in_f64(x, base + a * r.inner);
        nan |= std::isnan(row[a]);
        if (row[a] > max) max = row[a];
      }
      if (nan) max = std::numeric_limits<double>::quiet_NaN();
      double sum = 0.0;
      for (int64_t a = 0; a < r.axis; ++a) sum += std::exp(row[a] - max);
      for (int64_t a = 0; a < r.axis; ++a) {
        y[base + a * r.inner] =
            kLog ? (row[a] - max) - std::log(sum) : std::exp(row[a] - max) / sum;
      }
    }
  }
  return {y};
}

template <bool kLog>
std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor& x = in.tensors[kSelf];
  const RowShape r = row_shape(x, in.attrs[kDim].i);
  HostTensor y(x.dtype, x.shape);
  std::vector<float> row(r.axis), shifted(r.axis), e(r.axis);
  for (int64_t o = 0; o < r.outer; ++o) {
    for (int64_t i = 0; i < r.inner; ++i) {
      const int64_t base = o * r.axis * r.inner + i;
      float max = -std::numeric_limits<float>::infinity();
      bool nan = false;
      for (int64_t a = 0; a < r.axis; ++a) {
        row[a] = in_f32(x, base + a * r.inner);
        nan |= std::isnan(row[a]);
        if (row[a] > max) max = row[a];
      }
      if (nan) max = std::numeric_limits<float>::quiet_NaN();
      for (int64_t a = 0; a < r.axis; ++a) shifted[a] = row[a] - max;
      exp_f32(shifted.data(), e.data(), r.axis);
      // The library's deterministic Kahan sum (its order is the same for any thread count).
      double sum64 = 0.0;
      const Status st =
          sum(TensorView(e.data(), DType::kFloat32, {r.axis}), &sum64,
              {.method = ReduceMethod::kKahan, .accumulator = ReduceAccumulator::kFloat32});
      if (!st.ok()) return {};
      const float sum = static_cast<float>(sum64);
      float log_sum = 0.0f;
      if (kLog) log_f32(&sum, &log_sum, 1);
      for (int64_t a = 0; a < r.axis; ++a) {
        const float v = kLog ? shifted[a] - log_sum : e[a] / sum;
        y.set_bits(base + a * r.inner, narrow_result(v, x.dtype));
      }
    }
  }
  return {y};
}

}  // namespace

template <>
Goldens goldens<detail::SoftmaxOp>() {
  return {golden<false>, golden32<false>, StandardKind::kSingleBm};
}

template <>
Goldens goldens<detail::LogSoftmaxOp>() {
  return {golden<true>, golden32<true>, StandardKind::kSingleBm};
}

}  // namespace mantissa::precision
