// Runtime settings: thread count and SIMD target selection (through Highway's target mask).
#include "mantissa/runtime.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "core/runtime_internal.h"
#include "hwy/highway.h"
#include "hwy/targets.h"

namespace mantissa {
namespace {

std::atomic<int> g_threads{0};
int64_t g_available_targets = 0;  // supported & compiled & not above the environment's cap
std::once_flag g_init_once;

int default_threads() noexcept {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int64_t target_from_name(std::string_view name) noexcept {
  for (int64_t bits = HWY_TARGETS; bits != 0; bits &= bits - 1) {
    const int64_t target = bits & ~(bits - 1);
    if (name == hwy::TargetName(target)) return target;
  }
  return 0;
}

std::vector<std::string> names_of(int64_t targets) {
  std::vector<std::string> names;  // lower bit = better target, so this is best first
  for (int64_t bits = targets; bits != 0; bits &= bits - 1) {
    names.emplace_back(hwy::TargetName(bits & ~(bits - 1)));
  }
  return names;
}

void initialize() {
  int threads = default_threads();
  if (const char* env = std::getenv("MANTISSA_NUM_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 4096) threads = static_cast<int>(v);
  }
  g_threads.store(threads);

  int64_t available = hwy::SupportedTargets() & HWY_TARGETS;
  if (const char* env = std::getenv("MANTISSA_SIMD_TARGET")) {
    const int64_t cap = target_from_name(env);
    if (cap != 0) {
      // Targets with a lower bit than `cap` are better; disable them.
      hwy::DisableTargets(cap - 1);
      available &= ~(cap - 1);
    }
  }
  if (available == 0) available = HWY_STATIC_TARGET;
  g_available_targets = available;
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

}  // namespace

namespace detail {

void ensure_runtime_initialized() { std::call_once(g_init_once, initialize); }

int configured_threads() noexcept {
  ensure_runtime_initialized();
  return g_threads.load(std::memory_order_relaxed);
}

}  // namespace detail

Status set_num_threads(int threads) {
  detail::ensure_runtime_initialized();
  if (threads < 0 || threads > 4096) {
    return Status(StatusCode::kParamInvalid,
                  "set_num_threads: threads must be in [0, 4096], got " + std::to_string(threads));
  }
  g_threads.store(threads == 0 ? default_threads() : threads);
  return {};
}

int num_threads() noexcept { return detail::configured_threads(); }

std::string simd_target() {
  detail::ensure_runtime_initialized();
  const int64_t active = hwy::SupportedTargets() & HWY_TARGETS;
  return active == 0 ? hwy::TargetName(HWY_STATIC_TARGET) : hwy::TargetName(active & ~(active - 1));
}

std::vector<std::string> available_simd_targets() {
  detail::ensure_runtime_initialized();
  return names_of(g_available_targets);
}

std::vector<std::string> compiled_simd_targets() { return names_of(HWY_TARGETS); }

Status set_simd_target(std::string_view name) {
  detail::ensure_runtime_initialized();
  if (name.empty() || name == "auto") {
    hwy::SetSupportedTargetsForTest(0);
  } else {
    const int64_t target = target_from_name(name);
    if (target == 0 || (target & g_available_targets) == 0) {
      std::string list;
      for (const auto& n : available_simd_targets()) list += (list.empty() ? "" : ", ") + n;
      return Status(StatusCode::kParamInvalid, "set_simd_target: target '" + std::string(name) +
                                                   "' is not available here (available: " + list +
                                                   ")");
    }
    hwy::SetSupportedTargetsForTest(target);
  }
  // Make the next dynamic dispatch pick the new best target.
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  return {};
}

std::string cpu_features() {
  std::string out;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const std::pair<const char*, int> features[] = {
      {"sse4.2", __builtin_cpu_supports("sse4.2")},
      {"avx", __builtin_cpu_supports("avx")},
      {"avx2", __builtin_cpu_supports("avx2")},
      {"fma", __builtin_cpu_supports("fma")},
      {"avx512f", __builtin_cpu_supports("avx512f")},
      {"avx512bw", __builtin_cpu_supports("avx512bw")},
      {"avx512vl", __builtin_cpu_supports("avx512vl")},
      {"avx512dq", __builtin_cpu_supports("avx512dq")},
      {"avx512bf16", __builtin_cpu_supports("avx512bf16")},
  };
  for (const auto& [name, present] : features) {
    if (present) out += (out.empty() ? "" : " ") + std::string(name);
  }
#else
  out = "(feature listing not implemented for this architecture)";
#endif
  return out;
}

const char* version() noexcept { return "mantissa 0.1.0"; }

}  // namespace mantissa
