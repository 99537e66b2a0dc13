// Fused multi-tensor optimizer steps (SGD, ApplyAdamD, AdamW) and the list gradient norm.
//
// One parallel region per call: the list's elements are laid end to end and cut into chunks of
// the library's fixed grain, so a chunk may span tensors (as ForeachNonFiniteCheckAndUnscale).
// Each element runs the single-tensor operator's own per-vector math (ops/*/*-inl.h) on the
// same fp32 inputs, so its bits are those of that operator; what this file adds happens before
// (unscale and clip of the gradient) and after (how the new weight is written) that math.
//
// Memory traffic per element (E = var's bytes, G = grad's bytes), the operator's own plus:
//   working copy +2 written; Kahan +2 read +2 written; stochastic rounding none.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "optim/multi_tensor.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/lowp-inl.h"
#include "core/parallel.h"
#include "core/reduce-inl.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/apply_adam_d/apply_adam_d-inl.h"
#include "ops/apply_adam_w_quant/quant_state-inl.h"
#include "ops/apply_adam_w_v2/apply_adam_w_v2-inl.h"
#include "ops/sgd/sgd-inl.h"
#include "optim/multi_tensor_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// lowbias32 (C. Wellons), on u32 lanes: the mixing function of stochastic rounding.
template <class DU>
HWY_INLINE hn::Vec<DU> Mix32(DU du, hn::Vec<DU> x) {
  x = hn::Xor(x, hn::ShiftRight<16>(x));
  x = hn::Mul(x, hn::Set(du, 0x7FEB352Du));
  x = hn::Xor(x, hn::ShiftRight<15>(x));
  x = hn::Mul(x, hn::Set(du, 0x846CA68Bu));
  return hn::Xor(x, hn::ShiftRight<16>(x));
}

// fp32 -> bf16 bits by stochastic rounding: NaN made canonical (0x7FC00000, which any r keeps
// at 0x7FC0), then (bits + r16) >> 16 on the sign-magnitude encoding: the magnitude is rounded
// up with probability (discarded 16 bits) / 2^16.
template <class D>
HWY_INLINE hn::Vec<U16For<D>> StochasticF32ToBf16(D d, hn::Vec<D> f,
                                                  hn::Vec<hn::RebindToUnsigned<D>> r) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, CanonicalNaN(d, f));
  const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::ShiftRight<16>(r)));
  return NarrowToU16(d, hn::BitCast(hn::RebindToSigned<D>(), rounded));
}

// Writers of the new weight. `var` is the old value (fp32), `var_new` the operator's result.
struct WritePlain {};
template <class Copy>
struct WriteCopy {
  using Format = Copy;
};
struct WriteKahan {};
struct WriteStochastic {};

// Writes the new weight of lanes [i, i + Lanes(d)) as Writer says: var is the old value (fp32),
// var_new the operator's result.
template <class State, class Writer, class D>
HWY_INLINE void StoreWeights(D d, hn::Vec<D> var, hn::Vec<D> var_new,
                             typename State::Storage* HWY_RESTRICT var_p, uint16_t* comp,
                             void* working, uint32_t sr_hi_key, int64_t i) {
  if constexpr (std::is_same_v<Writer, WritePlain>) {
    StoreResult<State>(d, var_new, var_p + i);
  } else if constexpr (std::is_same_v<Writer, WriteKahan>) {
    // y = (var_new - var) + c; s = var + y; var <- RNE(s); c <- RNE(y - (RNE(s) - var)).
    const auto c = LoadF32<Bf16>(d, comp + i);
    const auto y = hn::Add(hn::Sub(var_new, var), c);
    const auto s = hn::Add(var, y);
    const auto stored = CanonicalF32ToBf16(d, CanonicalNaN(d, s));
    hn::StoreU(stored, U16For<decltype(d)>(), var_p + i);
    const auto applied = hn::Sub(Bf16ToF32(d, stored), var);
    StoreResult<Bf16>(d, hn::Sub(y, applied), comp + i);
  } else if constexpr (std::is_same_v<Writer, WriteStochastic>) {
    const hn::RebindToUnsigned<decltype(d)> du;
    const auto lo = hn::Add(hn::Set(du, static_cast<uint32_t>(i)), hn::Iota(du, 0));
    const auto r = Mix32(du, hn::Xor(hn::Set(du, sr_hi_key), lo));
    hn::StoreU(StochasticF32ToBf16(d, var_new, r), U16For<decltype(d)>(), var_p + i);
  } else {
    // Master weights: the fp32 value, and its one RNE rounding into the working copy.
    using Copy = typename Writer::Format;
    StoreResult<State>(d, var_new, var_p + i);
    StoreResult<Copy>(d, var_new, static_cast<typename Copy::Storage*>(working) + i);
  }
}

// Elements [begin, end) of tensor t; State/Grad are the storage formats of var (and its state)
// and of grad; Writer one of the above. kPlainStep: the call neither unscales nor clips the
// gradient and runs without amsgrad and maximize (FusedSgd: and with momentum buffers, past the
// first step, without Nesterov), known at compile time (the common call: the loop keeps none of
// their tests, and more of its values in registers). PlainStep() says whether a call is one.
template <detail::MtAlgo kAlgo>
bool PlainStep(const detail::MtArgs& a) {
  if (a.unscale || a.amsgrad || a.maximize) return false;
  if constexpr (kAlgo == detail::MtAlgo::kTorchSgd) {
    return a.torch_sgd_momentum_buffer && !a.torch_sgd_first_step && !a.torch_sgd_nesterov &&
           !a.torch_sgd_write_grad;
  }
  return true;
}

template <detail::MtAlgo kAlgo, class State, class Grad, class Writer, bool kPlainStep = false>
void StepRange(const detail::MtArgs& a, const detail::MtTensor& t, int64_t begin, int64_t end,
               uint32_t sr_hi_key) {
  using S = typename State::Storage;
  using G = typename Grad::Storage;
  S* const var_p = static_cast<S*>(t.var);
  S* const s0 = static_cast<S*>(t.s0);
  S* const s1 = static_cast<S*>(t.s1);
  S* const s2 = static_cast<S*>(t.s2);
  const G* const grad_p = static_cast<const G*>(t.grad);
  const SgdScalars sgd{t.sgd_lr, t.sgd_m, a.sgd_dampening, a.sgd_weight_decay};
  const bool sgd_wd = a.sgd_weight_decay != 0.0f;
  const bool sgd_damp = a.sgd_dampening != 0.0f;
  // Local copies: stores through the float pointers above could otherwise alias these fields,
  // and the compiler would reload them after every store.
  const bool sgd_nesterov = a.sgd_nesterov, sgd_write_state = t.sgd_write_state;
  const bool unscale = !kPlainStep && a.unscale, amsgrad = !kPlainStep && a.amsgrad;
  const bool maximize = !kPlainStep && a.maximize;
  const bool adam_d_nesterov = a.adam_d_nesterov;
  const float scale = a.scale, clip = a.clip;
  const detail::AdamDConstants adam_d = t.adam_d;
  const detail::AdamWConstants adam_w = t.adam_w;
  uint16_t* const comp = static_cast<uint16_t*>(t.compensation);
  void* const working = t.working;
  S* const grad_out = static_cast<S*>(t.grad_out);
  const float tsgd_lr = a.torch_sgd_lr, tsgd_m = a.torch_sgd_momentum;
  const float tsgd_damp = a.torch_sgd_one_minus_dampening, tsgd_wd = a.torch_sgd_weight_decay;
  // FusedSgd's plain step: momentum buffers updated (not the first step), no Nesterov, no grad
  // scale (so no gradient written back).
  [[maybe_unused]] const bool tsgd_nesterov = !kPlainStep && a.torch_sgd_nesterov;
  [[maybe_unused]] const bool tsgd_buffer = kPlainStep || a.torch_sgd_momentum_buffer;
  [[maybe_unused]] const bool tsgd_first = !kPlainStep && a.torch_sgd_first_step;
  [[maybe_unused]] const bool tsgd_write_grad = !kPlainStep && a.torch_sgd_write_grad;

  // Each set is one vector, or for bf16 written plainly two vectors of even- and odd-indexed
  // elements (VectorSet<Format, 2>: half the conversion work). The pairing needs every tensor of
  // the step in the one format, so the fp32 weights of master-weight steps and the per-lane
  // writers (Kahan, stochastic rounding) take one vector at a time.
  constexpr bool kPairs =
      kIsBf16<State> && std::is_same_v<Grad, State> && std::is_same_v<Writer, WritePlain>;
  using Pairing = std::conditional_t<kPairs, State, Fp32>;
  ForEachVectorSet<Pairing>(begin, end, [&](auto d, auto set, int64_t i) MANTISSA_VECTOR_BODY {
    constexpr size_t K = decltype(set)::kCount;
    using SSet = VectorSet<State, K>;
    using GSet = VectorSet<Grad, K>;
    // Every input is loaded before the first store (all stores come last), so in-place outputs
    // and the gradient written back over itself are safe.
    const auto var = SSet::Load(d, var_p + i);
    auto g = GSet::Load(d, grad_p + i);
    auto var_new = var;
    auto s0_new = var, s1_new = var, s2_new = var;  // the state results this algorithm writes
    // The documented grouping: (fp32(grad) / grad_scale) * clip_coef, each one fp32 rounding.
    if (unscale) {
      ForEachOfSet<K>([&](auto k) MANTISSA_VECTOR_BODY {
        g[k] = hn::Mul(hn::Div(g[k], hn::Set(d, scale)), hn::Set(d, clip));
      });
    }
    if constexpr (kAlgo == detail::MtAlgo::kSgd) {
      const auto acc = SSet::Load(d, s0 + i);
      auto stat = var;
      if (sgd_damp) stat = SSet::Load(d, s1 + i);
      ForEachOfSet<K>([&](auto k) MANTISSA_VECTOR_BODY {
        const auto stat_k = sgd_damp ? stat[k] : hn::Zero(d);
        const auto r =
            SgdMath(d, sgd, sgd_wd, sgd_damp, sgd_nesterov, var[k], g[k], acc[k], stat_k);
        s0_new[k] = r.accum_t;
        var_new[k] = r.p_out;
      });
    } else if constexpr (kAlgo == detail::MtAlgo::kAdamD) {
      const auto m = SSet::Load(d, s0 + i);
      const auto v = SSet::Load(d, s1 + i);
      ForEachOfSet<K>([&](auto k) MANTISSA_VECTOR_BODY {
        const auto r = AdamDMath(d, adam_d, adam_d_nesterov, var[k], m[k], v[k], g[k]);
        s0_new[k] = r.m;
        s1_new[k] = r.v;
        var_new[k] = r.var;
      });
    } else if constexpr (kAlgo == detail::MtAlgo::kTorchSgd) {
      // CANN's FusedSgd, each line one fp32 rounding: the unscaled gradient written back (RNE to
      // its dtype) before maximize negates it; g + wd * p; the buffer m * buf + (1 - d) * g (or g
      // on the first step), written back; g + m * buf (Nesterov, the fp32 buffer) or buf; then
      // p - lr * g.
      auto buf = g;
      if (tsgd_buffer && !tsgd_first) buf = SSet::Load(d, s0 + i);
      ForEachOfSet<K>([&](auto k) MANTISSA_VECTOR_BODY {
        auto gk = g[k];
        if (maximize) gk = hn::Neg(gk);
        if (tsgd_wd != 0.0f) gk = hn::Add(gk, hn::Mul(hn::Set(d, tsgd_wd), var[k]));
        if (tsgd_buffer) {
          s0_new[k] = tsgd_first ? gk
                                 : hn::Add(hn::Mul(hn::Set(d, tsgd_m), buf[k]),
                                           hn::Mul(hn::Set(d, tsgd_damp), gk));
          gk = tsgd_nesterov ? hn::Add(gk, hn::Mul(hn::Set(d, tsgd_m), s0_new[k])) : s0_new[k];
        }
        var_new[k] = hn::Sub(var[k], hn::Mul(hn::Set(d, tsgd_lr), gk));
      });
    } else {
      const auto m = SSet::Load(d, s0 + i);
      const auto v = SSet::Load(d, s1 + i);
      auto old_max = var;
      if (amsgrad) old_max = SSet::Load(d, s2 + i);
      ForEachOfSet<K>([&](auto k) MANTISSA_VECTOR_BODY {
        const auto r = AdamWMath(d, adam_w, amsgrad, maximize, var[k], m[k], v[k], g[k],
                                 amsgrad ? old_max[k] : hn::Zero(d));
        s0_new[k] = r.m;
        s1_new[k] = r.v;
        s2_new[k] = r.vmax;
        var_new[k] = r.var;
      });
    }
    // The stores, with NaN lanes made canonical (MaybeNaN), or without that step (NoNaN) where
    // no result can hold a NaN.
    auto store = [&](auto nan) MANTISSA_VECTOR_BODY {
      constexpr NaNLanes kNaN = decltype(nan)::value;
      if constexpr (kAlgo == detail::MtAlgo::kSgd) {
        if (sgd_write_state) {
          SSet::template StoreResult<kNaN>(d, s0_new, s0 + i);
          ClearToPositiveZero<State, K>(d, s1 + i);
        }
      } else if constexpr (kAlgo == detail::MtAlgo::kTorchSgd) {
        if (tsgd_write_grad) SSet::template StoreResult<kNaN>(d, g, grad_out + i);
        if (tsgd_buffer) SSet::template StoreResult<kNaN>(d, s0_new, s0 + i);
      } else {
        SSet::template StoreResult<kNaN>(d, s0_new, s0 + i);
        SSet::template StoreResult<kNaN>(d, s1_new, s1 + i);
        if (kAlgo == detail::MtAlgo::kAdamW && amsgrad) {
          SSet::template StoreResult<kNaN>(d, s2_new, s2 + i);
        }
      }
      if constexpr (K == 2) {
        SSet::template StoreResult<kNaN>(d, var_new, var_p + i);  // kPairs: written plainly
      } else {
        StoreWeights<State, Writer>(d, var[0], var_new[0], var_p, comp, working, sr_hi_key, i);
      }
    };
    // Every value stored reaches the new weight through operations that propagate NaN (the
    // arithmetic, and AdamW's amsgrad maximum, which keeps a NaN from either side): the state
    // results and the gradient written back feed it, so a NaN in any of them makes it NaN.
    StoreSet<SSet>(d, var_new, store);
  });
}

// The compact moments (kAdamWCompact), one block of tensor t at a time, in three passes over the
// block held in L1: Decode (the stored moments as fp32), AdamWBlock (AdamW on them and the
// weights written; the format plays no part, so its code is shared by every format) and Encode
// (the new moments coded, the block's scale written). Only AdamWBlock depends on the weight's
// formats and writer; Decode and Encode depend on the moment format alone.
struct CompactBlock {
  int64_t begin, end, b;  // elements [begin, end) of the tensor, block b
  HWY_ALIGN float m[detail::kQuantBlock];
  HWY_ALIGN float v[detail::kQuantBlock];
};

// Runs body(d, i) over [begin, end) in full vectors, then one lane at a time.
template <class Body>
HWY_INLINE void ForBlock(int64_t begin, int64_t end, const Body& body) {
  const hn::ScalableTag<float> d;
  const hn::CappedTag<float, 1> d1;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = begin;
  for (; i + lanes <= end; i += lanes) body(d, i);
  for (; i < end; ++i) body(d1, i);
}

// map[c] for codes c in [0, 16), without a gather: the map in pieces of Lanes(d) entries, each
// looked up by the codes' low bits, the piece chosen by their high bits (one permutation with 16
// lanes).
template <class D>
HWY_INLINE hn::Vec<D> Lookup16(D d, const float* HWY_RESTRICT map,
                               hn::Vec<hn::RebindToSigned<D>> c) {
  const hn::RebindToSigned<D> di;
  const int lanes = static_cast<int>(hn::Lanes(d));
  const auto low = hn::And(c, hn::Set(di, lanes - 1));
  const auto index = hn::IndicesFromVec(d, low);
  const auto high = hn::Sub(c, low);
  auto r = hn::TableLookupLanes(hn::LoadU(d, map), index);
  for (int piece = lanes; piece < 16; piece += lanes) {
    const auto hit = hn::RebindMask(d, hn::Eq(high, hn::Set(di, piece)));
    r = hn::IfThenElse(hit, hn::TableLookupLanes(hn::LoadU(d, map + piece), index), r);
  }
  return r;
}

HWY_NOINLINE void DecodeBlock(const detail::MtArgs& a, const detail::MtTensor& t, CompactBlock& k) {
  const int64_t begin = k.begin, end = k.end;
  float* HWY_RESTRICT m = k.m;
  float* HWY_RESTRICT v = k.v;
  switch (a.format) {
    case MomentFormat::kFp32:
    case MomentFormat::kBf16: {
      ForBlock(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
        if (a.format == MomentFormat::kFp32) {
          hn::StoreU(hn::LoadU(d, static_cast<const float*>(t.s0) + i), d, m + (i - begin));
          hn::StoreU(hn::LoadU(d, static_cast<const float*>(t.s1) + i), d, v + (i - begin));
        } else {
          hn::StoreU(LoadF32<Bf16>(d, static_cast<const uint16_t*>(t.s0) + i), d, m + (i - begin));
          hn::StoreU(LoadF32<Bf16>(d, static_cast<const uint16_t*>(t.s1) + i), d, v + (i - begin));
        }
      });
      return;
    }
    case MomentFormat::kInt8: {
      // map[code] * scale
      const float sm = t.scale_m[k.b], sv = t.scale_v[k.b];
      const auto* m_codes = static_cast<const uint8_t*>(t.s0);
      const auto* v_codes = static_cast<const uint8_t*>(t.s1);
      const float* HWY_RESTRICT qm = a.coder_m->map.data();
      const float* HWY_RESTRICT qv = a.coder_v->map.data();
      ForBlock(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
        const auto dm = hn::GatherIndex(d, qm, LoadCodes(d, m_codes + i));
        const auto dv = hn::GatherIndex(d, qv, LoadCodes(d, v_codes + i));
        hn::StoreU(hn::Mul(dm, hn::Set(d, sm)), d, m + (i - begin));
        hn::StoreU(hn::Mul(dv, hn::Set(d, sv)), d, v + (i - begin));
      });
      return;
    }
    case MomentFormat::kFp8E4M3: {
      // The E4M3 code's value (exact, by lane arithmetic: no table) * scale
      const float sm = t.scale_m[k.b], sv = t.scale_v[k.b];
      const auto* m_codes = static_cast<const uint8_t*>(t.s0);
      const auto* v_codes = static_cast<const uint8_t*>(t.s1);
      ForBlock(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
        const auto dm = MiniFloatToF32<kE4M3>(d, LoadCodes(d, m_codes + i));
        const auto dv = MiniFloatToF32<kE4M3>(d, LoadCodes(d, v_codes + i));
        hn::StoreU(hn::Mul(dm, hn::Set(d, sm)), d, m + (i - begin));
        hn::StoreU(hn::Mul(dv, hn::Set(d, sv)), d, v + (i - begin));
      });
      return;
    }
    case MomentFormat::kInt4: {
      // map[nibble] * scale: the nibbles unpacked to bytes (the block starts at an even
      // element, so at a byte), then looked up in registers.
      const float sm = t.scale_m[k.b], sv = t.scale_v[k.b];
      const auto* HWY_RESTRICT m_bytes = static_cast<const uint8_t*>(t.s0) + begin / 2;
      const auto* HWY_RESTRICT v_bytes = static_cast<const uint8_t*>(t.s1) + begin / 2;
      HWY_ALIGN uint8_t cm[detail::kQuantBlock], cv[detail::kQuantBlock];
      const int64_t n = end - begin;
      for (int64_t j = 0; j < (n + 1) / 2; ++j) {
        cm[2 * j] = static_cast<uint8_t>(m_bytes[j] >> 4);
        cm[2 * j + 1] = static_cast<uint8_t>(m_bytes[j] & 15);
        cv[2 * j] = static_cast<uint8_t>(v_bytes[j] >> 4);
        cv[2 * j + 1] = static_cast<uint8_t>(v_bytes[j] & 15);
      }
      const float* qm = a.int4_m->map.data();
      const float* qv = a.int4_v->map.data();
      ForBlock(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
        const auto dm = Lookup16(d, qm, LoadCodes(d, cm + (i - begin)));
        const auto dv = Lookup16(d, qv, LoadCodes(d, cv + (i - begin)));
        hn::StoreU(hn::Mul(dm, hn::Set(d, sm)), d, m + (i - begin));
        hn::StoreU(hn::Mul(dv, hn::Set(d, sv)), d, v + (i - begin));
      });
      return;
    }
  }
}

// The 4-bit code of x: the count of thresholds t_k <= x (NaN: 0), by a 4-step binary search
// over them (table: t_1..t_15, then +inf), each step one in-register lookup.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> Int4Code(D d, const float* HWY_RESTRICT table,
                                                   hn::Vec<D> x) {
  const hn::RebindToSigned<D> di;
  auto code = hn::Zero(di);
  for (int step = 8; step >= 1; step /= 2) {
    const auto t = Lookup16(d, table, hn::Add(code, hn::Set(di, step - 1)));
    const auto up = hn::RebindMask(di, hn::Ge(x, t));
    code = hn::IfThenElse(up, hn::Add(code, hn::Set(di, step)), code);
  }
  return code;
}

// The block's scale of a format from its absmax (NaN kept): int8 the absmax; int4
// max(absmax, 1e-12); FP8 max(absmax, 1e-12) / 448, one fp32 division.
float BlockScale(MomentFormat f, float absmax) {
  if (f == MomentFormat::kInt8 || absmax != absmax) return absmax;
  const float clipped = absmax < 1e-12f ? 1e-12f : absmax;
  return f == MomentFormat::kInt4 ? clipped : clipped / 448.0f;
}

// bytes[j] = (codes[2j] << 4) | codes[2j + 1] for j < n (codes 0..15).
HWY_INLINE void PackNibbles(const uint8_t* HWY_RESTRICT codes, int64_t n,
                            uint8_t* HWY_RESTRICT bytes) {
  const hn::ScalableTag<int16_t> d16;
  const hn::Rebind<uint8_t, decltype(d16)> d8;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d16));
  int64_t j = 0;
  for (; j + lanes <= n; j += lanes) {
    // Little-endian: a 16-bit lane holds codes[2j] in its low byte, codes[2j + 1] in its high.
    const auto pair = hn::LoadU(d16, reinterpret_cast<const int16_t*>(codes + 2 * j));
    const auto packed =
        hn::Or(hn::ShiftLeft<4>(hn::And(pair, hn::Set(d16, 0xF))), hn::ShiftRight<8>(pair));
    hn::StoreU(hn::DemoteTo(d8, packed), d8, bytes + j);
  }
  for (; j < n; ++j) bytes[j] = static_cast<uint8_t>(codes[2 * j] << 4 | codes[2 * j + 1]);
}

HWY_NOINLINE void EncodeBlock(const detail::MtArgs& a, const detail::MtTensor& t,
                              const CompactBlock& k, float absmax_m, float absmax_v) {
  const int64_t begin = k.begin, end = k.end;
  const float* HWY_RESTRICT m = k.m;
  const float* HWY_RESTRICT v = k.v;
  switch (a.format) {
    case MomentFormat::kFp32:
    case MomentFormat::kBf16: {
      ForBlock(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
        const auto nm = hn::LoadU(d, m + (i - begin));
        const auto nv = hn::LoadU(d, v + (i - begin));
        if (a.format == MomentFormat::kFp32) {
          StoreResult<Fp32>(d, nm, static_cast<float*>(t.s0) + i);
          StoreResult<Fp32>(d, nv, static_cast<float*>(t.s1) + i);
        } else if (a.stochastic_moments) {
          // As WriteStochastic's bits: each stream's key mixed with the element index's high
          // word (a block never straddles a multiple of 2^32), then with its low word.
          const hn::RebindToUnsigned<decltype(d)> du;
          const auto hi = static_cast<uint32_t>(static_cast<uint64_t>(begin) >> 32);
          const auto lo = hn::Add(hn::Set(du, static_cast<uint32_t>(i)), hn::Iota(du, 0));
          const auto rm = Mix32(du, hn::Xor(hn::Set(du, detail::mix32(t.moment_key_m ^ hi)), lo));
          const auto rv = Mix32(du, hn::Xor(hn::Set(du, detail::mix32(t.moment_key_v ^ hi)), lo));
          hn::StoreU(StochasticF32ToBf16(d, nm, rm), U16For<decltype(d)>(),
                     static_cast<uint16_t*>(t.s0) + i);
          hn::StoreU(StochasticF32ToBf16(d, nv, rv), U16For<decltype(d)>(),
                     static_cast<uint16_t*>(t.s1) + i);
        } else {
          StoreResult<Bf16>(d, nm, static_cast<uint16_t*>(t.s0) + i);
          StoreResult<Bf16>(d, nv, static_cast<uint16_t*>(t.s1) + i);
        }
      });
      return;
    }
    default: break;
  }
  const float sm = BlockScale(a.format, absmax_m), sv = BlockScale(a.format, absmax_v);
  auto* m_codes = static_cast<uint8_t*>(t.s0);
  auto* v_codes = static_cast<uint8_t*>(t.s1);
  if (a.format == MomentFormat::kInt8) {
    // moment / absmax through the maps' tables, which give the search's codes for every value
    // in [-1, 1] or NaN. m's sign rule never moves a code of the signed dynamic map (it holds 0,
    // so the nearest entry of a positive x is never negative): the table's code is final.
    ForBlock(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      const auto xm = hn::Div(hn::LoadU(d, m + (i - begin)), hn::Set(d, sm));
      const auto xv = hn::Div(hn::LoadU(d, v + (i - begin)), hn::Set(d, sv));
      StoreCodes(d, TableCode(d, *a.coder_m, xm), m_codes + i);
      StoreCodes(d, TableCode(d, *a.coder_v, xv), v_codes + i);
    });
  } else if (a.format == MomentFormat::kFp8E4M3) {
    ForBlock(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      const auto xm = hn::Div(hn::LoadU(d, m + (i - begin)), hn::Set(d, sm));
      const auto xv = hn::Div(hn::LoadU(d, v + (i - begin)), hn::Set(d, sv));
      StoreCodes(d, F32ToMiniFloat<kE4M3, true>(d, CanonicalNaN(d, xm)), m_codes + i);
      StoreCodes(d, F32ToMiniFloat<kE4M3, true>(d, CanonicalNaN(d, xv)), v_codes + i);
    });
  } else {
    // 4 bits: the codes one per byte in L1 (a zero after an odd count), then packed two per
    // byte: read as 16-bit lanes, (c[2j] << 4) | c[2j + 1], narrowed.
    HWY_ALIGN uint8_t cm[detail::kQuantBlock + 2], cv[detail::kQuantBlock + 2];
    const float* tm = a.int4_m->threshold.data();
    const float* tv = a.int4_v->threshold.data();
    ForBlock(begin, end, [&](auto d, int64_t i) MANTISSA_VECTOR_BODY {
      const auto xm = hn::Div(hn::LoadU(d, m + (i - begin)), hn::Set(d, sm));
      const auto xv = hn::Div(hn::LoadU(d, v + (i - begin)), hn::Set(d, sv));
      StoreCodes(d, Int4Code(d, tm, xm), cm + (i - begin));
      StoreCodes(d, Int4Code(d, tv, xv), cv + (i - begin));
    });
    const int64_t n = end - begin, bytes = (n + 1) / 2;
    cm[n] = cv[n] = 0;
    PackNibbles(cm, bytes, m_codes + begin / 2);
    PackNibbles(cv, bytes, v_codes + begin / 2);
  }
  t.scale_m[k.b] = sm;
  t.scale_v[k.b] = sv;
}

// AdamW over the block's decoded moments: the weights written, the new moments left in k, and
// their absmax (NaN when any is NaN) returned.
template <class State, class Grad, class Writer>
HWY_NOINLINE std::pair<float, float> AdamWBlock(const detail::MtArgs& a, const detail::MtTensor& t,
                                                CompactBlock& k) {
  using S = typename State::Storage;
  using G = typename Grad::Storage;
  using D = hn::ScalableTag<float>;
  using D1 = hn::CappedTag<float, 1>;
  S* const var_p = static_cast<S*>(t.var);
  const G* const grad_p = static_cast<const G*>(t.grad);
  const bool unscale = a.unscale, maximize = a.maximize;
  const float scale = a.scale, clip = a.clip;
  const detail::AdamWConstants adam_w = t.adam_w;
  uint16_t* const comp = static_cast<uint16_t*>(t.compensation);
  void* const working = t.working;
  const int64_t begin = k.begin, end = k.end;
  const uint32_t sr_hi_key =
      detail::mix32(t.sr_key ^ static_cast<uint32_t>(static_cast<uint64_t>(begin) >> 32));
  float* HWY_RESTRICT mm = k.m;
  float* HWY_RESTRICT vv = k.v;
  const D d;
  const D1 d1;
  auto acc_m = hn::Zero(d), acc_v = hn::Zero(d);
  auto tail_m = hn::Zero(d1), tail_v = hn::Zero(d1);
  const auto step = [&](auto dd, int64_t i, auto& max_m, auto& max_v) MANTISSA_VECTOR_BODY {
    using DD = decltype(dd);
    const auto var = LoadF32<State>(dd, var_p + i);
    auto g = LoadF32<Grad>(dd, grad_p + i);
    if (unscale) g = hn::Mul(hn::Div(g, hn::Set(dd, scale)), hn::Set(dd, clip));
    const auto m = hn::LoadU(dd, mm + (i - begin));
    const auto v = hn::LoadU(dd, vv + (i - begin));
    const auto r = AdamWMath(dd, adam_w, false, maximize, var, m, v, g, hn::Zero(dd));
    StoreWeights<State, Writer>(dd, var, r.var, var_p, comp, working, sr_hi_key, i);
    hn::StoreU(r.m, dd, mm + (i - begin));
    hn::StoreU(r.v, dd, vv + (i - begin));
    max_m = MaxKeepNaN<DD>(max_m, hn::Abs(r.m));
    max_v = MaxKeepNaN<DD>(max_v, hn::Abs(r.v));
  };
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = begin;
  for (; i + lanes <= end; i += lanes) step(d, i, acc_m, acc_v);
  for (; i < end; ++i) step(d1, i, tail_m, tail_v);
  return {FinishAbsMax(d, acc_m, tail_m), FinishAbsMax(d, acc_v, tail_v)};
}

template <detail::MtAlgo kAlgo, class State, class Grad, class Writer>
void StepPiece(const detail::MtArgs& a, const detail::MtTensor& t, int64_t begin, int64_t end) {
  if constexpr (kAlgo == detail::MtAlgo::kAdamWCompact) {
    // begin is a block boundary (run_list lays tensors out at multiples of kQuantBlock, a
    // multiple of every format's block); a block never straddles a multiple of 2^32 (the
    // stochastic key's high word).
    CompactBlock k;
    for (int64_t b = begin; b < end; b += a.block) {
      k.begin = b;
      k.end = std::min(end, b + a.block);
      k.b = b / a.block;
      DecodeBlock(a, t, k);
      const auto [absmax_m, absmax_v] = AdamWBlock<State, Grad, Writer>(a, t, k);
      EncodeBlock(a, t, k, absmax_m, absmax_v);
    }
  } else if constexpr (std::is_same_v<Writer, WriteStochastic>) {
    // Split at multiples of 2^32 so that the high word of the element index is constant.
    while (begin < end) {
      const uint64_t hi = static_cast<uint64_t>(begin) >> 32;
      const int64_t stop = std::min<int64_t>(end, static_cast<int64_t>((hi + 1) << 32));
      const uint32_t key = detail::mix32(t.sr_key ^ static_cast<uint32_t>(hi));
      StepRange<kAlgo, State, Grad, Writer>(a, t, begin, stop, key);
      begin = stop;
    }
  } else {
    // The Adam family and FusedSgd in bf16 written plainly (sets of two vectors) have a
    // plain-step loop too.
    constexpr bool kPlainLoop =
        kIsBf16<State> && std::is_same_v<Grad, State> && std::is_same_v<Writer, WritePlain> &&
        (kAlgo == detail::MtAlgo::kAdamW || kAlgo == detail::MtAlgo::kAdamD ||
         kAlgo == detail::MtAlgo::kTorchSgd);
    if constexpr (kPlainLoop) {
      if (PlainStep<kAlgo>(a)) {
        StepRange<kAlgo, State, Grad, Writer, true>(a, t, begin, end, 0);
        return;
      }
    }
    StepRange<kAlgo, State, Grad, Writer>(a, t, begin, end, 0);
  }
}

template <detail::MtAlgo kAlgo>
void StepTensor(const detail::MtArgs& a, const detail::MtTensor& t, int64_t begin, int64_t end) {
  using detail::MtWriter;
  const DType s = t.state, g = t.grad_dtype;
  if constexpr (kAlgo == detail::MtAlgo::kTorchSgd) {
    // FusedSgd: one dtype for every tensor, plain writes.
    if (s == DType::kFloat32) {
      StepPiece<kAlgo, Fp32, Fp32, WritePlain>(a, t, begin, end);
    } else if (s == DType::kFloat16) {
      StepPiece<kAlgo, Fp16, Fp16, WritePlain>(a, t, begin, end);
    } else {
      VisitBf16([&](auto bf16) {
        using B = decltype(bf16);
        StepPiece<kAlgo, B, B, WritePlain>(a, t, begin, end);
      });
    }
    return;
  }
  if (s == DType::kFloat32) {
    auto with_grad = [&](auto grad) {
      using G = decltype(grad);
      if (t.writer == MtWriter::kWorkingCopy) {
        if (t.working_dtype == DType::kFloat16) {
          StepPiece<kAlgo, Fp32, G, WriteCopy<Fp16>>(a, t, begin, end);
        } else {
          // The runtime's bf16 narrowing (AVX512-BF16 where chosen): the same bits.
          VisitBf16([&](auto copy) {
            StepPiece<kAlgo, Fp32, G, WriteCopy<decltype(copy)>>(a, t, begin, end);
          });
        }
      } else {
        StepPiece<kAlgo, Fp32, G, WritePlain>(a, t, begin, end);
      }
    };
    if (g == DType::kFloat16) {
      with_grad(Fp16{});
    } else if (g == DType::kBFloat16) {
      with_grad(Bf16{});
    } else {
      with_grad(Fp32{});
    }
  } else if (s == DType::kFloat16) {
    StepPiece<kAlgo, Fp16, Fp16, WritePlain>(a, t, begin, end);
  } else if (t.writer == MtWriter::kKahan) {
    StepPiece<kAlgo, Bf16, Bf16, WriteKahan>(a, t, begin, end);
  } else if (t.writer == MtWriter::kStochastic) {
    StepPiece<kAlgo, Bf16, Bf16, WriteStochastic>(a, t, begin, end);
  } else {
    VisitBf16([&](auto bf16) {
      using B = decltype(bf16);
      StepPiece<kAlgo, B, B, WritePlain>(a, t, begin, end);
    });
  }
}

template <detail::MtAlgo kAlgo>
void StepList(const detail::MtArgs& a) {
  const int64_t total = a.offsets.back();
  auto chunk = [&](int64_t begin, int64_t end) {
    // The first tensor holding element `begin`, then each tensor the chunk touches.
    auto it = std::upper_bound(a.offsets.begin(), a.offsets.end(), begin);
    std::size_t i = static_cast<std::size_t>(it - a.offsets.begin()) - 1;
    for (int64_t pos = begin; pos < end; ++i) {
      const int64_t first = a.offsets[i], last = a.offsets[i + 1];
      if (last <= pos) continue;  // empty tensors
      const int64_t stop = std::min(end, last);
      // With 8-bit moments a tensor's span is padded to whole blocks: the padding is skipped.
      const int64_t real_end = std::min(stop - first, a.tensors[i].n);
      if (pos - first < real_end) StepTensor<kAlgo>(a, a.tensors[i], pos - first, real_end);
      pos = stop;
    }
  };
  detail::parallel_for(total, detail::kDefaultGrain, chunk);
}

void MultiTensorStepImpl(const detail::MtArgs& a) {
  switch (a.algo) {
    case detail::MtAlgo::kSgd: return StepList<detail::MtAlgo::kSgd>(a);
    case detail::MtAlgo::kAdamD: return StepList<detail::MtAlgo::kAdamD>(a);
    case detail::MtAlgo::kAdamW: return StepList<detail::MtAlgo::kAdamW>(a);
    case detail::MtAlgo::kAdamWCompact: return StepList<detail::MtAlgo::kAdamWCompact>(a);
    case detail::MtAlgo::kTorchSgd: return StepList<detail::MtAlgo::kTorchSgd>(a);
  }
}

// ---- The list norm --------------------------------------------------------------------------

template <class Format>
struct AbsTerm {
  const typename Format::Storage* x;
  template <class DA>
  HWY_INLINE hn::Vec<DA> operator()(DA da, int64_t i) const {
    return hn::Abs(LoadAcc<Format>(da, x + i));
  }
};

// Block b (kReduceBlock elements) of tensor x: the fp64 Neumaier partial of its squares or
// absolute values, or its max |x|.
template <class Format>
void NormBlock(const TensorView& x, int norm_type, int64_t begin, int64_t len,
               detail::Partial<double>* partial, MaxPartial* max) {
  const auto* p = static_cast<const typename Format::Storage*>(x.data);
  constexpr auto kM = detail::ReduceMethod::kNeumaier;
  if (norm_type == 2) {
    *partial = ReduceBlock<kM, double>(SquareTerm<Format>{p}, begin, len);
  } else if (norm_type == 1) {
    *partial = ReduceBlock<kM, double>(AbsTerm<Format>{p}, begin, len);
  } else {
    *max = MaxBlock(MaxTerm<Format, true>{p}, begin, len);
  }
}

void ListNormImpl(const detail::ListNormArgs& a) {
  const std::size_t count = a.grads.size();
  std::vector<int64_t> first_block(count + 1, 0);
  for (std::size_t i = 0; i < count; ++i) {
    first_block[i + 1] =
        first_block[i] + detail::chunk_count(*a.grads[i].numel(), detail::kReduceBlock);
  }
  const int64_t blocks = first_block.back();
  std::vector<detail::Partial<double>> partials(static_cast<std::size_t>(blocks));
  std::vector<MaxPartial> maxes(static_cast<std::size_t>(blocks));
  auto body = [&](int64_t b0, int64_t b1) {
    auto it = std::upper_bound(first_block.begin(), first_block.end(), b0);
    std::size_t i = static_cast<std::size_t>(it - first_block.begin()) - 1;
    for (int64_t b = b0; b < b1; ++b) {
      while (first_block[i + 1] <= b) ++i;
      const TensorView& x = a.grads[i];
      const int64_t begin = (b - first_block[i]) * detail::kReduceBlock;
      const int64_t len = std::min(detail::kReduceBlock, *x.numel() - begin);
      auto* partial = &partials[static_cast<std::size_t>(b)];
      auto* max = &maxes[static_cast<std::size_t>(b)];
      switch (x.dtype) {
        case DType::kFloat16: NormBlock<Fp16>(x, a.norm_type, begin, len, partial, max); break;
        case DType::kBFloat16: NormBlock<Bf16>(x, a.norm_type, begin, len, partial, max); break;
        default: NormBlock<Fp32>(x, a.norm_type, begin, len, partial, max); break;
      }
    }
  };
  detail::parallel_for(blocks, detail::kReduceBlocksPerChunk, body);
  // Each tensor's blocks combine along the reduction's pairwise tree (the bits of the library's
  // fp64 Neumaier reduction of that tensor).
  constexpr auto kM = detail::ReduceMethod::kNeumaier;
  const auto merge = [](const detail::Partial<double>& x, const detail::Partial<double>& y) {
    return detail::merge<kM>(x, y);
  };
  for (std::size_t i = 0; i < count; ++i) {
    const int64_t b0 = first_block[i], b1 = first_block[i + 1];
    if (b0 == b1) {
      a.per_tensor[i] = 0.0;
      continue;
    }
    if (a.norm_type == 0) {
      detail::PairwiseStack<MaxPartial> stack;
      for (int64_t b = b0; b < b1; ++b) stack.push(maxes[static_cast<std::size_t>(b)], MergeMax);
      const MaxPartial p = stack.collapse(MergeMax);
      a.per_tensor[i] = p.nan ? std::numeric_limits<double>::quiet_NaN() : p.value;
    } else {
      detail::PairwiseStack<detail::Partial<double>> stack;
      for (int64_t b = b0; b < b1; ++b) stack.push(partials[static_cast<std::size_t>(b)], merge);
      a.per_tensor[i] = detail::finish<kM>(stack.collapse(merge));
    }
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>

#include "core/entry.h"
#include "core/op_desc.h"
#include "core/reduce.h"
#include "core/runtime_internal.h"
#include "core/validate.h"
#include "mantissa/ops/apply_adam_w_quant.h"
#include "mantissa/ops/foreach_non_finite_check_and_unscale.h"
#include "mantissa/ops/fused_adamw.h"
#include "mantissa/ops/fused_sgd.h"
#include "mantissa/optim.h"
#include "ops/sgd/sgd_desc.h"

namespace mantissa {

HWY_EXPORT(MultiTensorStepImpl);
HWY_EXPORT(ListNormImpl);

namespace detail {
namespace {

// What the per-parameter rules need from the call.
struct ParamRules {
  WeightRounding rounding = WeightRounding::kNearest;
};

// The rules of one parameter that go beyond its single-tensor operator's declaration: the
// master-weight grad dtype (ApplyAdamWV2's rule, for every optimizer here), the working copy
// and the Kahan compensation buffer.
Status check_param_forms(std::string_view op, const TensorView& var, const TensorView& grad,
                         const std::optional<TensorView>& working,
                         const std::optional<TensorView>& compensation, const ParamRules& r) {
  if (grad.dtype != var.dtype && var.dtype != DType::kFloat32) {
    return fail(StatusCode::kParamInvalid, op,
                "grad dtype {} differs from var dtype {} (a different grad dtype needs FLOAT "
                "state: FLOAT16 or BFLOAT16 grad with FLOAT var and state)",
                dtype_name(grad.dtype), dtype_name(var.dtype));
  }
  if (working && var.dtype != DType::kFloat32) {
    return fail(StatusCode::kParamInvalid, op,
                "a working copy needs FLOAT (master) weights, but var dtype is {}",
                dtype_name(var.dtype));
  }
  const bool kahan = r.rounding == WeightRounding::kKahan && var.dtype == DType::kBFloat16;
  if (compensation && !kahan) {
    return fail(StatusCode::kParamInvalid, op,
                "compensation is given but the weights are not Kahan-compensated bf16 (var dtype "
                "{}, rounding {})",
                dtype_name(var.dtype), static_cast<int>(r.rounding));
  }
  if (kahan && !compensation) {
    return fail(StatusCode::kParamNullptr, op,
                "compensation is required for BFLOAT16 weights with WeightRounding::kKahan");
  }
  return {};
}

// The per-parameter declarations: the single-tensor operators' arguments (names, dtype, shape
// and aliasing rules), with the list form's differences: every tensor is updated in place, rank
// 0..8 and empty tensors are allowed (as in ForeachNonFiniteCheckAndUnscale's C++ API), the
// scalars are call values, and the optional working copy and compensation buffer.
// The two optional buffers every parameter may carry, following its weights' shape: the fp16 or
// bf16 working copy of fp32 master weights, and the bf16 Kahan compensation.
constexpr ArgSpec working_copy_of(int weights) {
  return InOut("working", "working")
      .dtype_in({DType::kFloat16, DType::kBFloat16})
      .shape_of(weights)
      .rank(0, 8)
      .optional_input();
}
constexpr ArgSpec compensation_of(int weights) {
  return InOut("compensation", "compensation")
      .dtype_in({DType::kBFloat16})
      .shape_of(weights)
      .rank(0, 8)
      .optional_input();
}

struct SgdParamOp {
  using Tensors = SgdParamTensors;
  using Params = ParamRules;
  static constexpr std::string_view kType = "multi_tensor_sgd";
  enum Arg { kParameters, kGradient, kAccum, kStat, kWorking, kCompensation };
  static constexpr std::array kArgs{
      InOut("parameters", "parameters").training_float().rank(0, 8),
      In("gradient", "gradient").training_float().shape_of(kParameters).rank(0, 8),
      InOut("accum", "accum").like(kParameters).rank(0, 8),
      InOut("stat", "stat").like(kParameters).rank(0, 8),
      working_copy_of(kParameters),
      compensation_of(kParameters),
  };
  MANTISSA_TENSOR_MEMBERS(parameters, gradient, accum, stat, working, compensation);
  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();
  static constexpr OpHooks<Tensors, Params> kHooks{.params_beyond_attrs = true};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
  static Status check_params(const Tensors& t, const Params& p) {
    return check_param_forms(kType, t.parameters, t.gradient, t.working, t.compensation, p);
  }
};
static_assert(well_formed<SgdParamOp>());

struct AdamDParamOp {
  using Tensors = AdamDParamTensors;
  using Params = ParamRules;
  static constexpr std::string_view kType = "multi_tensor_apply_adam_d";
  enum Arg { kVar, kM, kV, kGrad, kWorking, kCompensation };
  static constexpr std::array kArgs{
      InOut("var", "var").training_float().rank(0, 8),
      InOut("m", "m").like(kVar).rank(0, 8),
      InOut("v", "v").like(kVar).rank(0, 8),
      In("grad", "grad").training_float().shape_of(kVar).rank(0, 8),
      working_copy_of(kVar),
      compensation_of(kVar),
  };
  MANTISSA_TENSOR_MEMBERS(var, m, v, grad, working, compensation);
  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();
  static constexpr OpHooks<Tensors, Params> kHooks{.params_beyond_attrs = true};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
  static Status check_params(const Tensors& t, const Params& p) {
    return check_param_forms(kType, t.var, t.grad, t.working, t.compensation, p);
  }
};
static_assert(well_formed<AdamDParamOp>());

struct AdamWParamOp {
  using Tensors = AdamWParamTensors;
  using Params = ParamRules;
  static constexpr std::string_view kType = "multi_tensor_adam_w";
  enum Arg { kVar, kM, kV, kMaxGradNorm, kGrad, kWorking, kCompensation };
  static constexpr std::array kArgs{
      InOut("var", "var").training_float().rank(0, 8),
      InOut("m", "m").like(kVar).rank(0, 8),
      InOut("v", "v").like(kVar).rank(0, 8),
      InOut("max_grad_norm", "max_grad_norm").like(kVar).rank(0, 8).optional_input(),
      In("grad", "grad").training_float().shape_of(kVar).rank(0, 8),
      working_copy_of(kVar),
      compensation_of(kVar),
  };
  MANTISSA_TENSOR_MEMBERS(var, m, v, max_grad_norm, grad, working, compensation);
  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();
  static constexpr OpHooks<Tensors, Params> kHooks{.params_beyond_attrs = true};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
  static Status check_params(const Tensors& t, const Params& p) {
    return check_param_forms(kType, t.var, t.grad, t.working, t.compensation, p);
  }
};
static_assert(well_formed<AdamWParamOp>());

// AdamW with 8-bit moments: AdamWParamOp's var, grad, working and compensation; m and v UINT8
// codes; one absmax per block.
struct AdamW8bitParamOp {
  using Tensors = AdamW8bitParamTensors;
  using Params = ParamRules;
  static constexpr std::string_view kType = "multi_tensor_adam_w_8bit";
  enum Arg { kVar, kM, kV, kAbsmaxM, kAbsmaxV, kGrad, kWorking, kCompensation };
  static constexpr std::array kArgs{
      InOut("var", "var").training_float().rank(0, 8),
      InOut("m", "m").dtype_in({DType::kUInt8}).shape_of(kVar).rank(0, 8),
      InOut("v", "v").dtype_in({DType::kUInt8}).shape_of(kVar).rank(0, 8),
      InOut("absmax_m", "absmax_m").float32().rank(1, 1),
      InOut("absmax_v", "absmax_v").float32().rank(1, 1),
      In("grad", "grad").training_float().shape_of(kVar).rank(0, 8),
      working_copy_of(kVar),
      compensation_of(kVar),
  };
  MANTISSA_TENSOR_MEMBERS(var, m, v, absmax_m, absmax_v, grad, working, compensation);
  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();
  static constexpr OpHooks<Tensors, Params> kHooks{.params_beyond_attrs = true};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
  static Status check_params(const Tensors& t, const Params& p) {
    MANTISSA_RETURN_IF_ERROR(check_param_forms(kType, t.var, t.grad, t.working, t.compensation, p));
    const int64_t n = *t.var.numel();
    const int64_t blocks = (n + kQuantBlock - 1) / kQuantBlock;
    for (const auto& [absmax, name] :
         {std::pair{&t.absmax_m, "absmax_m"}, std::pair{&t.absmax_v, "absmax_v"}}) {
      if (*absmax->numel() != blocks) {
        return fail(StatusCode::kParamInvalid, kType,
                    "{} has {} elements, but var's {} elements in blocks of {} need {}", name,
                    *absmax->numel(), n, kQuantBlock, blocks);
      }
    }
    return {};
  }
};
static_assert(well_formed<AdamW8bitParamOp>());

// AdamW with compact moments: AdamWParamOp's var, grad, working and compensation; m and v of any
// moment dtype and the scales optional here, their format's rules in check_format.
struct CompactAdamWParamOp {
  using Tensors = CompactAdamWParamTensors;
  using Params = ParamRules;
  static constexpr std::string_view kType = "multi_tensor_adam_w_compact";
  enum Arg { kVar, kM, kV, kGrad, kScaleM, kScaleV, kWorking, kCompensation };
  static constexpr std::array kArgs{
      InOut("var", "var").training_float().rank(0, 8),
      InOut("m", "m")
          .dtype_in({DType::kFloat32, DType::kBFloat16, DType::kUInt8, DType::kFloat8E4M3FN})
          .rank(0, 8),
      InOut("v", "v")
          .dtype_in({DType::kFloat32, DType::kBFloat16, DType::kUInt8, DType::kFloat8E4M3FN})
          .rank(0, 8),
      In("grad", "grad").training_float().shape_of(kVar).rank(0, 8),
      InOut("scale_m", "scale_m").float32().rank(1, 1).optional_input(),
      InOut("scale_v", "scale_v").float32().rank(1, 1).optional_input(),
      working_copy_of(kVar),
      compensation_of(kVar),
  };
  MANTISSA_TENSOR_MEMBERS(var, m, v, grad, scale_m, scale_v, working, compensation);
  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();
  static constexpr OpHooks<Tensors, Params> kHooks{.params_beyond_attrs = true};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
  static Status check_params(const Tensors& t, const Params& p) {
    return check_param_forms(kType, t.var, t.grad, t.working, t.compensation, p);
  }
};
static_assert(well_formed<CompactAdamWParamOp>());

std::string_view format_name(MomentFormat f) {
  switch (f) {
    case MomentFormat::kFp32: return "kFp32";
    case MomentFormat::kBf16: return "kBf16";
    case MomentFormat::kInt8: return "kInt8";
    case MomentFormat::kInt4: return "kInt4";
    case MomentFormat::kFp8E4M3: return "kFp8E4M3";
  }
  return "?";
}

// The moment format's rules for one parameter (its declaration's have passed): m's and v's
// dtype and element count, and the scales present (quantized formats, one per block) or absent.
Status check_format(const CompactAdamWParamTensors& t, MomentFormat f) {
  constexpr std::string_view op = CompactAdamWParamOp::kType;
  const int64_t n = *t.var.numel();
  const int64_t want = moment_elements(f, n);
  const std::string_view fname = format_name(f);
  for (const auto& [view, name] : {std::pair{&t.m, "m"}, std::pair{&t.v, "v"}}) {
    const DType d = view->dtype;
    const bool dtype_ok = f == MomentFormat::kFp32   ? d == DType::kFloat32
                          : f == MomentFormat::kBf16 ? d == DType::kBFloat16
                          : f == MomentFormat::kFp8E4M3
                              ? d == DType::kFloat8E4M3FN || d == DType::kUInt8
                              : d == DType::kUInt8;
    if (!dtype_ok) {
      return fail(StatusCode::kParamInvalid, op, "{} is {}, but {} moments are {}", name,
                  dtype_name(d), fname,
                  f == MomentFormat::kFp32      ? "FLOAT"
                  : f == MomentFormat::kBf16    ? "BFLOAT16"
                  : f == MomentFormat::kFp8E4M3 ? "FLOAT8_E4M3FN or UINT8"
                                                : "UINT8");
    }
    if (f == MomentFormat::kInt4) {
      if (*view->numel() != want) {
        return fail(StatusCode::kParamInvalid, op,
                    "{} has {} elements, but var's {} elements need {} bytes of 4-bit codes", name,
                    *view->numel(), n, want);
      }
    } else {
      MANTISSA_RETURN_IF_ERROR(check_same_shape(op, Arg{name, *view}, Arg{"var", t.var}));
    }
  }
  const int64_t block = moment_block(f);
  for (const auto& [scale, name] :
       {std::pair{&t.scale_m, "scale_m"}, std::pair{&t.scale_v, "scale_v"}}) {
    if (block == 0) {
      if (*scale) {
        return fail(StatusCode::kParamInvalid, op, "{} is given, but {} moments have no scale",
                    name, fname);
      }
      continue;
    }
    if (!*scale) {
      return fail(StatusCode::kParamNullptr, op,
                  "{} is missing; {} moments need one scale per "
                  "block of {}",
                  name, fname, block);
    }
    const int64_t blocks = (n + block - 1) / block;
    if (*(*scale)->numel() != blocks) {
      return fail(StatusCode::kParamInvalid, op,
                  "{} has {} elements, but var's {} elements in blocks of {} need {}", name,
                  *(*scale)->numel(), n, block, blocks);
    }
  }
  return {};
}

// Re-labels a per-parameter failure "op: params[i]: ...".
Status at_param(Status s, std::string_view op, std::size_t i) {
  if (s.ok()) return s;
  std::string_view message = s.message();
  const std::string prefix = fmt::format("{}: ", op);
  if (message.substr(0, prefix.size()) == prefix) message.remove_prefix(prefix.size());
  return Status(s.code(), fmt::format("{}: params[{}]: {}", op, i, message));
}

// grad_scale and found_inf: FLOAT, one element, present; the rounding mode a known one.
Status check_options(std::string_view op, const FusedStepOptions& o, bool compact = false) {
  if (o.stochastic_moments && !compact) {
    return fail(StatusCode::kParamInvalid, op,
                "stochastic_moments is set, but only multi_tensor_adam_w_compact with bf16 "
                "moments rounds its moments stochastically");
  }
  for (const auto& [name, view] :
       {std::pair{"grad_scale", &o.grad_scale}, std::pair{"found_inf", &o.found_inf}}) {
    if (!*view) continue;
    const Arg a{name, **view};
    MANTISSA_RETURN_IF_ERROR(check_present(op, a));
    MANTISSA_RETURN_IF_ERROR(check_dtype(op, a, DType::kFloat32));
    MANTISSA_RETURN_IF_ERROR(check_one_element(op, a));
    if (a.t.data == nullptr) {
      return fail(StatusCode::kParamNullptr, op, "{} has no data", name);
    }
  }
  const auto r = static_cast<int32_t>(o.rounding);
  if (r < 0 || r > 2) {
    return fail(StatusCode::kParamInvalid, op, "unknown WeightRounding {}", r);
  }
  return {};
}

// One byte range of the call, for the cross-parameter aliasing rule.
struct Range {
  uintptr_t begin = 0, end = 0;
  bool written = false;
  std::size_t param = 0;  // SIZE_MAX: grad_scale or found_inf
  const char* name = "";
};

void add_range(std::vector<Range>& out, const TensorView& t, bool written, std::size_t param,
               const char* name) {
  const auto bytes = t.nbytes();
  if (!bytes || *bytes == 0 || t.data == nullptr) return;
  const auto b = reinterpret_cast<uintptr_t>(t.data);
  out.push_back({b, b + static_cast<uintptr_t>(*bytes), written, param, name});
}

std::string range_label(const Range& r) {
  if (r.param == SIZE_MAX) return r.name;
  return fmt::format("params[{}].{}", r.param, r.name);
}

// No tensor written by the call shares a byte with any other tensor of the call (another
// parameter's, grad_scale, found_inf); read-only tensors (grads, grad_scale, found_inf) may
// overlap each other. Within one parameter the declaration's rules have run already. A sweep
// over the ranges sorted by start: each range is checked against the furthest-reaching earlier
// range (any, and written).
Status check_cross_aliasing(std::string_view op, std::vector<Range>& ranges) {
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin < b.begin; });
  const Range* reach_any = nullptr;
  const Range* reach_written = nullptr;
  for (const Range& r : ranges) {
    const Range* hit = nullptr;
    if (r.written && reach_any && reach_any->end > r.begin) hit = reach_any;
    if (!hit && reach_written && reach_written->end > r.begin) hit = reach_written;
    if (hit && hit->param != r.param) {
      return fail(StatusCode::kParamInvalid, op,
                  "{} (bytes [{:#x}, {:#x})) overlaps {} (bytes [{:#x}, {:#x})); a tensor the "
                  "step writes may share no byte with any other tensor of the call",
                  range_label(r), r.begin, r.end, range_label(*hit), hit->begin, hit->end);
    }
    if (!reach_any || r.end > reach_any->end) reach_any = &r;
    if (r.written && (!reach_written || r.end > reach_written->end)) reach_written = &r;
  }
  return {};
}

// The common part of the three entry points: options, each parameter against its declaration,
// the total size, and the cross-parameter aliasing rule.
template <class Op, class AddRanges>
Status validate_list(std::span<const typename Op::Tensors> params, const FusedStepOptions& o,
                     AddRanges&& add_ranges) {
  constexpr std::string_view op = Op::kType;
  MANTISSA_RETURN_IF_ERROR(check_options(op, o, std::is_same_v<Op, CompactAdamWParamOp>));
  const ParamRules rules{o.rounding};
  int64_t total = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    MANTISSA_RETURN_IF_ERROR(at_param(validate<Op>(params[i], rules), op, i));
    if (__builtin_add_overflow(total, *(params[i].*std::get<0>(Op::kTensorMembers)).numel(),
                               &total)) {
      return fail(StatusCode::kParamInvalid, op,
                  "the {} parameters hold more than 2^63 - 1 elements together", params.size());
    }
  }
  std::vector<Range> ranges;
  for (std::size_t i = 0; i < params.size(); ++i) add_ranges(ranges, params[i], i);
  if (o.grad_scale) add_range(ranges, *o.grad_scale, false, SIZE_MAX, "grad_scale");
  if (o.found_inf) add_range(ranges, *o.found_inf, false, SIZE_MAX, "found_inf");
  return check_cross_aliasing(op, ranges);
}

void add_common(std::vector<Range>& r, const std::optional<TensorView>& working,
                const std::optional<TensorView>& compensation, std::size_t i) {
  if (working) add_range(r, *working, true, i, "working");
  if (compensation) add_range(r, *compensation, true, i, "compensation");
}

float read_f32(const TensorView& t) {
  float f;
  std::memcpy(&f, t.data, sizeof f);
  return f;
}

// Fills what every parameter shares (pointers, dtypes, writer) and runs the step unless
// found_inf is set.
template <class P>
MtTensor common_tensor(const P& p, const TensorView& var, const TensorView& grad,
                       const FusedStepOptions& o, std::size_t index) {
  MtTensor t;
  t.n = *var.numel();
  t.state = var.dtype;
  t.grad_dtype = grad.dtype;
  t.var = var.data;
  t.grad = grad.data;
  if (p.working) {
    t.writer = MtWriter::kWorkingCopy;
    t.working = p.working->data;
    t.working_dtype = p.working->dtype;
  } else if (var.dtype == DType::kBFloat16 && o.rounding == WeightRounding::kKahan) {
    t.writer = MtWriter::kKahan;
    t.compensation = p.compensation->data;
  } else if (var.dtype == DType::kBFloat16 && o.rounding == WeightRounding::kStochastic) {
    t.writer = MtWriter::kStochastic;
    t.sr_key = sr_tensor_key(o.seed, o.rng_step, static_cast<uint32_t>(index));
  }
  return t;
}

void run_list(MtArgs& a, std::span<const MtTensor> tensors, const FusedStepOptions& o) {
  std::vector<int64_t> offsets(tensors.size() + 1, 0);
  // Compact moments: each tensor starts at a multiple of kQuantBlock (a multiple of every
  // format's block), so that every chunk (a multiple of it too) cuts tensors at block boundaries.
  const int64_t align = a.algo == MtAlgo::kAdamWCompact ? kQuantBlock : 1;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    offsets[i + 1] = offsets[i] + (tensors[i].n + align - 1) / align * align;
  }
  static_assert(kDefaultGrain % kQuantBlock == 0);
  if (offsets.back() == 0) return;
  a.tensors = tensors;
  a.offsets = offsets;
  a.unscale = o.grad_scale.has_value() || o.clip_coef.has_value();
  a.scale = o.grad_scale ? read_f32(*o.grad_scale) : 1.0f;
  a.clip = o.clip_coef ? *o.clip_coef : 1.0f;
  ensure_runtime_initialized();
  HWY_DYNAMIC_DISPATCH(MultiTensorStepImpl)(a);
}

// found_inf != 0 (NaN included): the step is skipped.
bool skipped(const FusedStepOptions& o) { return o.found_inf && read_f32(*o.found_inf) != 0.0f; }

}  // namespace
}  // namespace detail

// ---- SGD ------------------------------------------------------------------------------------

Status multi_tensor_sgd_validate(std::span<const SgdParamTensors> params, const MultiSgdParams& p,
                                 const FusedStepOptions& o) {
  using Op = detail::SgdParamOp;
  // SGD's own attribute rules, with its messages (nesterov needs dampening 0; weight_decay >= 0).
  MANTISSA_RETURN_IF_ERROR(detail::SgdOp::check_params(
      SgdTensors{}, SgdParams{p.dampening, p.weight_decay, p.nesterov}));
  return detail::validate_list<Op>(
      params, o, [](std::vector<detail::Range>& r, const SgdParamTensors& t, std::size_t i) {
        detail::add_range(r, t.parameters, true, i, "parameters");
        detail::add_range(r, t.gradient, false, i, "gradient");
        detail::add_range(r, t.accum, true, i, "accum");
        detail::add_range(r, t.stat, true, i, "stat");
        detail::add_common(r, t.working, t.compensation, i);
      });
}

Status multi_tensor_sgd(std::span<const SgdParamTensors> params, const MultiSgdParams& p,
                        const FusedStepOptions& o) {
  return detail::guarded_entry("multi_tensor_sgd", [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(multi_tensor_sgd_validate(params, p, o));
    if (detail::skipped(o)) return {};
    std::vector<detail::MtTensor> tensors;
    tensors.reserve(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const SgdParamTensors& q = params[i];
      detail::MtTensor t = detail::common_tensor(q, q.parameters, q.gradient, o, i);
      t.s0 = q.accum.data;
      t.s1 = q.stat.data;
      // As SGD reads its one-element learning_rate and momentum tensors of the parameters' dtype.
      t.sgd_lr = round_to(q.parameters.dtype, p.learning_rate);
      t.sgd_m = round_to(q.parameters.dtype, p.momentum);
      t.sgd_write_state = t.sgd_m != 0.0f;  // IEEE compare: NaN counts as non-zero
      tensors.push_back(t);
    }
    detail::MtArgs a;
    a.algo = detail::MtAlgo::kSgd;
    a.sgd_dampening = p.dampening;
    a.sgd_weight_decay = p.weight_decay;
    a.sgd_nesterov = p.nesterov;
    detail::run_list(a, tensors, o);
    return {};
  });
}

// ---- ApplyAdamD -----------------------------------------------------------------------------

Status multi_tensor_apply_adam_d_validate(std::span<const AdamDParamTensors> params,
                                          const MultiAdamDParams&, const FusedStepOptions& o) {
  using Op = detail::AdamDParamOp;
  return detail::validate_list<Op>(
      params, o, [](std::vector<detail::Range>& r, const AdamDParamTensors& t, std::size_t i) {
        detail::add_range(r, t.var, true, i, "var");
        detail::add_range(r, t.m, true, i, "m");
        detail::add_range(r, t.v, true, i, "v");
        detail::add_range(r, t.grad, false, i, "grad");
        detail::add_common(r, t.working, t.compensation, i);
      });
}

Status multi_tensor_apply_adam_d(std::span<const AdamDParamTensors> params,
                                 const MultiAdamDParams& p, const FusedStepOptions& o) {
  return detail::guarded_entry("multi_tensor_apply_adam_d", [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(multi_tensor_apply_adam_d_validate(params, p, o));
    if (detail::skipped(o)) return {};
    std::vector<detail::MtTensor> tensors;
    tensors.reserve(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const AdamDParamTensors& q = params[i];
      detail::MtTensor t = detail::common_tensor(q, q.var, q.grad, o, i);
      t.s0 = q.m.data;
      t.s1 = q.v.data;
      // As ApplyAdamD reads its six one-element tensors of var's dtype.
      const DType dt = q.var.dtype;
      t.adam_d = detail::adam_d_constants(round_to(dt, p.beta1_power), round_to(dt, p.beta2_power),
                                          round_to(dt, p.lr), round_to(dt, p.beta1),
                                          round_to(dt, p.beta2), round_to(dt, p.epsilon));
      tensors.push_back(t);
    }
    detail::MtArgs a;
    a.algo = detail::MtAlgo::kAdamD;
    a.adam_d_nesterov = p.use_nesterov;
    detail::run_list(a, tensors, o);
    return {};
  });
}

// ---- AdamW ----------------------------------------------------------------------------------

Status multi_tensor_adam_w_validate(std::span<const AdamWParamTensors> params,
                                    const MultiAdamWParams& p, const FusedStepOptions& o) {
  using Op = detail::AdamWParamOp;
  constexpr std::string_view op = Op::kType;
  if (p.step < 0) {
    // t = step + 1 would be 0 or less: 1 - beta1^t divides by zero or turns the step around.
    return detail::fail(StatusCode::kParamInvalid, op,
                        "step is {}, but it counts the steps already taken and must be >= 0",
                        p.step);
  }
  if (p.hyper.amsgrad) {
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (!params[i].max_grad_norm) {
        return detail::fail(StatusCode::kParamNullptr, op,
                            "params[{}]: max_grad_norm is required when amsgrad is set, but was "
                            "not given",
                            i);
      }
    }
  }
  return detail::validate_list<Op>(
      params, o, [](std::vector<detail::Range>& r, const AdamWParamTensors& t, std::size_t i) {
        detail::add_range(r, t.var, true, i, "var");
        detail::add_range(r, t.m, true, i, "m");
        detail::add_range(r, t.v, true, i, "v");
        if (t.max_grad_norm) detail::add_range(r, *t.max_grad_norm, true, i, "max_grad_norm");
        detail::add_range(r, t.grad, false, i, "grad");
        detail::add_common(r, t.working, t.compensation, i);
      });
}

Status multi_tensor_adam_w(std::span<const AdamWParamTensors> params, const MultiAdamWParams& p,
                           const FusedStepOptions& o) {
  return detail::guarded_entry("multi_tensor_adam_w", [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(multi_tensor_adam_w_validate(params, p, o));
    if (detail::skipped(o)) return {};
    // Once per call, exactly as ApplyAdamWV2 computes them from an int64 step.
    const detail::AdamWConstants c =
        detail::adam_w_constants(static_cast<double>(p.step), p.hyper.lr, p.hyper.beta1,
                                 p.hyper.beta2, p.hyper.weight_decay, p.hyper.eps);
    std::vector<detail::MtTensor> tensors;
    tensors.reserve(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const AdamWParamTensors& q = params[i];
      detail::MtTensor t = detail::common_tensor(q, q.var, q.grad, o, i);
      t.s0 = q.m.data;
      t.s1 = q.v.data;
      t.s2 = p.hyper.amsgrad ? q.max_grad_norm->data : nullptr;
      t.adam_w = c;
      tensors.push_back(t);
    }
    detail::MtArgs a;
    a.algo = detail::MtAlgo::kAdamW;
    a.amsgrad = p.hyper.amsgrad;
    a.maximize = p.hyper.maximize;
    detail::run_list(a, tensors, o);
    return {};
  });
}

// ---- AdamW with 8-bit moments ------------------------------------------------------------------

Status multi_tensor_adam_w_8bit_validate(std::span<const AdamW8bitParamTensors> params,
                                         const MultiAdamWParams& p, const FusedStepOptions& o) {
  using Op = detail::AdamW8bitParamOp;
  constexpr std::string_view op = Op::kType;
  if (p.step < 0) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "step is {}, but it counts the steps already taken and must be >= 0",
                        p.step);
  }
  if (p.hyper.amsgrad) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "amsgrad is set, but 8-bit moments keep no running maximum of v");
  }
  return detail::validate_list<Op>(
      params, o, [](std::vector<detail::Range>& r, const AdamW8bitParamTensors& t, std::size_t i) {
        detail::add_range(r, t.var, true, i, "var");
        detail::add_range(r, t.m, true, i, "m");
        detail::add_range(r, t.v, true, i, "v");
        detail::add_range(r, t.absmax_m, true, i, "absmax_m");
        detail::add_range(r, t.absmax_v, true, i, "absmax_v");
        detail::add_range(r, t.grad, false, i, "grad");
        detail::add_common(r, t.working, t.compensation, i);
      });
}

namespace detail {
namespace {

// Runs a validated compact AdamW list.
void run_compact(std::span<const CompactAdamWParamTensors> params, const MultiAdamWParams& p,
                 MomentFormat format, const FusedStepOptions& o) {
  const AdamWConstants c = adam_w_constants(static_cast<double>(p.step), p.hyper.lr, p.hyper.beta1,
                                            p.hyper.beta2, p.hyper.weight_decay, p.hyper.eps);
  std::vector<MtTensor> tensors;
  tensors.reserve(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) {
    const CompactAdamWParamTensors& q = params[i];
    MtTensor t = common_tensor(q, q.var, q.grad, o, i);
    t.s0 = q.m.data;
    t.s1 = q.v.data;
    if (q.scale_m) t.scale_m = static_cast<float*>(q.scale_m->data);
    if (q.scale_v) t.scale_v = static_cast<float*>(q.scale_v->data);
    t.adam_w = c;
    if (o.stochastic_moments) {
      const uint32_t key = sr_tensor_key(o.seed, o.rng_step, static_cast<uint32_t>(i));
      t.moment_key_m = sr_moment_key(key, 0);
      t.moment_key_v = sr_moment_key(key, 1);
    }
    tensors.push_back(t);
  }
  MtArgs a;
  a.algo = MtAlgo::kAdamWCompact;
  a.maximize = p.hyper.maximize;
  a.stochastic_moments = o.stochastic_moments;
  a.format = format;
  a.block = format == MomentFormat::kInt4 ? 128 : kQuantBlock;
  if (format == MomentFormat::kInt8) {
    a.coder_m = &dynamic_quant_coder(true);
    a.coder_v = &dynamic_quant_coder(false);
  } else if (format == MomentFormat::kInt4) {
    a.int4_m = &int4_coder(true);
    a.int4_v = &int4_coder(false);
  }
  run_list(a, tensors, o);
}

CompactAdamWParamTensors as_compact(const AdamW8bitParamTensors& t) {
  return {.var = t.var,
          .m = t.m,
          .v = t.v,
          .grad = t.grad,
          .scale_m = t.absmax_m,
          .scale_v = t.absmax_v,
          .working = t.working,
          .compensation = t.compensation};
}

}  // namespace
}  // namespace detail

Status multi_tensor_adam_w_8bit(std::span<const AdamW8bitParamTensors> params,
                                const MultiAdamWParams& p, const FusedStepOptions& o) {
  return detail::guarded_entry("multi_tensor_adam_w_8bit", [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(multi_tensor_adam_w_8bit_validate(params, p, o));
    if (detail::skipped(o)) return {};
    std::vector<CompactAdamWParamTensors> list;
    list.reserve(params.size());
    for (const AdamW8bitParamTensors& t : params) list.push_back(detail::as_compact(t));
    detail::run_compact(list, p, MomentFormat::kInt8, o);
    return {};
  });
}

// ---- AdamW with compact moments -------------------------------------------------------------

int64_t moment_block(MomentFormat f) noexcept {
  switch (f) {
    case MomentFormat::kInt8:
    case MomentFormat::kFp8E4M3: return 256;
    case MomentFormat::kInt4: return 128;
    default: return 0;
  }
}

int64_t moment_elements(MomentFormat f, int64_t n) noexcept {
  return f == MomentFormat::kInt4 ? n / 2 + n % 2 : n;
}

Status multi_tensor_adam_w_compact_validate(std::span<const CompactAdamWParamTensors> params,
                                            const MultiAdamWParams& p, MomentFormat format,
                                            const FusedStepOptions& o) {
  using Op = detail::CompactAdamWParamOp;
  constexpr std::string_view op = Op::kType;
  const auto f = static_cast<int32_t>(format);
  if (f < 0 || f > 4) {
    return detail::fail(StatusCode::kParamInvalid, op, "unknown MomentFormat {}", f);
  }
  if (p.step < 0) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "step is {}, but it counts the steps already taken and must be >= 0",
                        p.step);
  }
  if (p.hyper.amsgrad) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "amsgrad is set, but compact moments keep no running maximum of v");
  }
  if (o.stochastic_moments && format != MomentFormat::kBf16) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "stochastic_moments is set, but it rounds bf16 moments only (the format "
                        "is {})",
                        detail::format_name(format));
  }
  // Each parameter's declaration (present, dtypes, ranks), then its format's rules (the byte
  // counts the aliasing rule reads), then the list's rules (validate_list).
  MANTISSA_RETURN_IF_ERROR(detail::check_options(op, o, true));
  for (std::size_t i = 0; i < params.size(); ++i) {
    MANTISSA_RETURN_IF_ERROR(
        detail::at_param(detail::validate<Op>(params[i], detail::ParamRules{o.rounding}), op, i));
    MANTISSA_RETURN_IF_ERROR(detail::at_param(detail::check_format(params[i], format), op, i));
  }
  return detail::validate_list<Op>(
      params, o,
      [](std::vector<detail::Range>& r, const CompactAdamWParamTensors& t, std::size_t i) {
        detail::add_range(r, t.var, true, i, "var");
        detail::add_range(r, t.m, true, i, "m");
        detail::add_range(r, t.v, true, i, "v");
        if (t.scale_m) detail::add_range(r, *t.scale_m, true, i, "scale_m");
        if (t.scale_v) detail::add_range(r, *t.scale_v, true, i, "scale_v");
        detail::add_range(r, t.grad, false, i, "grad");
        detail::add_common(r, t.working, t.compensation, i);
      });
}

Status multi_tensor_adam_w_compact(std::span<const CompactAdamWParamTensors> params,
                                   const MultiAdamWParams& p, MomentFormat format,
                                   const FusedStepOptions& o) {
  return detail::guarded_entry("multi_tensor_adam_w_compact", [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(multi_tensor_adam_w_compact_validate(params, p, format, o));
    if (detail::skipped(o)) return {};
    detail::run_compact(params, p, format, o);
    return {};
  });
}

// ---- FusedAdamw and FusedSgd (CANN's entries of torch's fused list steps) -------------------

namespace detail {
namespace {

// The per-parameter declarations of FusedAdamw and FusedSgd: one dtype and shape for a
// parameter's tensors, rank 0..8, empty allowed.
struct FusedAdamwParamOp {
  using Tensors = FusedAdamwParamTensors;
  using Params = ParamRules;
  static constexpr std::string_view kType = "fused_adamw";
  enum Arg { kParam, kGrad, kExpAvg, kExpAvgSq, kMaxExpAvgSq, kStateStep };
  static constexpr std::array kArgs{
      InOut("param", "param").training_float().rank(0, 8),
      In("grad", "grad").like(kParam).rank(0, 8),
      InOut("exp_avg", "exp_avg").like(kParam).rank(0, 8),
      InOut("exp_avg_sq", "exp_avg_sq").like(kParam).rank(0, 8),
      InOut("max_exp_avg_sq", "max_exp_avg_sq").like(kParam).rank(0, 8).optional_input(),
      In("state_step", "state_step").dtype_in({DType::kInt64, DType::kFloat32}).rank(0, 8),
  };
  MANTISSA_TENSOR_MEMBERS(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, state_step);
  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();
  static constexpr OpHooks<Tensors, Params> kHooks{.params_beyond_attrs = true};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
  static Status check_params(const Tensors& t, const Params&) {
    if (*t.state_step.numel() == 0) {
      return fail(StatusCode::kParamInvalid, kType,
                  "state_step is empty (shape {}); its element 0 holds the steps taken",
                  t.state_step.shape_string());
    }
    return {};
  }
};
static_assert(well_formed<FusedAdamwParamOp>());

struct FusedSgdParamOp {
  using Tensors = FusedSgdParamTensors;
  using Params = ParamRules;
  static constexpr std::string_view kType = "fused_sgd";
  enum Arg { kParam, kGrad, kMomentumBuffer };
  static constexpr std::array kArgs{
      InOut("param", "param").training_float().rank(0, 8),
      InOut("grad", "grad").like(kParam).rank(0, 8),
      InOut("momentum_buffer", "momentum_buffer").like(kParam).rank(0, 8).optional_input(),
  };
  MANTISSA_TENSOR_MEMBERS(param, grad, momentum_buffer);
  static constexpr std::array<AttrSpec, 0> kAttrs{};
  MANTISSA_ATTR_MEMBERS();
  static constexpr OpHooks<Tensors, Params> kHooks{.params_beyond_attrs = true};
  static constexpr AclHooks<Tensors, Params> kAclHooks{};
  static Status check_params(const Tensors&, const Params&) { return {}; }
};
static_assert(well_formed<FusedSgdParamOp>());

// An empty optional scalar tensor counts as absent (CANN's rule for gradScale and foundInf).
std::optional<TensorView> given(const std::optional<TensorView>& t) {
  if (t && t->numel() && *t->numel() == 0) return std::nullopt;
  return t;
}

// grad_scale (FLOAT, FLOAT16 or BFLOAT16) and found_inf (FLOAT): element 0 is read.
Status check_scalar(std::string_view op, const char* name, const std::optional<TensorView>& t,
                    uint64_t dtypes) {
  if (!t) return {};
  const Arg a{name, *t};
  MANTISSA_RETURN_IF_ERROR(check_present(op, a));
  MANTISSA_RETURN_IF_ERROR(check_dtype_in(op, a, dtypes));
  if (t->data == nullptr) return fail(StatusCode::kParamNullptr, op, "{} has no data", name);
  return {};
}

constexpr uint64_t kScaleDtypes =
    dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat16) | dtype_bit(DType::kBFloat16);

// fp32(1 / grad_scale), the factor CANN's kernels multiply each gradient element by.
float inverse_scale(const TensorView& grad_scale) {
  if (grad_scale.dtype == DType::kFloat32) return 1.0f / read_f32(grad_scale);
  uint16_t h;  // copied: the caller's one element need not be aligned
  std::memcpy(&h, grad_scale.data, sizeof h);
  return 1.0f /
         (grad_scale.dtype == DType::kFloat16 ? fp16_bits_to_float(h) : bf16_bits_to_float(h));
}

// The steps already taken, as CANN's kernel holds them: fp32 (an INT64 cast to nearest even).
float steps_taken(const TensorView& state_step) {
  if (state_step.dtype == DType::kInt64) {
    int64_t s;
    std::memcpy(&s, state_step.data, sizeof s);
    return static_cast<float>(s);
  }
  return read_f32(state_step);
}

Status check_non_negative(std::string_view op,
                          std::initializer_list<std::pair<const char*, float>> values) {
  for (const auto& [name, v] : values) {
    if (v < 0.0f) {
      return fail(StatusCode::kParamInvalid, op, "{} is {}, but must be >= 0", name, v);
    }
  }
  return {};
}

// Runs the validated list: scale 1 and clip fp32(1 / grad_scale) give g * (1 / grad_scale).
void run_fused(MtArgs& a, std::span<const MtTensor> tensors,
               const std::optional<TensorView>& grad_scale) {
  FusedStepOptions o;
  if (grad_scale) o.clip_coef = inverse_scale(*grad_scale);
  run_list(a, tensors, o);
}

}  // namespace
}  // namespace detail

Status fused_adamw_validate(std::span<const FusedAdamwParamTensors> params,
                            const FusedAdamwParams& p) {
  using Op = detail::FusedAdamwParamOp;
  constexpr std::string_view op = Op::kType;
  MANTISSA_RETURN_IF_ERROR(detail::check_non_negative(
      op,
      {{"lr", p.lr}, {"beta1", p.beta1}, {"beta2", p.beta2}, {"weight_decay", p.weight_decay}}));
  const std::optional<TensorView> grad_scale = detail::given(p.grad_scale);
  const std::optional<TensorView> found_inf = detail::given(p.found_inf);
  MANTISSA_RETURN_IF_ERROR(
      detail::check_scalar(op, "grad_scale", grad_scale, detail::kScaleDtypes));
  MANTISSA_RETURN_IF_ERROR(
      detail::check_scalar(op, "found_inf", found_inf, detail::dtype_bit(DType::kFloat32)));
  int64_t total = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const FusedAdamwParamTensors& q = params[i];
    if (p.amsgrad && !q.max_exp_avg_sq) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "params[{}]: max_exp_avg_sq is required when amsgrad is set", i);
    }
    FusedAdamwParamTensors checked = q;
    if (!p.amsgrad) checked.max_exp_avg_sq.reset();  // neither read nor written
    MANTISSA_RETURN_IF_ERROR(detail::at_param(detail::validate<Op>(checked, {}), op, i));
    const float taken = detail::steps_taken(q.state_step);
    if (!(taken + 1.0 > 0.0)) {  // NaN included; in double, as the constants are computed
      return detail::fail(StatusCode::kParamInvalid, op,
                          "params[{}]: state_step is {}, so the step t = state_step + 1 is not "
                          "positive",
                          i, taken);
    }
    if (__builtin_add_overflow(total, *q.param.numel(), &total)) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "the {} parameters hold more than 2^63 - 1 elements together",
                          params.size());
    }
  }
  std::vector<detail::Range> ranges;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const FusedAdamwParamTensors& t = params[i];
    detail::add_range(ranges, t.param, true, i, "param");
    detail::add_range(ranges, t.grad, false, i, "grad");
    detail::add_range(ranges, t.exp_avg, true, i, "exp_avg");
    detail::add_range(ranges, t.exp_avg_sq, true, i, "exp_avg_sq");
    if (p.amsgrad) detail::add_range(ranges, *t.max_exp_avg_sq, true, i, "max_exp_avg_sq");
    detail::add_range(ranges, t.state_step, false, i, "state_step");
  }
  if (grad_scale) detail::add_range(ranges, *grad_scale, false, SIZE_MAX, "grad_scale");
  if (found_inf) detail::add_range(ranges, *found_inf, false, SIZE_MAX, "found_inf");
  return detail::check_cross_aliasing(op, ranges);
}

Status fused_adamw(std::span<const FusedAdamwParamTensors> params, const FusedAdamwParams& p) {
  return detail::guarded_entry("fused_adamw", [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(fused_adamw_validate(params, p));
    const std::optional<TensorView> found_inf = detail::given(p.found_inf);
    if (found_inf && detail::read_f32(*found_inf) == 1.0f) return {};
    std::vector<detail::MtTensor> tensors;
    tensors.reserve(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const FusedAdamwParamTensors& q = params[i];
      detail::MtTensor t;
      t.n = *q.param.numel();
      t.state = t.grad_dtype = q.param.dtype;
      t.var = q.param.data;
      t.grad = q.grad.data;
      t.s0 = q.exp_avg.data;
      t.s1 = q.exp_avg_sq.data;
      t.s2 = p.amsgrad ? q.max_exp_avg_sq->data : nullptr;
      // ApplyAdamWV2's constants of this parameter's step, from its fp32 steps taken.
      t.adam_w = detail::adam_w_constants(static_cast<double>(detail::steps_taken(q.state_step)),
                                          p.lr, p.beta1, p.beta2, p.weight_decay, p.eps);
      tensors.push_back(t);
    }
    detail::MtArgs a;
    a.algo = detail::MtAlgo::kAdamW;
    a.amsgrad = p.amsgrad;
    a.maximize = p.maximize;
    detail::run_fused(a, tensors, detail::given(p.grad_scale));
    return {};
  });
}

Status fused_sgd_validate(std::span<const FusedSgdParamTensors> params, const FusedSgdParams& p) {
  using Op = detail::FusedSgdParamOp;
  constexpr std::string_view op = Op::kType;
  MANTISSA_RETURN_IF_ERROR(detail::check_non_negative(
      op, {{"weight_decay", p.weight_decay}, {"momentum", p.momentum}, {"lr", p.lr}}));
  // CANN's thresholds.
  constexpr float kEps = 1e-6f;
  if (p.nesterov && (p.momentum <= 0.0f || std::fabs(p.dampening) >= kEps)) {
    return detail::fail(
        StatusCode::kParamInvalid, op,
        "nesterov needs momentum > 0 and zero dampening (momentum {}, dampening {})", p.momentum,
        p.dampening);
  }
  const bool buffers = !params.empty() && params[0].momentum_buffer.has_value();
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (params[i].momentum_buffer.has_value() != buffers) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "params[{}] {} a momentum buffer but params[0] {}: give one for every "
                          "parameter or for none",
                          i, buffers ? "has no" : "has", buffers ? "has one" : "has none");
    }
  }
  if (!params.empty() && !buffers && std::fabs(p.momentum) >= kEps) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "momentum is {}, but no momentum buffers are given (momentum must be 0 "
                        "without them)",
                        p.momentum);
  }
  if (buffers && !(p.momentum >= kEps)) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "momentum is {}, but momentum buffers are given (momentum must be at "
                        "least 1e-6 with them)",
                        p.momentum);
  }
  const std::optional<TensorView> grad_scale = detail::given(p.grad_scale);
  MANTISSA_RETURN_IF_ERROR(
      detail::check_scalar(op, "grad_scale", grad_scale, detail::kScaleDtypes));
  int64_t total = 0;
  for (std::size_t i = 0; i < params.size(); ++i) {
    MANTISSA_RETURN_IF_ERROR(detail::at_param(detail::validate<Op>(params[i], {}), op, i));
    if (__builtin_add_overflow(total, *params[i].param.numel(), &total)) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "the {} parameters hold more than 2^63 - 1 elements together",
                          params.size());
    }
  }
  std::vector<detail::Range> ranges;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const FusedSgdParamTensors& t = params[i];
    detail::add_range(ranges, t.param, true, i, "param");
    detail::add_range(ranges, t.grad, grad_scale.has_value(), i, "grad");
    if (t.momentum_buffer)
      detail::add_range(ranges, *t.momentum_buffer, true, i, "momentum_buffer");
  }
  if (grad_scale) detail::add_range(ranges, *grad_scale, false, SIZE_MAX, "grad_scale");
  return detail::check_cross_aliasing(op, ranges);
}

Status fused_sgd(std::span<const FusedSgdParamTensors> params, const FusedSgdParams& p) {
  return detail::guarded_entry("fused_sgd", [&]() -> Status {
    MANTISSA_RETURN_IF_ERROR(fused_sgd_validate(params, p));
    const std::optional<TensorView> grad_scale = detail::given(p.grad_scale);
    std::vector<detail::MtTensor> tensors;
    tensors.reserve(params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      const FusedSgdParamTensors& q = params[i];
      detail::MtTensor t;
      t.n = *q.param.numel();
      t.state = t.grad_dtype = q.param.dtype;
      t.var = q.param.data;
      t.grad = q.grad.data;
      t.grad_out = grad_scale ? q.grad.data : nullptr;
      t.s0 = q.momentum_buffer ? q.momentum_buffer->data : nullptr;
      tensors.push_back(t);
    }
    detail::MtArgs a;
    a.algo = detail::MtAlgo::kTorchSgd;
    a.maximize = p.maximize;
    a.torch_sgd_lr = p.lr;
    a.torch_sgd_momentum = p.momentum;
    a.torch_sgd_one_minus_dampening = 1.0f - p.dampening;  // fp32, as CANN's kernel
    a.torch_sgd_weight_decay = p.weight_decay;
    a.torch_sgd_nesterov = p.nesterov;
    a.torch_sgd_momentum_buffer = !params.empty() && params[0].momentum_buffer.has_value();
    a.torch_sgd_first_step = p.is_first_step;
    a.torch_sgd_write_grad = grad_scale.has_value();
    detail::run_fused(a, tensors, grad_scale);
    return {};
  });
}

// ---- Norm and clipping ----------------------------------------------------------------------

Status grad_norm(std::span<const TensorView> grads, double* norm, const GradNormOptions& o) {
  return detail::guarded_entry("grad_norm", [&]() -> Status {
    constexpr std::string_view op = "grad_norm";
    if (norm == nullptr) return detail::fail(StatusCode::kParamNullptr, op, "norm is null");
    const auto type = static_cast<int32_t>(o.norm_type);
    if (type < 0 || type > 2) {
      return detail::fail(StatusCode::kParamInvalid, op, "unknown NormType {}", type);
    }
    for (std::size_t i = 0; i < grads.size(); ++i) {
      const std::string name = fmt::format("grads[{}]", i);
      const detail::Arg a{name.c_str(), grads[i]};
      MANTISSA_RETURN_IF_ERROR(detail::check_present(op, a));
      MANTISSA_RETURN_IF_ERROR(detail::check_training_float(op, a));
      MANTISSA_RETURN_IF_ERROR(detail::check_rank(op, a, 0, 8));
      MANTISSA_RETURN_IF_ERROR(detail::check_countable(op, a));
      MANTISSA_RETURN_IF_ERROR(detail::check_contiguous(op, a));
    }
    if (o.grad_scale) {
      const detail::Arg a{"grad_scale", *o.grad_scale};
      MANTISSA_RETURN_IF_ERROR(detail::check_present(op, a));
      MANTISSA_RETURN_IF_ERROR(detail::check_dtype(op, a, DType::kFloat32));
      MANTISSA_RETURN_IF_ERROR(detail::check_one_element(op, a));
    }
    std::vector<double> per_tensor(grads.size(), 0.0);
    int64_t total = 0;
    for (const TensorView& g : grads) total += *g.numel();
    if (total > 0) {
      detail::ensure_runtime_initialized();
      detail::ListNormArgs a;
      a.grads = grads;
      a.norm_type = o.norm_type == NormType::kL2 ? 2 : o.norm_type == NormType::kL1 ? 1 : 0;
      a.per_tensor = per_tensor;
      HWY_DYNAMIC_DISPATCH(ListNormImpl)(a);
    }
    // Tensors combine in list order: Neumaier sums in fp64 (2, 1), or the max (inf, NaN kept).
    double value = 0.0;
    if (o.norm_type == NormType::kInf) {
      for (double x : per_tensor) {
        if (std::isnan(x) || std::isnan(value)) {
          value = std::numeric_limits<double>::quiet_NaN();
        } else if (x > value) {
          value = x;
        }
      }
    } else {
      detail::Partial<double> sum;
      for (double x : per_tensor)
        sum = detail::merge_compensated(sum, detail::Partial<double>{x, -0.0});
      value = grads.empty() ? 0.0 : detail::finish<ReduceMethod::kNeumaier>(sum);
      if (value == 0.0) value = 0.0;  // +0 for an all-zero (or empty) list
      if (o.norm_type == NormType::kL2) value = std::sqrt(value);
    }
    if (o.grad_scale)
      value = value / std::fabs(static_cast<double>(detail::read_f32(*o.grad_scale)));
    *norm = value;
    return {};
  });
}

std::optional<float> clip_coefficient(double norm, double max_norm) noexcept {
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) return static_cast<float>(coef);
  return std::nullopt;
}

Status clip_grad_norm(std::span<const TensorView> grads, double max_norm, double* total_norm,
                      const ClipGradNormOptions& o) {
  return detail::guarded_entry("clip_grad_norm", [&]() -> Status {
    constexpr std::string_view op = "clip_grad_norm";
    double norm = 0.0;
    MANTISSA_RETURN_IF_ERROR(grad_norm(grads, &norm, o.norm));
    if (total_norm != nullptr) *total_norm = norm;
    if (o.error_if_nonfinite && !std::isfinite(norm)) {
      return detail::fail(StatusCode::kParamInvalid, op,
                          "the total norm of the {} gradients is {} (not finite); nothing scaled",
                          grads.size(), norm);
    }
    const std::optional<float> coef = clip_coefficient(norm, max_norm);
    if (!coef) return {};
    // The scaling pass is ForeachNonFiniteCheckAndUnscale's: g = g * coef, one fp32 product
    // rounded once to the gradient's dtype, one parallel region over the list.
    float found_inf = 0.0f;
    float inv_scale = *coef;
    const ForeachNonFiniteCheckAndUnscaleTensors t{.scaled_grads = grads,
                                                   .found_inf = {&found_inf, DType::kFloat32, {1}},
                                                   .inv_scale = {&inv_scale, DType::kFloat32, {1}}};
    return foreach_non_finite_check_and_unscale(t, {});
  });
}

uint32_t sr_mix32(uint32_t x) noexcept { return detail::mix32(x); }

uint32_t sr_bits(uint64_t seed, uint64_t step, uint32_t tensor_index,
                 uint64_t element_index) noexcept {
  const uint32_t key = detail::sr_tensor_key(seed, step, tensor_index);
  const uint32_t hi = detail::mix32(key ^ static_cast<uint32_t>(element_index >> 32));
  return detail::mix32(hi ^ static_cast<uint32_t>(element_index));
}

uint32_t sr_moment_bits(uint64_t seed, uint64_t step, uint32_t tensor_index, uint64_t element_index,
                        uint32_t moment) noexcept {
  const uint32_t key =
      detail::sr_moment_key(detail::sr_tensor_key(seed, step, tensor_index), moment);
  const uint32_t hi = detail::mix32(key ^ static_cast<uint32_t>(element_index >> 32));
  return detail::mix32(hi ^ static_cast<uint32_t>(element_index));
}

uint16_t float_to_bf16_stochastic(float f, uint32_t r) noexcept {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;
  return static_cast<uint16_t>((bits + (r & 0xFFFFu)) >> 16);
}

}  // namespace mantissa
#endif  // HWY_ONCE
