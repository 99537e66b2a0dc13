// Runtime settings: thread count and SIMD target selection (through Highway's target mask, plus
// the AVX3_BF16 pseudo-target: AVX3 kernels narrowing bf16 with AVX512-BF16).
#include "mantissa/runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>

#include "core/runtime_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include "hwy/highway.h"
#include "hwy/targets.h"

namespace mantissa {
namespace {

std::atomic<int> g_threads{0};
int64_t g_available_targets = 0;  // supported & compiled & not above the environment's cap
// The targets MANTISSA_SIMD_TARGET leaves (0: no cap), pinned with Highway's target mock rather
// than hwy::DisableTargets: every hwy::SupportedTargets() call without a mock re-detects the CPU
// and points dynamic dispatch at the best target found, so a disabled mask lasted only until the
// next such call (simd_target() is one), after which the kernels ran above the cap.
int64_t g_pinned_targets = 0;
// The AVX-512 target whose kernels may also narrow bf16 with AVX512-BF16. Together they form the
// pseudo-target "<base>_BF16" (AVX3_BF16), ranked just above the base; 0 where the CPU lacks
// AVX512-BF16, no AVX-512 target is available, or MANTISSA_SIMD_TARGET caps at a plain target.
int64_t g_bf16_base = 0;
std::atomic<bool> g_bf16_active{false};  // operators use the pseudo-target now
std::once_flag g_init_once;
// Why an environment setting was ignored ("" when none was), written once by initialize().
std::string g_environment_error;

// Targets compiled with the AVX512-BF16 narrowing (simd-inl.h, MANTISSA_HAVE_BF16_HW).
#if HWY_ARCH_X86 && defined(__GNUC__)
constexpr int64_t kBf16Targets = (HWY_AVX3 | HWY_AVX3_DL) & HWY_TARGETS;
#else
constexpr int64_t kBf16Targets = 0;
#endif
constexpr std::string_view kBf16Suffix = "_BF16";

bool cpu_has_avx512bf16() noexcept {
#if HWY_ARCH_X86 && defined(__GNUC__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16") != 0;
#else
  return false;
#endif
}

constexpr int64_t lowest_bit(int64_t bits) noexcept { return bits & ~(bits - 1); }

int default_threads() noexcept {
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

int64_t target_from_name(std::string_view name) noexcept {
  for (int64_t bits = HWY_TARGETS; bits != 0; bits &= bits - 1) {
    const int64_t target = lowest_bit(bits);
    if (name == hwy::TargetName(target)) return target;
  }
  return 0;
}

// The base target if `name` is "<base>_BF16" for a base compiled with the bf16 narrowing, else 0.
int64_t bf16_base_from_name(std::string_view name) noexcept {
  if (!name.ends_with(kBf16Suffix)) return 0;
  return target_from_name(name.substr(0, name.size() - kBf16Suffix.size())) & kBf16Targets;
}

// Names of `targets`, best first, each target in `bf16_bases` preceded by its pseudo-target.
std::vector<std::string> names_of(int64_t targets, int64_t bf16_bases) {
  std::vector<std::string> names;  // lower bit = better target
  for (int64_t bits = targets; bits != 0; bits &= bits - 1) {
    const int64_t target = lowest_bit(bits);
    if (target & bf16_bases) names.push_back(hwy::TargetName(target) + std::string(kBf16Suffix));
    names.emplace_back(hwy::TargetName(target));
  }
  return names;
}

void initialize() {
  int threads = default_threads();
  if (const char* env = std::getenv("MANTISSA_NUM_THREADS")) {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 4096) {
      threads = static_cast<int>(v);
    } else {
      g_environment_error +=
          fmt::format("MANTISSA_NUM_THREADS=\"{}\" is not a thread count in [1, 4096]; ", env);
    }
  }
  g_threads.store(threads);

  int64_t available = hwy::SupportedTargets() & HWY_TARGETS;
  bool bf16 = cpu_has_avx512bf16();
  if (const char* env = std::getenv("MANTISSA_SIMD_TARGET")) {
    int64_t cap = target_from_name(env);
    const bool plain = cap != 0;
    if (plain) {
      bf16 = false;  // a plain target runs as itself, without the pseudo-target above it
    } else {
      cap = bf16_base_from_name(env);  // "<base>_BF16": the base with the bf16 narrowing
    }
    const std::string usable = fmt::format(
        "{}",
        fmt::join(names_of(available, cpu_has_avx512bf16() ? available & kBf16Targets : 0), " "));
    if (cap == 0 || (available & cap) == 0 || (!plain && !cpu_has_avx512bf16())) {
      g_environment_error += fmt::format(
          "MANTISSA_SIMD_TARGET=\"{}\" is not a target this build and CPU can run (available: "
          "{}); ",
          env, usable);
    } else {
      // Targets with a lower bit than `cap` are better; leave them out.
      available &= ~(cap - 1);
      g_pinned_targets = available;
      hwy::SetSupportedTargetsForTest(available);
    }
  }
  if (!g_environment_error.empty()) {
    g_environment_error.resize(g_environment_error.size() - 2);  // the last "; "
    std::fprintf(stderr, "mantissa: ignoring %s\n", g_environment_error.c_str());
  }
  if (available == 0) available = HWY_STATIC_TARGET;
  g_available_targets = available;
  // The best available target is the one that runs by default; the bf16 narrowing attaches to it
  // when it is an AVX-512 target.
  g_bf16_base = bf16 ? lowest_bit(available & kBf16Targets) : 0;
  if (g_bf16_base != lowest_bit(available)) g_bf16_base = 0;
  g_bf16_active.store(g_bf16_base != 0);
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
}

}  // namespace

namespace detail {

void ensure_runtime_initialized() { std::call_once(g_init_once, initialize); }

int configured_threads() noexcept {
  ensure_runtime_initialized();
  return g_threads.load(std::memory_order_relaxed);
}

bool bf16_conversion_instructions() noexcept {
  return g_bf16_active.load(std::memory_order_relaxed);
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
  const int64_t best = active == 0 ? HWY_STATIC_TARGET : lowest_bit(active);
  std::string name = hwy::TargetName(best);
  if (best == g_bf16_base && g_bf16_active.load(std::memory_order_relaxed)) name += kBf16Suffix;
  return name;
}

std::vector<std::string> available_simd_targets() {
  detail::ensure_runtime_initialized();
  return names_of(g_available_targets, g_bf16_base);
}

std::vector<std::string> compiled_simd_targets() { return names_of(HWY_TARGETS, kBf16Targets); }

Status set_simd_target(std::string_view name) {
  detail::ensure_runtime_initialized();
  bool bf16 = false;
  if (name.empty() || name == "auto") {
    hwy::SetSupportedTargetsForTest(g_pinned_targets);  // the environment's cap, if any
    bf16 = g_bf16_base != 0;
  } else {
    int64_t target = target_from_name(name);
    if (target == 0 && g_bf16_base != 0 && bf16_base_from_name(name) == g_bf16_base) {
      target = g_bf16_base;
      bf16 = true;
    }
    if (target == 0 || (target & g_available_targets) == 0) {
      std::string list;
      for (const auto& n : available_simd_targets()) list += (list.empty() ? "" : ", ") + n;
      return Status(StatusCode::kParamInvalid, "set_simd_target: target '" + std::string(name) +
                                                   "' is not available here (available: " + list +
                                                   ")");
    }
    hwy::SetSupportedTargetsForTest(target);
  }
  g_bf16_active.store(bf16);
  // Make the next dynamic dispatch pick the new best target.
  hwy::GetChosenTarget().Update(hwy::SupportedTargets());
  return {};
}

#if defined(__x86_64__) || defined(__i386__)
namespace {
// Bit `bit` of register `reg` (0 EAX, 1 EBX, 2 ECX, 3 EDX) of CPUID leaf `leaf`, subleaf `sub`.
int cpuid_bit(unsigned leaf, unsigned sub, int reg, int bit) {
  unsigned r[4] = {0, 0, 0, 0};
  if (!__get_cpuid_count(leaf, sub, &r[0], &r[1], &r[2], &r[3])) return 0;
  return static_cast<int>((r[reg] >> bit) & 1u);
}
}  // namespace
#endif

std::string cpu_features() {
  std::string out;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const std::pair<const char*, int> features[] = {
      {"sse4.2", __builtin_cpu_supports("sse4.2")},
      {"avx", __builtin_cpu_supports("avx")},
      {"avx2", __builtin_cpu_supports("avx2")},
      {"fma", __builtin_cpu_supports("fma")},
      {"f16c", cpuid_bit(1, 0, 2, 29)},  // ECX bit 29 (clang 14 has no "f16c" builtin name)
      {"avx512f", __builtin_cpu_supports("avx512f")},
      {"avx512bw", __builtin_cpu_supports("avx512bw")},
      {"avx512vl", __builtin_cpu_supports("avx512vl")},
      {"avx512dq", __builtin_cpu_supports("avx512dq")},
      {"avx512bf16", __builtin_cpu_supports("avx512bf16")},
      {"avx512fp16", cpuid_bit(7, 0, 3, 23)},  // EDX bit 23
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

std::string info_text() {
  std::string out;
  auto line = std::back_inserter(out);
  fmt::format_to(line, "{}\n", version());
  fmt::format_to(line, "cpu features:      {}\n", cpu_features());
  std::string compiled, available;
  for (const auto& t : compiled_simd_targets()) compiled += t + " ";
  for (const auto& t : available_simd_targets()) available += t + " ";
  fmt::format_to(line, "compiled targets:  {}\n", compiled);
  fmt::format_to(line, "available targets: {}\n", available);
  const std::string chosen = simd_target();
  fmt::format_to(line, "chosen target:     {}\n", chosen);
  // What a dispatched call runs now: the chosen target, unless dispatch and choice came apart.
  fmt::format_to(line, "dispatch runs:     {}\n", dispatched_simd_target());
  fmt::format_to(line, "threads:           {}\n", num_threads());
  // The conversions each available target runs (the chosen one marked): which CPU feature
  // selects which path.
  fmt::format_to(line, "conversions:\n");
  for (const auto& t : available_simd_targets()) {
    if (!set_simd_target(t).ok()) continue;
    fmt::format_to(line, "  {:<10}{} {}\n", t, t == chosen ? "*" : " ", conversion_paths());
  }
  // Back to the target chosen before: the default choice, or the one set_simd_target forced.
  (void)set_simd_target("auto");
  if (simd_target() != chosen) (void)set_simd_target(chosen);
  return out;
}

std::string environment_error() {
  detail::ensure_runtime_initialized();
  return g_environment_error;
}

}  // namespace mantissa
