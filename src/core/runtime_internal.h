// Internal access to the runtime settings (threads, SIMD target) for kernels and dispatch.
#pragma once

namespace mantissa::detail {

// Reads the environment once (thread count, SIMD cap). Idempotent and cheap after the first call.
void ensure_runtime_initialized();
// The thread count operators use now (>= 1).
int configured_threads() noexcept;
// Whether AVX-512 kernels narrow fp32 to bf16 with AVX512-BF16 (the AVX3_BF16 target: the CPU
// has it and neither set_simd_target nor MANTISSA_SIMD_TARGET chose a lower target). Kernels
// read it once per call.
bool bf16_conversion_instructions() noexcept;

}  // namespace mantissa::detail
