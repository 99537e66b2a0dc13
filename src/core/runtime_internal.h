// Internal access to the runtime settings (threads, SIMD target) for kernels and dispatch.
#pragma once

namespace mantissa::detail {

// Reads the environment once (thread count, SIMD cap). Idempotent and cheap after the first call.
void ensure_runtime_initialized();
// The thread count operators use now (>= 1).
int configured_threads() noexcept;

}  // namespace mantissa::detail
