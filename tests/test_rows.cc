// Rows: the outer x axis x inner decomposition, and the row-block and tile loops (every element
// visited exactly once, pieces independent of the thread count).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <numeric>
#include <utility>
#include <vector>

#include "core/rows.h"
#include "mantissa/runtime.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

using detail::Rows;

constexpr int kThreadCounts[] = {1, 2, 3, 7};

TEST(Rows, WrapDimFollowsPython) {
  EXPECT_EQ(detail::wrap_dim(0, 4), 0);
  EXPECT_EQ(detail::wrap_dim(3, 4), 3);
  EXPECT_EQ(detail::wrap_dim(-1, 4), 3);
  EXPECT_EQ(detail::wrap_dim(-4, 4), 0);
  EXPECT_FALSE(detail::wrap_dim(4, 4).has_value());
  EXPECT_FALSE(detail::wrap_dim(-5, 4).has_value());
  // Rank 0 behaves as rank 1: dims 0 and -1 only.
  EXPECT_EQ(detail::wrap_dim(0, 0), 0);
  EXPECT_EQ(detail::wrap_dim(-1, 0), 0);
  EXPECT_FALSE(detail::wrap_dim(1, 0).has_value());
  EXPECT_FALSE(detail::wrap_dim(-2, 0).has_value());
}

TEST(Rows, DecompositionOverEveryDimAndNegativeDims) {
  const std::vector<int64_t> shape{2, 3, 4, 5};
  struct Expected {
    int64_t outer, axis, inner;
  };
  const Expected expected[] = {{1, 2, 60}, {2, 3, 20}, {6, 4, 5}, {24, 5, 1}};
  for (int d = 0; d < 4; ++d) {
    for (const int64_t dim : {int64_t{d}, int64_t{d - 4}}) {
      const Rows r = detail::rows_over_dim(shape, dim);
      SCOPED_TRACE(dim);
      EXPECT_EQ(r.outer, expected[d].outer);
      EXPECT_EQ(r.axis, expected[d].axis);
      EXPECT_EQ(r.inner, expected[d].inner);
      EXPECT_EQ(r.numel(), 120);
      EXPECT_EQ(r.rows(), 120 / expected[d].axis);
      EXPECT_EQ(r.last_axis(), d == 3);
    }
  }
  // Rank 0: one row of one element.
  const Rows scalar = detail::rows_over_dim({}, -1);
  EXPECT_EQ(scalar.outer, 1);
  EXPECT_EQ(scalar.axis, 1);
  EXPECT_EQ(scalar.inner, 1);
  // Zero-sized dims.
  const std::vector<int64_t> empty_axis{3, 0, 2};
  const Rows r0 = detail::rows_over_dim(empty_axis, 1);
  EXPECT_EQ(r0.rows(), 6);
  EXPECT_EQ(r0.axis, 0);
  EXPECT_EQ(r0.numel(), 0);
}

TEST(Rows, TrailingNormalisedDims) {
  const std::vector<int64_t> shape{2, 3, 4, 5};
  const int64_t axes[] = {1, 5, 20, 60, 120};
  for (int k = 0; k <= 4; ++k) {
    const Rows r = detail::rows_over_trailing(shape, k);
    SCOPED_TRACE(k);
    EXPECT_EQ(r.axis, axes[k]);
    EXPECT_EQ(r.outer, 120 / axes[k]);
    EXPECT_EQ(r.inner, 1);
  }
  const Rows scalar = detail::rows_over_trailing({}, 0);
  EXPECT_EQ(scalar.rows(), 1);
  EXPECT_EQ(scalar.axis, 1);
}

TEST(Rows, GrainsDependOnTheRowLengthOnly) {
  EXPECT_EQ(detail::rows_per_block(1), detail::kRowBlockElements);
  EXPECT_EQ(detail::rows_per_block(0), detail::kRowBlockElements);
  EXPECT_EQ(detail::rows_per_block(1000), 32);
  EXPECT_EQ(detail::rows_per_block(1 << 20), 1);
  EXPECT_EQ(detail::tiles_per_block(1), detail::kRowBlockElements / detail::kTileWidth);
  EXPECT_EQ(detail::tiles_per_block(100000), 1);
  EXPECT_EQ(detail::tiles_per_outer(1), 1);
  EXPECT_EQ(detail::tiles_per_outer(64), 1);
  EXPECT_EQ(detail::tiles_per_outer(65), 2);
}

std::vector<std::vector<int64_t>> TestShapes() {
  return {{},           {1},           {7},          {3, 0, 2},
          {1, 1, 1},    {5, 3},        {3, 1000},    {2, 3, 4, 5},
          {4, 70, 3},   {2, 5, 130},   {1, 9, 257},  {40000, 2},
          {3, 2, 4097}, {2, 1, 1, 65}, {6, 128, 64}, {2, 2, 2, 2, 2, 2, 2, 2}};
}

// Every element of the tensor is visited exactly once by the row-block loop (inner == 1) and by
// the tile loop (any dim), for every thread count.
TEST(Rows, EveryElementVisitedExactlyOnce) {
  testing::ThreadCountGuard guard;
  for (const int threads : kThreadCounts) {
    ASSERT_TRUE(set_num_threads(threads).ok());
    for (const auto& shape : TestShapes()) {
      const int rank = static_cast<int>(shape.size());
      const int64_t numel = std::accumulate(shape.begin(), shape.end(), int64_t{1},
                                            [](int64_t a, int64_t b) { return a * b; });
      for (int dim = -std::max(rank, 1); dim < std::max(rank, 1); ++dim) {
        SCOPED_TRACE(::testing::Message()
                     << "threads " << threads << " rank " << rank << " dim " << dim);
        const Rows r = detail::rows_over_dim(shape, dim);
        ASSERT_EQ(r.numel(), numel);
        std::vector<std::atomic<int>> count(static_cast<size_t>(numel));
        detail::for_each_tile(r, [&](const detail::Tile& t) {
          ASSERT_LT(t.i0, t.i1);
          ASSERT_LE(t.i1 - t.i0, detail::kTileWidth);
          ASSERT_EQ(t.i0 % detail::kTileWidth, 0);
          ASSERT_EQ(t.stride, r.inner);
          ASSERT_EQ(t.offset, t.outer * r.axis * r.inner + t.i0);
          for (int64_t a = 0; a < r.axis; ++a) {
            for (int64_t i = t.i0; i < t.i1; ++i) ++count[t.offset + a * t.stride + (i - t.i0)];
          }
        });
        for (int64_t e = 0; e < numel; ++e) ASSERT_EQ(count[e].load(), 1) << "element " << e;
      }
      for (int k = 0; k <= rank; ++k) {
        const Rows r = detail::rows_over_trailing(shape, k);
        std::vector<std::atomic<int>> count(static_cast<size_t>(numel));
        std::vector<std::atomic<int>> row_seen(static_cast<size_t>(r.rows()));
        detail::for_each_row_block(r, [&](int64_t begin, int64_t end) {
          ASSERT_LT(begin, end);
          for (int64_t row = begin; row < end; ++row) {
            ++row_seen[row];
            for (int64_t a = 0; a < r.axis; ++a) ++count[row * r.axis + a];
          }
        });
        for (int64_t e = 0; e < numel; ++e) ASSERT_EQ(count[e].load(), 1) << "element " << e;
        for (int64_t row = 0; row < r.rows(); ++row) ASSERT_EQ(row_seen[row].load(), 1);
      }
    }
  }
}

// The pieces a row loop hands out are the same for every thread count.
TEST(Rows, RowBlocksDoNotDependOnTheThreadCount) {
  testing::ThreadCountGuard guard;
  const std::vector<std::vector<int64_t>> shapes{{100000, 3}, {5000, 1000}, {64, 70000}, {3, 7}};
  for (const auto& shape : shapes) {
    const Rows r = detail::rows_over_trailing(shape, 1);
    std::vector<std::pair<int64_t, int64_t>> reference;
    for (const int threads : kThreadCounts) {
      ASSERT_TRUE(set_num_threads(threads).ok());
      std::mutex mutex;
      std::vector<std::pair<int64_t, int64_t>> blocks;
      detail::for_each_row_block(r, [&](int64_t begin, int64_t end) {
        std::lock_guard<std::mutex> lock(mutex);
        blocks.emplace_back(begin, end);
      });
      std::sort(blocks.begin(), blocks.end());
      if (threads == 1) {
        reference = blocks;
        const int64_t g = detail::rows_per_block(r.axis);
        ASSERT_EQ(static_cast<int64_t>(blocks.size()), (r.rows() + g - 1) / g);
      } else {
        EXPECT_EQ(blocks, reference) << "threads " << threads;
      }
    }
  }
}

// A column reduction written on tiles (the way a softmax over a non-last dim walks the axis)
// gives the same bits for every thread count.
TEST(Rows, TileReductionIsThreadCountIndependent) {
  testing::ThreadCountGuard guard;
  const std::vector<int64_t> shape{3, 777, 200};
  const Rows r = detail::rows_over_dim(shape, 1);
  std::vector<float> x(static_cast<size_t>(r.numel()));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u) % 1000) / 7.f;
  std::vector<float> reference;
  for (const int threads : kThreadCounts) {
    ASSERT_TRUE(set_num_threads(threads).ok());
    std::vector<float> sums(static_cast<size_t>(r.rows()));
    detail::for_each_tile(r, [&](const detail::Tile& t) {
      float acc[detail::kTileWidth] = {};
      for (int64_t a = 0; a < r.axis; ++a) {
        const float* p = x.data() + t.offset + a * t.stride;
        for (int64_t i = 0; i < t.i1 - t.i0; ++i) acc[i] += p[i];
      }
      for (int64_t i = t.i0; i < t.i1; ++i) sums[t.outer * r.inner + i] = acc[i - t.i0];
    });
    if (threads == 1) {
      reference = sums;
    } else {
      EXPECT_EQ(0, std::memcmp(sums.data(), reference.data(), sums.size() * sizeof(float)));
    }
  }
}

}  // namespace

}  // namespace mantissa::testing
