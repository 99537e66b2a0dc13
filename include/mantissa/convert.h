// Bulk conversions between fp32 and fp16/bf16 bit patterns, SIMD and multithreaded, with the
// same bits as the scalar conversions in dtype.h on every target.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mantissa/export.h"

namespace mantissa {

MANTISSA_API void convert_fp32_to_fp16(const float* src, uint16_t* dst, std::size_t n);
MANTISSA_API void convert_fp32_to_bf16(const float* src, uint16_t* dst, std::size_t n);
MANTISSA_API void convert_fp16_to_fp32(const uint16_t* src, float* dst, std::size_t n);
MANTISSA_API void convert_bf16_to_fp32(const uint16_t* src, float* dst, std::size_t n);

}  // namespace mantissa
