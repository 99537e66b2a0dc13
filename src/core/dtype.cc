// dtype names and sizes.
#include "mantissa/dtype.h"

#include <cstring>

namespace mantissa {
namespace {

struct DTypeInfo {
  DType dtype;
  std::size_t size;
  const char* name;
  const char* short_name;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kFloat32, 4, "FLOAT", "fp32"},
    {DType::kFloat16, 2, "FLOAT16", "fp16"},
    {DType::kBFloat16, 2, "BFLOAT16", "bf16"},
    {DType::kInt8, 1, "INT8", "int8"},
    {DType::kInt32, 4, "INT32", "int32"},
    {DType::kUInt8, 1, "UINT8", "uint8"},
    {DType::kInt16, 2, "INT16", "int16"},
    {DType::kUInt16, 2, "UINT16", "uint16"},
    {DType::kUInt32, 4, "UINT32", "uint32"},
    {DType::kInt64, 8, "INT64", "int64"},
    {DType::kUInt64, 8, "UINT64", "uint64"},
    {DType::kFloat64, 8, "DOUBLE", "fp64"},
    {DType::kBool, 1, "BOOL", "bool"},
    // Low-precision formats. Packed sub-byte types have size 0 (see dtype_bits).
    {DType::kInt4, 0, "INT4", "int4"},
    {DType::kHiFloat8, 1, "HIFLOAT8", "hif8"},
    {DType::kFloat8E5M2, 1, "FLOAT8_E5M2", "fp8_e5m2"},
    {DType::kFloat8E4M3FN, 1, "FLOAT8_E4M3FN", "fp8_e4m3"},
    {DType::kFloat8E8M0, 1, "FLOAT8_E8M0", "e8m0"},
    {DType::kFloat6E3M2, 1, "FLOAT6_E3M2", "fp6_e3m2"},
    {DType::kFloat6E2M3, 1, "FLOAT6_E2M3", "fp6_e2m3"},
    {DType::kFloat4E2M1, 0, "FLOAT4_E2M1", "fp4_e2m1"},
    {DType::kFloat4E1M2, 0, "FLOAT4_E1M2", "fp4_e1m2"},
};

const DTypeInfo* find(DType dtype) noexcept {
  for (const auto& info : kDTypes) {
    if (info.dtype == dtype) return &info;
  }
  return nullptr;
}

}  // namespace

std::size_t dtype_size(DType dtype) noexcept {
  const DTypeInfo* info = find(dtype);
  return info ? info->size : 0;
}

std::size_t dtype_bits(DType dtype) noexcept {
  if (dtype == DType::kInt4 || dtype == DType::kFloat4E2M1 || dtype == DType::kFloat4E1M2) {
    return 4;
  }
  return 8 * dtype_size(dtype);
}

const char* dtype_name(DType dtype) noexcept {
  const DTypeInfo* info = find(dtype);
  return info ? info->name : "UNDEFINED";
}

const char* dtype_short_name(DType dtype) noexcept {
  const DTypeInfo* info = find(dtype);
  return info ? info->short_name : "undefined";
}

DType dtype_from_name(const char* name) noexcept {
  if (name == nullptr) return DType::kUndefined;
  for (const auto& info : kDTypes) {
    if (std::strcmp(name, info.name) == 0 || std::strcmp(name, info.short_name) == 0) {
      return info.dtype;
    }
  }
  return DType::kUndefined;
}

}  // namespace mantissa
