// DynamicMxQuant in the kit: golden (the elements x / scale in double, the scales' E8M0
// codes) and golden32 (the documented codes and FP8 bits), written from the contract with the
// block exponent taken by frexp, not by bit fields, and the kit's own FP8 rounding (fp.h).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kX };
enum { kAxis, kRoundMode, kDstType, kBlocksize, kScaleAlg, kDstTypeMax, kMaxLowBound };

struct Geometry {
  int64_t outer = 1, length = 1, inner = 1, blocksize = 32, blocks = 0, pairs = 0;
  explicit Geometry(const OpInputs& in) {
    const HostTensor& x = in.tensors[kX];
    const auto rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = in.attrs[kAxis].i;
    if (axis < 0) axis += rank;
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t d = x.shape[static_cast<std::size_t>(k)];
      if (k < axis) outer *= d;
      if (k == axis) length = d;
      if (k > axis) inner *= d;
    }
    blocksize = in.attrs[kBlocksize].i;
    blocks = (length + blocksize - 1) / blocksize;
    pairs = (blocks + 1) / 2;
  }
  int64_t x_index(int64_t o, int64_t l, int64_t i) const { return (o * length + l) * inner + i; }
  int64_t code_index(int64_t o, int64_t b, int64_t i) const {
    return ((o * pairs + b / 2) * inner + i) * 2 + b % 2;
  }
};

// The block's code and the factor its elements are multiplied by (the contract's rules).
struct Scale {
  uint32_t code;
  double factor;
};

// The format's emax (the exponent of its largest normal binade).
int emax_of(DType y) {
  switch (y) {
    case DType::kFloat8E4M3FN: return 8;
    case DType::kFloat8E5M2: return 15;
    case DType::kFloat4E2M1: return 2;
    default: return 0;  // FLOAT4_E1M2
  }
}

// fp32's biased exponent of a value (0 for zero and subnormals), by frexp.
int biased_exponent(double v) {
  if (v == 0.0) return 0;
  int e = 0;
  std::frexp(v, &e);  // v = f * 2^e, f in [0.5, 1): floor(log2 v) = e - 1
  return std::max(0, e - 1 + 127);
}

Scale from_code(int code) {
  if (code <= 0) return {0, 0.0};
  return {static_cast<uint32_t>(code), std::ldexp(1.0, 127 - code)};
}

Scale scale_of(double amax, DType y, int64_t alg, float max_low_bound, double dst_type_max) {
  if (std::isnan(amax) || std::isinf(amax)) return {0xFF, std::nan("")};
  const bool e4m3 = y == DType::kFloat8E4M3FN;
  const bool dtype_range =
      alg == 2 && (dst_type_max == 0.0 || dst_type_max == 6.0 || dst_type_max == 7.0);
  if (alg == 0) return from_code(biased_exponent(amax) - emax_of(y));
  if (dtype_range) {
    // amax rounded to bf16; its exponent one higher when its significand exceeds 1.5 (1.75 for
    // a dst_type_max of 7), so that amax / 2^(E - 2) stays within 6 (or 7).
    const double b = decode_bits(round_to_bits(amax, DType::kBFloat16), DType::kBFloat16);
    int e = 0;
    const double f = std::frexp(b, &e) * 2.0;  // b = f * 2^(e - 1), f in [1, 2)
    const int bump = b != 0.0 && f > (dst_type_max == 7.0 ? 1.75 : 1.5) ? 1 : 0;
    return from_code(std::min(biased_exponent(b) + bump, 256) - 2);
  }
  if (amax == 0.0) return {0, 0.0};
  const double top = alg == 2 ? dst_type_max : (e4m3 ? 448.0 : 57344.0);
  const auto inv_max = static_cast<float>(1.0 / top);
  const float s = std::max(static_cast<float>(amax), max_low_bound) * inv_max;
  int e = 0;
  const double f = std::frexp(static_cast<double>(s), &e);  // s = f * 2^e
  uint32_t code = 0;
  if (s >= 0x1p-126f) {
    const int biased = e - 1 + 127;
    code = static_cast<uint32_t>(biased + (f != 0.5 && biased < 254 ? 1 : 0));
  } else {
    code = s > 0x1p-127f ? 1u : 0u;  // subnormal: up when above half the smallest normal
  }
  return {code, std::ldexp(1.0, 127 - static_cast<int>(code))};
}

template <class Emit>
void for_each_block(const OpInputs& in, Emit&& emit) {
  const HostTensor& x = in.tensors[kX];
  const Geometry g(in);
  const auto y = static_cast<DType>(in.attrs[kDstType].i);
  const int64_t alg = in.attrs[kScaleAlg].i;
  const auto mlb = static_cast<float>(in.attrs[kMaxLowBound].f);
  const double dtm = in.attrs[kDstTypeMax].f;
  for (int64_t o = 0; o < g.outer; ++o) {
    for (int64_t b = 0; b < g.blocks; ++b) {
      for (int64_t i = 0; i < g.inner; ++i) {
        double amax = 0.0;
        bool nan = false;
        const int64_t l1 = std::min(g.length, (b + 1) * g.blocksize);
        for (int64_t l = b * g.blocksize; l < l1; ++l) {
          const double v = std::fabs(in_f64(x, g.x_index(o, l, i)));
          nan = nan || std::isnan(v);
          amax = std::max(amax, v);
        }
        emit(g, o, b, i, scale_of(nan ? std::nan("") : amax, y, alg, mlb, dtm), l1);
      }
    }
  }
}

std::vector<int64_t> scale_shape(const OpInputs& in) {
  const Geometry g(in);
  std::vector<int64_t> s = in.tensors[kX].shape;
  int64_t axis = in.attrs[kAxis].i;
  if (axis < 0) axis += static_cast<int64_t>(s.size());
  s[static_cast<std::size_t>(axis)] = g.pairs;
  s.push_back(2);
  return s;
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor& x = in.tensors[kX];
  const auto dst = static_cast<DType>(in.attrs[kDstType].i);
  const int64_t mode = in.attrs[kRoundMode].i;
  std::vector<double> y(static_cast<std::size_t>(x.numel()));
  const Geometry g0(in);
  std::vector<double> scales(static_cast<std::size_t>(g0.outer * g0.pairs * g0.inner * 2), 0.0);
  for_each_block(in, [&](const Geometry& g, int64_t o, int64_t b, int64_t i, Scale s, int64_t l1) {
    // E8M0 outputs are compared as codes (the kit's value of an E8M0 element is its code).
    scales[static_cast<std::size_t>(g.code_index(o, b, i))] = static_cast<double>(s.code);
    for (int64_t l = b * g.blocksize; l < l1; ++l) {
      const int64_t k = g.x_index(o, l, i);
      const double v = in_f64(x, k) * s.factor;
      // FLOAT4: the value of the mode's code (a floor or a tie away from zero is not the
      // nearest value, which is all the fp64 golden's rounding could give).
      y[static_cast<std::size_t>(k)] =
          is_fp4(dst) ? decode_fp4(round_to_fp4(v, dst, mode), dst) : v;
    }
  });
  return {y, scales};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor& x = in.tensors[kX];
  const auto dst = static_cast<DType>(in.attrs[kDstType].i);
  HostTensor y(dst, x.shape), codes(DType::kFloat8E8M0, scale_shape(in));
  for (int64_t k = 0; k < codes.numel(); ++k) codes.set_bits(k, 0);
  for_each_block(in, [&](const Geometry& g, int64_t o, int64_t b, int64_t i, Scale s, int64_t l1) {
    codes.set_bits(g.code_index(o, b, i), s.code);
    // The factor as fp32: 2^(127 - code) (code 254: the subnormal 2^-127), 0 or NaN.
    const auto factor = static_cast<float>(s.factor);
    for (int64_t l = b * g.blocksize; l < l1; ++l) {
      const int64_t k = g.x_index(o, l, i);
      const float v = in_f32(x, k) * factor;  // one fp32 product
      y.set_bits(k, is_fp4(dst) ? round_to_fp4(static_cast<double>(v), dst, in.attrs[kRoundMode].i)
                                : round_to_fp8_saturating(static_cast<double>(v), dst));
    }
  });
  return {y, codes};
}

}  // namespace

template <>
Goldens goldens<detail::DynamicMxQuantOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
