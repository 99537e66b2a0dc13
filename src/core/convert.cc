// Bulk fp32 <-> fp16/bf16 conversion, one kernel for every SIMD target; and the description of
// each target's conversions.
// clang-format off: foreach_target.h must come first; it re-includes this file once per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/convert.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

template <class From, class To>
void ConvertRange(const void* src, void* dst, int64_t n) {
  auto chunk = [src, dst](int64_t begin, int64_t end) {
    // Locals of the chunk, kept in registers across the stores (as in ops/sgd/sgd.cc).
    const auto* const in = static_cast<const typename From::Storage*>(src);
    auto* const out = static_cast<typename To::Storage*>(dst);
    ForEachVector(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      StoreF32<To>(d, LoadF32<From>(d, in + i), out + i);
    });
  };
  detail::parallel_for(n, detail::kDefaultGrain * 4, chunk);
}

void F32ToF16Impl(const void* s, void* d, int64_t n) { ConvertRange<Fp32, Fp16>(s, d, n); }
void F32ToBf16Impl(const void* s, void* d, int64_t n) {
  VisitBf16([&](auto bf16) { ConvertRange<Fp32, decltype(bf16)>(s, d, n); });
}
void F16ToF32Impl(const void* s, void* d, int64_t n) { ConvertRange<Fp16, Fp32>(s, d, n); }
void Bf16ToF32Impl(const void* s, void* d, int64_t n) { ConvertRange<Bf16, Fp32>(s, d, n); }

// The name of the target this copy was compiled for.
const char* DispatchedTargetImpl() { return hwy::TargetName(HWY_TARGET); }

// Two static strings: no std::string is built in target-specific code.
void ConversionPathsImpl(const char** fp16, const char** bf16) {
  *fp16 = ConversionPathFp16();
  *bf16 = ConversionPathBf16();
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <string>

#include "core/fpenv.h"
#include "core/runtime_internal.h"
#include "mantissa/convert.h"
#include "mantissa/runtime.h"

namespace mantissa {

HWY_EXPORT(F32ToF16Impl);
HWY_EXPORT(F32ToBf16Impl);
HWY_EXPORT(F16ToF32Impl);
HWY_EXPORT(Bf16ToF32Impl);
HWY_EXPORT(ConversionPathsImpl);
HWY_EXPORT(DispatchedTargetImpl);

void convert_fp32_to_fp16(const float* src, uint16_t* dst, std::size_t n) {
  const detail::DefaultFpEnv fp_env;  // the default environment, whatever the caller set
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(F32ToF16Impl)(src, dst, static_cast<int64_t>(n));
}
void convert_fp32_to_bf16(const float* src, uint16_t* dst, std::size_t n) {
  const detail::DefaultFpEnv fp_env;  // the default environment, whatever the caller set
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(F32ToBf16Impl)(src, dst, static_cast<int64_t>(n));
}
void convert_fp16_to_fp32(const uint16_t* src, float* dst, std::size_t n) {
  const detail::DefaultFpEnv fp_env;  // the default environment, whatever the caller set
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(F16ToF32Impl)(src, dst, static_cast<int64_t>(n));
}
void convert_bf16_to_fp32(const uint16_t* src, float* dst, std::size_t n) {
  const detail::DefaultFpEnv fp_env;  // the default environment, whatever the caller set
  detail::ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(Bf16ToF32Impl)(src, dst, static_cast<int64_t>(n));
}

std::string dispatched_simd_target() {
  detail::ensure_runtime_initialized();
  std::string name = HWY_DYNAMIC_DISPATCH(DispatchedTargetImpl)();
  if (detail::bf16_conversion_instructions()) name += "_BF16";  // the pseudo-target's narrowing
  return name;
}

std::string conversion_paths() {
  detail::ensure_runtime_initialized();
  const char* fp16 = nullptr;
  const char* bf16 = nullptr;
  HWY_DYNAMIC_DISPATCH(ConversionPathsImpl)(&fp16, &bf16);
  return std::string("fp16: ") + fp16 + "; bf16: " + bf16;
}

}  // namespace mantissa
#endif  // HWY_ONCE
