// Microscaling (OCP MX v1.0): block quantization along the last dimension, 32 elements sharing
// one E8M0 scale. MXFP8 (E4M3, E5M2), MXFP6 (E3M2, E2M3), MXFP4 (E2M1) and MXINT8.
//
// For each block of (up to) 32 consecutive elements of a row:
//   shared_exp = floor(log2(max(amax, 2^-126))) - emax_elem, at least -127    (OCP rule; the
//                2^-126 floor for an all-zero block is the OCP reference implementation's)
//   scale      = 2^shared_exp, stored as the E8M0 code shared_exp + 127; NaN (0xFF) when the
//                block holds an infinity or a NaN (its elements are then stored as 0)
//   element    = x / scale, rounded to nearest even and saturated to the element format
//                (MXINT8: round(x / scale * 64) clamped to [-127, 127], values q / 64)
// emax_elem is the exponent of the element format's largest value: E4M3 8, E5M2 15, E3M2 4,
// E2M3 2, E2M1 2, INT8 0. x / scale is a division by a power of two in fp32, exact except below
// fp32's normal range, far below every element format's smallest step, where both round to 0.
// Dequantization is element value * scale, one fp32 multiplication (correctly rounded).
//
// Layout: x is rows x cols, row-major. Elements: one byte each (FP8, FP6 in the low six bits,
// INT8 as int8), FP4 packed two per byte, element 2i in the low nibble, each row starting on a
// byte (rows of odd length end with a zero high nibble). Scales: rows x ceil(cols / 32) codes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mantissa/export.h"
#include "mantissa/status.h"

namespace mantissa {

enum class MxFormat : uint8_t { kFp8E4M3, kFp8E5M2, kFp6E3M2, kFp6E2M3, kFp4E2M1, kInt8 };

inline constexpr int64_t kMxBlockSize = 32;

// "mxfp8_e4m3", "mxfp8_e5m2", "mxfp6_e3m2", "mxfp6_e2m3", "mxfp4_e2m1", "mxint8".
MANTISSA_API const char* mx_format_name(MxFormat f) noexcept;
// Bytes of the element buffer and number of scale codes for a rows x cols tensor.
MANTISSA_API int64_t mx_element_bytes(MxFormat f, int64_t rows, int64_t cols) noexcept;
MANTISSA_API int64_t mx_scale_count(int64_t rows, int64_t cols) noexcept;

// Quantizes x (fp32, rows x cols) into elements and scales. Deterministic: the same bits for
// every SIMD target and thread count. 161001 for null pointers with a non-empty tensor, 161002
// for negative sizes.
MANTISSA_API Status mx_quantize(MxFormat f, const float* x, int64_t rows, int64_t cols,
                                uint8_t* elements, uint8_t* scales);
MANTISSA_API Status mx_dequantize(MxFormat f, const uint8_t* elements, const uint8_t* scales,
                                  int64_t rows, int64_t cols, float* x);

}  // namespace mantissa
