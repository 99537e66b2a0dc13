// SoftmaxGrad and LogSoftmaxGrad in the kit: the fp64 golden (the formula in long double, expl;
// shares nothing with the kernels), and golden32, the kernels' documented order written out in
// scalar code: the fp64 row sum in the documented order (row_sums.h), the documented fp64 exp
// for log-softmax (fp64_exp.h), the two fp64 operations, one rounding to fp32, then to the
// dtype.
#include <cmath>
#include <vector>

#include "mantissa/tensor.h"
#include "precision/fp64_exp.h"
#include "precision/op_schema.h"
#include "precision/ops_common.h"
#include "precision/row_sums.h"

namespace mantissa::precision {
namespace {

enum { kGradOutput, kOutput };
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
  const HostTensor &dy = in.tensors[kGradOutput], &y = in.tensors[kOutput];
  const RowShape r = row_shape(dy, in.attrs[kDim].i);
  std::vector<double> dx(static_cast<std::size_t>(dy.numel()));
  for (int64_t o = 0; o < r.outer; ++o) {
    for (int64_t i = 0; i < r.inner; ++i) {
      const int64_t base = o * r.axis * r.inner + i;
      long double s = 0.0L;
      for (int64_t a = 0; a < r.axis; ++a) {
        const int64_t at = base + a * r.inner;
        const long double g = in_f64(dy, at);
        s += kLog ? g : g * static_cast<long double>(in_f64(y, at));
      }
      for (int64_t a = 0; a < r.axis; ++a) {
        const int64_t at = base + a * r.inner;
        const long double g = in_f64(dy, at), v = in_f64(y, at);
        dx[at] = static_cast<double>(kLog ? g - std::exp(v) * s : v * (g - s));
      }
    }
  }
  return {dx};
}

template <bool kLog>
std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &dy = in.tensors[kGradOutput], &y = in.tensors[kOutput];
  const RowShape r = row_shape(dy, in.attrs[kDim].i);
  HostTensor dx(dy.dtype, dy.shape);
  for (int64_t o = 0; o < r.outer; ++o) {
    for (int64_t i = 0; i < r.inner; ++i) {
      const int64_t base = o * r.axis * r.inner + i;
      const double s = documented_row_sum(r.axis, [&](int64_t a) {
        const int64_t at = base + a * r.inner;
        const double g = in_f32(dy, at);
        return kLog ? g : g * static_cast<double>(in_f32(y, at));
      });
      // It's necessary to keep the order of the operations: the documented fp64 grouping, one
      // rounding to fp32, then to the dtype.
      for (int64_t a = 0; a < r.axis; ++a) {
        const int64_t at = base + a * r.inner;
        const double yv = in_f32(y, at), g = in_f32(dy, at);
        const double v = kLog ? g - exp64_documented(yv) * s : yv * (g - s);
        dx.set_bits(at, narrow_result(static_cast<float>(v), dy.dtype));
      }
    }
  }
  return {dx};
}

}  // namespace

template <>
Goldens goldens<detail::SoftmaxGradOp>() {
  return {golden<false>, golden32<false>, StandardKind::kSingleBm};
}

template <>
Goldens goldens<detail::LogSoftmaxGradOp>() {
  return {golden<true>, golden32<true>, StandardKind::kSingleBm};
}

}  // namespace mantissa::precision
