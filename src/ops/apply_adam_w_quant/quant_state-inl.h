// The 8-bit block-wise optimizer state's lane operations, shared by ApplyAdamWQuant
// (ops/apply_adam_w_quant/apply_adam_w_quant.cc) and the quantized multi-tensor AdamW
// (optim/multi_tensor.cc), so both code the same moment with the same bits: the block absmax,
// CANN's search for the nearest map entry, its table form and m's sign rule
// (docs/ops/apply_adam_w_quant.md). Codes are loaded and stored by core/lowp-inl.h.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_OPS_QUANT_STATE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_OPS_QUANT_STATE_INL_H_
#undef MANTISSA_OPS_QUANT_STATE_INL_H_
#else
#define MANTISSA_OPS_QUANT_STATE_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/lowp-inl.h"  // LoadCodes, StoreCodes
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/apply_adam_w_quant/quant_coder.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// max(acc, x) where a NaN x makes the result NaN and a NaN acc stays (the block's absmax is NaN
// when any of its moments is).
template <class D>
HWY_INLINE hn::Vec<D> MaxKeepNaN(hn::Vec<D> acc, hn::Vec<D> x) {
  return hn::IfThenElse(hn::Or(hn::Gt(x, acc), hn::IsNaN(x)), x, acc);
}

// A block's absmax from the MaxKeepNaN accumulators of its full vectors (acc) and of its tail
// (one lane): lane order does not matter, since max is exact; a NaN anywhere gives the
// canonical quiet NaN, whichever NaN came first. Reduced in registers, without branches on the
// lanes' values.
template <class D, class V1>
HWY_INLINE float FinishAbsMax(D d, hn::Vec<D> acc, V1 tail) {
  const float t = hn::GetLane(tail);
  const float r = std::max(hn::GetLane(hn::MaxOfLanes(d, acc)), t);
  if (!hn::AllFalse(d, hn::IsNaN(acc)) || t != t) {
    const uint32_t quiet = 0x7FC00000u;
    float q;
    std::memcpy(&q, &quiet, sizeof q);
    return q;
  }
  return r;
}

// The index of x's nearest entry in the 256-entry map, found as CANN's kernel does: the pivot
// 127 first, then seven halvings of [lower, upper] (x > map[pivot] moves lower up, anything else,
// NaN included, moves upper down), then the nearer of map[lower] and map[upper] by |x - entry|,
// lower on a tie.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> NearestCode(D d, const float* HWY_RESTRICT map,
                                                      hn::Vec<D> x) {
  const hn::RebindToSigned<D> di;
  auto pivot = hn::Set(di, 127);
  auto higher = hn::RebindMask(di, hn::Gt(x, hn::Set(d, map[127])));
  auto lower = hn::IfThenElseZero(higher, pivot);
  auto upper = hn::IfThenElse(higher, hn::Set(di, 255), pivot);
  for (int k = 0; k < 7; ++k) {
    pivot = hn::ShiftRight<1>(hn::Add(lower, upper));
    higher = hn::RebindMask(di, hn::Gt(x, hn::GatherIndex(d, map, pivot)));
    lower = hn::IfThenElse(higher, pivot, lower);
    upper = hn::IfThenElse(higher, upper, pivot);
  }
  const auto to_lower = hn::Abs(hn::Sub(x, hn::GatherIndex(d, map, lower)));
  const auto to_upper = hn::Abs(hn::Sub(x, hn::GatherIndex(d, map, upper)));
  return hn::IfThenElse(hn::RebindMask(di, hn::Le(to_lower, to_upper)), lower, upper);
}

// The search's code through a coder's table (ops/apply_adam_w_quant/quant_coder.h): the same
// code as NearestCode for x in [-1, 1], or NaN, with one gather.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> TableCode(D, const detail::QuantCoder& c, hn::Vec<D> x) {
  const hn::RebindToSigned<D> di;
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, x);
  const auto e =
      hn::BitCast(du, hn::GatherIndex(di, reinterpret_cast<const int32_t*>(c.entry.data()),
                                      hn::BitCast(di, hn::ShiftRight<16>(bits))));
  // The key: the low 16 bits, inverted for a negative value.
  const auto flip =
      hn::And(hn::BitCast(du, hn::BroadcastSignBit(hn::BitCast(di, bits))), hn::Set(du, 0xFFFFu));
  const auto key = hn::BitCast(di, hn::Xor(hn::And(bits, hn::Set(du, 0xFFFFu)), flip));
  const auto threshold = hn::BitCast(di, hn::And(e, hn::Set(du, 0xFFFFu)));
  const auto code = hn::Add(hn::BitCast(di, hn::ShiftRight<16>(e)),
                            hn::IfThenElseZero(hn::Gt(key, threshold), hn::Set(di, 1)));
  return hn::IfThenZeroElse(hn::RebindMask(di, hn::IsNaN(x)), code);
}

// m's signed map: a code whose entry has the sign opposite to x's moves one step towards x's
// sign (x > 0 with a negative entry: +1; x < 0 with a positive one: -1), kept in [0, 255].
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> FixSign(D d, const float* HWY_RESTRICT map, hn::Vec<D> x,
                                                  hn::Vec<hn::RebindToSigned<D>> c) {
  const hn::RebindToSigned<D> di;
  const auto entry = hn::GatherIndex(d, map, c);
  const auto zero = hn::Zero(d);
  const auto up = hn::RebindMask(di, hn::And(hn::Gt(x, zero), hn::Lt(entry, zero)));
  const auto down = hn::RebindMask(di, hn::And(hn::Lt(x, zero), hn::Gt(entry, zero)));
  c = hn::IfThenElse(up, hn::Add(c, hn::Set(di, 1)), c);
  c = hn::IfThenElse(down, hn::Sub(c, hn::Set(di, 1)), c);
  return hn::Min(hn::Max(c, hn::Zero(di)), hn::Set(di, 255));
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_OPS_QUANT_STATE_INL_H_
