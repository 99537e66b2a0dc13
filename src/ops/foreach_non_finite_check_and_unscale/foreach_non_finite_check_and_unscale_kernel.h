// The arguments of ForeachNonFiniteCheckAndUnscale's kernel (shared by its per-target copies).
#pragma once

#include <cstdint>
#include <span>

#include "mantissa/tensor.h"

namespace mantissa::detail {

// What the kernel needs: the list, laid end to end by `offsets` (offsets[i] = elements before
// tensor i; offsets.back() = total), and the scale.
struct UnscaleArgs {
  std::span<const TensorView> grads;
  std::span<const int64_t> offsets;
  float inv_scale = 1.0f;
  bool write = true;  // false when inv_scale == 1: a read-only check
};

}  // namespace mantissa::detail
