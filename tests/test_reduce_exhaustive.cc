// Long reduction sweeps: error bounds on 16M-element ill-conditioned data (printing the table of
// docs/reductions.md), and every size up to 2048 against the scalar model on every SIMD target.
#include <gtest/gtest.h>

#include <cstdint>

#include "core/reduce.h"
#include "mantissa/mantissa.h"
#include "reduce_support.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

using namespace testing::reduce_support;  // NOLINT: test support

TEST(ReduceExhaustive, ErrorWithinDerivedBounds1M) { CheckErrorBounds(int64_t{1} << 20, true); }

TEST(ReduceExhaustive, ErrorWithinDerivedBounds16M) { CheckErrorBounds(int64_t{1} << 24, true); }

TEST(ReduceExhaustive, EverySizeOnEveryTargetMatchesTheModel) {
  for (const DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    const Data all = MakeData(dtype, 2048, 99u);
    testing::for_each_target([&](const std::string& target) {
      for (int64_t n = 0; n <= 2048; ++n) {
        Data d = all;  // the first n elements
        d.n = n;
        d.xf.resize(static_cast<size_t>(n));
        d.yf.resize(static_cast<size_t>(n));
        for (const detail::ReduceOp op :
             {detail::ReduceOp::kSum, detail::ReduceOp::kDot, detail::ReduceOp::kSumSquares}) {
          for (const ReduceMethod m : kMethods) {
            for (const ReduceAccumulator acc : kAccumulators) {
              detail::ReduceArgs a;
              a.op = op;
              a.dtype = dtype;
              a.x = d.x();
              a.y = d.y();
              a.n = n;
              a.options = {m, acc};
              ASSERT_TRUE(SameBits(detail::reduce_row(a), Model(op, d, {m, acc})))
                  << target << " " << dtype_short_name(dtype) << " n=" << n;
            }
          }
        }
      }
    });
  }
}

}  // namespace

}  // namespace mantissa::testing
