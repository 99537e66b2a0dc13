// QuantMax in the kit: the fp64 golden and golden32 (the documented fp32 computation, bit for
// bit), written from the contract: the product rounded once to fp32, the kit's own saturating
// FP8 rounding (fp.h), and max |x| by a plain scan.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kX, kScale };
enum { kRoundMode, kDstType };

// max |x| over the inputs as doubles; NaN when any is NaN; +0 for none.
double amax_of(const HostTensor& x) {
  double m = 0.0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = in_f64(x, i);
    if (std::isnan(v)) return std::numeric_limits<double>::quiet_NaN();
    m = std::max(m, std::fabs(v));
  }
  return m;
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &s = in.tensors[kScale];
  std::vector<double> y(static_cast<std::size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    // The exact product, rounded once to fp32 as the contract's one fp32 multiplication.
    y[static_cast<std::size_t>(i)] = round_to_dtype(in_f64(x, i) * in_f64(s, 0), DType::kFloat32);
  }
  return {y, {amax_of(x)}};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &s = in.tensors[kScale];
  const auto dst = static_cast<DType>(in.attrs[kDstType].i);
  HostTensor y(dst, x.shape);
  const float scale = in_f32(s, 0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = in_f32(x, i) * scale;
    y.set_bits(i, round_to_fp8_saturating(static_cast<double>(v), dst));
  }
  HostTensor amax(x.dtype, {1});
  amax.set_bits(0, narrow_result(static_cast<float>(amax_of(x)), x.dtype));
  return {y, amax};
}

}  // namespace

template <>
Goldens goldens<detail::QuantMaxOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
