// Microscaling block quantize/dequantize (OCP MX v1.0; see include/mantissa/mx.h). The library's
// own operator: CANN has no aclnn or graph counterpart, so it has no descriptor and is reached
// through the C++ API only. Blocks are independent and the block maximum is order-free, so the
// scalar conversions of lowp.h give the same bits whatever the thread count.
#include "mantissa/mx.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

#include "core/entry.h"
#include "core/parallel.h"
#include "core/runtime_internal.h"
#include "core/validate.h"
#include "mantissa/lowp.h"

namespace mantissa {
namespace {

const MiniFloat* element_format(MxFormat f) {
  switch (f) {
    case MxFormat::kFp8E4M3: return &kE4M3;
    case MxFormat::kFp8E5M2: return &kE5M2;
    case MxFormat::kFp6E3M2: return &kE3M2;
    case MxFormat::kFp6E2M3: return &kE2M3;
    case MxFormat::kFp4E2M1: return &kE2M1;
    case MxFormat::kInt8: break;
  }
  return nullptr;
}

// Exponent of the element format's largest value.
int emax_elem(MxFormat f) {
  switch (f) {
    case MxFormat::kFp8E4M3: return 8;
    case MxFormat::kFp8E5M2: return 15;
    case MxFormat::kFp6E3M2: return 4;
    case MxFormat::kFp6E2M3:
    case MxFormat::kFp4E2M1: return 2;
    case MxFormat::kInt8: break;
  }
  return 0;
}

int64_t row_bytes(MxFormat f, int64_t cols) {
  return f == MxFormat::kFp4E2M1 ? (cols + 1) / 2 : cols;
}

// floor(log2(a)) for a finite a >= 2^-126 (a normal fp32), from the exponent field.
int floor_log2(float a) { return static_cast<int>(std::bit_cast<uint32_t>(a) >> 23) - 127; }

Status check_args(const char* fn, MxFormat f, const void* a, const void* b, const void* c,
                  int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0) {
    return Status(StatusCode::kParamInvalid,
                  fmt::format("{}: rows {} and cols {} must not be negative", fn, rows, cols));
  }
  if (static_cast<uint8_t>(f) > static_cast<uint8_t>(MxFormat::kInt8)) {
    return Status(StatusCode::kParamInvalid,
                  fmt::format("{}: format {} is not an MX format", fn, static_cast<int>(f)));
  }
  if (rows != 0 && cols != 0 && (a == nullptr || b == nullptr || c == nullptr)) {
    return Status(StatusCode::kParamNullptr, fmt::format("{}: a buffer is null", fn));
  }
  return {};
}

}  // namespace

const char* mx_format_name(MxFormat f) noexcept {
  switch (f) {
    case MxFormat::kFp8E4M3: return "mxfp8_e4m3";
    case MxFormat::kFp8E5M2: return "mxfp8_e5m2";
    case MxFormat::kFp6E3M2: return "mxfp6_e3m2";
    case MxFormat::kFp6E2M3: return "mxfp6_e2m3";
    case MxFormat::kFp4E2M1: return "mxfp4_e2m1";
    case MxFormat::kInt8: return "mxint8";
  }
  return "unknown";
}

int64_t mx_element_bytes(MxFormat f, int64_t rows, int64_t cols) noexcept {
  return rows * row_bytes(f, cols);
}

int64_t mx_scale_count(int64_t rows, int64_t cols) noexcept {
  return rows * ((cols + kMxBlockSize - 1) / kMxBlockSize);
}

Status mx_quantize(MxFormat f, const float* x, int64_t rows, int64_t cols, uint8_t* elements,
                   uint8_t* scales) {
  return detail::guarded_entry("mx_quantize", [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(check_args("mx_quantize", f, x, elements, scales, rows, cols));
    if (rows == 0 || cols == 0) return {};
    detail::ensure_runtime_initialized();
    const MiniFloat* fmt = element_format(f);
    const int emax = emax_elem(f);
    const int64_t blocks_per_row = (cols + kMxBlockSize - 1) / kMxBlockSize;
    const int64_t stride = row_bytes(f, cols);
    auto chunk = [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t r = b / blocks_per_row, c0 = (b % blocks_per_row) * kMxBlockSize;
        const int64_t c1 = std::min(cols, c0 + kMxBlockSize);
        const float* in = x + r * cols;
        uint8_t* out = elements + r * stride;
        float amax = 0.0f;
        bool finite = true;
        for (int64_t c = c0; c < c1; ++c) {
          finite = finite && std::isfinite(in[c]);
          amax = std::max(amax, std::fabs(in[c]));
        }
        auto put = [&](int64_t c, uint32_t code) {
          if (f == MxFormat::kFp4E2M1) {
            set_packed_nibble(out, static_cast<std::size_t>(c), code);
          } else {
            out[c] = static_cast<uint8_t>(code);
          }
        };
        if (!finite) {
          scales[b] = 0xFF;
          for (int64_t c = c0; c < c1; ++c) put(c, 0);
        } else {
          const int shared_exp = std::max(-127, floor_log2(std::max(amax, 0x1p-126f)) - emax);
          scales[b] = static_cast<uint8_t>(shared_exp + 127);
          // 1 / scale = 2^-shared_exp, in [2^-127, 2^127]: an exact fp32 value.
          const float inv_scale = std::ldexp(1.0f, -shared_exp);
          for (int64_t c = c0; c < c1; ++c) {
            const float v = in[c] * inv_scale;
            if (fmt != nullptr) {
              put(c, float_to_minifloat(*fmt, v, true));
            } else {
              // MXINT8: units of 2^-6, symmetric range. v * 64 is exact (a power of two).
              const float q = std::clamp(std::nearbyint(v * 64.0f), -127.0f, 127.0f);
              put(c, static_cast<uint8_t>(static_cast<int8_t>(q)));
            }
          }
        }
        // An odd-length FP4 row ends with a zero high nibble.
        if (f == MxFormat::kFp4E2M1 && c1 == cols && cols % 2 == 1) {
          set_packed_nibble(out, static_cast<std::size_t>(cols), 0);
        }
      }
    };
    detail::parallel_for(rows * blocks_per_row, 1024, chunk);
    return {};
  });
}

Status mx_dequantize(MxFormat f, const uint8_t* elements, const uint8_t* scales, int64_t rows,
                     int64_t cols, float* x) {
  return detail::guarded_entry("mx_dequantize", [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(check_args("mx_dequantize", f, elements, scales, x, rows, cols));
    if (rows == 0 || cols == 0) return {};
    detail::ensure_runtime_initialized();
    const MiniFloat* fmt = element_format(f);
    const int64_t blocks_per_row = (cols + kMxBlockSize - 1) / kMxBlockSize;
    const int64_t stride = row_bytes(f, cols);
    auto chunk = [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const int64_t r = b / blocks_per_row, c0 = (b % blocks_per_row) * kMxBlockSize;
        const int64_t c1 = std::min(cols, c0 + kMxBlockSize);
        const uint8_t* in = elements + r * stride;
        const float scale = e8m0_to_float(scales[b]);
        for (int64_t c = c0; c < c1; ++c) {
          float v;
          if (f == MxFormat::kFp4E2M1) {
            v = minifloat_to_float(*fmt, packed_nibble(in, static_cast<std::size_t>(c)));
          } else if (fmt != nullptr) {
            v = minifloat_to_float(*fmt, in[c]);
          } else {
            v = static_cast<float>(static_cast<int8_t>(in[c])) * 0x1p-6f;  // exact
          }
          x[r * cols + c] = v * scale;
        }
      }
    };
    detail::parallel_for(rows * blocks_per_row, 1024, chunk);
    return {};
  });
}

}  // namespace mantissa
