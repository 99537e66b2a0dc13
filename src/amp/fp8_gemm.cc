// Emulated FP8 matrix products (mantissa/amp/fp8_scaling.h): the operands decoded exactly to
// fp32 (bulk FP8 conversion, or AntiMxQuant for MX operands), MatMul in fp32, then the scale
// factor and the output's rounding.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/entry.h"
#include "core/validate.h"
#include "mantissa/amp/fp8_scaling.h"
#include "mantissa/convert.h"
#include "mantissa/lowp.h"
#include "mantissa/ops/anti_mx_quant.h"
#include "mantissa/ops/matmul.h"

namespace mantissa::amp {

namespace {

bool fp8_codes(DType d) { return d == DType::kFloat8E4M3FN || d == DType::kFloat8E5M2; }

// fp4: MX operands may also hold FLOAT4_E2M1 / FLOAT4_E1M2 codes (MXFP4).
Status check_matrix(std::string_view op, const char* name, const TensorView& t, bool fp4 = false) {
  const bool fp4_codes = t.dtype == DType::kFloat4E2M1 || t.dtype == DType::kFloat4E1M2;
  if (!fp8_codes(t.dtype) && !(fp4 && fp4_codes)) {
    return detail::fail(StatusCode::kParamInvalid, op, "{} dtype {} is not FLOAT8_E4M3FN or {}",
                        name, dtype_name(t.dtype),
                        fp4 ? "FLOAT8_E5M2, FLOAT4_E2M1, FLOAT4_E1M2" : "FLOAT8_E5M2");
  }
  if (t.rank != 2) {
    return detail::fail(StatusCode::kParamInvalid, op, "{} has rank {}; a matrix is rank 2", name,
                        t.rank);
  }
  if (!t.is_contiguous()) {
    return detail::fail(StatusCode::kParamInvalid, op, "{} must be contiguous", name);
  }
  if (t.data == nullptr && t.shape[0] * t.shape[1] > 0) {
    return detail::fail(StatusCode::kParamNullptr, op, "{} has no data", name);
  }
  return {};
}

Status check_out(std::string_view op, const TensorView& out, int64_t m, int64_t n) {
  if (out.dtype != DType::kFloat32 && out.dtype != DType::kFloat16 &&
      out.dtype != DType::kBFloat16) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "out dtype {} is not FLOAT, FLOAT16 or BFLOAT16", dtype_name(out.dtype));
  }
  if (out.rank != 2 || out.shape[0] != m || out.shape[1] != n || !out.is_contiguous()) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "out shape {} is not the contiguous [{}, {}] of the product",
                        out.shape_string(), m, n);
  }
  if (out.data == nullptr && m * n > 0) {
    return detail::fail(StatusCode::kParamNullptr, op, "out has no data");
  }
  return {};
}

std::vector<float> decode(const TensorView& codes) {
  const auto n = static_cast<std::size_t>(codes.shape[0] * codes.shape[1]);
  std::vector<float> v(n);
  if (n > 0)
    convert_lowp_to_fp32(codes.dtype, static_cast<const uint8_t*>(codes.data), v.data(), n);
  return v;
}

// The fp32 result, multiplied by `factor` unless it is 1, rounded once into out.
void store(std::vector<float>& r, float factor, const TensorView& out) {
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

Status product(const std::vector<float>& a, int64_t m, int64_t k, const std::vector<float>& b,
               int64_t n, bool b_is_nk, std::vector<float>& r) {
  r.assign(static_cast<std::size_t>(m * n), 0.0f);
  if (m == 0 || n == 0) return {};
  const TensorView av(const_cast<float*>(a.data()), DType::kFloat32, {m, k});
  const TensorView bv = b_is_nk ? TensorView(const_cast<float*>(b.data()), DType::kFloat32, {n, k})
                                : TensorView(const_cast<float*>(b.data()), DType::kFloat32, {k, n});
  const TensorView rv(r.data(), DType::kFloat32, {m, n});
  return matmul({.self = av, .mat2 = bv, .out = rv}, {.transpose_mat2 = b_is_nk});
}

}  // namespace

Status fp8_matmul(const Fp8Matrix& a, const Fp8Matrix& b, const TensorView& out, bool transpose_b) {
  constexpr std::string_view op = "fp8_matmul";
  return detail::guarded_entry(op, [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(check_matrix(op, "a", a.codes));
    MANTISSA_RETURN_IF_ERROR(check_matrix(op, "b", b.codes));
    const int64_t m = a.codes.shape[0], k = a.codes.shape[1];
    const int64_t bk = transpose_b ? b.codes.shape[1] : b.codes.shape[0];
    const int64_t n = transpose_b ? b.codes.shape[0] : b.codes.shape[1];
    if (bk != k) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "a is [{}, {}] but b{} has {} rows along k", m, k,
                          transpose_b ? " (transposed)" : "", bk);
    }
    MANTISSA_RETURN_IF_ERROR(check_out(op, out, m, n));
    std::vector<float> r;
    MANTISSA_RETURN_IF_ERROR(product(decode(a.codes), m, k, decode(b.codes), n, transpose_b, r));
    store(r, a.scale_inv * b.scale_inv, out);
    return {};
  });
}

Status mx_matmul(const MxMatrix& a, const MxMatrix& b, const TensorView& out) {
  constexpr std::string_view op = "mx_matmul";
  return detail::guarded_entry(op, [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(check_matrix(op, "a", a.codes, true));
    MANTISSA_RETURN_IF_ERROR(check_matrix(op, "b", b.codes, true));
    const int64_t m = a.codes.shape[0], k = a.codes.shape[1], n = b.codes.shape[0];
    if (b.codes.shape[1] != k) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "a is [{}, {}] but b is [{}, {}]: both are quantized along k", m, k, n,
                          b.codes.shape[1]);
    }
    MANTISSA_RETURN_IF_ERROR(check_out(op, out, m, n));
    std::vector<float> da(static_cast<std::size_t>(m * k)), db(static_cast<std::size_t>(n * k));
    const TensorView dav(da.data(), DType::kFloat32, {m, k});
    const TensorView dbv(db.data(), DType::kFloat32, {n, k});
    // AntiMxQuant validates the codes against their scales (dtype, layout) before writing.
    const AntiMxQuantParams p{.axis = -1, .dst_type = DType::kFloat32};
    Status s = anti_mx_quant({.x = a.codes, .mxscale = a.scales, .y = dav}, p);
    if (!s.ok()) return detail::fail(s.code(), op, "a: {}", s.message());
    s = anti_mx_quant({.x = b.codes, .mxscale = b.scales, .y = dbv}, p);
    if (!s.ok()) return detail::fail(s.code(), op, "b: {}", s.message());
    std::vector<float> r;
    MANTISSA_RETURN_IF_ERROR(product(da, m, k, db, n, true, r));
    store(r, 1.0f, out);
    return {};
  });
}

}  // namespace mantissa::amp
