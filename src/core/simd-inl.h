// Per-target SIMD building blocks shared by kernels: exact fp16/bf16 widening, round-to-nearest-
// even narrowing (Highway 1.0.3's own bf16 demotion truncates), and typed load/store of fp32 lanes.
//
// Glossary: D is a descriptor of fp32 lanes; "storage" is the element type in memory (float,
// or uint16_t bits of fp16/bf16); a "format" tag (Fp32, Fp16, Bf16, Bf16Hw) names the storage
// and how it is converted. The portable conversions use integer lane operations plus, for fp16
// subnormals, one exactly-rounded fp32 addition. Hardware conversions (F16C; AVX512-BF16 on the
// AVX3_BF16 run-time choice) are used only where they give the same bits on all 2^32 inputs, or
// behind a lane test that sends the inputs where they differ to the portable code.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_CORE_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_CORE_SIMD_INL_H_
#undef MANTISSA_CORE_SIMD_INL_H_
#else
#define MANTISSA_CORE_SIMD_INL_H_
#endif

#include <array>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "core/runtime_internal.h"
#include "hwy/highway.h"
#include "mantissa/dtype.h"

// Marks the per-vector lambda a kernel passes to ForEachVector: always inlined, so that the loop
// keeps pointers and constants in registers. Left to its heuristics, GCC calls the bigger bodies
// (those with bf16 conversions) once per vector instead.
#undef MANTISSA_VECTOR_BODY
#if defined(__GNUC__)
#define MANTISSA_VECTOR_BODY __attribute__((always_inline))
#else
#define MANTISSA_VECTOR_BODY
#endif

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

// AVX-512 targets also carry a second bf16 narrowing, AVX512-BF16's vcvtneps2bf16, chosen at run
// time (VisitFormat) where the CPU has it. It is emitted as inline assembly: GCC will not inline
// the intrinsic into code compiled without -mavx512bf16, and these targets must not be compiled
// with it, since they also run on CPUs that lack it.
#if (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL) && defined(__GNUC__)
#undef MANTISSA_HAVE_BF16_HW
#define MANTISSA_HAVE_BF16_HW 1
#else
#undef MANTISSA_HAVE_BF16_HW
#define MANTISSA_HAVE_BF16_HW 0
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

// fp64 -> fp32 lanes of the same count, rounded to nearest even, overflowing to +-inf on every
// target. Highway's DemoteTo does so on x86 and Arm, but its SCALAR and EMU128 versions clamp
// +-inf and every value beyond FLT_MAX to +-FLT_MAX; lanes whose magnitude is at least
// 2^128 - 2^103 (the midpoint above FLT_MAX, which rounds to even: inf) are set to +-inf here.
// NaN passes through (made canonical by StoreResult).
template <class DF, class DD>
HWY_INLINE hn::Vec<DF> DemoteF64ToF32(DF df, DD dd, hn::Vec<DD> v) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  (void)dd;
  return hn::DemoteTo(df, v);  // cvtpd2ps: IEEE rounding and overflow
#else
  const auto r = hn::DemoteTo(df, v);
  const auto big = hn::Ge(hn::Abs(v), hn::Set(dd, 0x1.ffffffp127));
  const auto flag = hn::DemoteTo(df, hn::IfThenElseZero(big, hn::Set(dd, 1.0)));
  const auto inf = hn::CopySign(hn::Set(df, std::numeric_limits<float>::infinity()), r);
  return hn::IfThenElse(hn::Eq(flag, hn::Set(df, 1.0f)), inf, r);
#endif
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

#if MANTISSA_HAVE_BF16_HW
// vcvtneps2bf16 (AVX512-BF16, with AVX512VL for the 256- and 128-bit forms). On normal numbers,
// zeros and infinities it computes exactly F32ToBf16's integer rounding, and a NaN becomes
// (bits >> 16) | 0x40 as there; but it reads subnormal inputs as zero (it ignores MXCSR). Callers
// test for subnormal lanes first (AnyLaneOfClass). Only reached after the run-time check.
HWY_INLINE __m256i CvtNePs2Bf16(__m512 v) {
  __m256i r;
  __asm__("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(v));
  return r;
}
HWY_INLINE __m128i CvtNePs2Bf16(__m256 v) {
  __m128i r;
  __asm__("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(v));
  return r;
}
HWY_INLINE __m128i CvtNePs2Bf16(__m128 v) {
  __m128i r;
  __asm__("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(v));
  return r;
}

// vfpclassps classes (AVX512DQ).
inline constexpr int kClassQuietNaN = 0x01;
inline constexpr int kClassZero = 0x02 | 0x04;      // +0, -0
inline constexpr int kClassInfinity = 0x08 | 0x10;  // +inf, -inf
inline constexpr int kClassSubnormal = 0x20;
inline constexpr int kClassSignalingNaN = 0x80;

// True if any of the first MaxLanes(d) lanes of f is in one of `kClasses`: one vfpclassps and
// one mask test, so the rare inputs cost a not-taken branch. Lanes past a partial vector are
// ignored (their contents are unspecified).
template <int kClasses, class D>
HWY_INLINE bool AnyLaneOfClass(D d, hn::Vec<D> f) {
  constexpr size_t kLanes = hn::MaxLanes(d);
  if constexpr (sizeof(f.raw) == 64) {
    return _mm512_fpclass_ps_mask(f.raw, kClasses) != 0;
  } else if constexpr (sizeof(f.raw) == 32) {
    return (_mm256_fpclass_ps_mask(f.raw, kClasses) & ((1u << kLanes) - 1)) != 0;
  } else {
    return (_mm_fpclass_ps_mask(f.raw, kClasses) & ((1u << kLanes) - 1)) != 0;
  }
}

// fp32 -> bf16 bits by the hardware, for lanes without subnormals.
template <class D>
HWY_INLINE hn::Vec<U16For<D>> HwF32ToBf16(D /*d*/, hn::Vec<D> f) {
  return hn::Vec<U16For<D>>{CvtNePs2Bf16(f.raw)};
}

// F32ToBf16 (NaN kept quiet with its payload): the hardware for vectors without subnormal lanes;
// a vector with one (rare in training data) is rounded whole by the integer path, which is right
// for every lane. Same bits for every input.
template <class D>
HWY_INLINE hn::Vec<U16For<D>> F32ToBf16Hw(D d, hn::Vec<D> f) {
  if (HWY_UNLIKELY(AnyLaneOfClass<kClassSubnormal>(d, f))) return F32ToBf16(d, f);
  return HwF32ToBf16(d, f);
}
#endif  // MANTISSA_HAVE_BF16_HW

// Typed access to fp32 lanes. Storage is float (fp32) or uint16_t with a format tag.
struct Fp32 {
  using Storage = float;
};
struct Fp16 {
  using Storage = uint16_t;
};
// bf16 narrowed by integer rounding (every target).
struct Bf16 {
  using Storage = uint16_t;
};
#if MANTISSA_HAVE_BF16_HW
// bf16 narrowed by vcvtneps2bf16 where that gives the same bits (the AVX3_BF16 choice).
struct Bf16Hw {
  using Storage = uint16_t;
};
#endif

template <class Format>
inline constexpr bool kIsBf16 = std::is_same_v<Format, Bf16>
#if MANTISSA_HAVE_BF16_HW
                                || std::is_same_v<Format, Bf16Hw>
#endif
    ;

// Calls fn(Bf16Hw{}) when the runtime selected the AVX512-BF16 narrowing (AVX3_BF16: the CPU has
// it and no lower target was forced), else fn(Bf16{}).
template <class Fn>
HWY_INLINE void VisitBf16(Fn&& fn) {
#if MANTISSA_HAVE_BF16_HW
  if (detail::bf16_conversion_instructions()) {
    fn(Bf16Hw{});
    return;
  }
#endif
  fn(Bf16{});
}

// Calls fn(Format{}) for the tensors' dtype, once per operator call: each format is its own
// kernel instantiation, so the choice costs nothing per element.
template <class Fn>
HWY_INLINE void VisitFormat(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kFloat16: fn(Fp16{}); return;
    case DType::kBFloat16: VisitBf16(fn); return;
    default: fn(Fp32{}); return;
  }
}

template <class Format, class D>
HWY_INLINE hn::Vec<D> LoadF32(D d, const typename Format::Storage* HWY_RESTRICT p) {
  if constexpr (std::is_same_v<Format, Fp32>) {
    return hn::LoadU(d, p);
  } else if constexpr (std::is_same_v<Format, Fp16>) {
    return F16ToF32(d, hn::LoadU(U16For<D>(), p));
  } else {
    static_assert(kIsBf16<Format>);
    return Bf16ToF32(d, hn::LoadU(U16For<D>(), p));
  }
}

template <class Format, class D>
HWY_INLINE void StoreF32(D d, hn::Vec<D> v, typename Format::Storage* HWY_RESTRICT p) {
  if constexpr (std::is_same_v<Format, Fp32>) {
    hn::StoreU(v, d, p);
  } else if constexpr (std::is_same_v<Format, Fp16>) {
    hn::StoreU(F32ToF16(d, v), U16For<D>(), p);
#if MANTISSA_HAVE_BF16_HW
  } else if constexpr (std::is_same_v<Format, Bf16Hw>) {
    hn::StoreU(F32ToBf16Hw(d, v), U16For<D>(), p);
#endif
  } else {
    static_assert(std::is_same_v<Format, Bf16>);
    hn::StoreU(F32ToBf16(d, v), U16For<D>(), p);
  }
}

// Whether a result may hold a NaN lane. A kernel that has proven a stretch of results free of
// NaN (from finite row statistics, say) stores them with kNoNaN: the same bits without the
// canonicalising step.
enum class NaNLanes { kPossible, kNone };
inline constexpr NaNLanes kNoNaN = NaNLanes::kNone;

// Stores an operator result: NaN made canonical, then rounded once to the storage format.
template <class Format, NaNLanes kNaN = NaNLanes::kPossible, class D>
HWY_INLINE void StoreResult(D d, hn::Vec<D> v, typename Format::Storage* HWY_RESTRICT p) {
#if MANTISSA_HAVE_BF16_HW
  if constexpr (std::is_same_v<Format, Bf16Hw>) {
    // One lane test covers both rare cases: a NaN to make canonical and a subnormal the hardware
    // would flush. Such vectors take the integer path below; all others need neither step.
    constexpr int kRare = kClassQuietNaN | kClassSignalingNaN | kClassSubnormal;
    if (HWY_LIKELY(!AnyLaneOfClass<kRare>(d, v))) {
      hn::StoreU(HwF32ToBf16(d, v), U16For<D>(), p);
    } else {
      hn::StoreU(CanonicalF32ToBf16(d, CanonicalNaN(d, v)), U16For<D>(), p);
    }
    return;
  }
#endif
  const auto canonical = kNaN == NaNLanes::kNone ? v : CanonicalNaN(d, v);
  if constexpr (std::is_same_v<Format, Bf16>) {
    hn::StoreU(CanonicalF32ToBf16(d, canonical), U16For<D>(), p);
  } else {
    StoreF32<Format>(d, canonical, p);
  }
}

// Two full fp64 vectors of results, lo then hi (2 * Lanes(dd) consecutive elements at p), each
// rounded to fp32 and stored as StoreResult does. A 16-bit format narrows them as one fp32
// vector: one conversion, and on AVX3_BF16 one lane test, per pair instead of per vector. Lanes
// only move, so the bits are those of a StoreResult per vector.
template <class Format, NaNLanes kNaN = NaNLanes::kPossible, class DD>
HWY_INLINE void StoreResultPair(DD dd, hn::Vec<DD> lo, hn::Vec<DD> hi,
                                typename Format::Storage* HWY_RESTRICT p) {
  const hn::Rebind<float, DD> dh;
#if HWY_TARGET != HWY_SCALAR
  if constexpr (!std::is_same_v<Format, Fp32>) {
    const hn::Repartition<float, DD> df;
    StoreResult<Format, kNaN>(
        df, hn::Combine(df, DemoteF64ToF32(dh, dd, hi), DemoteF64ToF32(dh, dd, lo)), p);
    return;
  }
#endif
  StoreResult<Format, kNaN>(dh, DemoteF64ToF32(dh, dd, lo), p);
  StoreResult<Format, kNaN>(dh, DemoteF64ToF32(dh, dd, hi), p + hn::Lanes(dd));
}

// K consecutive fp64 vectors of results v[0..K) (K * Lanes(dd) elements at p), rounded to fp32
// and stored as StoreResult does, two vectors at a time (StoreResultPair) where K is even.
template <class Format, NaNLanes kNaN = NaNLanes::kPossible, size_t K, class DD>
HWY_INLINE void StoreResults(DD dd, const hn::Vec<DD> (&v)[K],
                             typename Format::Storage* HWY_RESTRICT p) {
  const size_t lanes = hn::Lanes(dd);
  if constexpr (K % 2 == 0) {
#pragma GCC unroll 8
    for (size_t k = 0; k < K; k += 2) {
      StoreResultPair<Format, kNaN>(dd, v[k], v[k + 1], p + k * lanes);
    }
  } else {
    const hn::Rebind<float, DD> df;
#pragma GCC unroll 8
    for (size_t k = 0; k < K; ++k) {
      StoreResult<Format, kNaN>(df, DemoteF64ToF32(df, dd, v[k]), p + k * lanes);
    }
  }
}

// count fp64 results at from, each rounded to fp32 and stored as StoreResult does (two vectors
// per narrowing where they fit, then single vectors and lanes).
template <class Format>
HWY_INLINE void StoreResultsFromF64(const double* HWY_RESTRICT from, int64_t count,
                                    typename Format::Storage* HWY_RESTRICT to) {
  const hn::ScalableTag<double> dd;
  const int64_t step = static_cast<int64_t>(hn::Lanes(dd));
  int64_t i = 0;
  for (; i + 2 * step <= count; i += 2 * step) {
    StoreResultPair<Format>(dd, hn::LoadU(dd, from + i), hn::LoadU(dd, from + i + step), to + i);
  }
  const hn::CappedTag<double, 1> d1;
  const hn::Rebind<float, decltype(d1)> df1;
  for (; i < count; ++i) {
    StoreResult<Format>(df1, DemoteF64ToF32(df1, d1, hn::LoadU(d1, from + i)), to + i);
  }
}

// Lanes of fp32 v whose bit pattern lies within kBf16MidpointWindow patterns of a bf16 rounding
// midpoint (low 16 bits 0x8000), as a mask over v's lanes read as int32. fp32 -> bf16 rounding is
// monotonic in the pattern, so a value computed within a few fp32 steps of an exactly rounded
// one rounds to the same bf16 unless it is that close to a midpoint: kernels that take a cheaper
// fp32 route (with a proven bound of at most half the window, in patterns) test its results with
// this and recompute a vector that hits it.
inline constexpr int32_t kBf16MidpointWindow = 16;

template <class D>
HWY_INLINE hn::Mask<hn::RebindToSigned<D>> NearBf16Midpoint(D /*d*/, hn::Vec<D> v) {
  const hn::RebindToSigned<D> di;
  // (bits + w - 0x8000) mod 2^16 <= 2w
  const auto low = hn::And(hn::Add(hn::BitCast(di, v), hn::Set(di, kBf16MidpointWindow - 0x8000)),
                           hn::Set(di, 0xFFFF));
  return hn::Lt(low, hn::Set(di, 2 * kBf16MidpointWindow + 1));
}

// ------------------------------ Two vectors at a time

// Element-wise kernels do not care which element sits in which lane, as long as every tensor of
// the call uses the same assignment. For bf16 tensors VectorSet<Format, 2> holds the 2 * Lanes(d)
// consecutive elements at p as two fp32 vectors of even- and odd-indexed elements: each 32-bit
// lane of the loaded bits holds an even element in its low half and the next odd one in its high
// half, so one shift and one mask widen the whole block, and after rounding one 16-bit blend (or,
// on AVX3_BF16, one two-source conversion and one word permutation) narrows it: no per-vector
// zero-extension, and half the stores. Each element still goes through the same lane operations,
// so the bits are those of VectorSet<Format, 1>. Only for kernels whose tensors are all bf16.
template <class D>
HWY_INLINE void LoadBf16EvenOdd(D d, const uint16_t* HWY_RESTRICT p, hn::Vec<D>& even,
                                hn::Vec<D>& odd) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, hn::LoadU(hn::Repartition<uint16_t, D>(), p));
  even = hn::BitCast(d, hn::ShiftLeft<16>(bits));
  odd = hn::BitCast(d, hn::And(bits, hn::Set(du, 0xFFFF0000u)));
}

// Operator results (NaN already canonical) in even and odd lanes -> 2 * Lanes(d) bf16 elements,
// rounded to nearest even by CanonicalF32ToBf16's integer rule.
template <class D>
HWY_INLINE void StoreCanonicalBf16EvenOdd(D /*d*/, hn::Vec<D> even, hn::Vec<D> odd,
                                          uint16_t* HWY_RESTRICT p) {
  const hn::RebindToUnsigned<D> du;
  const hn::Repartition<uint16_t, D> d16;
  auto round = [&](hn::Vec<D> f) {
    const auto bits = hn::BitCast(du, f);
    return hn::Add(
        bits, hn::Add(hn::Set(du, 0x7FFFu), hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u))));
  };
  // Rounded bf16 bits are the high half of each 32-bit lane: the odd element's is already in
  // place, the even element's moves down by 16.
  const auto packed =
      hn::OddEven(hn::BitCast(d16, round(odd)), hn::BitCast(d16, hn::ShiftRight<16>(round(even))));
  hn::StoreU(packed, d16, p);
}

#if MANTISSA_HAVE_BF16_HW
// vcvtne2ps2bf16: the 16 lanes of `low` to the low 256 bits, those of `high` to the high 256.
HWY_INLINE __m512i CvtNe2Ps2Bf16(__m512 high, __m512 low) {
  __m512i r;
  __asm__("vcvtne2ps2bf16 %2, %1, %0" : "=v"(r) : "v"(high), "v"(low));
  return r;
}

// Word k of the result takes even element k / 2 (from the low half) or odd element k / 2 (from
// the high half): the interleave that undoes the even/odd split.
HWY_INLINE __m512i InterleaveHalvesOfWords(__m512i v) {
  // clang-format off
  alignas(64) static constexpr uint16_t kIndex[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  // clang-format on
  return _mm512_permutexvar_epi16(_mm512_load_si512(kIndex), v);
}
#endif

template <class Format, size_t kVectors>
struct VectorSet;

// One vector: LoadF32 / StoreResult.
template <class F>
struct VectorSet<F, 1> {
  using Format = F;
  using Storage = typename Format::Storage;
  static constexpr size_t kCount = 1;
  template <class D>
  using Vecs = std::array<hn::Vec<D>, 1>;

  template <class D>
  static HWY_INLINE Vecs<D> Load(D d, const Storage* HWY_RESTRICT p) {
    return {LoadF32<Format>(d, p)};
  }
  template <NaNLanes kNaN = NaNLanes::kPossible, class D>
  static HWY_INLINE void StoreResult(D d, Vecs<D> v, Storage* HWY_RESTRICT p) {
    mantissa::HWY_NAMESPACE::StoreResult<Format, kNaN>(d, v[0], p);
  }
};

// Two vectors of bf16 elements split into even and odd (see above); full vectors of at least two
// lanes only.
template <class F>
struct VectorSet<F, 2> {
  using Format = F;
  static_assert(kIsBf16<Format>);
  using Storage = typename Format::Storage;
  static constexpr size_t kCount = 2;
  template <class D>
  using Vecs = std::array<hn::Vec<D>, 2>;

  template <class D>
  static HWY_INLINE Vecs<D> Load(D d, const Storage* HWY_RESTRICT p) {
    Vecs<D> v;
    LoadBf16EvenOdd(d, p, v[0], v[1]);
    return v;
  }

  // The pair is taken by reference and copied to locals: passed by value, the array stayed a
  // stack object, and GCC 12 left a dead 64-byte store of one of its vectors per call in the
  // loop (three per 32 elements in ApplyAdamD).
  template <NaNLanes kNaN = NaNLanes::kPossible, class D>
  static HWY_INLINE void StoreResult(D d, const Vecs<D>& v, Storage* HWY_RESTRICT p) {
    const hn::Vec<D> even = v[0], odd = v[1];
#if MANTISSA_HAVE_BF16_HW
    if constexpr (std::is_same_v<Format, Bf16Hw> && hn::MaxLanes(D()) == 16) {
      // As the one-vector StoreResult: a NaN or subnormal lane in either vector sends the pair
      // to the integer path; otherwise one conversion of both and one permutation.
      constexpr int kRare = kClassQuietNaN | kClassSignalingNaN | kClassSubnormal;
      // kortestw tests both masks at once: no move of either to a general register.
      if (HWY_LIKELY(_kortestz_mask16_u8(_mm512_fpclass_ps_mask(even.raw, kRare),
                                         _mm512_fpclass_ps_mask(odd.raw, kRare)))) {
        _mm512_storeu_si512(p, InterleaveHalvesOfWords(CvtNe2Ps2Bf16(odd.raw, even.raw)));
        return;
      }
    }
#endif
    if constexpr (kNaN == NaNLanes::kNone) {
      StoreCanonicalBf16EvenOdd(d, even, odd, p);
    } else {
      StoreCanonicalBf16EvenOdd(d, CanonicalNaN(d, even), CanonicalNaN(d, odd), p);
    }
  }
};

// Whether any lane of the set may be NaN: false proves that none is (a lane holding inf in one
// vector and -inf in the other also answers true, which only costs a caller its fast path). One
// addition and one test for a set of two.
template <class D, size_t K>
HWY_INLINE bool MayHoldNaN(D d, const std::array<hn::Vec<D>, K>& v) {
  static_assert(K == 1 || K == 2);
  const hn::Vec<D> any = K == 1 ? v[0] : hn::Add(v[0], v[K - 1]);
  return !hn::AllFalse(d, hn::IsNaN(any));
}

using MaybeNaN = std::integral_constant<NaNLanes, NaNLanes::kPossible>;
using NoNaN = std::integral_constant<NaNLanes, NaNLanes::kNone>;

// Runs a body's stores, store(MaybeNaN{}) or store(NoNaN{}), the latter (no canonical-NaN step)
// when `sink` holds no NaN. The caller vouches that sink is NaN wherever any result it stores is:
// every result reaches sink through operations that propagate NaN (an optimizer's new weight,
// computed from its new moments). Taken for bf16 sets of two with the integer narrowing, where
// the canonical step costs two operations per vector and the test one per set; the hardware
// narrowing (Bf16Hw) tests its own rare lanes, and other formats always store with the step.
template <class Set, class D, class Store>
HWY_INLINE void StoreSet(D d, const std::array<hn::Vec<D>, Set::kCount>& sink, Store&& store) {
  if constexpr (Set::kCount == 2 && std::is_same_v<typename Set::Format, Bf16>) {
    if (!MayHoldNaN(d, sink)) return store(NoNaN{});
  }
  store(MaybeNaN{});
}

// Calls fn(k) with k = std::integral_constant<size_t, 0 .. kCount - 1>, in order: a loop over
// the vectors of a set with constant indices, which keeps each vector in its own register (a
// runtime loop over the std::array made GCC spill the larger bodies to the stack).
template <size_t kCount, class Fn>
HWY_INLINE void ForEachOfSet(Fn&& fn) {
  // The expanding lambda is always inlined too: left to its heuristics, GCC called it once per
  // vector for AdamW's fp32 list body (a call per lane vector, and its values through memory).
  [&]<size_t... k>(std::index_sequence<k...>) MANTISSA_VECTOR_BODY {
    (fn(std::integral_constant<size_t, k>{}), ...);
  }(std::make_index_sequence<kCount>{});
}

// The default `fetch` of ForEachVectorSet: nothing.
struct NoFetch {
  HWY_INLINE void operator()(int64_t /*i*/) const {}
};

// Calls body(d, set, i) over [begin, end): for bf16 with set a VectorSet<Format, 2> for blocks of
// two full vectors, otherwise with VectorSet<Format, 1> twice per iteration; then with
// VectorSet<Format, 1> for a last full vector and, with a one-lane descriptor, for the tail. For
// element-wise bodies over tensors of one format only: the lane an element lands in depends on
// the format and on where the block starts. Bodies are lambdas marked MANTISSA_VECTOR_BODY.
// fetch(i) is called once per block of two vectors, before its body (core/prefetch.h).
template <class Format, class Body, class Fetch = NoFetch>
HWY_INLINE void ForEachVectorSet(int64_t begin, int64_t end, Body&& body, Fetch&& fetch = {}) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = begin;
  if constexpr (kIsBf16<Format> && hn::MaxLanes(d) > 1) {
    for (; i + 2 * lanes <= end; i += 2 * lanes) {
      fetch(i);
      body(d, VectorSet<Format, 2>{}, i);
    }
  } else {
    // fp32 and fp16 gain nothing from a set of two (their halves load and store apart anyway),
    // and holding both vectors' inputs at once only adds register pressure: one vector per
    // body, two bodies per iteration for the out-of-order core to overlap.
    for (; i + 2 * lanes <= end; i += 2 * lanes) {
      fetch(i);
      body(d, VectorSet<Format, 1>{}, i);
      body(d, VectorSet<Format, 1>{}, i + lanes);
    }
  }
  for (; i + lanes <= end; i += lanes) body(d, VectorSet<Format, 1>{}, i);
  const hn::CappedTag<float, 1> d1;
  for (; i < end; ++i) body(d1, VectorSet<Format, 1>{}, i);
}

// How this target converts (for `mantissa info`).
HWY_INLINE const char* ConversionPathFp16() {
  return MANTISSA_HAVE_F16C ? "F16C (vcvtph2ps, vcvtps2ph)" : "integer lane operations";
}
HWY_INLINE const char* ConversionPathBf16() {
#if MANTISSA_HAVE_BF16_HW
  if (detail::bf16_conversion_instructions()) {
    return "shift to widen; AVX512-BF16 vcvtneps2bf16 to narrow, integer rounding for vectors "
           "with a subnormal or NaN lane";
  }
#endif
  return "shift to widen; integer round-to-nearest-even to narrow";
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

// Whether all n elements at p (widened to fp32) are finite.
template <class Format>
bool AllFinite(const typename Format::Storage* HWY_RESTRICT p, int64_t n) {
  bool finite = true;
  ForEachVector(0, n, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
    finite = finite && hn::AllTrue(d, hn::IsFinite(LoadF32<Format>(d, p + i)));
  });
  return finite;
}

// Calls body(dd, j, count) for kGroup consecutive full fp64 vectors at a time over [begin, end)
// (count is std::integral_constant<size_t, kGroup>), then for single full vectors, then with a
// one-lane descriptor for the tail (count 1): the same lane operations, so every element has the
// same bits wherever it falls.
template <size_t kGroup, class Body>
HWY_INLINE void ForEachDoubleVectorGroup(int64_t begin, int64_t end, Body&& body) {
  const hn::ScalableTag<double> dd;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
  const int64_t step = static_cast<int64_t>(kGroup) * lanes;
  int64_t j = begin;
  for (; j + step <= end; j += step) body(dd, j, std::integral_constant<size_t, kGroup>());
  for (; j + lanes <= end; j += lanes) body(dd, j, std::integral_constant<size_t, 1>());
  const hn::CappedTag<double, 1> d1;
  for (; j < end; ++j) body(d1, j, std::integral_constant<size_t, 1>());
}

// body(dd, j) one fp64 vector at a time over [begin, end).
template <class Body>
HWY_INLINE void ForEachDoubleVector(int64_t begin, int64_t end, Body&& body) {
  ForEachDoubleVectorGroup<1>(begin, end,
                              [&](auto dd, int64_t j, auto) MANTISSA_VECTOR_BODY { body(dd, j); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_CORE_SIMD_INL_H_
