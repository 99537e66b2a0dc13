// RmsNorm: contract and validation, then the row kernel written once for every SIMD target. Per
// row of n elements (the trailing dims gamma spans), in this order, which is normative:
//   ss   = sum of x_i * x_i        widened to fp64, squares exact, summed in the order of
//                                  core/reduce.h (naive method, fp64 lanes)
//   rstd = fp32(1 / sqrt(ss / n + epsilon))   each step one fp64 operation, then rounded to fp32
//   y_i  = (x_i * rstd) * gamma_i  two fp32 multiplications, rounded once to y's dtype (RNE)
// A NaN result (from a NaN or inf input, or n == 0: 0 / 0) is stored as the canonical quiet NaN.
// The row pieces are in rms_norm-inl.h, shared with AddRmsNorm (the same bits by construction).
// Traffic: x read twice (the second pass usually from cache for rows up to a few MiB), gamma
// read per row (cached), y written once.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/rms_norm/rms_norm.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cmath>
#include <limits>

#include "core/reduce-inl.h"
#include "core/rows.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/rms_norm/rms_norm-inl.h"
#include "ops/rms_norm/rms_norm_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

template <class XF, class GF>
void RmsNormRows(const detail::RmsNormKernelArgs& a) {
  using XS = typename XF::Storage;
  using GS = typename GF::Storage;
  const XS* const x_all = static_cast<const XS*>(a.x);
  const GS* const g = static_cast<const GS*>(a.gamma);
  XS* const y_all = static_cast<XS*>(a.y);
  const int64_t n = a.n;
  const auto row_term = [x_all, n](int64_t r) { return SquareTerm<XF>{x_all + r * n}; };
  // rstd and the elementwise pass of row r from its sum of squares (rms_norm-inl.h).
  auto finish_row = [&](int64_t r, double ss, int64_t /*ahead*/) {
    // Locals, kept in registers across the stores (as in ops/sgd/sgd.cc).
    const XS* const x = x_all + r * n;
    XS* const y = y_all + r * n;
    const float rstd = RmsNormRstd(ss, n, a.epsilon);
    a.rstd[r] = rstd;
    RmsNormScaleRow<XF, GF>([x](auto d, int64_t i)
                                MANTISSA_VECTOR_BODY { return LoadF32<XF>(d, x + i); },
                            g, y, n, rstd);
  };
  const detail::Rows rows{a.rows, n, 1};
  detail::for_each_row_block(rows, [&](int64_t begin, int64_t end) {
    RmsNormRowBlock(begin, end, n, row_term, finish_row);
  });
}

template <class XF>
void RmsNormFormat(const detail::RmsNormKernelArgs& a) {
  if (a.gamma_dtype == DType::kFloat32) {
    RmsNormRows<XF, Fp32>(a);
  } else {
    RmsNormRows<XF, XF>(a);
  }
}

void RmsNormImpl(const detail::RmsNormKernelArgs& a) {
  VisitFormat(a.x_dtype, [&](auto format) { RmsNormFormat<decltype(format)>(a); });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "mantissa/ops/rms_norm.h"
#include "ops/rms_norm/rms_norm_desc.h"

namespace mantissa {

HWY_EXPORT(RmsNormImpl);

// Validation is derived from the declaration (rms_norm_desc.h): y and rstd share no byte with
// any other tensor of the call.
Status rms_norm_validate(const RmsNormTensors& t, const RmsNormParams& p) {
  return detail::validate<detail::RmsNormOp>(t, p);
}

Status rms_norm(const RmsNormTensors& t, const RmsNormParams& p, Workspace /*ws*/) {
  return detail::op_entry<detail::RmsNormOp>(t, p, [&]() -> Status {
    const int64_t n = *t.gamma.numel();
    // Rows: x's leading dims (as many as rstd's elements, validated to fit). Rows of 0 elements
    // still get their rstd (NaN: the mean of nothing).
    const int64_t rows = *t.rstd.numel();
    if (rows == 0) return {};
    detail::RmsNormKernelArgs a;
    a.x_dtype = t.x.dtype;
    a.gamma_dtype = t.gamma.dtype;
    a.rows = rows;
    a.n = n;
    a.x = t.x.data;
    a.gamma = t.gamma.data;
    a.y = t.y.data;
    a.rstd = static_cast<float*>(t.rstd.data);
    a.epsilon = p.epsilon;
    HWY_DYNAMIC_DISPATCH(RmsNormImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
