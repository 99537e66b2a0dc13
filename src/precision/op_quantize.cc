// Quantize in the kit: the fp64 golden and golden32 (the documented fp32 computation, bit for
// bit). Both share only the channel geometry; the rounding and saturation are written twice.
#include <cmath>
#include <cstdint>
#include <limits>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kX, kScales, kZeroPoints };
enum { kDtype, kAxis };

// The channel of element i: (i / inner) % channels, or 0 for one scale.
struct Channels {
  int64_t count = 1, inner = 1;
  explicit Channels(const OpInputs& in) {
    const HostTensor& x = in.tensors[kX];
    count = in.tensors[kScales].numel();
    const auto rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = in.attrs[kAxis].i;
    if (axis < 0) axis += rank;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[static_cast<std::size_t>(d)];
  }
  int64_t of(int64_t i) const { return count == 1 ? 0 : (i / inner) % count; }
};

// Round half to even in double, then clamp to [lo, hi]; NaN -> 0.
double round_saturate(double v, double lo, double hi) {
  if (std::isnan(v)) return 0.0;
  double r = std::floor(v);
  const double frac = v - r;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  return std::min(hi, std::max(lo, r));
}

void range_of(DType d, double& lo, double& hi) {
  switch (d) {
    case DType::kInt8: lo = -128, hi = 127; return;
    case DType::kUInt8: lo = 0, hi = 255; return;
    default: lo = -2147483648.0, hi = 2147483647.0; return;
  }
}

bool is_fp8_out(DType d) { return d == DType::kFloat8E4M3FN || d == DType::kFloat8E5M2; }

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &s = in.tensors[kScales], &z = in.tensors[kZeroPoints];
  const auto dtype = static_cast<DType>(in.attrs[kDtype].i);
  const Channels ch(in);
  double lo = 0, hi = 0;
  range_of(dtype, lo, hi);
  std::vector<double> y(static_cast<std::size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = ch.of(i);
    // The contract's fp32 steps, each the exact double result rounded once with the kit's own
    // rounding: the quotient, the zero point (INT32 beyond 2^24 rounds), the sum.
    const double q = round_to_dtype(in_f64(x, i) / in_f64(s, c), DType::kFloat32);
    double v = q;
    if (!absent(z)) {
      const double zp =
          round_to_dtype(is_training_float(z.dtype) ? in_f64(z, c) : z.value(c), DType::kFloat32);
      v = round_to_dtype(q + zp, DType::kFloat32);
    }
    y[static_cast<std::size_t>(i)] = is_fp8_out(dtype) ? v : round_saturate(v, lo, hi);
  }
  return {y};
}

// golden32's rounding: fp32 value, ties to even by comparing with the truncation.
int64_t rne_saturate32(float v, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return 0;
  if (v >= 2147483648.0f) return hi;
  if (v <= -2147483648.0f) return lo;
  const float t = std::trunc(v);  // |v| < 2^31: exact
  const float rest = v - t;       // exact (Sterbenz)
  auto r = static_cast<int64_t>(t);
  if (std::fabs(rest) > 0.5f || (std::fabs(rest) == 0.5f && (r & 1) != 0)) r += v > 0 ? 1 : -1;
  return std::min(hi, std::max(lo, r));
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &s = in.tensors[kScales], &z = in.tensors[kZeroPoints];
  const auto dtype = static_cast<DType>(in.attrs[kDtype].i);
  const Channels ch(in);
  double lo = 0, hi = 0;
  range_of(dtype, lo, hi);
  HostTensor y(dtype, x.shape);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = ch.of(i);
    float v = in_f32(x, i) / in_f32(s, c);
    if (!absent(z)) {
      v = v + (is_training_float(z.dtype) ? in_f32(z, c) : static_cast<float>(z.value(c)));
    }
    if (is_fp8_out(dtype)) {
      y.set_bits(i, round_to_fp8_saturating(static_cast<double>(v), dtype));
    } else {
      const int64_t q = rne_saturate32(v, static_cast<int64_t>(lo), static_cast<int64_t>(hi));
      y.set_bits(i, static_cast<uint32_t>(static_cast<int32_t>(q)));
    }
  }
  return {y};
}

}  // namespace

template <>
Goldens goldens<detail::QuantizeOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
