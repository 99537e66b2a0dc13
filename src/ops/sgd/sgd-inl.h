// SGD's element-wise math for one vector of lanes, shared by the single-tensor operator
// (ops/sgd/sgd.cc) and the multi-tensor step (optim/multi_tensor.cc), so both give the same bits
// by construction. The grouping is normative (docs/ops/sgd.md): each line one fp32 rounding, no
// FMA.

// Per-target include guard (Highway's idiom for *-inl.h files).
#if defined(MANTISSA_OPS_SGD_SGD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MANTISSA_OPS_SGD_SGD_INL_H_
#undef MANTISSA_OPS_SGD_SGD_INL_H_
#else
#define MANTISSA_OPS_SGD_SGD_INL_H_
#endif

#include <cstddef>
#include <type_traits>

#include "core/simd-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// The per-call scalars of one SGD step: lr and m already read in the parameters' dtype and
// widened; d and wd the fp32 attributes.
struct SgdScalars {
  float lr = 0.0f;
  float m = 0.0f;
  float d = 0.0f;
  float wd = 0.0f;
};

template <class D>
struct SgdLanes {
  hn::Vec<D> p_out;    // the new parameters, fp32 (rounded by the caller's store)
  hn::Vec<D> accum_t;  // the new accum, fp32 (stored only when m != 0)
};

// One step for the lanes of p (parameters), g (gradient), a (accum) and s (stat; read only with
// dampening). The flags are the call's variant: weight_decay != 0, dampening != 0, nesterov.
// Callers pass them as constants (the single-tensor kernel's template flags) or as values fixed
// for the call; either way the same operations run in the same order.
template <class D, class V = hn::Vec<D>>
HWY_INLINE SgdLanes<D> SgdMath(D d, const SgdScalars& c, bool weight_decay, bool dampening,
                               bool nesterov, V p, V g, V a, V s) {
  const auto vm = hn::Set(d, c.m);
  const auto vlr = hn::Set(d, c.lr);
  auto grad = g;
  if (weight_decay) grad = hn::Add(g, hn::Mul(p, hn::Set(d, c.wd)));
  auto accum_t = hn::Add(hn::Mul(a, vm), grad);
  if (dampening) {
    const auto one_minus_s = hn::Sub(hn::Set(d, 1.0f), s);
    accum_t = hn::Sub(accum_t, hn::Mul(hn::Mul(grad, one_minus_s), hn::Set(d, c.d)));
  }
  V step;
  if (nesterov) {
    step = hn::Add(hn::Mul(grad, vlr), hn::Mul(hn::Mul(accum_t, vm), vlr));
  } else {
    step = hn::Mul(accum_t, vlr);
  }
  return {hn::Sub(p, step), accum_t};
}

// Makes the kCount * Lanes(d) elements at p +0.0 (all bits zero), storing only when some element
// is not already +0.0. After the first step stat is all +0.0, so this turns a write (whose cache
// line must be fetched first anyway) into a read: the elements are loaded as raw bits, never
// converted. A 16-bit set of two vectors is tested as one vector of 2 * Lanes(d) 16-bit lanes:
// one load, compare and branch per set instead of one per vector.
template <class Format, size_t kCount = 1, class D>
HWY_INLINE void ClearToPositiveZero(D d, typename Format::Storage* HWY_RESTRICT p) {
  if constexpr (std::is_same_v<Format, Fp32>) {
    static_assert(kCount == 1);
    const hn::RebindToUnsigned<D> du;
    const auto bits = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
    if (!hn::AllTrue(du, hn::Eq(bits, hn::Zero(du)))) hn::StoreU(hn::Zero(d), d, p);
  } else {
    static_assert(kCount == 1 || kCount == 2);
    // Rebind keeps the lane count (one vector); Repartition doubles it (a full set of two).
    using D16 = std::conditional_t<kCount == 1, U16For<D>, hn::Repartition<uint16_t, D>>;
    const D16 du16;
    const auto bits = hn::LoadU(du16, p);
    if (!hn::AllTrue(du16, hn::Eq(bits, hn::Zero(du16)))) hn::StoreU(hn::Zero(du16), du16, p);
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // MANTISSA_OPS_SGD_SGD_INL_H_
