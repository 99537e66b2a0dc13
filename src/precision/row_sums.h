// The kit's own statement of the library's documented summation orders (docs/reductions.md,
// "The order of accumulation"; core/rows.h's column sums), written in scalar fp64 from the
// documentation for the golden32 of row-wise operators. It shares no code with the kernels.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

namespace mantissa::precision {

// Combines items along the documented pairwise tree: the left subtree over k items covers the
// first p, p the largest power of two below k.
inline double pairwise_tree(const std::vector<double>& items, std::size_t first,
                            std::size_t count) {
  if (count == 1) return items[first];
  std::size_t left = 1;
  while (left * 2 < count) left *= 2;
  return pairwise_tree(items, first, left) + pairwise_tree(items, first + left, count - left);
}

// The naive-method fp64 sum of term(0) .. term(n - 1): blocks of 4096 terms; in a block, term j
// added to lane j % 32 (lanes start at -0), lanes combined as lane[i] + lane[i + w] for
// w = 16 .. 1; block sums along the pairwise tree. +0 when n is 0.
template <class Term>
double documented_row_sum(int64_t n, Term term) {
  if (n <= 0) return 0.0;
  constexpr int64_t kBlock = 4096;
  constexpr int kLanes = 32;
  std::vector<double> blocks;
  for (int64_t b = 0; b < n; b += kBlock) {
    double lane[kLanes];
    std::fill(lane, lane + kLanes, -0.0);
    const int64_t len = std::min(kBlock, n - b);
    for (int64_t j = 0; j < len; ++j) lane[j % kLanes] += term(b + j);
    for (int w = kLanes / 2; w >= 1; w /= 2) {
      for (int i = 0; i < w; ++i) lane[i] += lane[i + w];
    }
    blocks.push_back(lane[0]);
  }
  const double s = pairwise_tree(blocks, 0, blocks.size());
  return std::isnan(s) ? std::numeric_limits<double>::quiet_NaN() : s;
}

// The documented column sums over `rows` rows of n columns: blocks of B consecutive rows, B from
// the plan below; each block sums its rows in order from -0; block sums along the pairwise tree.
// term(row, j). +0 for every column when there are no rows.
template <class Term>
std::vector<double> documented_column_sums(int64_t rows, int64_t n, Term term) {
  std::vector<double> out(static_cast<std::size_t>(std::max<int64_t>(n, 0)), 0.0);
  if (rows <= 0 || n <= 0) return out;
  // The plan: rows_per_block(n) = max(1, 32768 / n) rows per block, fewer and longer blocks
  // when blocks * n would exceed 2^22 partials.
  const int64_t per = std::max<int64_t>(1, 32768 / n);
  int64_t blocks = (rows + per - 1) / per;
  blocks = std::min(blocks, std::max<int64_t>(1, (int64_t{1} << 22) / n));
  const int64_t rows_per_block = (rows + blocks - 1) / blocks;
  blocks = (rows + rows_per_block - 1) / rows_per_block;
  std::vector<double> partial(static_cast<std::size_t>(blocks));
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t b = 0; b < blocks; ++b) {
      double s = -0.0;
      for (int64_t r = b * rows_per_block; r < std::min(rows, (b + 1) * rows_per_block); ++r) {
        s += term(r, j);
      }
      partial[static_cast<std::size_t>(b)] = s;
    }
    out[static_cast<std::size_t>(j)] = pairwise_tree(partial, 0, partial.size());
  }
  return out;
}

}  // namespace mantissa::precision
