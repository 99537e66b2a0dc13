// Per-target SIMD building blocks shared by kernels: exact fp16/bf16 widening, round-to-nearest-
// even narrowing (Highway 1.0.3's own bf16 demotion truncates), and typed load/store of fp32 lanes.
//
// Glossary: D is a descriptor of fp32 lanes; "storage" is the element type in memory (float,
// or uint16_t bits of fp16/bf16). All conversions use integer lane operations plus, for fp16
// subnormals, one exactly-rounded fp32 addition, so every target gives the same bits.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_CORE_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_CORE_SIMD_INL_H_
#undef MANTISSA_CORE_SIMD_INL_H_
#else
#define MANTISSA_CORE_SIMD_INL_H_
#endif

#include <cstdint>

#include "hwy/highway.h"

// Marks the per-vector lambda a kernel passes to ForEachVector: always inlined, so that the loop
// keeps pointers and constants in registers. Left to its heuristics, GCC calls the bigger bodies
// (those with bf16 conversions) once per vector instead.
#undef MANTISSA_VECTOR_BODY
#define MANTISSA_VECTOR_BODY __attribute__((always_inline))

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class D>
using U16For = hn::Rebind<uint16_t, D>;

// x86 targets from AVX2 up have F16C (Highway requires it for them).
#if HWY_TARGET == HWY_AVX2 || HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#undef MANTISSA_HAVE_F16C
#define MANTISSA_HAVE_F16C 1
#else
#undef MANTISSA_HAVE_F16C
#define MANTISSA_HAVE_F16C 0
#endif

// u32 lanes holding values <= 0xFFFF -> u16 lanes (exact). One vpmovdw on AVX-512; elsewhere
// Highway's saturating demotion (exact for such values).
template <class D>
HWY_INLINE hn::Vec<U16For<D>> NarrowToU16(D /*d*/, hn::Vec<hn::RebindToSigned<D>> v) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (hn::MaxLanes(D()) == 16) {
    return hn::Vec<U16For<D>>{_mm512_cvtepi32_epi16(v.raw)};
  }
#endif
  return hn::DemoteTo(U16For<D>(), v);
}

// bf16 bits (in u16 lanes) -> fp32, exact.
template <class D>
HWY_INLINE hn::Vec<D> Bf16ToF32(D d, hn::Vec<U16For<D>> h) {
  const hn::RebindToUnsigned<D> du32;
  return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du32, h)));
}

// fp32 -> bf16 bits, round to nearest even; NaN stays NaN (quiet, sign and top payload kept).
template <class D>
HWY_INLINE hn::Vec<U16For<D>> F32ToBf16(D d, hn::Vec<D> f) {
  const hn::RebindToSigned<D> di;
  const auto bits = hn::BitCast(di, f);
  const auto magnitude = hn::And(bits, hn::Set(di, 0x7FFFFFFF));
  const auto is_nan = hn::Gt(magnitude, hn::Set(di, 0x7F800000));
  const auto high = hn::And(hn::ShiftRight<16>(bits), hn::Set(di, 0xFFFF));  // logical shift
  const auto bias = hn::Add(hn::Set(di, 0x7FFF), hn::And(high, hn::Set(di, 1)));
  // Wrap-around of bits + bias only happens for NaN inputs, which take the other branch.
  const auto rounded = hn::And(hn::ShiftRight<16>(hn::Add(bits, bias)), hn::Set(di, 0xFFFF));
  const auto quiet_nan = hn::Or(high, hn::Set(di, 0x0040));
  // Every lane now holds a value in [0, 0xFFFF], so the narrowing is exact.
  return NarrowToU16(d, hn::IfThenElse(is_nan, quiet_nan, rounded));
}

// fp16 bits (in u16 lanes) -> fp32, exact; NaN made quiet with its payload kept.
template <class D>
HWY_INLINE hn::Vec<D> F16ToF32(D d, hn::Vec<U16For<D>> h) {
#if MANTISSA_HAVE_F16C
  // F16C's conversion is exact and quiets NaN keeping the payload: the same bits as below.
  return hn::PromoteTo(d, hn::BitCast(hn::Rebind<hwy::float16_t, D>(), h));
#else
  const hn::RebindToSigned<D> di;
  const auto h32 = hn::BitCast(di, hn::PromoteTo(hn::RebindToUnsigned<D>(), h));
  const auto sign = hn::ShiftLeft<16>(hn::And(h32, hn::Set(di, 0x8000)));
  const auto exponent = hn::And(h32, hn::Set(di, 0x7C00));
  const auto mantissa = hn::And(h32, hn::Set(di, 0x03FF));
  const auto shifted = hn::ShiftLeft<13>(hn::And(h32, hn::Set(di, 0x7FFF)));
  // Normal: rebias the exponent from 15 to 127 (add 112 << 23).
  const auto normal = hn::Add(shifted, hn::Set(di, 0x38000000));
  // Inf/NaN: all-ones exponent; a NaN also gets the quiet bit.
  const auto quiet = hn::IfThenElseZero(hn::Ne(mantissa, hn::Zero(di)), hn::Set(di, 0x00400000));
  const auto inf_nan = hn::Or(hn::Or(shifted, hn::Set(di, 0x7F800000)), quiet);
  // Subnormal or zero: mantissa * 2^-24, exactly (0.5 + m*2^-24) - 0.5 in fp32.
  const auto half = hn::Set(d, 0.5f);
  const auto sub =
      hn::BitCast(di, hn::Sub(hn::BitCast(d, hn::Or(mantissa, hn::BitCast(di, half))), half));
  const auto magnitude =
      hn::IfThenElse(hn::Eq(exponent, hn::Set(di, 0x7C00)), inf_nan,
                     hn::IfThenElse(hn::Eq(exponent, hn::Zero(di)), sub, normal));
  return hn::BitCast(d, hn::Or(magnitude, sign));
#endif
}

// fp32 -> fp16 bits, round to nearest even; overflow to inf; subnormals exact; NaN kept quiet.
template <class D>
HWY_INLINE hn::Vec<U16For<D>> F32ToF16(D d, hn::Vec<D> f) {
#if MANTISSA_HAVE_F16C
  // F16C's vcvtps2ph with round-to-nearest-even: the same bits as below (tested on all 2^32
  // inputs), in one instruction.
  return hn::BitCast(U16For<D>(), hn::DemoteTo(hn::Rebind<hwy::float16_t, D>(), f));
#else
  const hn::RebindToSigned<D> di;
  const auto bits = hn::BitCast(di, f);
  const auto sign = hn::And(hn::ShiftRight<16>(bits), hn::Set(di, 0x8000));
  const auto magnitude = hn::And(bits, hn::Set(di, 0x7FFFFFFF));
  const auto nan =
      hn::Or(hn::Set(di, 0x7E00), hn::And(hn::ShiftRight<13>(magnitude), hn::Set(di, 0x03FF)));
  // Normal result: rebias 127 -> 15, then round away the low 13 bits to nearest even. A carry
  // into the exponent is the correct result (up to 0x7C00 = inf is excluded by the test below).
  const auto rebased = hn::Sub(magnitude, hn::Set(di, 0x38000000));
  const auto lsb = hn::And(hn::ShiftRight<13>(rebased), hn::Set(di, 1));
  const auto normal = hn::ShiftRight<13>(hn::Add(rebased, hn::Add(hn::Set(di, 0x0FFF), lsb)));
  // Subnormal result (|f| < 2^-14): 0.5 + |f| rounds |f| to a multiple of 2^-24 in hardware
  // (the fp32 spacing in [0.5, 1)); the bits above 0.5 are the fp16 encoding, 0x400 included.
  const auto half = hn::Set(d, 0.5f);
  const auto sub =
      hn::Sub(hn::BitCast(di, hn::Add(hn::BitCast(d, magnitude), half)), hn::BitCast(di, half));
  const auto result = hn::IfThenElse(
      hn::Gt(magnitude, hn::Set(di, 0x7F800000)), nan,
      hn::IfThenElse(hn::Gt(magnitude, hn::Set(di, 0x477FEFFF)), hn::Set(di, 0x7C00),
                     hn::IfThenElse(hn::Gt(magnitude, hn::Set(di, 0x387FFFFF)), normal, sub)));
  return NarrowToU16(d, hn::Or(result, sign));
#endif
}

// Every NaN lane becomes the canonical quiet NaN 0x7FC00000 (narrowed: fp16 0x7E00, bf16
// 0x7FC0). Which operand's NaN an operation returns differs between CPUs, and compilers may swap
// the operands of commutative operations per target; operators store computed NaNs this way so
// their bits are the same everywhere.
template <class D>
HWY_INLINE hn::Vec<D> CanonicalNaN(D d, hn::Vec<D> v) {
  const hn::RebindToSigned<D> di;
  return hn::IfThenElse(hn::IsNaN(v), hn::BitCast(d, hn::Set(di, 0x7FC00000)), v);
}

// Typed access to fp32 lanes. Storage is float (fp32) or uint16_t with a format tag.
struct Fp32 {
  using Storage = float;
};
struct Fp16 {
  using Storage = uint16_t;
};
struct Bf16 {
  using Storage = uint16_t;
};

template <class Format, class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const typename Format::Storage* HWY_RESTRICT p) {
  if constexpr (std::is_same_v<Format, Fp32>) {
    return hn::LoadU(d, p);
  } else if constexpr (std::is_same_v<Format, Fp16>) {
    return F16ToF32(d, hn::LoadU(U16For<D>(), p));
  } else {
    return Bf16ToF32(d, hn::LoadU(U16For<D>(), p));
  }
}

template <class Format, class D>
HWY_INLINE void StoreF32(D d, hn::Vec<D> v, typename Format::Storage* HWY_RESTRICT p) {
  if constexpr (std::is_same_v<Format, Fp32>) {
    hn::StoreU(v, d, p);
  } else if constexpr (std::is_same_v<Format, Fp16>) {
    hn::StoreU(F32ToF16(d, v), U16For<D>(), p);
  } else {
    hn::StoreU(F32ToBf16(d, v), U16For<D>(), p);
  }
}

// fp32 -> bf16 bits for lanes whose NaNs are already canonical (see CanonicalNaN): rounding
// alone maps 0x7FC00000 to 0x7FC0 and +-inf to itself, so the NaN test is not needed.
template <class D>
HWY_INLINE hn::Vec<U16For<D>> CanonicalF32ToBf16(D d, hn::Vec<D> f) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, f);
  const auto bias =
      hn::Add(hn::Set(du, 0x7FFFu), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u)));
  return NarrowToU16(d,
                     hn::BitCast(hn::RebindToSigned<D>(), hn::ShiftRight<16>(hn::Add(bits, bias))));
}

// Stores an operator result: NaN made canonical, then rounded once to the storage format.
template <class Format, class D>
HWY_INLINE void StoreResult(D d, hn::Vec<D> v, typename Format::Storage* HWY_RESTRICT p) {
  const auto canonical = CanonicalNaN(d, v);
  if constexpr (std::is_same_v<Format, Bf16>) {
    hn::StoreU(CanonicalF32ToBf16(d, canonical), U16For<D>(), p);
  } else {
    StoreF32<Format>(d, canonical, p);
  }
}

// Calls body(d, i) for full vectors over [begin, end), then body(d1, i) with a one-lane
// descriptor for the tail. Both use the same lane operations, so the tail has the same bits.
// Bodies are lambdas marked MANTISSA_VECTOR_BODY.
template <class Body>
HWY_INLINE void ForEachVector(int64_t begin, int64_t end, Body&& body) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = begin;
  // Two vectors per iteration: independent work for the out-of-order core to overlap with
  // memory latency. Each vector is still computed by the same lane operations.
  for (; i + 2 * lanes <= end; i += 2 * lanes) {
    body(d, i);
    body(d, i + lanes);
  }
  for (; i + lanes <= end; i += lanes) body(d, i);
  const hn::CappedTag<float, 1> d1;
  for (; i < end; ++i) body(d1, i);
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_CORE_SIMD_INL_H_
