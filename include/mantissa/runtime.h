// Library-wide settings: worker threads and the SIMD target.
//
// Environment variables, read once at first use:
//   MANTISSA_NUM_THREADS  worker threads (>= 1); default: the number of hardware threads.
//   MANTISSA_SIMD_TARGET  the best SIMD target allowed, e.g. AVX3_BF16, AVX3, AVX2, SSE4, SSSE3.
//                         Better targets are not used, so on a machine that has it the named
//                         target is the one that runs. For tests and bug reports.
//
// Targets are Highway's, plus AVX3_BF16: the AVX3 kernels narrowing fp32 to bf16 with the
// AVX512-BF16 instruction (vcvtneps2bf16), offered where the CPU has it and chosen by default
// there. Every target gives the same bits; forcing AVX3 keeps AVX-512 but not that instruction.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mantissa/export.h"
#include "mantissa/status.h"

namespace mantissa {

// Sets the number of threads operators may use (>= 1). 0 restores the default.
MANTISSA_API Status set_num_threads(int threads);
MANTISSA_API int num_threads() noexcept;

// The target operators dispatch to now ("AVX3", "AVX2", ...).
MANTISSA_API std::string simd_target();
// Targets compiled into the library that this CPU supports, best first.
MANTISSA_API std::vector<std::string> available_simd_targets();
// Every target compiled into the library, best first.
MANTISSA_API std::vector<std::string> compiled_simd_targets();
// Forces operators onto `name` (one of available_simd_targets()); "" or "auto" restores the
// default choice (still capped by MANTISSA_SIMD_TARGET). Not thread-safe against running
// operators: call it between operator calls.
MANTISSA_API Status set_simd_target(std::string_view name);

// How operators on the current target convert between fp32 and fp16/bf16, e.g.
// "fp16: F16C (vcvtph2ps, vcvtps2ph); bf16: shift to widen; ...". For `mantissa info`.
MANTISSA_API std::string conversion_paths();
// The target a dispatched call runs now, named as simd_target() names it, by making such a call:
// the two agree unless the dispatch and the choice have come apart. For `mantissa info`.
MANTISSA_API std::string dispatched_simd_target();

// The report `mantissa info` prints (and `python3 -m mantissa info`), one item a line: the
// version, the CPU features, the compiled, available and chosen targets, the target a dispatched
// call runs, the thread count, and the conversions of each available target (the chosen one
// marked '*'). It switches to each available target in turn to read its conversions, then
// restores the target chosen before: like set_simd_target, call it between operator calls.
MANTISSA_API std::string info_text();

// CPU features relevant to the kernels, e.g. "sse4.2 avx2 fma f16c avx512f ...".
MANTISSA_API std::string cpu_features();
// "mantissa 0.1.0"
MANTISSA_API const char* version() noexcept;

// Why MANTISSA_NUM_THREADS or MANTISSA_SIMD_TARGET was ignored (an unparsable or out-of-range
// thread count, a target this build or CPU cannot run), or "" when both were used or unset. The
// library also prints it once to stderr; the mantissa tool refuses to run with it.
MANTISSA_API std::string environment_error();

}  // namespace mantissa
