// Element-wise bf16 loops that find their rare lanes once per block instead of once per store
// (AVX3_BF16 only): the conversion runs unchecked, MXCSR's sticky flags record whether any result
// was a NaN or subnormal, and a block that had one is put back and run again with the checked
// conversion. Same bits as ForEachVectorSet<Bf16Hw> in every case.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_CORE_CHECKED_BLOCKS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_CORE_CHECKED_BLOCKS_INL_H_
#undef MANTISSA_CORE_CHECKED_BLOCKS_INL_H_
#else
#define MANTISSA_CORE_CHECKED_BLOCKS_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

#if MANTISSA_HAVE_BF16_HW
// MXCSR's sticky invalid-operation (IE, bit 0) and denormal-operand (DE, bit 1) flags.
inline constexpr uint32_t kCsrInvalidOrDenormal = 0x3u;

// The input vectors one block read, so that they can be put back if the block wrote over them.
// The bodies are element-wise: the k-th of the kLoads loads of the body at element i reads
// base_k + i, so only the first body's addresses are kept; each entry is the 64 bytes a load read.
template <size_t kLoads, size_t kBodies>
struct BlockInputLog {
  static constexpr int64_t kStride = 32;  // elements per body
  size_t count = 0;
  const uint16_t* first[kLoads];
  __m512i read[kLoads * kBodies];

  HWY_INLINE void Record(const uint16_t* p, __m512i bits) {
    if (count < kLoads) first[count] = p;
    read[count] = bits;
    ++count;
  }
  // Newest first, so that an address read twice gets the bits of the first read.
  void PutBack() {
    while (count > 0) {
      --count;
      const uint16_t* p = first[count % kLoads] + static_cast<int64_t>(count / kLoads) * kStride;
      // The inputs the body wrote over are its in-place outputs, which are writable.
      _mm512_storeu_si512(const_cast<uint16_t*>(p), read[count]);
    }
  }
};

// For calls whose stores write over none of their inputs: nothing to put back.
struct NoInputLog {
  size_t count = 0;
  HWY_INLINE void Record(const uint16_t* /*p*/, __m512i /*bits*/) {}
  void PutBack() {}
};

// VectorSet<Bf16Hw, 2> without the lane test. Load also records the bits it read (LoadReadOnly,
// for inputs the body never writes over, does not). StoreResult
// converts both vectors with vcvtne2ps2bf16 and passes them through vmaxps, whose only effect is on
// MXCSR: IE for a NaN lane, DE for a subnormal one, exactly the lanes where the conversion differs
// from StoreResult's (NaN not canonical, subnormal flushed). The caller reads the flags once per
// block (ForEachVectorSetCheckedPerBlock).
template <class Log>
struct UncheckedBf16HwPair : VectorSet<Bf16Hw, 2> {
  Log* log;

  template <class D>
  HWY_INLINE Vecs<D> Load(D d, const uint16_t* HWY_RESTRICT p) const {
    static_assert(hn::MaxLanes(D()) == 16);
    const __m512i bits = _mm512_loadu_si512(p);
    log->Record(p, bits);
    return Split(d, bits);
  }
  // Not logged: no store of the body writes over it.
  template <class D>
  static HWY_INLINE Vecs<D> LoadReadOnly(D d, const uint16_t* HWY_RESTRICT p) {
    return Split(d, _mm512_loadu_si512(p));
  }

  template <class D>
  static HWY_INLINE Vecs<D> Split(D d, __m512i bits) {
    const hn::RebindToUnsigned<D> du;
    const hn::Vec<decltype(du)> b{bits};
    return {hn::BitCast(d, hn::ShiftLeft<16>(b)),
            hn::BitCast(d, hn::And(b, hn::Set(du, 0xFFFF0000u)))};
  }

  template <class D>
  static HWY_INLINE void StoreResult(D /*d*/, const Vecs<D>& v, uint16_t* HWY_RESTRICT p) {
    // Copied as whole vectors: reading .raw through the reference left the array a stack object
    // and GCC 12 stored one vector of each pair there per call, never to read it.
    const hn::Vec<D> even_vec = v[0], odd_vec = v[1];
    const __m512 even = even_vec.raw, odd = odd_vec.raw;
    __m512 unused;
    // Volatile: kept, and kept before the caller's read of MXCSR.
    __asm__ volatile("vmaxps %2, %1, %0" : "=v"(unused) : "v"(even), "v"(odd));
    _mm512_storeu_si512(p, InterleaveHalvesOfWords(CvtNe2Ps2Bf16(odd, even)));
  }
};

// ForEachVectorSet<Bf16Hw> for bodies that are element-wise, read through set.Load (kLoads calls
// per body, the inputs its stores write over; kLoads = 0 when they write over none) or
// set.LoadReadOnly (the others), write only through set.StoreResult and accumulate nothing across
// calls. An input is written back only if a store wrote over it: inputs a call only reads are
// never written. Blocks
// of kBlock elements run with UncheckedBf16HwPair, which replaces the two lane tests and the branch
// per stored pair by one vmaxps; a block after which MXCSR shows IE or DE has its inputs put back
// and runs again with the checked sets. That happens for a NaN or subnormal result (rare in
// training data), and also when the body's own arithmetic met a NaN or subnormal operand, which
// costs only the block's second run: the bits are StoreResult's in every case. IE and DE are left
// as the caller had them.
template <size_t kLoads, class Body, class Fetch>
HWY_INLINE void ForEachVectorSetCheckedPerBlock(int64_t begin, int64_t end, Body&& body,
                                                Fetch&& fetch) {
  const hn::ScalableTag<float> d;
  if constexpr (hn::MaxLanes(d) != 16) {
    ForEachVectorSet<Bf16Hw>(begin, end, body, fetch);
  } else {
    constexpr int64_t kPair = 32;     // elements per UncheckedBf16HwPair
    constexpr int64_t kBlock = 1024;  // the input log (6 KiB for three loads) stays in L1
    using Log = std::conditional_t<kLoads == 0, NoInputLog, BlockInputLog<kLoads, kBlock / kPair>>;
    Log log;
    // The flags are cleared for the blocks and put back as the caller had them at the end: the
    // marks raise them where plain arithmetic on a quiet NaN would not.
    const uint32_t caller_flags = _mm_getcsr() & kCsrInvalidOrDenormal;
    if (caller_flags != 0) _mm_setcsr(_mm_getcsr() & ~kCsrInvalidOrDenormal);
    int64_t i = begin;
    for (; i + kBlock <= end; i += kBlock) {
      for (int64_t j = i; j < i + kBlock; j += kPair) {
        fetch(j);
        body(d, UncheckedBf16HwPair<Log>{{}, &log}, j);
      }
      if (HWY_UNLIKELY((_mm_getcsr() & kCsrInvalidOrDenormal) != 0)) {
        log.PutBack();
        ForEachVectorSet<Bf16Hw>(i, i + kBlock, body, fetch);
        _mm_setcsr(_mm_getcsr() & ~kCsrInvalidOrDenormal);
      }
      log.count = 0;
    }
    ForEachVectorSet<Bf16Hw>(i, end, body, fetch);
    const uint32_t csr = _mm_getcsr();
    if ((csr & kCsrInvalidOrDenormal) != caller_flags) {
      _mm_setcsr((csr & ~kCsrInvalidOrDenormal) | caller_flags);
    }
  }
}
#endif  // MANTISSA_HAVE_BF16_HW

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_CORE_CHECKED_BLOCKS_INL_H_
