// DynamicMxQuant: contract and validation, then the kernel written once for every SIMD target.
// Per block (normative):
//   amax  = max |x| over the block, exact (NaN when an element is NaN)
//   code  = mx_block_scale(amax): the E8M0 code and the factor r = 2^(127 - code), by the rule
//           scale_alg names (below, in mx_block_scale)
//   y     = FP8(fp32(x) * r): one fp32 product (exact: r is a power of two and the products
//           stay in fp32's normal range, or round to an FP8 zero), then round to nearest even,
//           saturating to +-max; NaN gives the canonical NaN code
// Blocks run along the quantized axis; a block with inner > 1 is handled as a strip of `inner`
// columns, vectorised across them. Each block is independent, so the bits depend on neither the
// target nor the thread count.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/dynamic_mx_quant/dynamic_mx_quant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cstdint>

#include "core/parallel.h"
#include "core/reduce-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/dynamic_mx_quant/dynamic_mx_quant_kernel.h"
#include "ops/quantize/quantize-inl.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// y = FP8(x * r) for elements [begin, end) of a contiguous run, one factor for all.
template <class XF, class Q>
HWY_INLINE void ScaleRun(const typename XF::Storage* HWY_RESTRICT x, uint8_t* HWY_RESTRICT y,
                         int64_t begin, int64_t end, float r) {
  ForEachVector(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
    StoreQuantized<Q>(d, hn::Mul(LoadF32<XF>(d, x + i), hn::Set(d, r)), y + i);
  });
}

// The quantized axis is the last (inner == 1): each block is a contiguous run.
template <class XF, class Q>
void MxRows(const detail::DynamicMxQuantKernelArgs& a, int64_t row_begin, int64_t row_end) {
  using XS = typename XF::Storage;
  const XS* const x = static_cast<const XS*>(a.x);
  const int64_t blocks = (a.length + a.blocksize - 1) / a.blocksize;
  const int64_t pairs = (blocks + 1) / 2;
  for (int64_t row = row_begin; row < row_end; ++row) {
    const int64_t base = row * a.length;
    uint8_t* const codes = a.mxscale + row * pairs * 2;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t begin = base + b * a.blocksize;
      const int64_t len = std::min(a.blocksize, a.length - b * a.blocksize);
      const float amax = MaxValue(MaxBlock(MaxTerm<XF, true>{x}, begin, len));
      const detail::MxBlockScale s =
          detail::mx_block_scale(amax, a.y_dtype, a.scale_alg, a.max_low_bound);
      codes[b] = s.code;
      ScaleRun<XF, Q>(x, a.y, begin, begin + len, s.recip);
    }
    if (blocks % 2 == 1) codes[blocks] = 0;  // the pad of an odd count
  }
}

// A quantized axis before the last (inner > 1): block b of row `o` is the rows l of the
// [length, inner] slab in [b * blocksize, ...); its columns are independent blocks.
template <class XF, class Q>
void MxSlabs(const detail::DynamicMxQuantKernelArgs& a, int64_t task_begin, int64_t task_end) {
  using XS = typename XF::Storage;
  const XS* const x = static_cast<const XS*>(a.x);
  const int64_t blocks = (a.length + a.blocksize - 1) / a.blocksize;
  const int64_t pairs = (blocks + 1) / 2;
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  HWY_ALIGN float amax[hn::MaxLanes(d)];
  HWY_ALIGN float recip[hn::MaxLanes(d)];
  // One task: one (o, block) pair; all its columns.
  for (int64_t task = task_begin; task < task_end; ++task) {
    const int64_t o = task / blocks, b = task % blocks;
    const int64_t l0 = b * a.blocksize, l1 = std::min(a.length, l0 + a.blocksize);
    uint8_t* const codes = a.mxscale + ((o * pairs + b / 2) * a.inner) * 2 + (b % 2);
    const auto one_strip = [&](auto dd, int64_t i0) {
      const int64_t n = static_cast<int64_t>(hn::Lanes(dd));
      auto m = hn::Zero(dd);
      auto nan = hn::Lt(m, m);
      for (int64_t l = l0; l < l1; ++l) {
        const int64_t at = (o * a.length + l) * a.inner + i0;
        AccumulateMax(dd, m, nan, hn::Abs(LoadF32<XF>(dd, x + at)));
      }
      const auto qnan = hn::Set(dd, std::numeric_limits<float>::quiet_NaN());
      hn::StoreU(hn::IfThenElse(nan, qnan, m), dd, amax);
      for (int64_t j = 0; j < n; ++j) {
        const detail::MxBlockScale s =
            detail::mx_block_scale(amax[j], a.y_dtype, a.scale_alg, a.max_low_bound);
        codes[(i0 + j) * 2] = s.code;
        recip[j] = s.recip;
      }
      const auto r = hn::LoadU(dd, recip);
      for (int64_t l = l0; l < l1; ++l) {
        const int64_t at = (o * a.length + l) * a.inner + i0;
        StoreQuantized<Q>(dd, hn::Mul(LoadF32<XF>(dd, x + at), r), a.y + at);
      }
    };
    int64_t i = 0;
    for (; i + lanes <= a.inner; i += lanes) one_strip(d, i);
    for (; i < a.inner; ++i) one_strip(d1, i);
    // The pad of an odd count: the second code of the last pair.
    if (b == blocks - 1 && blocks % 2 == 1) {
      for (int64_t c = 0; c < a.inner; ++c) codes[c * 2 + 1] = 0;
    }
  }
}

template <class XF, class Q>
void MxOut(const detail::DynamicMxQuantKernelArgs& a) {
  const int64_t blocks = (a.length + a.blocksize - 1) / a.blocksize;
  if (a.inner == 1) {
    // Rows per piece: about kMxChunk elements.
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, a.length));
    auto body = [&](int64_t b, int64_t e) { MxRows<XF, Q>(a, b, e); };
    detail::parallel_for(a.outer, grain, body);
  } else {
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, a.blocksize * a.inner));
    auto body = [&](int64_t b, int64_t e) { MxSlabs<XF, Q>(a, b, e); };
    detail::parallel_for(a.outer * blocks, grain, body);
  }
}

template <class XF>
void MxFormat(const detail::DynamicMxQuantKernelArgs& a) {
  if (a.y_dtype == DType::kFloat8E4M3FN) {
    MxOut<XF, QE4M3>(a);
  } else {
    MxOut<XF, QE5M2>(a);
  }
}

void DynamicMxQuantImpl(const detail::DynamicMxQuantKernelArgs& a) {
  switch (a.x_dtype) {
    case DType::kFloat16: MxFormat<Fp16>(a); return;
    case DType::kBFloat16: MxFormat<Bf16>(a); return;
    default: MxFormat<Fp32>(a); return;
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/op_entry.h"
#include "core/parallel.h"
#include "mantissa/convert.h"
#include "mantissa/lowp.h"
#include "mantissa/ops/dynamic_mx_quant.h"
#include "ops/dynamic_mx_quant/dynamic_mx_quant_desc.h"

namespace mantissa {

HWY_EXPORT(DynamicMxQuantImpl);

const char* mx_round_mode_name(MxRoundMode mode) noexcept {
  switch (mode) {
    case MxRoundMode::kRint: return "rint";
    case MxRoundMode::kFloor: return "floor";
    case MxRoundMode::kRound: return "round";
  }
  return "";
}

bool mx_round_mode_from_name(const char* name, MxRoundMode& mode) noexcept {
  if (name == nullptr) return false;
  for (const MxRoundMode m : {MxRoundMode::kRint, MxRoundMode::kFloor, MxRoundMode::kRound}) {
    if (std::strcmp(name, mx_round_mode_name(m)) == 0) {
      mode = m;
      return true;
    }
  }
  return false;
}

namespace detail {

MxBlockScale mx_block_scale(float amax, DType y_dtype, int64_t scale_alg, float max_low_bound) {
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
  // An infinity or a NaN in the block: the NaN code, and NaN elements.
  if (!std::isfinite(amax)) return {0xFF, kNaN};
  // 2^(127 - code) for codes 1..254 (a normal fp32 value); upstream's bf16 factor.
  const auto factor = [](uint32_t code) { return std::bit_cast<float>((254u - code) << 23); };
  const bool e4m3 = y_dtype == DType::kFloat8E4M3FN;
  if (scale_alg == 0) {
    // OCP: the block's largest exponent less the format's; a block whose amax lies at or below
    // 2^(emax - 126) gets code 0 and the factor 0 (upstream's rule: its elements become zeros).
    const uint32_t emax = e4m3 ? 8u : 15u;
    const uint32_t e = std::bit_cast<uint32_t>(amax) >> 23;  // amax >= +0: the biased exponent
    if (e <= emax) return {0, 0.0f};
    const uint32_t code = e - emax;
    return {static_cast<uint8_t>(code), factor(code)};
  }
  // cuBLAS: S = amax * fp32(1 / dtype_max) (the constant as upstream rounds it), its exponent
  // rounded up unless S is a power of two; a zero block gets code 0 and the factor 0.
  if (amax == 0.0f) return {0, 0.0f};
  const float inv_max = std::bit_cast<float>(e4m3 ? 0x3B124925u : 0x37924925u);
  const float s = std::max(amax, max_low_bound) * inv_max;
  const uint32_t bits = std::bit_cast<uint32_t>(s);
  const uint32_t e = bits >> 23, man = bits & 0x7FFFFFu;
  const bool up = (e > 0 && e < 254 && man > 0) || (e == 0 && man > 0x400000u);
  const uint32_t code = e + (up ? 1u : 0u);
  // Code 0: 2^127 (upstream's bf16 0x7F00); codes 1..253 as above.
  return {static_cast<uint8_t>(code), code == 0 ? 0x1p127f : factor(code)};
}

// ---- FLOAT4 destinations (scalar: every target gives the same bits by construction) -------

namespace {

// 2^(127 - code) for codes 1..254 (254: the subnormal 2^-127, upstream's bf16 0x0040).
float mx_factor(uint32_t code) {
  return code == 254 ? 0x1p-127f : std::bit_cast<float>((254u - code) << 23);
}

// A FLOAT4 block's code and factor. scale_alg 0: E(amax) - emax (2 for E2M1, 0 for E1M2), code 0
// (factor 0: zero elements) at or below it. scale_alg 2 (E2M1): dst_type_max 0, 6 or 7 rounds
// amax to bf16 and adds 0x3F (0x1F for 7) to its bits before taking the exponent (the exponent
// goes up when amax's significand exceeds 1.5, or 1.75); any other dst_type_max is cuBLAS's rule
// with fp32(1 / dst_type_max).
MxBlockScale mx_fp4_block_scale(float amax, DType y_dtype, int64_t scale_alg, float dst_type_max) {
  if (!std::isfinite(amax)) return {0xFF, std::numeric_limits<float>::quiet_NaN()};
  uint32_t e = std::bit_cast<uint32_t>(amax) >> 23;  // amax >= +0: its biased exponent
  if (scale_alg == 2) {
    if (dst_type_max != 0.0f && dst_type_max != 6.0f && dst_type_max != 7.0f) {
      if (amax == 0.0f) return {0, 0.0f};
      const auto inv = static_cast<float>(1.0 / static_cast<double>(dst_type_max));
      const uint32_t bits = std::bit_cast<uint32_t>(amax * inv);
      const uint32_t se = bits >> 23, man = bits & 0x7FFFFFu;
      const bool up = (se > 0 && se < 254 && man > 0) || (se == 0 && man > 0x400000u);
      const uint32_t code = se + (up ? 1u : 0u);
      return {static_cast<uint8_t>(code), code == 0 ? 0x1p127f : mx_factor(code)};
    }
    const uint32_t b =
        (float_to_bf16_bits(amax) & 0x7FFFu) + (dst_type_max == 7.0f ? 0x1Fu : 0x3Fu);
    e = std::min<uint32_t>((b >> 7) & 0xFFu, 254u + 2u);
  }
  const uint32_t emax = y_dtype == DType::kFloat4E2M1 ? 2u : 0u;
  if (e <= emax) return {0, 0.0f};
  const uint32_t code = std::min<uint32_t>(e - emax, 254u);
  return {static_cast<uint8_t>(code), mx_factor(code)};
}

// s (an fp32 product, exact in practice) to a FLOAT4 code: the signed value snapped to the
// format's grid by round_mode (E2M1: step 0.5 below 2, 1 in [2, 4), 2 from 4; E1M2: step 0.25),
// saturated to +-max (6, 1.75); the sign kept (a negative value rounding to zero is -0); NaN
// gives +0 (FLOAT4 has no NaN).
uint8_t fp4_code(float s, bool e1m2, MxRoundMode mode) {
  if (std::isnan(s)) return 0;
  const double v = s;
  const double a = std::fabs(v);
  double step = 0.25;
  if (!e1m2) {
    int e = 0;
    (void)std::frexp(a, &e);  // a = f * 2^e, f in [0.5, 1): unbiased exponent e - 1
    step = std::ldexp(1.0, std::max(a == 0.0 ? 0 : e - 1, 0) - 1);
  }
  const double q = v / step;  // exact: a power of two
  double r = 0.0;
  switch (mode) {
    case MxRoundMode::kFloor: r = std::floor(q); break;
    case MxRoundMode::kRound: r = std::round(q); break;  // ties away from zero
    case MxRoundMode::kRint: {
      r = std::floor(q);
      const double rest = q - r;
      if (rest > 0.5 || (rest == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
      break;
    }
  }
  const double max = e1m2 ? 1.75 : 6.0;
  const double m = std::min(std::fabs(r * step), max);
  uint32_t code = 0;
  if (e1m2) {
    code = static_cast<uint32_t>(m * 4.0);
  } else if (m < 2.0) {
    code = static_cast<uint32_t>(m * 2.0);
  } else if (m < 4.0) {
    code = 4u + static_cast<uint32_t>(m - 2.0);
  } else {
    code = 6u + static_cast<uint32_t>((m - 4.0) / 2.0);
  }
  return static_cast<uint8_t>((std::signbit(v) ? 8u : 0u) | code);
}

// fp4_code(s, false, kRint) without branches: NaN gives +0, otherwise the sign and
// e2m1_magnitude_rne (the same code for every one of the 2^32 fp32 inputs: compared
// exhaustively when it was written; the case set's ties and saturations check it against the
// kit's golden).
inline uint8_t fp4_e2m1_rint(float s) {
  if (std::isnan(s)) return 0;
  return static_cast<uint8_t>((std::signbit(s) ? 8u : 0u) | e2m1_magnitude_rne(std::fabs(s)));
}

float load_element(DType dtype, const void* x, int64_t i) {
  return load_as_float(dtype, x, static_cast<std::size_t>(i));
}

void set_nibble(uint8_t* y, int64_t i, uint8_t code) {
  uint8_t& byte = y[i >> 1];
  byte = (i & 1) ? static_cast<uint8_t>((byte & 0x0F) | (code << 4))
                 : static_cast<uint8_t>((byte & 0xF0) | code);
}

// Every block of the [outer, length, inner] view: the blocks of one (o, b) pair are its inner
// columns. A task writes whole bytes of y (the last dim is even, and so is every block's share of
// a row), so tasks never share a byte.
void run_fp4(const DynamicMxQuantKernelArgs& a, const DynamicMxQuantParams& p) {
  const int64_t blocks = (a.length + a.blocksize - 1) / a.blocksize;
  const int64_t pairs = (blocks + 1) / 2;
  const bool e1m2 = a.y_dtype == DType::kFloat4E1M2;
  const bool rint = !e1m2 && p.round_mode == MxRoundMode::kRint;
  if (a.inner == 1) {
    // The last axis: each block's elements contiguous, widened once into a buffer. A block
    // starts at an even element (blocks are multiples of 32, rows are even), so its codes are
    // whole bytes.
    auto row_body = [&](int64_t task_begin, int64_t task_end) {
      std::vector<float> v(static_cast<std::size_t>(a.blocksize));
      for (int64_t task = task_begin; task < task_end; ++task) {
        const int64_t o = task / blocks, b = task % blocks;
        const int64_t l0 = b * a.blocksize, n = std::min(a.length, l0 + a.blocksize) - l0;
        const int64_t at = o * a.length + l0;
        const auto count = static_cast<std::size_t>(n);
        if (a.x_dtype == DType::kFloat32) {
          std::memcpy(v.data(), static_cast<const float*>(a.x) + at, count * sizeof(float));
        } else if (a.x_dtype == DType::kBFloat16) {
          convert_bf16_to_fp32(static_cast<const uint16_t*>(a.x) + at, v.data(), count);
        } else {
          convert_fp16_to_fp32(static_cast<const uint16_t*>(a.x) + at, v.data(), count);
        }
        float amax = 0.0f;
        bool nan = false;
        for (int64_t j = 0; j < n; ++j) {
          const float m = std::fabs(v[static_cast<std::size_t>(j)]);
          nan = nan || std::isnan(m);
          amax = std::max(amax, m);
        }
        if (nan) amax = std::numeric_limits<float>::quiet_NaN();
        const MxBlockScale s = mx_fp4_block_scale(amax, a.y_dtype, a.scale_alg, p.dst_type_max);
        a.mxscale[(o * pairs + b / 2) * 2 + (b % 2)] = s.code;
        if (b == blocks - 1 && blocks % 2 == 1) a.mxscale[(o * pairs + b / 2) * 2 + 1] = 0;
        uint8_t* y = a.y + at / 2;
        for (int64_t j = 0; j < n; j += 2) {
          const float v0 = v[static_cast<std::size_t>(j)] * s.recip;
          const float v1 = v[static_cast<std::size_t>(j + 1)] * s.recip;
          const uint8_t c0 = rint ? fp4_e2m1_rint(v0) : fp4_code(v0, e1m2, p.round_mode);
          const uint8_t c1 = rint ? fp4_e2m1_rint(v1) : fp4_code(v1, e1m2, p.round_mode);
          y[j / 2] = static_cast<uint8_t>(c0 | (c1 << 4));
        }
      }
    };
    detail::parallel_for(a.outer * blocks, std::max<int64_t>(1, 32768 / a.blocksize), row_body);
    return;
  }
  auto body = [&](int64_t task_begin, int64_t task_end) {
    std::vector<float> recip(static_cast<std::size_t>(a.inner));
    for (int64_t task = task_begin; task < task_end; ++task) {
      const int64_t o = task / blocks, b = task % blocks;
      const int64_t l0 = b * a.blocksize, l1 = std::min(a.length, l0 + a.blocksize);
      for (int64_t c = 0; c < a.inner; ++c) {
        float amax = 0.0f;
        bool nan = false;
        for (int64_t l = l0; l < l1; ++l) {
          const float v = std::fabs(load_element(a.x_dtype, a.x, (o * a.length + l) * a.inner + c));
          nan = nan || std::isnan(v);
          amax = std::max(amax, v);
        }
        if (nan) amax = std::numeric_limits<float>::quiet_NaN();
        const MxBlockScale s = mx_fp4_block_scale(amax, a.y_dtype, a.scale_alg, p.dst_type_max);
        a.mxscale[((o * pairs + b / 2) * a.inner + c) * 2 + (b % 2)] = s.code;
        if (b == blocks - 1 && blocks % 2 == 1)
          a.mxscale[((o * pairs + b / 2) * a.inner + c) * 2 + 1] = 0;
        recip[static_cast<std::size_t>(c)] = s.recip;
      }
      for (int64_t l = l0; l < l1; ++l) {
        for (int64_t c = 0; c < a.inner; ++c) {
          const int64_t at = (o * a.length + l) * a.inner + c;
          const float v = load_element(a.x_dtype, a.x, at) * recip[static_cast<std::size_t>(c)];
          set_nibble(a.y, at, rint ? fp4_e2m1_rint(v) : fp4_code(v, e1m2, p.round_mode));
        }
      }
    }
  };
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, a.blocksize * a.inner));
  detail::parallel_for(a.outer * blocks, grain, body);
}

}  // namespace

Status check_dynamic_mx_quant_params(const DynamicMxQuantTensors& t,
                                     const DynamicMxQuantParams& p) {
  constexpr std::string_view op = DynamicMxQuantOp::kType;
  const int rank = t.x.rank;
  if (p.axis < -rank || p.axis >= rank) {
    return fail(StatusCode::kParamInvalid, op, "axis {} is out of range for x of rank {}", p.axis,
                rank);
  }
  const bool fp4 = p.dst_type == DType::kFloat4E2M1 || p.dst_type == DType::kFloat4E1M2;
  if (!fp4 && p.dst_type != DType::kFloat8E5M2 && p.dst_type != DType::kFloat8E4M3FN) {
    return fail(StatusCode::kParamInvalid, op,
                "dst_type {} is not one of 35 (FLOAT8_E5M2), 36 (FLOAT8_E4M3FN), 40 (FLOAT4_E2M1), "
                "41 (FLOAT4_E1M2)",
                static_cast<int>(p.dst_type));
  }
  if (t.y.dtype != p.dst_type) {
    return fail(StatusCode::kParamInvalid, op, "y dtype {} differs from dst_type {}",
                dtype_name(t.y.dtype), dtype_name(p.dst_type));
  }
  if (!fp4 && p.round_mode != MxRoundMode::kRint) {
    return fail(StatusCode::kParamInvalid, op,
                "round_mode \"{}\" is FLOAT4's; FLOAT8 destinations take \"rint\"",
                mx_round_mode_name(p.round_mode));
  }
  if (fp4 && rank > 0 && t.x.shape[rank - 1] % 2 != 0) {
    return fail(StatusCode::kParamInvalid, op,
                "x's last dim is {}, but a FLOAT4 destination packs two elements per byte: it must "
                "be even (shape {})",
                t.x.shape[rank - 1], t.x.shape_string());
  }
  if (p.blocksize < 32 || p.blocksize > 1024 || p.blocksize % 32 != 0) {
    return fail(StatusCode::kParamInvalid, op, "blocksize {} is not a multiple of 32 in [32, 1024]",
                p.blocksize);
  }
  // CANN's tiling: FLOAT8 takes 0 (OCP) and 1 (cuBLAS), FLOAT4_E2M1 0 and 2 (blocksize 32),
  // FLOAT4_E1M2 0 only.
  const bool alg_ok =
      fp4 ? (p.scale_alg == 0 || (p.scale_alg == 2 && p.dst_type == DType::kFloat4E2M1))
          : (p.scale_alg == 0 || p.scale_alg == 1);
  if (!alg_ok) {
    return fail(
        StatusCode::kParamInvalid, op,
        "scale_alg {} is not accepted for dst_type {} (FLOAT8: 0 or 1; FLOAT4_E2M1: 0 or 2; "
        "FLOAT4_E1M2: 0)",
        p.scale_alg, dtype_name(p.dst_type));
  }
  if (p.scale_alg == 2 && p.blocksize != 32) {
    return fail(StatusCode::kParamInvalid, op, "scale_alg 2 needs blocksize 32 (it is {})",
                p.blocksize);
  }
  if (!(p.dst_type_max == 0.0f || (p.dst_type_max >= 6.0f && p.dst_type_max <= 12.0f))) {
    return fail(StatusCode::kParamInvalid, op, "dst_type_max {} is not 0 or in [6, 12]",
                p.dst_type_max);
  }
  if (!(p.max_low_bound >= 0.0f) || std::isinf(p.max_low_bound)) {
    return fail(StatusCode::kParamInvalid, op, "max_low_bound {} is not finite and >= 0",
                p.max_low_bound);
  }
  if (p.max_low_bound != 0.0f && p.scale_alg != 1) {
    return fail(StatusCode::kParamInvalid, op,
                "max_low_bound {} must be 0 unless scale_alg is 1 (it is {})", p.max_low_bound,
                p.scale_alg);
  }
  const std::vector<int64_t> want = mx_scale_shape(t.x, p);
  const std::vector<int64_t> got(t.mxscale.shape.begin(), t.mxscale.shape.begin() + t.mxscale.rank);
  if (got != want) {
    return fail(StatusCode::kParamInvalid, op,
                "mxscale shape {} differs from {} (x's shape with dim {} holding ceil(ceil({} / "
                "{}) / 2) pairs, and a last dim of 2)",
                t.mxscale.shape_string(), fmt::format("[{}]", fmt::join(want, ", ")), p.axis,
                t.x.shape[(p.axis + rank) % rank], p.blocksize);
  }
  return {};
}

}  // namespace detail

Status dynamic_mx_quant_validate(const DynamicMxQuantTensors& t, const DynamicMxQuantParams& p) {
  return detail::validate<detail::DynamicMxQuantOp>(t, p);
}

Status dynamic_mx_quant(const DynamicMxQuantTensors& t, const DynamicMxQuantParams& p,
                        Workspace /*ws*/) {
  return detail::op_entry<detail::DynamicMxQuantOp>(t, p, [&]() -> Status {
    const int rank = t.x.rank;
    const int axis = static_cast<int>((p.axis + rank) % rank);
    detail::DynamicMxQuantKernelArgs a;
    a.x_dtype = t.x.dtype;
    a.y_dtype = t.y.dtype;
    for (int k = 0; k < axis; ++k) a.outer *= t.x.shape[k];
    a.length = t.x.shape[axis];
    for (int k = axis + 1; k < rank; ++k) a.inner *= t.x.shape[k];
    a.blocksize = p.blocksize;
    a.scale_alg = p.scale_alg;
    a.max_low_bound = p.max_low_bound;
    a.x = t.x.data;
    a.y = static_cast<uint8_t*>(t.y.data);
    a.mxscale = static_cast<uint8_t*>(t.mxscale.data);
    if (a.outer == 0 || a.inner == 0) return {};
    if (a.length == 0) return {};  // no blocks: mxscale holds no element either
    if (a.y_dtype == DType::kFloat4E2M1 || a.y_dtype == DType::kFloat4E1M2) {
      detail::run_fp4(a, p);
      return {};
    }
    HWY_DYNAMIC_DISPATCH(DynamicMxQuantImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
