// SGD on multi-million-element tensors: every dtype, attribute combination and momentum class
// against the scalar golden on every SIMD target with 1 and 7 threads, so that many parallel
// chunks, their boundaries and the ragged end are covered. Slow; labelled exhaustive.
#include <gtest/gtest.h>

#include "core/parallel.h"
#include "sgd_support.h"

namespace mantissa::testing {

namespace {

class SgdSweep : public ::testing::TestWithParam<DType> {};

TEST_P(SgdSweep, MillionsOfElementsMatchGolden) {
  testing::ThreadCountGuard guard;
  const DType dt = GetParam();
  // About 92 chunks of the parallel grain and an odd tail.
  const size_t n = static_cast<size_t>(92 * detail::kDefaultGrain + 4099);
  uint64_t seed = 5000;
  for (const SgdParams& prm : mantissa::testing::sgd_support::attribute_combinations()) {
    for (const auto& mom : mantissa::testing::sgd_support::momentum_values(dt)) {
      SCOPED_TRACE(mantissa::testing::sgd_support::describe(prm) + " momentum " + mom.name);
      const mantissa::testing::sgd_support::Case input =
          mantissa::testing::sgd_support::random_case(dt, n, ++seed, 0.0078125f, mom.bits);
      mantissa::testing::sgd_support::check_against_golden(input, prm, {1, 7});
      if (HasFailure()) return;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, SgdSweep,
                         ::testing::Values(DType::kFloat32, DType::kFloat16, DType::kBFloat16),
                         [](const ::testing::TestParamInfo<DType>& p) {
                           return std::string(dtype_short_name(p.param));
                         });

}  // namespace

}  // namespace mantissa::testing
