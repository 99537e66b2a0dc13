// Rows: a tensor's index space seen as outer x axis x inner, and deterministic parallel loops
// over its rows (last axis) or inner-contiguous tiles (any other axis) for row-wise operators.
//
// Glossary: a contiguous row-major tensor of `numel` elements is viewed as [outer, axis, inner].
// A "row" is the `axis` elements reduced or normalised together; there are outer * inner rows.
// Row (o, i) holds the elements at o * axis * inner + a * inner + i for a in [0, axis): stride
// `inner`. Softmax over dim d has axis = shape[d]; LayerNorm/RMSNorm over the trailing k dims
// have axis = product of those dims and inner = 1.
//
// The caller has validated the shape: numel fits int64, and so does the row count outer * inner
// (which can exceed numel when axis is 0).
//
// Determinism: the loops cut the work into pieces whose bounds depend on the shape only (never
// on the thread count or the SIMD target), so a callback that computes each piece on its own
// gives the same bits for 1 thread or 64.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "core/parallel.h"
#include "core/reduce.h"

namespace mantissa::detail {

// Elements one parallel piece of a row loop aims at (a few hundred KiB of fp32 in and out).
inline constexpr int64_t kRowBlockElements = 32768;
// Inner positions one tile covers for a non-last axis: 64 fp32 lanes are 4 AVX-512 vectors, 8
// AVX2 or 16 SSE vectors, and 256 contiguous bytes per axis step for the prefetcher. A constant,
// so the tiles (and anything computed per tile) are the same on every target.
inline constexpr int64_t kTileWidth = 64;
// Longest row (bytes) a last-axis kernel fetches ahead while it computes the previous one's
// outputs from cache. Longer rows are left to the hardware's stream prefetcher: a row fetched
// early would push the current one out of cache.
inline constexpr int64_t kPrefetchedRowBytes = 64 * 1024;

// Row `next` of rows of n elements at base, to fetch ahead; null if next is not before `end` or a
// row is longer than kPrefetchedRowBytes.
template <class T>
const T* row_to_fetch(const T* base, int64_t n, int64_t next, int64_t end) noexcept {
  return next < end && n * int64_t{sizeof(T)} <= kPrefetchedRowBytes ? base + next * n : nullptr;
}

struct Rows {
  int64_t outer = 1;  // product of the dims before the axis
  int64_t axis = 1;   // elements per row (product of the reduced dims)
  int64_t inner = 1;  // product of the dims after the axis: the stride between row elements

  int64_t rows() const noexcept { return outer * inner; }
  int64_t numel() const noexcept { return outer * axis * inner; }
  bool last_axis() const noexcept { return inner == 1; }
};

// PyTorch's dim wrapping: dim in [-r, r) with r = max(rank, 1) (a rank-0 tensor accepts 0 and
// -1), mapped to [0, r). nullopt when out of range.
constexpr std::optional<int> wrap_dim(int64_t dim, int rank) noexcept {
  const int64_t r = rank > 0 ? rank : 1;
  if (dim < -r || dim >= r) return std::nullopt;
  return static_cast<int>(dim < 0 ? dim + r : dim);
}

// The rows over dim `dim` (negative counts from the end) of a shape whose dim the caller has
// validated with wrap_dim and whose element count fits int64. Rank 0 is one row of one element.
inline Rows rows_over_dim(std::span<const int64_t> shape, int64_t dim) noexcept {
  Rows r;
  const int rank = static_cast<int>(shape.size());
  if (rank == 0) return r;
  const int d = wrap_dim(dim, rank).value_or(rank - 1);
  for (int k = 0; k < d; ++k) r.outer *= shape[k];
  r.axis = shape[d];
  for (int k = d + 1; k < rank; ++k) r.inner *= shape[k];
  return r;
}

// The rows over the trailing `normalized_dims` dims (0 <= normalized_dims <= rank, validated by
// the caller): axis = their product (1 when there are none), inner = 1.
inline Rows rows_over_trailing(std::span<const int64_t> shape, int normalized_dims) noexcept {
  Rows r;
  const int rank = static_cast<int>(shape.size());
  const int first = rank - std::clamp(normalized_dims, 0, rank);
  for (int k = 0; k < first; ++k) r.outer *= shape[k];
  for (int k = first; k < rank; ++k) r.axis *= shape[k];
  return r;
}

// Rows per parallel piece of for_each_row_block: a function of the row length only.
constexpr int64_t rows_per_block(int64_t axis) noexcept {
  return std::max<int64_t>(1, kRowBlockElements / std::max<int64_t>(1, axis));
}

// Tiles per parallel piece of for_each_tile: a function of the row length only.
constexpr int64_t tiles_per_block(int64_t axis) noexcept {
  return std::max<int64_t>(1, kRowBlockElements / (std::max<int64_t>(1, axis) * kTileWidth));
}

// Tiles (per outer index) covering [0, inner).
constexpr int64_t tiles_per_outer(int64_t inner) noexcept {
  return (inner + kTileWidth - 1) / kTileWidth;
}

// Column sums over the rows of a last-axis tensor (a norm's dgamma, dbeta): the rows are cut
// into `blocks` blocks of `rows_per_block` consecutive rows (the last one shorter), a function
// of the shape only. Each block sums its rows in increasing order into its own partial (one per
// column); the partials of a column then combine along the pairwise tree of core/reduce.h
// (PairwiseStack) in block order. Blocks and column ranges may run on any thread in any order:
// the bits do not depend on the thread count. At most kColumnPartialBudget partials in all.
inline constexpr int64_t kColumnPartialBudget = int64_t{1} << 22;

struct ColumnSumPlan {
  int64_t blocks = 0;          // 0 when there are no rows
  int64_t rows_per_block = 1;  // rows of every block but possibly the last
  int64_t partials() const noexcept { return blocks; }
};

// The plan for `rows` rows of `axis` columns: blocks of rows_per_block(axis) rows, fewer and
// longer ones when their partials would exceed the budget.
constexpr ColumnSumPlan column_sum_plan(int64_t rows, int64_t axis) noexcept {
  ColumnSumPlan p;
  if (rows <= 0) return p;
  const int64_t per = rows_per_block(axis);
  int64_t blocks = (rows + per - 1) / per;
  blocks =
      std::min(blocks, std::max<int64_t>(1, kColumnPartialBudget / std::max<int64_t>(1, axis)));
  p.rows_per_block = (rows + blocks - 1) / blocks;
  p.blocks = (rows + p.rows_per_block - 1) / p.rows_per_block;
  return p;
}

// Columns one piece of a column-sum pass covers: a constant, so the pieces do not depend on the
// thread count (each column is computed the same way whichever piece holds it).
inline constexpr int64_t kColumnTile = 1024;

// fp64 vectors of adjacent columns a column-sum kernel accumulates side by side, rows in order:
// whole cache lines of each row, and independent addition chains. Each column's sum is the same
// whatever the group.
inline constexpr std::size_t kColumnSumVectors = 4;

// The first half of a column-sum pass over n columns: calls fn(b, c0, c1) for every row block b
// of `plan` and column range [c0, c1) (at most kColumnTile columns), in parallel. fn sums the
// block's rows in increasing order into the block's partials of those columns.
template <class Fn>
void for_each_column_piece(const ColumnSumPlan& plan, int64_t n, Fn&& fn) {
  const int64_t tiles = (n + kColumnTile - 1) / kColumnTile;
  auto pieces = [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const int64_t b = p / tiles, c0 = (p % tiles) * kColumnTile;
      fn(b, c0, std::min(n, c0 + kColumnTile));
    }
  };
  parallel_for(plan.blocks * tiles, 1, pieces);
}

// The second half: for every column j, adds partials[b * n + j] over the blocks along the
// pairwise tree (PairwiseStack, in block order), in parallel over column tiles, and calls
// store(c0, sums, count) once per tile: sums[k] is column c0 + k's, k in [0, count). The tree runs
// over whole rows of a tile's partials: a merge adds one block's row into the other's in place (the
// partials are workspace), column by column, so every column gets the additions (and the bits) it
// would get alone, and the partials are read row by row (contiguous) rather than one double per
// block and column. add_rows(u, v, count) sets u[k] = u[k] + v[k] for k in [0, count): the caller's
// vector code (each sum is one IEEE addition, the same bits at any width; this header is compiled
// for no particular target).
template <class AddRows, class Store>
void combine_column_partials(const ColumnSumPlan& plan, int64_t n, double* partials,
                             AddRows&& add_rows, Store&& store) {
  if (plan.blocks <= 0) return;  // no rows: the caller stores the empty sums
  const int64_t tiles = (n + kColumnTile - 1) / kColumnTile;
  auto combine = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t c0 = t * kColumnTile;
      const int64_t width = std::min(n, c0 + kColumnTile) - c0;
      // u + v, the older item first, into u's row.
      const auto add = [width, &add_rows](double* u, const double* v) {
        add_rows(u, v, width);
        return u;
      };
      PairwiseStack<double*> stack;
      stack.push(partials + c0, add);  // block 0 (plan.blocks >= 1)
      for (int64_t b = 1; b < plan.blocks; ++b) stack.push(partials + b * n + c0, add);
      const double* const sum = stack.collapse(add);
      store(c0, sum, width);
    }
  };
  parallel_for(tiles, 1, combine);
}

// Last-axis loop (meant for rows.inner == 1; with inner > 1 use for_each_tile). Calls
// fn(row_begin, row_end) once for each block [k * g, min((k + 1) * g, rows)) of the row indices,
// g = rows_per_block(axis); row k's elements are [k * axis, (k + 1) * axis).
// Contract: blocks run concurrently on different threads, in any order; fn must compute each row
// from that row's data alone (or from read-only shared data) and write only that row's outputs.
// Every row is visited exactly once, also rows of length 0 (axis == 0), so per-row outputs such
// as a mean can still be written.
template <class Fn>
void for_each_row_block(const Rows& rows, Fn&& fn) {
  auto body = [&](int64_t begin, int64_t end) { fn(begin, end); };
  parallel_for(rows.rows(), rows_per_block(rows.axis), body);
}

// One inner-contiguous tile of a non-last axis: outer index `outer`, inner positions [i0, i1)
// (at most kTileWidth of them). Element (a, i) of the tile, a in [0, axis), i in [i0, i1), is at
// offset + a * stride + (i - i0).
struct Tile {
  int64_t outer;
  int64_t i0, i1;
  int64_t offset;  // outer * axis * inner + i0
  int64_t stride;  // inner
};

// Any-axis loop. Calls fn(tile) for every tile of every outer index: tiles [i0, i1) are
// [j * kTileWidth, min((j + 1) * kTileWidth, inner)). The tiles are cut into parallel pieces of
// tiles_per_block(axis) consecutive tiles (ordered by outer, then i0).
// Contract: as for for_each_row_block, tiles run concurrently, in any order; fn walks the axis
// with stride `inner` and vectorises across [i0, i1), each inner position being one row; it
// writes only the outputs of those rows. With inner == 1 every tile is one row.
template <class Fn>
void for_each_tile(const Rows& rows, Fn&& fn) {
  const int64_t per_outer = tiles_per_outer(rows.inner);
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t o = t / per_outer;
      const int64_t i0 = (t - o * per_outer) * kTileWidth;
      const int64_t i1 = std::min(rows.inner, i0 + kTileWidth);
      fn(Tile{o, i0, i1, o * rows.axis * rows.inner + i0, rows.inner});
    }
  };
  parallel_for(rows.outer * per_outer, tiles_per_block(rows.axis), body);
}

}  // namespace mantissa::detail
