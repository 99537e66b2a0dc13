// NVFP4 (mantissa/amp/fp8_scaling.h): two-level FP4 quantization along the last dim, its
// dequantization and the emulated block-scaled FP4 matrix product. Scalar code over rows in
// parallel: each element's bits depend on its own block alone, so on neither the target nor the
// thread count.
#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/entry.h"
#include "core/parallel.h"
#include "core/validate.h"
#include "mantissa/amp/fp8_scaling.h"
#include "mantissa/convert.h"
#include "mantissa/lowp.h"
#include "mantissa/ops/matmul.h"
#include "mantissa/optim.h"

namespace mantissa::amp {

namespace {

constexpr int64_t kNvfp4Block = 16;
constexpr float kE2M1Values[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};

Status nvfp4_check(std::string_view op, const char* name, const TensorView& t, DType dtype,
                   int64_t rows, int64_t cols) {
  if (t.dtype != dtype) {
    return detail::fail(StatusCode::kParamInvalid, op, "{} dtype {} is not {}", name,
                        dtype_name(t.dtype), dtype_name(dtype));
  }
  if (t.rank != 2 || t.shape[0] != rows || t.shape[1] != cols || !t.is_contiguous()) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "{} shape {} is not the contiguous [{}, {}] it must be", name,
                        t.shape_string(), rows, cols);
  }
  if (t.data == nullptr && rows * cols > 0) {
    return detail::fail(StatusCode::kParamNullptr, op, "{} has no data", name);
  }
  return {};
}

// The codes and scales of a [rows, k] NVFP4 matrix (k a multiple of 16).
Status nvfp4_check_matrix(std::string_view op, const char* name, const Nvfp4Matrix& m) {
  const TensorView& c = m.codes;
  if (c.rank != 2 || c.shape[1] % kNvfp4Block != 0) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "{}.codes shape {} is not [rows, k] with k a multiple of 16", name,
                        c.shape_string());
  }
  const std::string codes = fmt::format("{}.codes", name), scales = fmt::format("{}.scales", name);
  MANTISSA_RETURN_IF_ERROR(
      nvfp4_check(op, codes.c_str(), c, DType::kFloat4E2M1, c.shape[0], c.shape[1]));
  return nvfp4_check(op, scales.c_str(), m.scales, DType::kFloat8E4M3FN, c.shape[0],
                     c.shape[1] / kNvfp4Block);
}

Status nvfp4_check_float(std::string_view op, const char* name, const TensorView& t) {
  if (!is_training_float(t.dtype)) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "{} dtype {} is not FLOAT, FLOAT16 or BFLOAT16", name, dtype_name(t.dtype));
  }
  return {};
}

// E2M1 code of a finite v by round to nearest even (saturating), or stochastically with the
// 32 random bits r.
uint32_t nvfp4_element(float v, bool stochastic, uint32_t r) {
  const uint32_t sign = std::signbit(v) ? 8u : 0u;
  const float a = std::fabs(v);
  if (!stochastic) return sign | e2m1_magnitude_rne(a);
  if (a >= 6.0f) return sign | 7u;
  // The grid values at or below a, less one: the code of the value below.
  const int lower = static_cast<int>(a >= 0.5f) + static_cast<int>(a >= 1.0f) +
                    static_cast<int>(a >= 1.5f) + static_cast<int>(a >= 2.0f) +
                    static_cast<int>(a >= 3.0f) + static_cast<int>(a >= 4.0f);
  const double lo = kE2M1Values[lower], hi = kE2M1Values[lower + 1];
  // (a - lo) / (hi - lo): exact in double (hi - lo a power of two); compared with r / 2^32.
  const double p = (static_cast<double>(a) - lo) / (hi - lo);
  return sign | static_cast<uint32_t>(p * 0x1p32 > static_cast<double>(r) ? lower + 1 : lower);
}

void nvfp4_set_nibble(uint8_t* y, int64_t i, uint32_t code) {
  uint8_t& byte = y[i >> 1];
  byte = (i & 1) ? static_cast<uint8_t>((byte & 0x0Fu) | (code << 4))
                 : static_cast<uint8_t>((byte & 0xF0u) | code);
}

// q * s for every element of m, in fp32 (exact: at most 6 significant bits).
std::vector<float> nvfp4_decode(const Nvfp4Matrix& m) {
  const int64_t rows = m.codes.shape[0], k = m.codes.shape[1];
  std::vector<float> out(static_cast<std::size_t>(rows * k));
  const auto* codes = static_cast<const uint8_t*>(m.codes.data);
  const auto* scales = static_cast<const uint8_t*>(m.scales.data);
  auto body = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t b = 0; b < k / kNvfp4Block; ++b) {
        const float s = minifloat_to_float(kE4M3, scales[r * (k / kNvfp4Block) + b]);
        float value[16];  // each code's value times s: the same products, once per block
        for (uint32_t c = 0; c < 16; ++c) {
          value[c] = ((c & 8u) ? -kE2M1Values[c & 7u] : kE2M1Values[c & 7u]) * s;
        }
        for (int64_t i = r * k + b * kNvfp4Block; i < r * k + (b + 1) * kNvfp4Block; ++i) {
          out[static_cast<std::size_t>(i)] = value[(codes[i >> 1] >> (4 * (i & 1))) & 0x0Fu];
        }
      }
    }
  };
  detail::parallel_for(rows, 64, body);
  return out;
}

// r * factor (unless 1), rounded once into out.
void nvfp4_store(std::vector<float>& r, float factor, const TensorView& out) {
  if (factor != 1.0f) {
    for (float& x : r) x = x * factor;
  }
  if (out.dtype == DType::kFloat32) {
    if (!r.empty()) std::memcpy(out.data, r.data(), r.size() * sizeof(float));
  } else if (out.dtype == DType::kFloat16) {
    convert_fp32_to_fp16(r.data(), static_cast<uint16_t*>(out.data), r.size());
  } else {
    convert_fp32_to_bf16(r.data(), static_cast<uint16_t*>(out.data), r.size());
  }
}

}  // namespace

Status nvfp4_quantize(const TensorView& x, Nvfp4Matrix& m, const Nvfp4Options& o) {
  constexpr std::string_view op = "nvfp4_quantize";
  return detail::guarded_entry(op, [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(nvfp4_check_float(op, "x", x));
    if (x.rank != 2 || x.shape[1] % kNvfp4Block != 0 || !x.is_contiguous()) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "x shape {} is not a contiguous [rows, k] with k a multiple of 16",
                          x.shape_string());
    }
    const int64_t rows = x.shape[0], k = x.shape[1];
    if (x.data == nullptr && rows * k > 0) {
      return detail::fail(StatusCode::kParamNullptr, op, "x has no data");
    }
    MANTISSA_RETURN_IF_ERROR(nvfp4_check(op, "codes", m.codes, DType::kFloat4E2M1, rows, k));
    MANTISSA_RETURN_IF_ERROR(
        nvfp4_check(op, "scales", m.scales, DType::kFloat8E4M3FN, rows, k / kNvfp4Block));
    // Row r of x widened (exactly) into `row`.
    const auto widen_row = [&](int64_t r, float* row) {
      const auto n = static_cast<std::size_t>(k);
      if (x.dtype == DType::kFloat32) {
        std::memcpy(row, static_cast<const float*>(x.data) + r * k, n * sizeof(float));
      } else if (x.dtype == DType::kBFloat16) {
        convert_bf16_to_fp32(static_cast<const uint16_t*>(x.data) + r * k, row, n);
      } else {
        convert_fp16_to_fp32(static_cast<const uint16_t*>(x.data) + r * k, row, n);
      }
    };
    float amax = 0.0f;
    if (o.amax) {
      amax = *o.amax;
    } else {
      // Each row's max |x| (NaN if it holds one), then the rows' in order: the max does not
      // depend on how rows are split among threads.
      std::vector<float> row_max(static_cast<std::size_t>(rows), 0.0f);
      auto rows_max = [&](int64_t r0, int64_t r1) {
        std::vector<float> row(static_cast<std::size_t>(k));
        for (int64_t r = r0; r < r1; ++r) {
          widen_row(r, row.data());
          float top = 0.0f;
          for (float v : row) {
            const float a = std::fabs(v);
            if (std::isnan(a) || a > top) top = a;
            if (std::isnan(top)) break;
          }
          row_max[static_cast<std::size_t>(r)] = top;
        }
      };
      detail::parallel_for(rows, 16, rows_max);
      for (float top : row_max) {
        if (std::isnan(top) || top > amax) amax = top;
        if (std::isnan(amax)) break;
      }
    }
    float enc = 1.0f;
    if (std::isfinite(amax) && amax > 0.0f) {
      enc = 2688.0f / amax;
      if (std::isinf(enc)) enc = FLT_MAX;
    }
    auto* codes = static_cast<uint8_t*>(m.codes.data);
    auto* scales = static_cast<uint8_t*>(m.scales.data);
    auto body = [&](int64_t r0, int64_t r1) {
      std::vector<float> row(static_cast<std::size_t>(k));
      const auto at = [&](int64_t i) { return row[static_cast<std::size_t>(i % k)]; };
      for (int64_t r = r0; r < r1; ++r) {
        widen_row(r, row.data());
        for (int64_t b = 0; b < k / kNvfp4Block; ++b) {
          const int64_t base = r * k + b * kNvfp4Block;
          float bmax = 0.0f;
          bool finite = true;
          for (int64_t j = 0; j < kNvfp4Block; ++j) {
            const float a = std::fabs(at(base + j));
            finite = finite && std::isfinite(a);
            bmax = std::max(bmax, a);
          }
          uint32_t scode = 0x7Fu;  // E4M3's NaN
          float factor = 0.0f;
          if (finite) {
            scode = float_to_minifloat(kE4M3, (bmax / 6.0f) * enc, true);
            const float s = minifloat_to_float(kE4M3, scode);
            factor = s == 0.0f ? 0.0f : enc / s;
          }
          scales[r * (k / kNvfp4Block) + b] = static_cast<uint8_t>(scode);
          for (int64_t j = 0; j < kNvfp4Block; ++j) {
            const int64_t i = base + j;
            uint32_t code = 0;
            if (finite) {
              const uint32_t bits =
                  o.stochastic ? sr_bits(o.seed, o.step, 0, static_cast<uint64_t>(i)) : 0u;
              code = nvfp4_element(at(i) * factor, o.stochastic, bits);
            }
            nvfp4_set_nibble(codes, i, code);
          }
        }
      }
    };
    detail::parallel_for(rows, 16, body);
    m.tensor_scale_inv = 1.0f / enc;
    return {};
  });
}

Status nvfp4_dequantize(const Nvfp4Matrix& m, const TensorView& out) {
  constexpr std::string_view op = "nvfp4_dequantize";
  return detail::guarded_entry(op, [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(nvfp4_check_matrix(op, "m", m));
    MANTISSA_RETURN_IF_ERROR(nvfp4_check_float(op, "out", out));
    MANTISSA_RETURN_IF_ERROR(
        nvfp4_check(op, "out", out, out.dtype, m.codes.shape[0], m.codes.shape[1]));
    std::vector<float> v = nvfp4_decode(m);
    nvfp4_store(v, m.tensor_scale_inv, out);
    return {};
  });
}

Status nvfp4_matmul(const Nvfp4Matrix& a, const Nvfp4Matrix& b, const TensorView& out) {
  constexpr std::string_view op = "nvfp4_matmul";
  return detail::guarded_entry(op, [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(nvfp4_check_matrix(op, "a", a));
    MANTISSA_RETURN_IF_ERROR(nvfp4_check_matrix(op, "b", b));
    const int64_t m = a.codes.shape[0], k = a.codes.shape[1], n = b.codes.shape[0];
    if (b.codes.shape[1] != k) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "a is [{}, {}] but b is [{}, {}]: both are quantized along k", m, k, n,
                          b.codes.shape[1]);
    }
    MANTISSA_RETURN_IF_ERROR(nvfp4_check_float(op, "out", out));
    MANTISSA_RETURN_IF_ERROR(nvfp4_check(op, "out", out, out.dtype, m, n));
    std::vector<float> da = nvfp4_decode(a), db = nvfp4_decode(b);
    std::vector<float> r(static_cast<std::size_t>(m * n), 0.0f);
    if (m > 0 && n > 0) {
      const TensorView av(da.data(), DType::kFloat32, {m, k});
      const TensorView bv(db.data(), DType::kFloat32, {n, k});
      const TensorView rv(r.data(), DType::kFloat32, {m, n});
      MANTISSA_RETURN_IF_ERROR(
          matmul({.self = av, .mat2 = bv, .out = rv}, {.transpose_mat2 = true}));
    }
    nvfp4_store(r, a.tensor_scale_inv * b.tensor_scale_inv, out);
    return {};
  });
}

}  // namespace mantissa::amp
