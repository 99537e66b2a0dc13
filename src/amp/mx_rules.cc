// MX quantization with a chosen block scale rule (mantissa/amp/fp8_scaling.h): floor and rceil
// are DynamicMxQuant's scale algorithms; torchao's EVEN, which CANN's operator lacks, is written
// here: the block codes by the rule, the elements by the library's bulk conversion.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/entry.h"
#include "core/parallel.h"
#include "core/validate.h"
#include "mantissa/amp/fp8_scaling.h"
#include "mantissa/convert.h"
#include "mantissa/lowp.h"
#include "mantissa/ops/dynamic_mx_quant.h"

namespace mantissa::amp {

namespace {

// torchao's EVEN: amax's significand rounded half up to `mbits` bits (a carry moves it to the
// next binade), then floor(log2) - emax, biased and clamped to [0, 254].
uint8_t mx_even_code(float amax, int mbits, int emax) {
  uint32_t bits = std::bit_cast<uint32_t>(amax);
  bits = (bits + (1u << (22 - mbits))) & 0x7F800000u;
  return static_cast<uint8_t>(std::clamp(static_cast<int>(bits >> 23) - emax, 0, 254));
}

Status mx_even(const TensorView& x, const MxMatrix& m) {
  const int64_t rows = x.shape[0], k = x.shape[1];
  const int64_t blocks = (k + 31) / 32, pairs = (blocks + 1) / 2;
  const DType d = m.codes.dtype;
  const int mbits = d == DType::kFloat8E4M3FN ? 3 : d == DType::kFloat8E5M2 ? 2 : 1;
  const int emax = d == DType::kFloat8E4M3FN ? 8 : d == DType::kFloat8E5M2 ? 15 : 2;
  const bool fp4 = d == DType::kFloat4E2M1;
  auto* codes = static_cast<uint8_t*>(m.codes.data);
  auto* scales = static_cast<uint8_t*>(m.scales.data);
  auto body = [&](int64_t r0, int64_t r1) {
    std::vector<float> row(static_cast<std::size_t>(k)), scaled(32);
    uint8_t packed[16];
    for (int64_t r = r0; r < r1; ++r) {
      const auto n = static_cast<std::size_t>(k);
      if (x.dtype == DType::kFloat32) {
        std::memcpy(row.data(), static_cast<const float*>(x.data) + r * k, n * sizeof(float));
      } else if (x.dtype == DType::kBFloat16) {
        convert_bf16_to_fp32(static_cast<const uint16_t*>(x.data) + r * k, row.data(), n);
      } else {
        convert_fp16_to_fp32(static_cast<const uint16_t*>(x.data) + r * k, row.data(), n);
      }
      for (int64_t b = 0; b < blocks; ++b) {
        const int64_t at = b * 32, len = std::min<int64_t>(32, k - at);
        float amax = 0.0f;
        bool special = false;
        for (int64_t j = 0; j < len; ++j) {
          const float a = std::fabs(row[static_cast<std::size_t>(at + j)]);
          special = special || !std::isfinite(a);
          amax = std::max(amax, a);
        }
        const uint8_t code = special ? 0xFF : mx_even_code(amax, mbits, emax);
        scales[(r * pairs + b / 2) * 2 + b % 2] = code;
        if (b == blocks - 1 && blocks % 2 == 1) scales[(r * pairs + b / 2) * 2 + 1] = 0;
        // 2^(127 - code) is a normal or subnormal fp32 for every code in [0, 254].
        const float factor = std::ldexp(1.0f, 127 - static_cast<int>(code));
        for (int64_t j = 0; j < len; ++j) {
          // A special block's elements: NaN, or +0 in E2M1, which has no NaN.
          scaled[static_cast<std::size_t>(j)] =
              special ? (fp4 ? 0.0f : NAN) : row[static_cast<std::size_t>(at + j)] * factor;
        }
        if (fp4) {
          // A 32-element block starts at an even element: whole bytes (k is even).
          convert_fp32_to_lowp(d, scaled.data(), packed, static_cast<std::size_t>(len), true);
          std::memcpy(codes + (r * k + at) / 2, packed, static_cast<std::size_t>((len + 1) / 2));
        } else {
          convert_fp32_to_lowp(d, scaled.data(), codes + r * k + at, static_cast<std::size_t>(len),
                               true);
        }
      }
    }
  };
  detail::parallel_for(rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, k)), body);
  return {};
}

}  // namespace

const char* mx_scale_rule_name(MxScaleRule rule) noexcept {
  switch (rule) {
    case MxScaleRule::kFloor: return "floor";
    case MxScaleRule::kRceil: return "rceil";
    case MxScaleRule::kEven: return "even";
  }
  return "?";
}

Status mx_quantize_blocks(const TensorView& x, const MxMatrix& m, MxScaleRule rule) {
  constexpr std::string_view op = "mx_quantize_blocks";
  return detail::guarded_entry(op, [&]() -> Status {
    if (rule != MxScaleRule::kFloor && rule != MxScaleRule::kRceil && rule != MxScaleRule::kEven) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "rule {} is not 0 (floor), 1 (rceil) or 2 (even)",
                          static_cast<int>(rule));
    }
    if (!is_training_float(x.dtype)) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "x dtype {} is not FLOAT, FLOAT16 or BFLOAT16", dtype_name(x.dtype));
    }
    if (x.rank != 2 || !x.is_contiguous()) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "x shape {} is not a contiguous [rows, k] matrix", x.shape_string());
    }
    const int64_t rows = x.shape[0], k = x.shape[1];
    const DType d = m.codes.dtype;
    if (d != DType::kFloat8E4M3FN && d != DType::kFloat8E5M2 && d != DType::kFloat4E2M1) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "codes dtype {} is not FLOAT8_E4M3FN, FLOAT8_E5M2 or FLOAT4_E2M1",
                          dtype_name(d));
    }
    if (m.codes.rank != 2 || m.codes.shape[0] != rows || m.codes.shape[1] != k ||
        !m.codes.is_contiguous()) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "codes shape {} is not x's contiguous [{}, {}]", m.codes.shape_string(),
                          rows, k);
    }
    if (d == DType::kFloat4E2M1 && k % 2 != 0) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "k is {}, but FLOAT4 codes pack two elements per byte: it must be even",
                          k);
    }
    const int64_t pairs = ((k + 31) / 32 + 1) / 2;
    if (m.scales.dtype != DType::kFloat8E8M0 || m.scales.rank != 3 || m.scales.shape[0] != rows ||
        m.scales.shape[1] != pairs || m.scales.shape[2] != 2 || !m.scales.is_contiguous()) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "scales must be the contiguous FLOAT8_E8M0 [{}, {}, 2], got {} {}", rows,
                          pairs, dtype_name(m.scales.dtype), m.scales.shape_string());
    }
    if (rows * k > 0 &&
        (x.data == nullptr || m.codes.data == nullptr || m.scales.data == nullptr)) {
      return detail::fail(StatusCode::kParamNullptr, op, "x, codes or scales has no data");
    }
    if (rows * k == 0) return {};
    if (rule == MxScaleRule::kEven) return mx_even(x, m);
    DynamicMxQuantParams p;
    p.dst_type = d;
    p.scale_alg = rule == MxScaleRule::kFloor ? 0 : d == DType::kFloat4E2M1 ? 2 : 1;
    return dynamic_mx_quant({.x = x, .y = m.codes, .mxscale = m.scales}, p);
  });
}

}  // namespace mantissa::amp
