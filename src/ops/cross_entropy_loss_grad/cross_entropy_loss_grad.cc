// CrossEntropyLossGrad: contract and validation, the targets' check, the rows' coefficients, then
// one kernel written once for every SIMD target. The order is normative
// (docs/ops/cross_entropy_loss.md). Over the call, in fp64 (core/reduce.h's naive order):
//   W  = sum over rows not ignored of w[t_i]      (mean)
//   K  = count of rows not ignored                 (mean, with z-loss)
//   Sw = sum_j w_j (C without weights)             (label_smoothing > 0)
// Per row i not ignored, in fp64, g = grad_loss[i] (none) or grad_loss[0], eps and s (the
// attributes rounded to fp32 first):
//   a  = g / W (mean) or g
//   c1 = (a * (1 - eps)) * w[t_i]
//   c2 = a * (eps / C)
//   A  = c1; A = A + c2 * Sw (eps > 0); A = A + ((2 * s) * lse_i) * gz (s != 0), where
//   gz = g + grad_zloss (given; its element of g's index) or g, then gz / K (mean)
// rounded once to fp32: A, B = c1, D = c2. Per element, in fp32 (p = the library's Exp of the
// element of log_prob widened exactly):
//   out_ij = p * A;  out_ij = out_ij - D * w_j (eps > 0)                     (j != t_i)
// and the target's element in fp64 from the fp32 coefficients widened (p - 1 would cancel in
// fp32 where the model is confident, p near 1; Exp64 is core/math-inl.h's fp64 exp):
//   out_it = (Exp64(lp_it) - 1) * A + (A - B);  out_it = out_it - D * w_t (eps > 0)
// rounded to fp32; each result rounded once more to the dtype; every element of an ignored row
// is +0.
// Traffic: log_prob is read once and out written once; rows run in parallel, and long rows of a
// call with few rows in pieces (cross_entropy_split), each element on its own.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/cross_entropy_loss_grad/cross_entropy_loss_grad.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/math-inl.h"
#include "core/parallel.h"
#include "core/reduce.h"
#include "core/rows.h"
#include "core/simd-inl.h"
#include "hwy/highway.h"
#include "ops/cross_entropy_loss/cross_entropy_loss_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Elements [c0, c1) of row r.
template <class Format, bool kSmooth, bool kWeighted>
HWY_INLINE void GradRange(const detail::CrossEntropyLossGradKernelArgs& a, int64_t r, int64_t c0,
                          int64_t c1) {
  using S = typename Format::Storage;
  const int64_t n = a.classes;
  S* const out = static_cast<S*>(a.out) + r * n;
  const int64_t t = a.column[r];
  if (t < 0) {  // ignored: +0 (all bits zero in every dtype)
    std::memset(out + c0, 0, static_cast<std::size_t>(c1 - c0) * sizeof(S));
    return;
  }
  // Locals, not captures: a vector store may alias anything the closure reaches.
  const S* const lp = static_cast<const S*>(a.log_prob) + r * n;
  const float* const w = a.weight;
  const float coef_a = a.coef_a[r], coef_b = a.coef_b[r], coef_d = a.coef_d[r];
  auto value = [&](auto d, int64_t j) MANTISSA_VECTOR_BODY {
    auto v = hn::Mul(Exp(d, LoadF32<Format>(d, lp + j)), hn::Set(d, coef_a));
    if constexpr (kSmooth) {
      if constexpr (kWeighted) {
        v = hn::Sub(v, hn::Mul(hn::Set(d, coef_d), hn::LoadU(d, w + j)));
      } else {
        v = hn::Sub(v, hn::Set(d, coef_d));
      }
    }
    return v;
  };
  ForEachVector(c0, c1, [&](auto d, int64_t j) MANTISSA_VECTOR_BODY {
    StoreResult<Format>(d, value(d, j), out + j);
  });
  if (t >= c0 && t < c1) {  // the target's element, in fp64 (p - 1 cancels where p is near 1)
    const hn::CappedTag<float, 1> d1;
    const hn::CappedTag<double, 1> dd1;
    const auto em1 =
        hn::Sub(Exp64(dd1, hn::PromoteTo(dd1, LoadF32<Format>(d1, lp + t))), hn::Set(dd1, 1.0));
    const double a64 = coef_a, b64 = coef_b;
    auto v = hn::Add(hn::Mul(em1, hn::Set(dd1, a64)), hn::Set(dd1, a64 - b64));
    if constexpr (kSmooth) {
      const double wt = kWeighted ? static_cast<double>(w[t]) : 1.0;
      v = hn::Sub(v, hn::Set(dd1, static_cast<double>(coef_d) * wt));
    }
    StoreResult<Format>(d1, DemoteF64ToF32(d1, dd1, v), out + t);
  }
}

template <class Format, bool kSmooth, bool kWeighted>
void GradFormat(const detail::CrossEntropyLossGradKernelArgs& a) {
  const int64_t n = a.classes;
  if (detail::cross_entropy_split(a.rows, n)) {
    const int64_t piece = detail::kCrossEntropyPieceBlocks * detail::kReduceBlock;
    const int64_t pieces = (n + piece - 1) / piece;
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t r = task / pieces, c0 = (task % pieces) * piece;
        GradRange<Format, kSmooth, kWeighted>(a, r, c0, std::min(n, c0 + piece));
      }
    };
    detail::parallel_for(a.rows * pieces, 1, body);
    return;
  }
  detail::for_each_row_block(detail::Rows{a.rows, n, 1}, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) GradRange<Format, kSmooth, kWeighted>(a, r, 0, n);
  });
}

void CrossEntropyLossGradImpl(const detail::CrossEntropyLossGradKernelArgs& a) {
  VisitFormat(a.dtype, [&](auto format) {
    using F = decltype(format);
    if (!a.smoothing) {
      GradFormat<F, false, false>(a);
    } else if (a.weight != nullptr) {
      GradFormat<F, true, true>(a);
    } else {
      GradFormat<F, true, false>(a);
    }
  });
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <memory>
#include <new>
#include <optional>

#include "core/op_entry.h"
#include "core/runtime_internal.h"
#include "ops/cross_entropy_loss_grad/cross_entropy_loss_grad_desc.h"

namespace mantissa {

HWY_EXPORT(CrossEntropyLossGradImpl);

namespace detail {

Status check_cross_entropy_loss_grad_params(const CrossEntropyLossGradTensors& t,
                                            const CrossEntropyLossGradParams& p) {
  constexpr std::string_view op = CrossEntropyLossGradOp::kType;
  if (loss_reduction_name(p.reduction) == nullptr) {
    return fail(StatusCode::kParamInvalid, op, "reduction {} is not 0 (none), 1 (mean) or 2 (sum)",
                static_cast<int64_t>(p.reduction));
  }
  if (!(p.label_smoothing >= 0.0 && p.label_smoothing <= 1.0)) {
    return fail(StatusCode::kParamInvalid, op, "label_smoothing {} is outside [0, 1]",
                p.label_smoothing);
  }
  if (!(p.lse_square_scale_for_zloss >= 0.0 && p.lse_square_scale_for_zloss < 1.0)) {
    return fail(StatusCode::kParamInvalid, op, "lse_square_scale_for_zloss {} is outside [0, 1)",
                p.lse_square_scale_for_zloss);
  }
  const int64_t rows = t.log_prob.shape[0], classes = t.log_prob.shape[1];
  if (classes < 1) {
    return fail(StatusCode::kParamInvalid, op, "log_prob {} has no classes (C must be at least 1)",
                t.log_prob.shape_string());
  }
  if (t.target.shape[0] != rows) {
    return fail(StatusCode::kParamInvalid, op,
                "target {} does not hold one class per row of log_prob {}", t.target.shape_string(),
                t.log_prob.shape_string());
  }
  if (t.weight && t.weight->shape[0] != classes) {
    return fail(StatusCode::kParamInvalid, op,
                "weight {} does not hold one value per class of log_prob {}",
                t.weight->shape_string(), t.log_prob.shape_string());
  }
  if (p.reduction == LossReduction::kNone) {
    if (t.grad_loss.rank != 1 || t.grad_loss.shape[0] != rows) {
      return fail(StatusCode::kParamInvalid, op,
                  "grad_loss {} must be [{}] with reduction none (one value per row of "
                  "log_prob {})",
                  t.grad_loss.shape_string(), rows, t.log_prob.shape_string());
    }
  } else if (t.grad_loss.numel().value_or(0) != 1) {
    return fail(StatusCode::kParamInvalid, op,
                "grad_loss {} must hold one element with reduction {}", t.grad_loss.shape_string(),
                loss_reduction_name(p.reduction));
  }
  return {};
}

}  // namespace detail

namespace {

// The call's workspace: per row its class (int64), its target's weight (fp64) and the three
// coefficients (fp32).
struct GradLayout {
  uint64_t column = 0, weight_of = 0, coef_a = 0, coef_b = 0, coef_d = 0, bytes = 0;
};

std::optional<GradLayout> grad_layout(int64_t rows) {
  if (rows < 0 || static_cast<uint64_t>(rows) > (uint64_t{1} << 56)) return std::nullopt;
  const auto r = static_cast<uint64_t>(rows);
  GradLayout l;
  uint64_t at = 0;
  auto take = [&](uint64_t& field, uint64_t bytes) {
    field = at;
    at += (bytes + 63) / 64 * 64;
  };
  take(l.column, r * 8);
  take(l.weight_of, r * 8);
  take(l.coef_a, r * 4);
  take(l.coef_b, r * 4);
  take(l.coef_d, r * 4);
  l.bytes = at;
  return l;
}

// Element i of a float tensor of `dtype`, widened exactly to fp64.
double element(const TensorView& v, int64_t i) {
  return static_cast<double>(load_as_float(v.dtype, v.data, static_cast<std::size_t>(i)));
}

}  // namespace

uint64_t cross_entropy_loss_grad_workspace_size(const CrossEntropyLossGradTensors& t,
                                                const CrossEntropyLossGradParams&) {
  if (t.log_prob.rank != 2) return 0;
  const std::optional<GradLayout> l = grad_layout(t.log_prob.shape[0]);
  return l && l->bytes != 0 ? l->bytes + 64 : 0;  // + 64: room to align a lent workspace
}

// Validation is derived from the declaration (cross_entropy_loss_grad_desc.h): out shares no
// byte with any other tensor of the call.
Status cross_entropy_loss_grad_validate(const CrossEntropyLossGradTensors& t,
                                        const CrossEntropyLossGradParams& p) {
  return detail::validate<detail::CrossEntropyLossGradOp>(t, p);
}

Status cross_entropy_loss_grad(const CrossEntropyLossGradTensors& t,
                               const CrossEntropyLossGradParams& p, Workspace ws) {
  using Op = detail::CrossEntropyLossGradOp;
  return detail::op_entry<Op>(t, p, [&]() -> Status {
    const int64_t rows = t.log_prob.shape[0], classes = t.log_prob.shape[1];
    const std::optional<GradLayout> layout = grad_layout(rows);
    if (!layout) {
      return detail::fail(StatusCode::kInner, Op::kType,
                          "{} rows need more per-row workspace than can be addressed", rows);
    }
    const GradLayout& l = *layout;
    const detail::AlignedScratch scratch(ws, l.bytes);
    if (l.bytes != 0 && scratch.data() == nullptr) {
      return detail::fail(StatusCode::kInner, Op::kType,
                          "cannot allocate {} bytes for the per-row values (lend a workspace of "
                          "cross_entropy_loss_grad_workspace_size bytes)",
                          l.bytes);
    }
    const float* const weight =
        t.weight ? static_cast<const float*>(t.weight->data) : static_cast<const float*>(nullptr);
    int64_t* const column = scratch.at<int64_t>(l.column);
    double* const weight_of = scratch.at<double>(l.weight_of);
    int64_t kept = 0;
    // Every target is read before anything is written.
    MANTISSA_RETURN_IF_ERROR(detail::read_targets(Op::kType, t.target, classes, p.ignore_index,
                                                  weight, column, weight_of, kept));
    if (rows == 0) return {};
    const bool mean = p.reduction == LossReduction::kMean;
    const bool none = p.reduction == LossReduction::kNone;
    // The attributes enter as their fp32 values, as in CrossEntropyLoss.
    const double eps = detail::to_f32(p.label_smoothing);
    const double s = detail::to_f32(p.lse_square_scale_for_zloss);
    const double weight_sum = mean ? detail::documented_sum_f64(weight_of, rows) : 1.0;
    double class_weights = static_cast<double>(classes);
    if (eps > 0.0 && weight != nullptr) {
      detail::ReduceArgs r;
      r.op = detail::ReduceOp::kSum;
      r.dtype = DType::kFloat32;
      r.x = weight;
      r.n = classes;
      r.options = {.method = ReduceMethod::kNaive, .accumulator = ReduceAccumulator::kFloat64};
      class_weights = detail::reduce_row(r);
    }
    const double keep = 1.0 - eps, share = eps / static_cast<double>(classes);
    float* const coef_a = scratch.at<float>(l.coef_a);
    float* const coef_b = scratch.at<float>(l.coef_b);
    float* const coef_d = scratch.at<float>(l.coef_d);
    for (int64_t i = 0; i < rows; ++i) {
      if (column[i] < 0) continue;  // an ignored row is +0: no coefficients
      const int64_t at = none ? i : 0;
      const double g = element(t.grad_loss, at);
      const double a = mean ? g / weight_sum : g;
      const double c1 = (a * keep) * weight_of[i];
      const double c2 = a * share;
      double big_a = c1;
      if (eps > 0.0) big_a = big_a + c2 * class_weights;
      if (s != 0.0) {
        double gz = t.grad_zloss ? g + element(*t.grad_zloss, at) : g;
        if (mean) gz = gz / static_cast<double>(kept);
        big_a = big_a + ((2.0 * s) * element(*t.lse_for_zloss, i)) * gz;
      }
      coef_a[i] = detail::to_f32(big_a);
      coef_b[i] = detail::to_f32(c1);
      coef_d[i] = detail::to_f32(c2);
    }
    detail::CrossEntropyLossGradKernelArgs a;
    a.dtype = t.log_prob.dtype;
    a.rows = rows;
    a.classes = classes;
    a.log_prob = t.log_prob.data;
    a.out = t.out.data;
    a.weight = weight;
    a.column = column;
    a.smoothing = eps > 0.0;
    a.coef_a = coef_a;
    a.coef_b = coef_b;
    a.coef_d = coef_d;
    HWY_DYNAMIC_DISPATCH(CrossEntropyLossGradImpl)(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
