// A structured sweep of fp32 inputs narrowed to each low-precision format (both overflow modes):
// every combination of sign, exponent and the top 11 mantissa bits (2^20 of them) with 16
// patterns of the low 12 bits (zero, one, the half, the halves +-1, all ones and others), which
// covers every rounding position of these formats (at most 3 kept mantissa bits), every tie and
// sticky bit, every overflow and every subnormal. The scalar conversions are checked against the
// nearbyint reference and the SIMD bulk conversions on the best target against the scalar ones.
// (test_lowp covers every target on every tie.) Checking all 2^32 inputs this way took over 20
// minutes on two cores; the conversions only see the bits enumerated here.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <thread>
#include <vector>

#include "lowp_support.h"
#include "mantissa/lowp.h"

namespace mantissa::testing {

namespace {

TEST(LowpExhaustive, AllFp32Inputs) {
  constexpr uint32_t kLow[16] = {0x000, 0x001, 0x002, 0x3FF, 0x400, 0x7FE, 0x7FF, 0x800,
                                 0x801, 0x802, 0xBFF, 0xC00, 0xF00, 0xFFE, 0xFFF, 0x555};
  constexpr uint64_t kChunk = 1u << 24;  // 2^20 high patterns x 16 low ones
  std::vector<float> in(kChunk);
  std::vector<uint8_t> got(kChunk);
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  for (uint64_t base = 0; base < 1; base += kChunk) {
    for (uint64_t i = 0; i < kChunk; ++i) {
      const auto bits = static_cast<uint32_t>(((i >> 4) << 12) | kLow[i & 15]);
      in[i] = std::bit_cast<float>(bits);
    }
    for (const testing::LowpFormat& f : testing::kLowpFormats) {
      const MiniFloat& mf = *minifloat_of(f.dtype);
      const bool packed = f.dtype == DType::kFloat4E2M1;
      for (bool sat : {true, false}) {
        if (f.kind == testing::LowpFormat::kFinite && !sat) continue;  // the same as saturating
        std::vector<std::thread> pool;
        std::vector<uint64_t> bad(workers, 0), first(workers, 0);
        for (unsigned w = 0; w < workers; ++w) {
          pool.emplace_back([&, w] {
            for (uint64_t i = w; i < kChunk; i += workers) {
              if (float_to_minifloat(mf, in[i], sat) !=
                  testing::ref_encode_nearbyint(f, in[i], sat)) {
                if (bad[w]++ == 0) first[w] = i;
              }
            }
          });
        }
        for (auto& t : pool) t.join();
        for (unsigned w = 0; w < workers; ++w) {
          ASSERT_EQ(bad[w], 0u) << f.name << " sat " << sat << " first at 0x" << std::hex
                                << std::bit_cast<uint32_t>(in[first[w]]);
        }
        ASSERT_TRUE(convert_fp32_to_lowp(f.dtype, in.data(), got.data(), kChunk, sat));
        for (uint64_t i = 0; i < kChunk; ++i) {
          const uint32_t g = packed ? packed_nibble(got.data(), i) : got[i];
          if (g != float_to_minifloat(mf, in[i], sat)) {
            FAIL() << f.name << " SIMD sat " << sat << " input 0x" << std::hex
                   << std::bit_cast<uint32_t>(in[i]);
          }
        }
      }
    }
    for (bool sat : {true, false}) {
      ASSERT_TRUE(convert_fp32_to_lowp(DType::kFloat8E8M0, in.data(), got.data(), kChunk, sat));
      for (uint64_t i = 0; i < kChunk; ++i) {
        if (got[i] != float_to_e8m0(in[i], sat)) {
          FAIL() << "e8m0 SIMD sat " << sat << " input 0x" << std::hex
                 << std::bit_cast<uint32_t>(in[i]);
        }
      }
    }
  }
}

}  // namespace

}  // namespace mantissa::testing
