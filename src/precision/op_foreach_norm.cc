// ForeachNorm in the kit: the fp64 golden (long double sums, the formula as written) and
// golden32 (the documented order: naive fp64 block sums of the fp32-widened terms, docs/
// reductions.md; one rounding to the output dtype), written from the contract. Inputs: the
// list's elements (in.list_sizes[0] of them); attribute p. Outputs: out[i], one element each.
#include <cmath>
#include <limits>

#include "precision/op_schema.h"
#include "precision/ops_common.h"
#include "precision/row_sums.h"

namespace mantissa::precision {
namespace {

enum class Norm { kTwo, kOne, kInf };

Norm norm_of(const OpInputs& in) {
  const double p = in.attrs.at(0).f;
  return p == 1.0 ? Norm::kOne : (std::isinf(p) ? Norm::kInf : Norm::kTwo);
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const Norm norm = norm_of(in);
  std::vector<std::vector<double>> out;
  for (int64_t k = 0; k < in.list_sizes.at(0); ++k) {
    const HostTensor& x = in.tensors[static_cast<std::size_t>(k)];
    long double acc = 0.0L;
    bool nan = false;
    for (int64_t i = 0; i < x.numel(); ++i) {
      const long double v = std::fabs(static_cast<long double>(in_f64(x, i)));
      nan = nan || std::isnan(v);
      if (norm == Norm::kTwo) acc += v * v;
      if (norm == Norm::kOne) acc += v;
      if (norm == Norm::kInf && v > acc) acc = v;
    }
    if (norm == Norm::kTwo) acc = std::sqrt(acc);
    out.push_back({nan ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(acc)});
  }
  return out;
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const Norm norm = norm_of(in);
  std::vector<HostTensor> out;
  for (int64_t k = 0; k < in.list_sizes.at(0); ++k) {
    const HostTensor& x = in.tensors[static_cast<std::size_t>(k)];
    double v = 0.0;
    if (norm == Norm::kInf) {
      for (int64_t i = 0; i < x.numel() && !std::isnan(v); ++i) {
        const double a = std::fabs(static_cast<double>(in_f32(x, i)));
        if (std::isnan(a) || a > v) v = a;
      }
    } else {
      v = documented_row_sum(x.numel(), [&](int64_t i) {
        const double a = static_cast<double>(in_f32(x, i));
        return norm == Norm::kTwo ? a * a : std::fabs(a);
      });
      if (norm == Norm::kTwo) v = std::sqrt(v);
    }
    HostTensor r(x.dtype, {1});
    r.set_bits(0, std::isnan(v) ? quiet_nan_bits(x.dtype, false) : round_to_bits(v, x.dtype));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

template <>
Goldens goldens<detail::ForeachNormOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
