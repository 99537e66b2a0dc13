// SGD: CANN's momentum SGD with a per-element first-step flag: validation, and one kernel
// written once for every SIMD target.
//
// Glossary: p = parameters, g = gradient, a = accum, s = stat, lr = learning_rate[0],
// m = momentum[0], d = dampening, wd = weight_decay. E = bytes per element of the dtype.
//
// Memory traffic per element (logical bytes; in place or with a separate parameters_out alike):
//   variant                     reads          writes         total
//   m != 0, d == 0              p, g, a, s 4E  p, a, (s) 2E    6E  (s is read as bits and written
//   m != 0, d != 0              p, g, a, s 4E  p, a, (s) 2E    6E   only where not already +0.0)
//   m == 0, d == 0              p, g, a   3E   p         1E    4E  (a is read: a*m can be NaN)
//   m == 0, d != 0              p, g, a, s 4E  p         1E    5E
// weight_decay and nesterov change the arithmetic only, not the traffic.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/sgd/sgd.cc"
// clang-format off: foreach_target.h must come first; it re-includes this file once per target.
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include "core/parallel.h"
#include "core/prefetch.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/sgd/sgd-inl.h"
#include "ops/sgd/sgd_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// One variant of the update. Each flag removes work at compile time:
//   kWeightDecay  wd != 0: grad = g + p*wd (else grad = g; p*0 would turn inf into NaN)
//   kDampening    d != 0: reads s, subtracts (grad*(1 - s))*d
//   kNesterov     the nesterov form of the parameter step
//   kWriteState   m != 0 (NaN included): writes accum_t to a and +0.0 to s
//   kPrefetch     fetches the streams read ahead (a 16-bit call out of cache: core/prefetch.h)
template <class Format, bool kWeightDecay, bool kDampening, bool kNesterov, bool kWriteState,
          bool kPrefetch>
void SgdVariant(const detail::SgdKernelArgs& args) {
  using T = typename Format::Storage;
  auto chunk = [&args](int64_t begin, int64_t end) {
    // The pointers and scalars are locals of the chunk: a vector store may alias any memory the
    // closure reaches (the intrinsics' types may alias anything), so values read through it would
    // be read again after every store; these stay in registers.
    const T* const p_in = static_cast<const T*>(args.parameters);
    T* const p_out = static_cast<T*>(args.parameters_out);
    const T* const g_in = static_cast<const T*>(args.gradient);
    T* const accum = static_cast<T*>(args.accum);
    T* const stat = static_cast<T*>(args.stat);
    const SgdScalars scalars{args.learning_rate, args.momentum, args.dampening, args.weight_decay};
    auto fetch = [&](int64_t i) MANTISSA_VECTOR_BODY {
      if constexpr (kPrefetch) {
        detail::prefetch_ahead_each(i, p_in, g_in, accum);
        if constexpr (kDampening || kWriteState) detail::prefetch_ahead(stat, i);
      }
    };
    ForEachVectorSet<Format>(
        begin, end,
        [&](auto d, auto set, int64_t i) MANTISSA_VECTOR_BODY {
          // Every input of these elements is loaded before any store, so in-place is safe.
          const auto p = set.Load(d, p_in + i);
          const auto g = set.Load(d, g_in + i);
          const auto a = set.Load(d, accum + i);
          auto s = p;  // stat: loaded only with dampening, else zeros are passed below
          if constexpr (kDampening) s = set.Load(d, stat + i);
          auto p_new = p, accum_t = a;
          ForEachOfSet<set.kCount>([&](auto k) MANTISSA_VECTOR_BODY {
            const auto stat_k = kDampening ? s[k] : hn::Zero(d);
            // The normative grouping, shared with the multi-tensor step (sgd-inl.h).
            const auto r =
                SgdMath(d, scalars, kWeightDecay, kDampening, kNesterov, p[k], g[k], a[k], stat_k);
            p_new[k] = r.p_out;
            accum_t[k] = r.accum_t;
          });
          // accum_t reaches p_new through NaN-propagating arithmetic: a set whose new parameters
          // hold no NaN stores no NaN at all (StoreSet).
          using Set = decltype(set);
          StoreSet<Set>(d, p_new, [&](auto nan) MANTISSA_VECTOR_BODY {
            constexpr NaNLanes kNaN = decltype(nan)::value;
            Set::template StoreResult<kNaN>(d, p_new, p_out + i);
            if constexpr (kWriteState) {
              Set::template StoreResult<kNaN>(d, accum_t, accum + i);
              ClearToPositiveZero<Format, set.kCount>(d, stat + i);
            }
          });
        },
        fetch);
  };
  detail::parallel_for(args.n, detail::kDefaultGrain, chunk);
}

// Picks the variant for the call's flags. Nesterov excludes dampening (validated).
template <class Format, bool kPrefetch>
void SgdFormat(const detail::SgdKernelArgs& args) {
  const bool wd = args.weight_decay != 0.0f;
  const bool damp = args.dampening != 0.0f;
  const bool write = args.momentum != 0.0f;  // IEEE compare: NaN counts as non-zero
  const int key = (wd ? 8 : 0) | (damp ? 4 : 0) | (args.nesterov ? 2 : 0) | (write ? 1 : 0);
  constexpr bool P = kPrefetch;
  switch (key) {
    case 0: return SgdVariant<Format, false, false, false, false, P>(args);
    case 1: return SgdVariant<Format, false, false, false, true, P>(args);
    case 2: return SgdVariant<Format, false, false, true, false, P>(args);
    case 3: return SgdVariant<Format, false, false, true, true, P>(args);
    case 4: return SgdVariant<Format, false, true, false, false, P>(args);
    case 5: return SgdVariant<Format, false, true, false, true, P>(args);
    case 8: return SgdVariant<Format, true, false, false, false, P>(args);
    case 9: return SgdVariant<Format, true, false, false, true, P>(args);
    case 10: return SgdVariant<Format, true, false, true, false, P>(args);
    case 11: return SgdVariant<Format, true, false, true, true, P>(args);
    case 12: return SgdVariant<Format, true, true, false, false, P>(args);
    case 13: return SgdVariant<Format, true, true, false, true, P>(args);
    default: break;  // nesterov with dampening: rejected by validation, never reached
  }
}

void SgdImpl(const detail::SgdKernelArgs& args) {
  VisitFormat(args.dtype, [&](auto format) {
    using Format = decltype(format);
    // Four input streams: p, g, a, s.
    detail::visit_prefetch<typename Format::Storage>(
        args.n, 4, [&](auto prefetch) { SgdFormat<Format, decltype(prefetch)::value>(args); });
  });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/sgd.h"
#include "ops/sgd/sgd_desc.h"

namespace mantissa {

HWY_EXPORT(SgdImpl);

// Validation is derived from the declaration (sgd_desc.h), in its documented order; the
// attribute rules below are SGD's own. Aliasing: the buffers written are accum, stat and the new
// parameters (parameters itself when in place); each shares no byte with any other argument,
// except parameters_out being parameters' very buffer. Read-only tensors (gradient, the scalars,
// and parameters when parameters_out is separate) may overlap each other.
Status detail::SgdOp::check_params(const SgdTensors& /*t*/, const SgdParams& p) {
  if (p.nesterov && p.dampening != 0.0f) {  // NaN dampening is non-zero, so rejected too
    return detail::fail(StatusCode::kParamInvalid, kType,
                        "nesterov requires dampening 0, got dampening {}", p.dampening);
  }
  if (!(p.weight_decay >= 0.0f)) {  // also rejects NaN
    return detail::fail(StatusCode::kParamInvalid, kType,
                        "weight_decay must be >= 0 and not NaN, got {}", p.weight_decay);
  }
  return {};
}

Status sgd_validate(const SgdTensors& t, const SgdParams& p) {
  return detail::validate<detail::SgdOp>(t, p);
}

Status sgd(const SgdTensors& t, const SgdParams& p) {
  return detail::op_entry<detail::SgdOp>(t, p, [&]() -> Status {
    const DType dtype = t.parameters.dtype;
    detail::SgdKernelArgs args;
    args.dtype = dtype;
    args.n = *t.parameters.numel();
    args.parameters = t.parameters.data;
    args.parameters_out = t.parameters_out ? t.parameters_out->data : t.parameters.data;
    args.gradient = t.gradient.data;
    args.accum = t.accum.data;
    args.stat = t.stat.data;
    // The scalars are widened once per call, exactly, from their own dtype: a momentum that is
    // zero in that dtype is zero here.
    args.learning_rate = load_as_float(dtype, t.learning_rate.data, 0);
    args.momentum = load_as_float(dtype, t.momentum.data, 0);
    args.dampening = p.dampening;
    args.weight_decay = p.weight_decay;
    args.nesterov = p.nesterov;
    HWY_DYNAMIC_DISPATCH(SgdImpl)(args);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
