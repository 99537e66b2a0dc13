// A faster exact form of the 8-bit state's search for the library's own maps (the dynamic maps of
// the 8-bit multi-tensor AdamW): one table lookup and one comparison instead of ten gathers.
//
// For an ascending map of distinct entries q_0 < ... < q_255, the documented search
// (ApplyAdamWQuant: eight halvings, then the nearer end, the lower on a tie) gives, for x in
// [q_0, q_255], the code k with x in (t_(k-1), t_k]: t_k is the largest x in [q_k, q_(k+1)) with
// fp32 |x - q_k| <= |x - q_(k+1)|, and the code never decreases as x grows (both rounded
// differences are monotonic in x). Below q_0 the search gives 0, NaN gives 0.
//
// The table has one entry per bucket of values sharing their top 16 bits: the code c of the
// bucket's lowest value, and, where the bucket holds a threshold t_c, t_c's low 16 bits. Every
// value of the bucket then has code c, or c + 1 when its low 16 bits say it is above t_c. That
// holds wherever the buckets are finer than the map's spacing, as they are over [-1, 1] for the
// dynamic maps (`coarse_buckets` counts the buckets of [-1, 1] where they are not: 0, checked in
// tests/test_multi_tensor_compact.cc with every bucket's ends and thresholds). Values above q_255
// are outside the table's promise; the 8-bit step never codes one (|m| / max|m| <= 1).
#pragma once

#include <array>
#include <cstdint>

namespace mantissa::detail {

struct QuantCoder {
  // Per bucket (the value's top 16 bits): code << 16 | the threshold's key, where a value's key
  // is its low 16 bits, inverted for a negative value (so that keys grow with the value within
  // a bucket); 0xFFFF where the bucket holds one code.
  alignas(64) std::array<uint32_t, 65536> entry{};
  alignas(64) std::array<float, 256> upper{};  // t_k; upper[255] = +inf
  alignas(64) std::array<float, 256> map{};
  int coarse_buckets = 0;  // buckets of [-1, 1] holding more than two codes
};

// The coder of mantissa::dynamic_quant_map(is_signed), built once.
const QuantCoder& dynamic_quant_coder(bool is_signed);

// The documented search (docs/ops/apply_adam_w_quant.md), one value: the scalar definition the
// coder is built from.
int search_code(const float* map, float x);

// The 4-bit moments' coder (MomentFormat::kInt4): torchao's rounding of x to a 16-entry
// ascending map q, as one value: c = the largest k with q_k <= x (0 when none, NaN included),
// then c + 1 when c < 15 and fp32(x - q_c) >= fp32(fp32(q_(c+1) - q_c) * 0.5). The code never
// decreases as x grows, so it is the number of thresholds t_k <= x, t_k (k = 1..15) the least
// fp32 value coded k or above: in the kernel, a 4-step binary search over them in registers.
struct Int4Coder {
  std::array<float, 16> map{};
  std::array<float, 16> threshold{};  // t_1..t_15, then +inf (the kernel's search reads 16)
};
const Int4Coder& int4_coder(bool is_signed);
int int4_code(const float* map, float x);

}  // namespace mantissa::detail
