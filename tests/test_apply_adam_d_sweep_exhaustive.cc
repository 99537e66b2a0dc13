// ApplyAdamD long sweeps: bits against the fp32 golden over many sizes, thread counts, scalar
// sets and a multi-million-element problem, on every available SIMD target.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "apply_adam_d_support.h"

namespace mantissa::testing {

namespace {

constexpr size_t kGrain = 32768;  // the kernel's parallel grain

std::vector<size_t> all_sizes() {
  std::vector<size_t> sizes;
  for (size_t n = 1; n <= 300; ++n) sizes.push_back(n);
  for (size_t n : {kGrain - 1, kGrain, kGrain + 1, 2 * kGrain + 17, 5 * kGrain + 3}) {
    sizes.push_back(n);
  }
  return sizes;
}

TEST(ApplyAdamDSweep, ManySizesAndThreadCountsUpstreamScalars) {
  mantissa::testing::adam_support::SweepPlan plan;
  plan.sizes = all_sizes();
  plan.threads = {1, 2, 3, 4, 7, 8, 16};
  plan.big = (size_t{8} << 20) + 3;
  plan.big_in_place_threads = {1, 3, 16};
  plan.seed = 31;
  mantissa::testing::adam_support::run_sweep(plan);
}

TEST(ApplyAdamDSweep, OtherScalarSets) {
  const mantissa::testing::adam_support::Scalars sets[] = {
      // A late step, small epsilon.
      {std::pow(0.9, 1000), std::pow(0.999, 1000), 3e-4, 0.9, 0.999, 1e-8},
      // The first step of torch-like defaults mapped to this form.
      {0.9, 0.999, 1e-3, 0.9, 0.999, 1e-8 * std::sqrt(1.0 - 0.999)},
      // Boundary scalars of the upstream case set.
      {1e-6, 0.999, 1e-3, 0.9, 0.999, 1e-12},
      // Unusual betas.
      {0.5, 0.75, 0.1, 0.5, 0.75, 1e-3},
  };
  uint64_t seed = 100;
  for (const mantissa::testing::adam_support::Scalars& s : sets) {
    mantissa::testing::adam_support::SweepPlan plan;
    plan.sizes = all_sizes();
    plan.threads = {1, 2, 7};
    plan.scalars = s;
    plan.big = (size_t{1} << 21) + 1;
    plan.big_in_place_threads = {2};
    plan.seed = ++seed;
    mantissa::testing::adam_support::run_sweep(plan);
  }
}

}  // namespace

}  // namespace mantissa::testing
