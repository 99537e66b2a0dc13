// Round-trip error of the low-precision formats (the table in docs/quantization.md): fp16, bf16,
// INT8 per tensor, FP8 E4M3/E5M2 per tensor, and the MX formats, on normal, heavy-tailed and
// outlier data. Deterministic: fixed seeds, so the printed numbers are reproducible.
//   build/examples/example_mx_error_table
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "mantissa/convert.h"
#include "mantissa/dtype.h"
#include "mantissa/lowp.h"
#include "mantissa/mx.h"

namespace {

constexpr int64_t kRows = 1024, kCols = 1024;

std::vector<float> make_data(const std::string& kind) {
  std::mt19937_64 rng(2024);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::student_t_distribution<double> heavy(3.0);
  std::vector<float> x(kRows * kCols);
  for (std::size_t i = 0; i < x.size(); ++i) {
    double v = normal(rng);
    if (kind == "heavy-tailed") v = heavy(rng);
    if (kind == "outliers" && i % 1000 == 7) v *= 1000.0;  // 0.1% of values 1000x larger
    x[i] = static_cast<float>(v);
  }
  return x;
}

struct Error {
  double snr_db, max_abs;
};

Error measure(const std::vector<float>& x, const std::vector<float>& y) {
  double signal = 0, noise = 0, max_abs = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - y[i];
    signal += static_cast<double>(x[i]) * x[i];
    noise += d * d;
    max_abs = std::max(max_abs, std::fabs(d));
  }
  return {noise == 0 ? INFINITY : 10 * std::log10(signal / noise), max_abs};
}

float absmax(const std::vector<float>& x) {
  float m = 0;
  for (float v : x) m = std::max(m, std::fabs(v));
  return m;
}

// A per-tensor scaled cast: x / s rounded to the format (saturating), times s; s = amax / max.
std::vector<float> per_tensor_fp8(const std::vector<float>& x, mantissa::DType dtype, float max) {
  const float s = absmax(x) / max;
  std::vector<float> scaled(x.size()), back(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) scaled[i] = x[i] / s;
  std::vector<uint8_t> codes(x.size());
  mantissa::convert_fp32_to_lowp(dtype, scaled.data(), codes.data(), x.size(), true);
  mantissa::convert_lowp_to_fp32(dtype, codes.data(), back.data(), x.size());
  for (float& v : back) v *= s;
  return back;
}

}  // namespace

int main() {
  using mantissa::MxFormat;
  const char* kinds[] = {"normal", "heavy-tailed", "outliers"};
  std::vector<std::pair<std::string, std::function<std::vector<float>(const std::vector<float>&)>>>
      formats;
  formats.push_back({"fp16", [](const std::vector<float>& x) {
                       std::vector<uint16_t> h(x.size());
                       std::vector<float> y(x.size());
                       mantissa::convert_fp32_to_fp16(x.data(), h.data(), x.size());
                       mantissa::convert_fp16_to_fp32(h.data(), y.data(), x.size());
                       return y;
                     }});
  formats.push_back({"bf16", [](const std::vector<float>& x) {
                       std::vector<uint16_t> h(x.size());
                       std::vector<float> y(x.size());
                       mantissa::convert_fp32_to_bf16(x.data(), h.data(), x.size());
                       mantissa::convert_bf16_to_fp32(h.data(), y.data(), x.size());
                       return y;
                     }});
  formats.push_back({"int8 per tensor", [](const std::vector<float>& x) {
                       const float s = absmax(x) / 127.0f;
                       std::vector<float> y(x.size());
                       for (std::size_t i = 0; i < x.size(); ++i) {
                         y[i] = std::nearbyint(x[i] / s) * s;
                       }
                       return y;
                     }});
  formats.push_back({"fp8 e4m3 per tensor", [](const std::vector<float>& x) {
                       return per_tensor_fp8(x, mantissa::DType::kFloat8E4M3FN, 448.0f);
                     }});
  formats.push_back({"fp8 e5m2 per tensor", [](const std::vector<float>& x) {
                       return per_tensor_fp8(x, mantissa::DType::kFloat8E5M2, 57344.0f);
                     }});
  for (MxFormat f : {MxFormat::kFp8E4M3, MxFormat::kFp8E5M2, MxFormat::kFp6E3M2, MxFormat::kFp6E2M3,
                     MxFormat::kFp4E2M1, MxFormat::kInt8}) {
    formats.push_back(
        {mantissa::mx_format_name(f), [f](const std::vector<float>& x) {
           std::vector<uint8_t> e(mantissa::mx_element_bytes(f, kRows, kCols));
           std::vector<uint8_t> s(mantissa::mx_scale_count(kRows, kCols));
           std::vector<float> y(x.size());
           if (!mantissa::mx_quantize(f, x.data(), kRows, kCols, e.data(), s.data()).ok() ||
               !mantissa::mx_dequantize(f, e.data(), s.data(), kRows, kCols, y.data()).ok()) {
             std::fprintf(stderr, "mx round trip failed\n");
           }
           return y;
         }});
  }
  std::printf(
      "| format | normal SNR dB | normal max err | heavy-tailed SNR dB | heavy-tailed max "
      "err | outliers SNR dB | outliers max err |\n|---|---|---|---|---|---|---|\n");
  std::vector<std::vector<float>> data;
  for (const char* k : kinds) data.push_back(make_data(k));
  for (const auto& [name, round_trip] : formats) {
    std::printf("| %s |", name.c_str());
    for (const auto& x : data) {
      const Error e = measure(x, round_trip(x));
      std::printf(" %.2f | %.3g |", e.snr_db, e.max_abs);
    }
    std::printf("\n");
  }
  return 0;
}
