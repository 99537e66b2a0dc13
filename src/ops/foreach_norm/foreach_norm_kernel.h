// The arguments of ForeachNorm's kernel (shared by its per-target copies).
#pragma once

#include <cstdint>
#include <span>

#include "mantissa/tensor.h"

namespace mantissa::detail {

enum class NormKind : int32_t { kL2, kL1, kInf };

// What the kernel needs: the list, its blocks of kReduceBlock elements numbered across the
// whole list (first_block[i] = blocks before tensor i; first_block.back() = total), and where
// each block's partial goes (one per block).
struct ForeachNormKernelArgs {
  std::span<const TensorView> x;
  std::span<const int64_t> first_block;
  double* partials = nullptr;
  NormKind kind = NormKind::kL2;
};

}  // namespace mantissa::detail
