// AscendQuantV3 in the kit: the fp64 golden and golden32 (the documented fp32 computation, bit
// for bit). The fp64 golden follows the contract's fp32 rounding points (the product(s), the
// offset's sum), each the exact double result rounded once with the kit's own rounding, since
// the quantized integers are judged exactly.
#include <cmath>
#include <cstdint>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kX, kScale, kOffset };
enum { kSqrtMode, kRoundMode, kDstType, kAxis };

struct Channels {
  int64_t count = 1, inner = 1;
  explicit Channels(const OpInputs& in) {
    const HostTensor& x = in.tensors[kX];
    count = in.tensors[kScale].numel();
    const auto rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = in.attrs[kAxis].i;
    if (axis < 0) axis += rank;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[static_cast<std::size_t>(d)];
  }
  int64_t of(int64_t i) const { return count == 1 ? 0 : (i / inner) % count; }
};

bool fp8(DType d) { return d == DType::kFloat8E4M3FN || d == DType::kFloat8E5M2; }

// The integer of round_mode (0 round half even, 1 floor, 2 ceil, 3 trunc) in double, clamped.
double to_int(double v, int64_t mode, double lo, double hi) {
  if (std::isnan(v)) return 0.0;
  double r = 0.0;
  switch (mode) {
    case 1: r = std::floor(v); break;
    case 2: r = std::ceil(v); break;
    case 3: r = std::trunc(v); break;
    default: {
      r = std::floor(v);
      const double frac = v - r;
      if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
    }
  }
  return std::min(hi, std::max(lo, r));
}

std::vector<double> values(const OpInputs& in, bool exact_steps) {
  const HostTensor &x = in.tensors[kX], &s = in.tensors[kScale], &o = in.tensors[kOffset];
  const bool sqrt_mode = in.attrs[kSqrtMode].b;
  const Channels ch(in);
  std::vector<double> v(static_cast<std::size_t>(x.numel()));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = ch.of(i);
    if (exact_steps) {  // golden: double products, each rounded once to fp32
      double t = round_to_dtype(in_f64(x, i) * in_f64(s, c), DType::kFloat32);
      if (sqrt_mode) t = round_to_dtype(t * in_f64(s, c), DType::kFloat32);
      if (!absent(o)) t = round_to_dtype(t + in_f64(o, c), DType::kFloat32);
      v[static_cast<std::size_t>(i)] = t;
    } else {  // golden32: fp32 arithmetic
      float t = in_f32(x, i) * in_f32(s, c);
      if (sqrt_mode) t = t * in_f32(s, c);
      if (!absent(o)) t = t + in_f32(o, c);
      v[static_cast<std::size_t>(i)] = static_cast<double>(t);
    }
  }
  return v;
}

// Integers per element, then packed into INT32 words (element 8j+k in bits 4k..4k+3).
std::vector<double> quantized(const OpInputs& in, const std::vector<double>& v) {
  const auto dst = static_cast<DType>(in.attrs[kDstType].i);
  const int64_t mode = in.attrs[kRoundMode].i;
  if (fp8(dst)) return v;  // rounded to FP8 by the caller
  const bool i8 = dst == DType::kInt8;
  std::vector<double> q(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    q[i] = to_int(v[i], mode, i8 ? -128.0 : -8.0, i8 ? 127.0 : 7.0);
  }
  if (dst != DType::kInt32) return q;
  std::vector<double> words(q.size() / 8);
  for (std::size_t j = 0; j < words.size(); ++j) {
    uint32_t w = 0;
    for (std::size_t k = 0; k < 8; ++k) {
      w |= (static_cast<uint32_t>(static_cast<int32_t>(q[8 * j + k])) & 0xFu) << (4 * k);
    }
    words[j] = static_cast<double>(static_cast<int32_t>(w));
  }
  return words;
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  return {quantized(in, values(in, true))};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const auto dst = static_cast<DType>(in.attrs[kDstType].i);
  std::vector<int64_t> shape = in.tensors[kX].shape;
  if (dst == DType::kInt32) shape.back() /= 8;
  HostTensor y(dst, shape);
  const std::vector<double> q = quantized(in, values(in, false));
  for (std::size_t i = 0; i < q.size(); ++i) {
    const auto e = static_cast<int64_t>(i);
    if (fp8(dst)) {
      y.set_bits(e, round_to_fp8_saturating(q[i], dst));
    } else {
      y.set_bits(e, static_cast<uint32_t>(static_cast<int32_t>(q[i])));
    }
  }
  return {y};
}

}  // namespace

template <>
Goldens goldens<detail::AscendQuantV3Op>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
