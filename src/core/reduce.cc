// Deterministic reductions: the per-target range kernels (blocks in parallel, partials combined
// in the fixed tree of core/reduce.h), their dispatch, and the public sum/dot/l2_norm/max_abs.
// clang-format off (foreach_target.h must come first: it re-includes this file once per target)
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/reduce.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on

#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "core/reduce-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace mantissa::HWY_NAMESPACE {

// Terms [0, n): with `parallel`, blocks are computed by parallel_for into one slot each, then
// combined in order exactly as ReduceRow combines them, so both give the same bits.
template <detail::ReduceMethod M, class A, class Term>
A ReduceTerms(const Term& term, int64_t n, bool parallel) {
  const int64_t blocks = detail::chunk_count(n, detail::kReduceBlock);
  if (!parallel || blocks <= detail::kReduceBlocksPerChunk) return ReduceRow<M, A>(term, n);
  std::vector<detail::Partial<A>> partials(static_cast<size_t>(blocks));
  auto body = [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      const int64_t begin = b * detail::kReduceBlock;
      partials[b] = ReduceBlock<M, A>(term, begin, std::min(detail::kReduceBlock, n - begin));
    }
  };
  detail::parallel_for(blocks, detail::kReduceBlocksPerChunk, body);
  const auto merge = [](const detail::Partial<A>& a, const detail::Partial<A>& b) {
    return detail::merge<M>(a, b);
  };
  detail::PairwiseStack<detail::Partial<A>> stack;
  for (const auto& p : partials) stack.push(p, merge);
  return detail::finish<M>(stack.collapse(merge));
}

template <class Term>
float MaxTerms(const Term& term, int64_t n, float empty, bool parallel) {
  const int64_t blocks = detail::chunk_count(n, detail::kReduceBlock);
  if (!parallel || blocks <= detail::kReduceBlocksPerChunk) return MaxRow(term, n, empty);
  std::vector<MaxPartial> partials(static_cast<size_t>(blocks));
  auto body = [&](int64_t first, int64_t last) {
    for (int64_t b = first; b < last; ++b) {
      const int64_t begin = b * detail::kReduceBlock;
      partials[b] = MaxBlock(term, begin, std::min(detail::kReduceBlock, n - begin));
    }
  };
  detail::parallel_for(blocks, detail::kReduceBlocksPerChunk, body);
  detail::PairwiseStack<MaxPartial> stack;
  for (const auto& p : partials) stack.push(p, MergeMax);
  return MaxValue(stack.collapse(MergeMax));
}

template <class A, class Term>
A ReduceByMethod(detail::ReduceMethod method, const Term& term, int64_t n, bool parallel) {
  using detail::ReduceMethod;
  switch (method) {
    case ReduceMethod::kNaive: return ReduceTerms<ReduceMethod::kNaive, A>(term, n, parallel);
    case ReduceMethod::kPairwise: return ReduceTerms<ReduceMethod::kPairwise, A>(term, n, parallel);
    case ReduceMethod::kKahan: return ReduceTerms<ReduceMethod::kKahan, A>(term, n, parallel);
    default: return ReduceTerms<ReduceMethod::kNeumaier, A>(term, n, parallel);
  }
}

// The sum of the terms in the chosen accumulator; with `root`, its square root taken in the
// accumulator's precision (std::sqrt is correctly rounded for float and double).
template <class Term>
double ReduceByAccumulator(const detail::ReduceOptions& o, const Term& term, int64_t n,
                           bool parallel, bool root) {
  if (o.accumulator == detail::ReduceAccumulator::kFloat64) {
    const double v = ReduceByMethod<double>(o.method, term, n, parallel);
    return root ? std::sqrt(v) : v;
  }
  const float v = ReduceByMethod<float>(o.method, term, n, parallel);
  return root ? std::sqrt(v) : v;
}

template <class Format>
double ReduceFormat(const detail::ReduceArgs& a, bool parallel) {
  using S = typename Format::Storage;
  const S* x = static_cast<const S*>(a.x);
  const S* y = static_cast<const S*>(a.y);
  switch (a.op) {
    case detail::ReduceOp::kSum:
      return ReduceByAccumulator(a.options, SumTerm<Format>{x}, a.n, parallel, false);
    case detail::ReduceOp::kDot:
      return ReduceByAccumulator(a.options, DotTerm<Format>{x, y}, a.n, parallel, false);
    case detail::ReduceOp::kSumSquares:
      return ReduceByAccumulator(a.options, SquareTerm<Format>{x}, a.n, parallel, false);
    case detail::ReduceOp::kL2Norm:
      return ReduceByAccumulator(a.options, SquareTerm<Format>{x}, a.n, parallel, true);
    case detail::ReduceOp::kMax:
      return MaxTerms(MaxTerm<Format, false>{x}, a.n, -std::numeric_limits<float>::infinity(),
                      parallel);
    default: return MaxTerms(MaxTerm<Format, true>{x}, a.n, 0.0f, parallel);
  }
}

double ReduceImpl(const detail::ReduceArgs& a, bool parallel) {
  switch (a.dtype) {
    case DType::kFloat16: return ReduceFormat<Fp16>(a, parallel);
    case DType::kBFloat16: return ReduceFormat<Bf16>(a, parallel);
    default: return ReduceFormat<Fp32>(a, parallel);
  }
}

}  // namespace mantissa::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <string_view>

#include "core/entry.h"
#include "core/runtime_internal.h"
#include "core/validate.h"
#include "mantissa/reduce.h"

namespace mantissa {

HWY_EXPORT(ReduceImpl);

namespace detail {

double reduce(const ReduceArgs& a) {
  ensure_runtime_initialized();
  return HWY_DYNAMIC_DISPATCH(ReduceImpl)(a, true);
}

double reduce_row(const ReduceArgs& a) {
  ensure_runtime_initialized();
  return HWY_DYNAMIC_DISPATCH(ReduceImpl)(a, false);
}

}  // namespace detail

namespace {

Status check_input(std::string_view op, detail::Arg a) {
  MANTISSA_RETURN_IF_ERROR(detail::check_present(op, a));
  MANTISSA_RETURN_IF_ERROR(detail::check_training_float(op, a));
  MANTISSA_RETURN_IF_ERROR(detail::check_rank(op, a, 0, kMaxRank));
  MANTISSA_RETURN_IF_ERROR(detail::check_countable(op, a));
  return detail::check_contiguous(op, a);
}

Status check_result(std::string_view op, const double* result) {
  if (result == nullptr) {
    return detail::fail(StatusCode::kParamNullptr, op, "result is a null pointer");
  }
  return {};
}

Status check_options(std::string_view op, const ReduceOptions& o) {
  const auto method = static_cast<int32_t>(o.method);
  if (method < 0 || method > static_cast<int32_t>(ReduceMethod::kNeumaier)) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "options.method {} is not a ReduceMethod (0 to 3)", method);
  }
  const auto accumulator = static_cast<int32_t>(o.accumulator);
  if (accumulator < 0 || accumulator > static_cast<int32_t>(ReduceAccumulator::kFloat64)) {
    return detail::fail(StatusCode::kParamInvalid, op,
                        "options.accumulator {} is not a ReduceAccumulator (0 or 1)", accumulator);
  }
  return {};
}

// One validated unary reduction of x.
Status reduce_unary(std::string_view op, detail::ReduceOp kind, const TensorView& x, double* result,
                    const ReduceOptions& options) {
  MANTISSA_RETURN_IF_ERROR(check_input(op, {"x", x}));
  MANTISSA_RETURN_IF_ERROR(check_result(op, result));
  MANTISSA_RETURN_IF_ERROR(check_options(op, options));
  detail::ReduceArgs a;
  a.op = kind;
  a.dtype = x.dtype;
  a.x = x.data;
  a.n = *x.numel();
  a.options = options;
  *result = detail::reduce(a);
  return {};
}

}  // namespace

Status sum(const TensorView& x, double* result, const ReduceOptions& options) {
  return detail::guarded_entry("sum", [&]() -> Status {
    return reduce_unary("Sum", detail::ReduceOp::kSum, x, result, options);
  });
}

Status l2_norm(const TensorView& x, double* result, const ReduceOptions& options) {
  return detail::guarded_entry("l2_norm", [&]() -> Status {
    return reduce_unary("L2Norm", detail::ReduceOp::kL2Norm, x, result, options);
  });
}

Status max_abs(const TensorView& x, double* result) {
  return detail::guarded_entry("max_abs", [&]() -> Status {
    return reduce_unary("MaxAbs", detail::ReduceOp::kMaxAbs, x, result, ReduceOptions{});
  });
}

Status dot(const TensorView& x, const TensorView& y, double* result, const ReduceOptions& options) {
  return detail::guarded_entry("dot", [&]() -> Status {
    constexpr std::string_view kOp = "Dot";
    const detail::Arg xa{"x", x}, ya{"y", y};
    MANTISSA_RETURN_IF_ERROR(check_input(kOp, xa));
    MANTISSA_RETURN_IF_ERROR(check_input(kOp, ya));
    MANTISSA_RETURN_IF_ERROR(detail::check_same_dtype(kOp, ya, xa));
    MANTISSA_RETURN_IF_ERROR(detail::check_same_shape(kOp, ya, xa));
    MANTISSA_RETURN_IF_ERROR(check_result(kOp, result));
    MANTISSA_RETURN_IF_ERROR(check_options(kOp, options));
    detail::ReduceArgs a;
    a.op = detail::ReduceOp::kDot;
    a.dtype = x.dtype;
    a.x = x.data;
    a.y = y.data;
    a.n = *x.numel();
    a.options = options;
    *result = detail::reduce(a);
    return {};
  });
}

}  // namespace mantissa
#endif  // HWY_ONCE
