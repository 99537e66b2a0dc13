// DynamicQuant in the kit: the fp64 golden and golden32 (the documented fp32 computation, bit
// for bit). The fp64 golden follows the contract's fp32 rounding points (the product, the scale,
// the quotient), each the exact double result rounded once with the kit's own rounding, since
// the quantized integers are judged exactly.
#include <cmath>
#include <cstdint>
#include <limits>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

enum { kX, kSmooth };
enum { kDstType };

double dtype_max(DType d) {
  switch (d) {
    case DType::kInt8: return 127.0;
    case DType::kFloat8E4M3FN: return 448.0;
    case DType::kFloat8E5M2: return 57344.0;
    default: return 7.0;
  }
}

bool fp8(DType d) { return d == DType::kFloat8E4M3FN || d == DType::kFloat8E5M2; }

void geometry(const HostTensor& x, int64_t& rows, int64_t& n) {
  n = x.shape.back();
  rows = n == 0 ? 0 : x.numel() / n;
  if (n == 0) {
    rows = 1;
    for (std::size_t i = 0; i + 1 < x.shape.size(); ++i) rows *= x.shape[i];
  }
}

// Round half to even in double and clamp; NaN -> 0.
double rne_clamp(double v, double lo, double hi) {
  if (std::isnan(v)) return 0.0;
  double r = std::floor(v);
  const double frac = v - r;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  return std::min(hi, std::max(lo, r));
}

// Packs int4 codes (-8..7) of one row's elements into INT32 words: element 8j+k in bits 4k..4k+3.
double pack_word(const std::vector<double>& codes, std::size_t first) {
  uint32_t w = 0;
  for (std::size_t k = 0; k < 8; ++k) {
    w |= (static_cast<uint32_t>(static_cast<int32_t>(codes[first + k])) & 0xFu) << (4 * k);
  }
  return static_cast<double>(static_cast<int32_t>(w));
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &s = in.tensors[kSmooth];
  const auto dst = static_cast<DType>(in.attrs[kDstType].i);
  const double dmax = dtype_max(dst);
  int64_t rows = 0, n = 0;
  geometry(x, rows, n);
  std::vector<double> y, scale;
  std::vector<double> v(static_cast<std::size_t>(n)), q(static_cast<std::size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    double amax = 0.0;
    bool nan = false;
    for (int64_t i = 0; i < n; ++i) {
      double e = in_f64(x, r * n + i);
      if (!absent(s)) e = round_to_dtype(e * in_f64(s, i), DType::kFloat32);
      v[static_cast<std::size_t>(i)] = e;
      if (std::isnan(e))
        nan = true;
      else
        amax = std::max(amax, std::fabs(e));
    }
    const double sc = nan ? std::numeric_limits<double>::quiet_NaN()
                          : round_to_dtype(amax / dmax, DType::kFloat32);
    scale.push_back(sc);
    for (int64_t i = 0; i < n; ++i) {
      const double e = v[static_cast<std::size_t>(i)];
      double out = 0.0;
      if (sc != 0.0) {
        const double t = round_to_dtype(e / sc, DType::kFloat32);
        out = fp8(dst) ? t
                       : rne_clamp(t, dst == DType::kInt8 ? -128.0 : -8.0,
                                   dst == DType::kInt8 ? 127.0 : 7.0);
      }
      q[static_cast<std::size_t>(i)] = out;
    }
    if (dst == DType::kInt32) {
      for (int64_t j = 0; j < n / 8; ++j)
        y.push_back(pack_word(q, static_cast<std::size_t>(8 * j)));
    } else {
      y.insert(y.end(), q.begin(), q.end());
    }
  }
  return {y, scale};
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const HostTensor &x = in.tensors[kX], &s = in.tensors[kSmooth];
  const auto dst = static_cast<DType>(in.attrs[kDstType].i);
  const auto dmax = static_cast<float>(dtype_max(dst));
  int64_t rows = 0, n = 0;
  geometry(x, rows, n);
  std::vector<int64_t> yshape = x.shape, sshape = x.shape;
  if (dst == DType::kInt32) yshape.back() /= 8;
  sshape.pop_back();
  HostTensor y(dst, yshape), scale(DType::kFloat32, sshape);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0.0f;
    bool nan = false;
    for (int64_t i = 0; i < n; ++i) {
      float e = in_f32(x, r * n + i);
      if (!absent(s)) e = e * in_f32(s, i);
      v[static_cast<std::size_t>(i)] = e;
      if (std::isnan(e))
        nan = true;
      else if (std::fabs(e) > amax)
        amax = std::fabs(e);
    }
    const float sc = nan ? std::numeric_limits<float>::quiet_NaN() : amax / dmax;
    scale.set_bits(r, std::bit_cast<uint32_t>(sc));
    uint32_t word = 0;
    for (int64_t i = 0; i < n; ++i) {
      uint32_t code = 0;
      if (sc != 0.0f) {
        const float t = v[static_cast<std::size_t>(i)] / sc;
        if (fp8(dst)) {
          code = round_to_fp8_saturating(static_cast<double>(t), dst);
        } else {
          const bool i8 = dst == DType::kInt8;
          int32_t k = 0;
          if (!std::isnan(t)) {
            const float lo = i8 ? -128.0f : -8.0f, hi = i8 ? 127.0f : 7.0f;
            const float c = t < lo ? lo : (t > hi ? hi : t);
            const float fl = std::floor(c), rest = c - fl;  // exact
            k = static_cast<int32_t>(fl);
            if (rest > 0.5f || (rest == 0.5f && (k & 1) != 0)) ++k;
            k = std::min(k, i8 ? 127 : 7);
          }
          code = static_cast<uint32_t>(k);
        }
      }
      const int64_t e = r * n + i;
      if (dst == DType::kInt32) {
        word |= (code & 0xFu) << (4 * (i % 8));
        if (i % 8 == 7) {
          y.set_bits(e / 8, word);
          word = 0;
        }
      } else {
        y.set_bits(e, code);
      }
    }
  }
  return {y, scale};
}

}  // namespace

template <>
Goldens goldens<detail::DynamicQuantOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
