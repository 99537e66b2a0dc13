// AntiMxQuant: contract and validation, then the element-wise kernel written once for every SIMD
// target. Per element (normative):
//   f = 2^(code - 127) as an fp32 value (code 0: the subnormal 2^-127), NaN for code 0xFF
//   y = round(fp32(x) * f)    x decoded exactly; one fp32 product; rounded once (RNE) to y's
//                             dtype, a NaN stored as the canonical NaN
// code is the element's block's: block l / 32 along the axis, in DynamicMxQuant's paired layout.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/anti_mx_quant/anti_mx_quant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <bit>
#include <cstdint>
#include <limits>

#include "core/lowp-inl.h"
#include "core/parallel.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "mantissa/lowp.h"
#include "ops/anti_mx_quant/anti_mx_quant_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// The factor of an E8M0 code.
inline float E8M0Factor(uint8_t code) {
  if (code == 0xFF) return std::numeric_limits<float>::quiet_NaN();
  if (code == 0) return std::bit_cast<float>(0x00400000u);  // 2^-127
  return std::bit_cast<float>(static_cast<uint32_t>(code) << 23);
}

template <MiniFloat kFmt, class YF, class D>
HWY_INLINE void Dequantize(D d, const uint8_t* HWY_RESTRICT x, hn::Vec<D> f,
                           typename YF::Storage* HWY_RESTRICT y) {
  StoreResult<YF>(d, hn::Mul(MiniFloatToF32<kFmt>(d, LoadCodes(d, x)), f), y);
}

// Rows [begin, end) of the [outer * length] rows of `inner` elements: each row's factors come
// from one pair row of mxscale (up to 256 columns at a time).
template <MiniFloat kFmt, class YF>
void AntiMxRows(const detail::AntiMxQuantKernelArgs& a, int64_t begin, int64_t end) {
  using YS = typename YF::Storage;
  YS* const y = static_cast<YS*>(a.y);
  constexpr int64_t kColumns = 256;
  HWY_ALIGN float factors[kColumns];
  for (int64_t row = begin; row < end; ++row) {
    const int64_t o = row / a.length, l = row % a.length, b = l / 32;
    const uint8_t* const codes = a.mxscale + ((o * a.pairs + b / 2) * a.inner) * 2 + (b % 2);
    for (int64_t c0 = 0; c0 < a.inner; c0 += kColumns) {
      const int64_t c1 = std::min(a.inner, c0 + kColumns);
      for (int64_t c = c0; c < c1; ++c) factors[c - c0] = E8M0Factor(codes[c * 2]);
      const int64_t base = row * a.inner;
      ForEachVector(base + c0, base + c1, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
        Dequantize<kFmt, YF>(d, a.x + i, hn::LoadU(d, factors + (i - base - c0)), y + i);
      });
    }
  }
}

// The last axis (inner 1): blocks [begin, end) of the outer * ceil(length / 32) blocks, each 32
// contiguous codes sharing one factor.
template <MiniFloat kFmt, class YF>
void AntiMxLastAxisBlocks(const detail::AntiMxQuantKernelArgs& a, int64_t begin, int64_t end) {
  using YS = typename YF::Storage;
  YS* const y = static_cast<YS*>(a.y);
  const int64_t blocks = (a.length + 31) / 32;
  for (int64_t task = begin; task < end; ++task) {
    const int64_t o = task / blocks, b = task % blocks;
    const float f = E8M0Factor(a.mxscale[(o * a.pairs + b / 2) * 2 + (b % 2)]);
    const int64_t base = o * a.length + b * 32;
    const int64_t stop = o * a.length + std::min(a.length, (b + 1) * 32);
    ForEachVector(base, stop, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      Dequantize<kFmt, YF>(d, a.x + i, hn::Set(d, f), y + i);
    });
  }
}

template <MiniFloat kFmt, class YF>
void AntiMxOut(const detail::AntiMxQuantKernelArgs& a) {
  if (a.inner == 1) {
    auto blocks = [&](int64_t b, int64_t e) { AntiMxLastAxisBlocks<kFmt, YF>(a, b, e); };
    detail::parallel_for(a.outer * ((a.length + 31) / 32), 1024, blocks);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, a.inner));
  auto body = [&](int64_t b, int64_t e) { AntiMxRows<kFmt, YF>(a, b, e); };
  detail::parallel_for(a.outer * a.length, grain, body);
}

template <MiniFloat kFmt>
void AntiMxFormat(const detail::AntiMxQuantKernelArgs& a) {
  switch (a.y_dtype) {
    case DType::kFloat16: AntiMxOut<kFmt, Fp16>(a); return;
    case DType::kBFloat16:
      VisitBf16([&](auto bf16) { AntiMxOut<kFmt, decltype(bf16)>(a); });
      return;
    default: AntiMxOut<kFmt, Fp32>(a); return;
  }
}

void AntiMxQuantImpl(const detail::AntiMxQuantKernelArgs& a) {
  if (a.x_dtype == DType::kFloat8E4M3FN) {
    AntiMxFormat<kE4M3>(a);
  } else {
    AntiMxFormat<kE5M2>(a);
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <vector>

#include "core/op_entry.h"
#include "mantissa/ops/anti_mx_quant.h"
#include "ops/anti_mx_quant/anti_mx_quant_desc.h"

namespace mantissa {

HWY_EXPORT(AntiMxQuantImpl);

namespace detail {
namespace {

// FLOAT4 x (two codes per byte, element 2i in the low nibble): each code's value (E2M1: 0, 0.5,
// 1, 1.5, 2, 3, 4, 6; E1M2: code / 4; sign in bit 3) times its block's factor in fp32, rounded
// once to y's dtype. Scalar: every target gives the same bits.
void run_fp4(const AntiMxQuantKernelArgs& a) {
  static constexpr float kE2M1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const bool e2m1 = a.x_dtype == DType::kFloat4E2M1;
  if (a.inner == 1 && a.y_dtype == DType::kFloat32) {
    // The last axis into fp32 (what the emulated MX products decode): per block of 32, the 16
    // signed values of its codes times its factor, then one lookup per element (the same
    // product, exact or not, as the general loop).
    auto* y = static_cast<float*>(a.y);
    const int64_t blocks = (a.length + kAntiMxBlock - 1) / kAntiMxBlock;
    auto block_body = [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t o = task / blocks, b = task % blocks;
        const uint8_t code = a.mxscale[(o * a.pairs + b / 2) * 2 + (b % 2)];
        const float f = code == 0xFF ? std::numeric_limits<float>::quiet_NaN()
                        : code == 0  ? 0x1p-127f
                                     : std::bit_cast<float>(static_cast<uint32_t>(code) << 23);
        float value[16];
        for (uint32_t x = 0; x < 16; ++x) {
          const float m = e2m1 ? kE2M1[x & 7u] : static_cast<float>(x & 7u) * 0.25f;
          const float v = ((x & 8u) ? -m : m) * f;
          value[x] = std::isnan(v) ? std::numeric_limits<float>::quiet_NaN() : v;
        }
        const int64_t l0 = b * kAntiMxBlock, n = std::min(a.length, l0 + kAntiMxBlock) - l0;
        const int64_t at = o * a.length + l0;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t i = at + j;
          y[i] = value[(a.x[i >> 1] >> (4 * (i & 1))) & 0x0Fu];
        }
      }
    };
    detail::parallel_for(a.outer * blocks, std::max<int64_t>(1, 32768 / kAntiMxBlock), block_body);
    return;
  }
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t o = row / a.length, l = row % a.length, b = l / kAntiMxBlock;
      const uint8_t* const codes = a.mxscale + ((o * a.pairs + b / 2) * a.inner) * 2 + (b % 2);
      for (int64_t c = 0; c < a.inner; ++c) {
        const int64_t i = row * a.inner + c;
        const uint32_t x = (a.x[i >> 1] >> (4 * (i & 1))) & 0x0Fu;
        const float m = e2m1 ? kE2M1[x & 7u] : static_cast<float>(x & 7u) * 0.25f;
        const uint8_t code = codes[c * 2];
        const float f = code == 0xFF ? std::numeric_limits<float>::quiet_NaN()
                        : code == 0  ? 0x1p-127f
                                     : std::bit_cast<float>(static_cast<uint32_t>(code) << 23);
        const float v = ((x & 8u) ? -m : m) * f;
        // NaN made canonical, then one rounding to y's dtype.
        store_from_float(a.y_dtype, a.y, static_cast<std::size_t>(i),
                         std::isnan(v) ? std::numeric_limits<float>::quiet_NaN() : v);
      }
    }
  };
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, a.inner));
  detail::parallel_for(a.outer * a.length, grain, body);
}

}  // namespace

Status check_anti_mx_quant_params(const AntiMxQuantTensors& t, const AntiMxQuantParams& p) {
  constexpr std::string_view op = AntiMxQuantOp::kType;
  const int rank = t.x.rank;
  if (p.axis < -rank || p.axis >= rank) {
    return fail(StatusCode::kParamInvalid, op, "axis {} is out of range for x of rank {}", p.axis,
                rank);
  }
  if ((t.x.dtype == DType::kFloat4E2M1 || t.x.dtype == DType::kFloat4E1M2) && rank > 0 &&
      t.x.shape[rank - 1] % 2 != 0) {
    return fail(StatusCode::kParamInvalid, op,
                "x's last dim is {}, but FLOAT4 x packs two elements per byte: it must be even "
                "(shape {})",
                t.x.shape[rank - 1], t.x.shape_string());
  }
  if (p.dst_type != DType::kFloat32 && p.dst_type != DType::kFloat16 &&
      p.dst_type != DType::kBFloat16) {
    return fail(StatusCode::kParamInvalid, op,
                "dst_type {} is not one of 0 (FLOAT), 1 (FLOAT16), 27 (BFLOAT16)",
                static_cast<int>(p.dst_type));
  }
  if (t.y.dtype != p.dst_type) {
    return fail(StatusCode::kParamInvalid, op, "y dtype {} differs from dst_type {}",
                dtype_name(t.y.dtype), dtype_name(p.dst_type));
  }
  const std::vector<int64_t> want =
      mx_scale_shape(t.x, DynamicMxQuantParams{.axis = p.axis, .blocksize = kAntiMxBlock});
  const std::vector<int64_t> got(t.mxscale.shape.begin(), t.mxscale.shape.begin() + t.mxscale.rank);
  if (got != want) {
    return fail(StatusCode::kParamInvalid, op,
                "mxscale shape {} differs from [{}] (x's shape with dim {} holding ceil(ceil({} / "
                "32) / 2) pairs, and a last dim of 2)",
                t.mxscale.shape_string(), fmt::join(want, ", "), p.axis,
                t.x.shape[(p.axis + rank) % rank]);
  }
  return {};
}

}  // namespace detail

Status anti_mx_quant_validate(const AntiMxQuantTensors& t, const AntiMxQuantParams& p) {
  return detail::validate<detail::AntiMxQuantOp>(t, p);
}

Status anti_mx_quant(const AntiMxQuantTensors& t, const AntiMxQuantParams& p, Workspace /*ws*/) {
  return detail::op_entry<detail::AntiMxQuantOp>(t, p, [&]() -> Status {
    const int rank = t.x.rank;
    const int axis = static_cast<int>((p.axis + rank) % rank);
    detail::AntiMxQuantKernelArgs a;
    a.x_dtype = t.x.dtype;
    a.y_dtype = t.y.dtype;
    for (int k = 0; k < axis; ++k) a.outer *= t.x.shape[k];
    a.length = t.x.shape[axis];
    for (int k = axis + 1; k < rank; ++k) a.inner *= t.x.shape[k];
    const int64_t blocks = (a.length + detail::kAntiMxBlock - 1) / detail::kAntiMxBlock;
    a.pairs = (blocks + 1) / 2;
    a.x = static_cast<const uint8_t*>(t.x.data);
    a.mxscale = static_cast<const uint8_t*>(t.mxscale.data);
    a.y = t.y.data;
    if (a.outer == 0 || a.length == 0 || a.inner == 0) return {};
    if (a.x_dtype == DType::kFloat4E2M1 || a.x_dtype == DType::kFloat4E1M2) {
      detail::run_fp4(a);
      return {};
    }
    HWY_DYNAMIC_DISPATCH(AntiMxQuantImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
