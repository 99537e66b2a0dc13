// The dynamic maps' coders (quant_coder.h).
#include "ops/apply_adam_w_quant/quant_coder.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "mantissa/ops/apply_adam_w_quant.h"
#include "mantissa/optim.h"

namespace mantissa::detail {
namespace {

// fp32 bits -> an unsigned key in the order of the values (-0 just below +0).
uint32_t key_of(float f) {
  const auto b = std::bit_cast<uint32_t>(f);
  return (b & 0x80000000u) != 0 ? ~b : b | 0x80000000u;
}
float from_key(uint32_t k) {
  return std::bit_cast<float>((k & 0x80000000u) != 0 ? k & 0x7FFFFFFFu : ~k);
}

QuantCoder build(bool is_signed) {
  QuantCoder c;
  c.map = dynamic_quant_map(is_signed);
  const float* q = c.map.data();
  // t_k: the largest x in [q_k, q_(k+1)) the search codes k or below (a prefix of the interval).
  for (int k = 0; k < 255; ++k) {
    uint32_t lo = key_of(q[k]), hi = key_of(q[k + 1]) - 1;  // search(from_key(lo)) <= k
    while (lo < hi) {
      const uint32_t mid = lo + (hi - lo + 1) / 2;
      if (search_code(q, from_key(mid)) <= k) {
        lo = mid;
      } else {
        hi = mid - 1;
      }
    }
    c.upper[static_cast<std::size_t>(k)] = from_key(lo);
  }
  c.upper[255] = std::numeric_limits<float>::infinity();
  for (uint32_t h = 0; h < 65536; ++h) {
    // The bucket's lowest and highest non-NaN values (for a negative bucket the last pattern is
    // the lowest); buckets of NaNs only keep entry 0.
    const bool negative = (h & 0x8000u) != 0;
    float lowest = std::bit_cast<float>(negative ? (h << 16) | 0xFFFFu : h << 16);
    float highest = std::bit_cast<float>(negative ? h << 16 : (h << 16) | 0xFFFFu);
    if (std::isnan(lowest)) lowest = highest;  // the buckets of +-inf and NaNs
    if (std::isnan(highest)) highest = lowest;
    if (std::isnan(lowest)) continue;
    const int c0 = search_code(q, lowest), c1 = search_code(q, highest);
    uint32_t threshold_key = 0xFFFFu;
    const float t = c.upper[static_cast<std::size_t>(c0)];
    if (c1 == c0 + 1 && (std::bit_cast<uint32_t>(t) >> 16) == h) {
      const uint32_t low = std::bit_cast<uint32_t>(t) & 0xFFFFu;
      threshold_key = negative ? low ^ 0xFFFFu : low;
    } else if (c1 != c0 && std::fabs(lowest) <= 1.0f && std::fabs(highest) <= 1.0f) {
      ++c.coarse_buckets;
    }
    c.entry[h] = static_cast<uint32_t>(c0) << 16 | threshold_key;
  }
  return c;
}

}  // namespace

int search_code(const float* map, float x) {
  int lower = 0, upper = 255;
  for (int round = 0; round < 8; ++round) {
    const int pivot = (lower + upper) / 2;
    if (x > map[pivot]) {
      lower = pivot;
    } else {
      upper = pivot;
    }
  }
  return std::fabs(x - map[lower]) <= std::fabs(x - map[upper]) ? lower : upper;
}

const QuantCoder& dynamic_quant_coder(bool is_signed) {
  static const QuantCoder kSigned = build(true);
  static const QuantCoder kUnsigned = build(false);
  return is_signed ? kSigned : kUnsigned;
}

int int4_code(const float* map, float x) {
  int c = 0;
  for (int step = 8; step >= 1; step /= 2) {
    if (x >= map[c + step]) c += step;
  }
  if (c < 15 && x - map[c] >= (map[c + 1] - map[c]) * 0.5f) ++c;
  return c;
}

const Int4Coder& int4_coder(bool is_signed) {
  static const auto build4 = [](bool s) {
    Int4Coder c;
    c.map = int4_moment_map(s);
    for (int k = 1; k < 16; ++k) {
      // The least value of [q_(k-1), q_k] coded k or above (q_k itself is).
      uint32_t lo = key_of(c.map[static_cast<std::size_t>(k - 1)]);
      uint32_t hi = key_of(c.map[static_cast<std::size_t>(k)]);
      while (lo < hi) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (int4_code(c.map.data(), from_key(mid)) >= k) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      c.threshold[static_cast<std::size_t>(k - 1)] = from_key(lo);
    }
    c.threshold[15] = std::numeric_limits<float>::infinity();
    return c;
  };
  static const Int4Coder kSigned = build4(true);
  static const Int4Coder kUnsigned = build4(false);
  return is_signed ? kSigned : kUnsigned;
}

}  // namespace mantissa::detail

namespace mantissa {

std::array<float, 16> int4_moment_map(bool is_signed) {
  std::array<float, 16> map{};
  if (!is_signed) {
    for (int k = 1; k <= 16; ++k)
      map[static_cast<std::size_t>(k - 1)] = static_cast<float>(k) / 16.0f;
    return map;
  }
  std::size_t k = 0;
  constexpr double kScale[3] = {1e-2, 1e-1, 1.0};  // 10^e for e = -2..0, the nearest doubles
  for (int e = 0; e < 3; ++e) {
    const int items = 1 << e;
    for (int j = 0; j < items; ++j) {
      // The midpoint of the j-th of `items` equal parts of [0.1, 1], as dynamic_quant_map.
      const double mid = 0.1 + 0.9 * (2.0 * j + 1.0) / (2.0 * items);
      map[k++] = static_cast<float>(kScale[e] * mid);
      map[k++] = static_cast<float>(-(kScale[e] * mid));
    }
  }
  map[k++] = 0.0f;
  map[k++] = 1.0f;
  std::sort(map.begin(), map.end());
  return map;
}

}  // namespace mantissa
