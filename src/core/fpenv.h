// The floating-point environment the library computes in: round to nearest even, no
// flush-to-zero, no denormals-are-zero, exceptions masked (the C default). A caller may have set
// another (FTZ/DAZ for speed, a directed rounding mode for interval arithmetic); kernels must not
// depend on it, and must leave it as they found it.
#pragma once

#include <cfenv>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace mantissa::detail {

// Sets the default environment for its lifetime when the current one differs, and restores the
// caller's on destruction. The check is one register read when nothing needs changing.
class DefaultFpEnv {
 public:
  DefaultFpEnv() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    saved_ = _mm_getcsr();
    // Control bits only (the low six bits are sticky exception flags).
    changed_ = (saved_ & ~0x3Fu) != kDefaultCsr;
    if (changed_) _mm_setcsr(kDefaultCsr | (saved_ & 0x3Fu));
#else
    changed_ = std::fegetround() != FE_TONEAREST;
    if (changed_) {
      std::fegetenv(&saved_env_);
      std::fesetenv(FE_DFL_ENV);
    }
#endif
  }
  ~DefaultFpEnv() {
    if (!changed_) return;
#if defined(__x86_64__) || defined(__i386__)
    _mm_setcsr(saved_);
#else
    std::fesetenv(&saved_env_);
#endif
  }
  DefaultFpEnv(const DefaultFpEnv&) = delete;
  DefaultFpEnv& operator=(const DefaultFpEnv&) = delete;

  // For threads the library owns: the default environment from now on.
  static void enforce() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    const uint32_t csr = _mm_getcsr();
    if ((csr & ~0x3Fu) != kDefaultCsr) _mm_setcsr(kDefaultCsr | (csr & 0x3Fu));
#else
    if (std::fegetround() != FE_TONEAREST) std::fesetenv(FE_DFL_ENV);
#endif
  }

 private:
#if defined(__x86_64__) || defined(__i386__)
  // Every exception masked, round to nearest, FTZ and DAZ off.
  static constexpr uint32_t kDefaultCsr = 0x1F80u;
  uint32_t saved_ = 0;
#else
  std::fenv_t saved_env_{};
#endif
  bool changed_ = false;
};

}  // namespace mantissa::detail
