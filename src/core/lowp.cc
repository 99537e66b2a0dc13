// Bulk fp32 <-> low-precision conversions (FP8, FP6, FP4, E8M0), one kernel for every SIMD
// target, with the bits of the scalar conversions in mantissa/lowp.h.
// clang-format off: foreach_target.h must come first; it re-includes this file once per target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/lowp.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>

#include "core/lowp-inl.h"
#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Codes are bytes; FP4 codes are packed two per byte afterwards (pack_fp4).
constexpr int64_t kLowpGrain = detail::kDefaultGrain * 4;  // even: FP4 pairs never split

template <MiniFloat kFmt, bool kSaturate>
void NarrowCodes(const float* in, uint8_t* out, int64_t begin, int64_t end) {
  ForEachVector(begin, end, [&](auto d, int64_t i) {
    StoreCodes(d, F32ToMiniFloat<kFmt, kSaturate>(d, hn::LoadU(d, in + i)), out + i);
  });
}

template <bool kSaturate>
void NarrowE8M0(const float* in, uint8_t* out, int64_t begin, int64_t end) {
  ForEachVector(begin, end, [&](auto d, int64_t i) {
    StoreCodes(d, F32ToE8M0<kSaturate>(d, hn::LoadU(d, in + i)), out + i);
  });
}

template <MiniFloat kFmt>
void WidenCodes(const uint8_t* in, float* out, int64_t begin, int64_t end) {
  ForEachVector(begin, end, [&](auto d, int64_t i) {
    hn::StoreU(MiniFloatToF32<kFmt>(d, LoadCodes(d, in + i)), d, out + i);
  });
}

void WidenE8M0(const uint8_t* in, float* out, int64_t begin, int64_t end) {
  ForEachVector(begin, end, [&](auto d, int64_t i) {
    hn::StoreU(E8M0ToF32(d, LoadCodes(d, in + i)), d, out + i);
  });
}

template <MiniFloat kFmt, bool kSaturate>
void NarrowRange(const float* in, uint8_t* out, int64_t n) {
  auto chunk = [&](int64_t b, int64_t e) { NarrowCodes<kFmt, kSaturate>(in, out, b, e); };
  detail::parallel_for(n, kLowpGrain, chunk);
}

// FP4: codes of a block of elements into a small buffer, then packed (element 2i low nibble).
template <bool kSaturate>
void NarrowFp4Range(const float* in, uint8_t* out, int64_t n) {
  auto chunk = [&](int64_t b, int64_t e) {
    constexpr int64_t kBlock = 1024;
    alignas(64) uint8_t codes[kBlock];
    for (int64_t s = b; s < e; s += kBlock) {
      const int64_t len = std::min(kBlock, e - s);
      NarrowCodes<kE2M1, kSaturate>(in + s, codes, 0, len);
      for (int64_t j = 0; j < len; j += 2) {
        const uint32_t high = j + 1 < len ? codes[j + 1] : 0u;
        out[(s + j) / 2] = static_cast<uint8_t>(codes[j] | (high << 4));
      }
    }
  };
  detail::parallel_for(n, kLowpGrain, chunk);
}

void WidenFp4Range(const uint8_t* in, float* out, int64_t n) {
  auto chunk = [&](int64_t b, int64_t e) {
    constexpr int64_t kBlock = 1024;
    alignas(64) uint8_t codes[kBlock];
    for (int64_t s = b; s < e; s += kBlock) {
      const int64_t len = std::min(kBlock, e - s);
      for (int64_t j = 0; j < len; ++j) codes[j] = (in[(s + j) / 2] >> (((s + j) % 2) * 4)) & 0xF;
      WidenCodes<kE2M1>(codes, out + s, 0, len);
    }
  };
  detail::parallel_for(n, kLowpGrain, chunk);
}

// Returns false for a dtype that is not a low-precision float format.
bool F32ToLowpImpl(DType dtype, const float* in, uint8_t* out, int64_t n, bool saturate) {
  auto run = [&]<MiniFloat kFmt>() {
    if (saturate) {
      NarrowRange<kFmt, true>(in, out, n);
    } else {
      NarrowRange<kFmt, false>(in, out, n);
    }
  };
  switch (dtype) {
    case DType::kFloat8E4M3FN: run.template operator()<kE4M3>(); return true;
    case DType::kFloat8E5M2: run.template operator()<kE5M2>(); return true;
    case DType::kFloat6E3M2: run.template operator()<kE3M2>(); return true;
    case DType::kFloat6E2M3: run.template operator()<kE2M3>(); return true;
    case DType::kFloat4E2M1:
      // FP4 has no infinity or NaN: it always saturates.
      NarrowFp4Range<true>(in, out, n);
      return true;
    case DType::kFloat8E8M0: {
      auto chunk = [&](int64_t b, int64_t e) {
        if (saturate) {
          NarrowE8M0<true>(in, out, b, e);
        } else {
          NarrowE8M0<false>(in, out, b, e);
        }
      };
      detail::parallel_for(n, kLowpGrain, chunk);
      return true;
    }
    default: return false;
  }
}

bool LowpToF32Impl(DType dtype, const uint8_t* in, float* out, int64_t n) {
  auto run = [&]<MiniFloat kFmt>() {
    auto chunk = [&](int64_t b, int64_t e) { WidenCodes<kFmt>(in, out, b, e); };
    detail::parallel_for(n, kLowpGrain, chunk);
  };
  switch (dtype) {
    case DType::kFloat8E4M3FN: run.template operator()<kE4M3>(); return true;
    case DType::kFloat8E5M2: run.template operator()<kE5M2>(); return true;
    case DType::kFloat6E3M2: run.template operator()<kE3M2>(); return true;
    case DType::kFloat6E2M3: run.template operator()<kE2M3>(); return true;
    case DType::kFloat4E2M1: WidenFp4Range(in, out, n); return true;
    case DType::kFloat8E8M0: {
      auto chunk = [&](int64_t b, int64_t e) { WidenE8M0(in, out, b, e); };
      detail::parallel_for(n, kLowpGrain, chunk);
      return true;
    }
    default: return false;
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/runtime_internal.h"
#include "mantissa/lowp.h"

namespace mantissa {

HWY_EXPORT(F32ToLowpImpl);
HWY_EXPORT(LowpToF32Impl);

bool convert_fp32_to_lowp(DType dtype, const float* src, uint8_t* dst, std::size_t n,
                          bool saturate) {
  detail::ensure_runtime_initialized();
  return HWY_DYNAMIC_DISPATCH(F32ToLowpImpl)(dtype, src, dst, static_cast<int64_t>(n), saturate);
}

bool convert_lowp_to_fp32(DType dtype, const uint8_t* src, float* dst, std::size_t n) {
  detail::ensure_runtime_initialized();
  return HWY_DYNAMIC_DISPATCH(LowpToF32Impl)(dtype, src, dst, static_cast<int64_t>(n));
}

}  // namespace mantissa
#endif  // HWY_ONCE
