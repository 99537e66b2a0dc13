// Every one of the 2^32 fp32 inputs, narrowed to fp16 and to bf16 on every SIMD target, against
// the independent reference (and the scalar conversions in dtype.h).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <thread>
#include <vector>

#include "conversion_support.h"
#include "mantissa/convert.h"
#include "mantissa/dtype.h"
#include "target_support.h"

namespace mantissa::testing {

namespace {

TEST(ConvertExhaustive, AllFp32InputsOnEveryTarget) {
  constexpr uint64_t kChunk = 1u << 24;
  const std::vector<std::string> targets = available_simd_targets();
  std::vector<float> in(kChunk);
  std::vector<uint16_t> want16(kChunk), wantbf(kChunk), got(kChunk);
  const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  uint64_t mismatches = 0;
  for (uint64_t base = 0; base < (1ull << 32); base += kChunk) {
    // Reference (and scalar library conversion) for this chunk, in parallel.
    std::vector<std::thread> pool;
    std::vector<uint64_t> scalar_bad(workers, 0);
    for (unsigned w = 0; w < workers; ++w) {
      pool.emplace_back([&, w] {
        for (uint64_t i = w; i < kChunk; i += workers) {
          const float x = std::bit_cast<float>(static_cast<uint32_t>(base + i));
          in[i] = x;
          want16[i] = testing::reference_fp32_to_fp16(x);
          wantbf[i] = testing::reference_fp32_to_bf16(x);
          scalar_bad[w] +=
              (float_to_fp16_bits(x) != want16[i]) + (float_to_bf16_bits(x) != wantbf[i]);
        }
      });
    }
    for (auto& t : pool) t.join();
    for (uint64_t b : scalar_bad) mismatches += b;
    ASSERT_EQ(mismatches, 0u) << "scalar conversion differs from the reference near 0x" << std::hex
                              << base;
    for (const std::string& target : targets) {
      ASSERT_TRUE(set_simd_target(target).ok());
      convert_fp32_to_fp16(in.data(), got.data(), kChunk);
      if (std::memcmp(got.data(), want16.data(), kChunk * 2) != 0) {
        for (uint64_t i = 0; i < kChunk; ++i) {
          ASSERT_EQ(got[i], want16[i]) << target << " fp16, input 0x" << std::hex << base + i;
        }
      }
      convert_fp32_to_bf16(in.data(), got.data(), kChunk);
      if (std::memcmp(got.data(), wantbf.data(), kChunk * 2) != 0) {
        for (uint64_t i = 0; i < kChunk; ++i) {
          ASSERT_EQ(got[i], wantbf[i]) << target << " bf16, input 0x" << std::hex << base + i;
        }
      }
    }
  }
  ASSERT_TRUE(set_simd_target("auto").ok());
}

}  // namespace

}  // namespace mantissa::testing
