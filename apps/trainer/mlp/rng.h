// The trainer's random numbers: SplitMix64, a counter-free generator whose stream depends only
// on its seed, so splits, batch orders and initial weights are the same on every machine.
#pragma once

#include <cmath>
#include <cstdint>

namespace mantissa::train::detail {

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
  // Uniform integer in [0, n); n > 0. (The modulo bias is below 2^-40 for the sizes used.)
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  // Standard normal by Box-Muller (one value per call; the second is dropped).
  double normal() {
    const double u1 = 1.0 - uniform();  // (0, 1]
    const double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_;
};

// A stream for one purpose: the run's seed mixed with a purpose tag.
inline uint64_t stream_seed(uint64_t seed, uint64_t purpose) {
  Rng r(seed ^ (purpose * 0xD1B54A32D192ED03ull));
  return r.next();
}

}  // namespace mantissa::train::detail
