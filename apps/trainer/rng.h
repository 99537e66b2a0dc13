// The trainer's random numbers: SplitMix64, whose stream depends only on its seed, so batch
// positions, initial weights and stochastic rounding seeds are the same on every machine.
#pragma once

#include <cstdint>

namespace mantissa::trainer {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n); n > 0 (the modulo bias is below 2^-40 for the sizes used).
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  // Approximately standard normal: the sum of 12 uniforms minus 6 (Irwin-Hall; variance 1,
  // bounded by 6). Additions of doubles only, so the same bits everywhere.
  double normal() {
    double s = 0.0;
    for (int i = 0; i < 12; ++i) s += uniform();
    return s - 6.0;
  }

 private:
  uint64_t state_;
};

// A stream for one purpose: the run's seed mixed with a purpose tag.
inline uint64_t stream_seed(uint64_t seed, uint64_t purpose) {
  Rng r(seed ^ (purpose * 0xD1B54A32D192ED03ull));
  return r.next();
}

}  // namespace mantissa::trainer
