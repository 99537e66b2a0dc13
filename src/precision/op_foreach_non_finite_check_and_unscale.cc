// ForeachNonFiniteCheckAndUnscale in the kit: fp64 golden and golden32, written from the
// contract. Inputs: the list's elements (in.list_sizes[0] of them), then found_inf, inv_scale.
#include <cmath>

#include "precision/op_schema.h"
#include "precision/ops_common.h"

namespace mantissa::precision {
namespace {

struct Layout {
  std::size_t grads, found_inf, inv_scale;
};
Layout layout(const OpInputs& in) {
  const auto n = static_cast<std::size_t>(in.list_sizes.at(0));
  return {n, n, n + 1};
}

bool any_non_finite(const OpInputs& in, std::size_t grads) {
  for (std::size_t k = 0; k < grads; ++k) {
    for (int64_t i = 0; i < in.tensors[k].numel(); ++i) {
      if (!std::isfinite(in_f64(in.tensors[k], i))) return true;
    }
  }
  return false;
}

std::vector<std::vector<double>> golden(const OpInputs& in) {
  const Layout l = layout(in);
  const double inv = in_f64(in.tensors[l.inv_scale], 0);
  std::vector<std::vector<double>> out;
  for (std::size_t k = 0; k < l.grads; ++k) {
    const HostTensor& g = in.tensors[k];
    std::vector<double> v(static_cast<std::size_t>(g.numel()));
    // invScale == 1 leaves every bit (NaN payloads too); the double value is the input's.
    for (int64_t i = 0; i < g.numel(); ++i) v[i] = inv == 1.0 ? in_f64(g, i) : in_f64(g, i) * inv;
    out.push_back(std::move(v));
  }
  const double found = in_f64(in.tensors[l.found_inf], 0);
  out.push_back({any_non_finite(in, l.grads) ? 1.0 : found});
  return out;
}

std::vector<HostTensor> golden32(const OpInputs& in) {
  const Layout l = layout(in);
  const float inv = in_f32(in.tensors[l.inv_scale], 0);
  std::vector<HostTensor> out;
  for (std::size_t k = 0; k < l.grads; ++k) {
    HostTensor g = in.tensors[k];
    if (inv != 1.0f) {  // exactly 1: a read-only check, every bit kept
      for (int64_t i = 0; i < g.numel(); ++i) {
        g.set_bits(i, narrow_result(in_f32(in.tensors[k], i) * inv, g.dtype));
      }
    }
    out.push_back(std::move(g));
  }
  HostTensor found = in.tensors[l.found_inf];
  if (any_non_finite(in, l.grads)) found.set_bits(0, 0x3F800000u);  // 1.0f
  out.push_back(found);
  return out;
}

}  // namespace

template <>
Goldens goldens<detail::ForeachNonFiniteCheckAndUnscaleOp>() {
  return {golden, golden32, StandardKind::kBitwise};
}

}  // namespace mantissa::precision
