// aclOpExecutor: the plan phase one makes and phase two runs, and the registry of live
// executors that lets phase two reject a spent or foreign executor without dereferencing it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "acl/acl_rt.h"
#include "aclnn/acl_meta.h"
#include "mantissa/status.h"

namespace mantissa::compat {

// What phase two runs: given the caller's workspace (at least the reported size; null when the
// size is 0), do the operator's work and return its status.
using ExecutorRun = std::function<Status(void* workspace)>;

// Registers a new one-shot executor for `op` (the aclnn function name without
// "GetWorkspaceSize", e.g. "aclnnAmpUpdateScale"). Returns nullptr (and records why) when
// memory runs out.
aclOpExecutor* create_executor(std::string op, uint64_t workspace_size, ExecutorRun run);

// Phase two of `op`: checks that `executor` is a live executor made for `op`, that the
// workspace is large enough and the stream usable, then runs the plan. A one-shot executor is
// destroyed whether this succeeds or fails. Returns an aclnn status (161002 for every misuse).
aclnnStatus run_executor(const char* op, void* workspace, uint64_t workspace_size,
                         aclOpExecutor* executor, aclrtStream stream) noexcept;

}  // namespace mantissa::compat
