// aclOpExecutor and the registry of live executors.
//
// An executor handle is not a pointer to memory: it is a tagged serial number, never reissued in
// the life of the process, looked up in the registry of live executors. Phase two never
// dereferences a handle, and a spent one-shot executor stays spent even after later executors
// are created (a heap address could be reused; a serial number is not). The tag puts every
// handle outside the user address space, so no pointer to real memory is mistaken for one.
#include <fmt/format.h>

#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <utility>

#include "acl/acl_rt.h"
#include "compat/compat_internal.h"
#include "compat/executor_internal.h"

namespace mantissa::compat {
namespace {

struct Plan {
  std::string op;
  uint64_t workspace_size = 0;
  bool repeatable = false;
  ExecutorRun run;
};

// Top nibble 0xE: a non-canonical address on x86-64 and outside user space on AArch64.
constexpr uintptr_t kHandleTag = uintptr_t{0xE} << 60;

struct ExecutorRegistry {
  std::mutex mutex;
  uint64_t issued = 0;  // serial numbers handed out so far
  // Shared ownership: a repeatable executor being run on one thread stays valid even if another
  // thread destroys its handle meanwhile.
  std::unordered_map<uintptr_t, std::shared_ptr<Plan>> live;
};

ExecutorRegistry& executor_registry() {
  static ExecutorRegistry* r = new ExecutorRegistry;  // never destroyed: usable during teardown
  return *r;
}

uintptr_t key(const aclOpExecutor* executor) { return reinterpret_cast<uintptr_t>(executor); }

aclnnStatus invalid(std::string message) {
  set_recent_error(std::move(message));
  return ACLNN_ERR_PARAM_INVALID;
}

}  // namespace

aclOpExecutor* create_executor(std::string op, uint64_t workspace_size, ExecutorRun run) {
  try {
    auto plan = std::make_shared<Plan>();
    plan->op = op;
    plan->workspace_size = workspace_size;
    plan->run = std::move(run);
    ExecutorRegistry& r = executor_registry();
    std::lock_guard lock(r.mutex);
    const uintptr_t handle = kHandleTag | static_cast<uintptr_t>(++r.issued);
    r.live.emplace(handle, std::move(plan));
    return reinterpret_cast<aclOpExecutor*>(handle);
  } catch (const std::bad_alloc&) {
    set_recent_error(op + "GetWorkspaceSize: out of memory creating the executor");
    return nullptr;
  }
}

namespace {

aclnnStatus run_executor_unguarded(const char* op, void* workspace, uint64_t workspace_size,
                                   aclOpExecutor* executor, aclrtStream stream) {
  if (executor == nullptr) {
    set_recent_error(fmt::format("{}: executor is null", op));
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  std::shared_ptr<Plan> plan;
  {
    ExecutorRegistry& r = executor_registry();
    std::lock_guard lock(r.mutex);
    const auto it = r.live.find(key(executor));
    if (it == r.live.end()) {
      return invalid(fmt::format(
          "{}: executor {} is not a live executor (a one-shot executor is spent after its "
          "first run; a repeatable one after aclDestroyAclOpExecutor)",
          op, static_cast<const void*>(executor)));
    }
    plan = it->second;
    // A one-shot executor is spent by this call, whatever its outcome.
    if (!plan->repeatable) r.live.erase(it);
  }
  if (plan->op != op) {
    return invalid(fmt::format("{}: the executor was made by {}GetWorkspaceSize", op, plan->op));
  }
  if (workspace_size < plan->workspace_size) {
    return invalid(fmt::format("{}: workspaceSize {} is smaller than the {} bytes reported", op,
                               workspace_size, plan->workspace_size));
  }
  if (workspace == nullptr && plan->workspace_size != 0) {
    return invalid(
        fmt::format("{}: workspace is null but {} bytes were reported", op, plan->workspace_size));
  }
  if (!stream_is_usable(stream)) {
    return invalid(
        fmt::format("{}: stream {} is not a live stream", op, static_cast<const void*>(stream)));
  }
  return report(plan->run(plan->workspace_size == 0 ? nullptr : workspace));
}

}  // namespace

aclnnStatus run_executor(const char* op, void* workspace, uint64_t workspace_size,
                         aclOpExecutor* executor, aclrtStream stream) noexcept {
  // The C API never throws: anything thrown (std::bad_alloc, ...) becomes an inner error.
  try {
    return run_executor_unguarded(op, workspace, workspace_size, executor, stream);
  } catch (const std::exception& e) {
    set_recent_error(std::string(op) + ": " + e.what());
  } catch (...) {
    set_recent_error(std::string(op) + ": unknown exception");
  }
  return ACLNN_ERR_INNER;
}

}  // namespace mantissa::compat

extern "C" {

aclnnStatus aclSetAclOpExecutorRepeatable(aclOpExecutor* executor) {
  using namespace mantissa::compat;
  if (executor == nullptr) {
    set_recent_error("aclSetAclOpExecutorRepeatable: executor is null");
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  ExecutorRegistry& r = executor_registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.live.find(key(executor));
  if (it == r.live.end()) {
    return invalid(fmt::format("aclSetAclOpExecutorRepeatable: {} is not a live executor",
                               static_cast<const void*>(executor)));
  }
  it->second->repeatable = true;
  return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyAclOpExecutor(aclOpExecutor* executor) {
  using namespace mantissa::compat;
  if (executor == nullptr) {
    set_recent_error("aclDestroyAclOpExecutor: executor is null");
    return ACLNN_ERR_PARAM_NULLPTR;
  }
  std::shared_ptr<Plan> plan;  // released outside the lock
  ExecutorRegistry& r = executor_registry();
  std::lock_guard lock(r.mutex);
  const auto it = r.live.find(key(executor));
  if (it == r.live.end()) {
    return invalid(fmt::format("aclDestroyAclOpExecutor: {} is not a live executor",
                               static_cast<const void*>(executor)));
  }
  plan = std::move(it->second);
  r.live.erase(it);
  return ACLNN_SUCCESS;
}

}  // extern "C"
