// The calling thread's most recent failure, for aclGetRecentErrMsg, and the Status -> aclnn code
// mapping used by every C entry point.
#include <string>
#include <utility>

#include "acl/acl_base.h"
#include "compat/compat_internal.h"

namespace mantissa::compat {
namespace {

// Kept until the next failure on the same thread; successes do not clear it (like errno).
thread_local std::string recent_error;

}  // namespace

void set_recent_error(std::string message) { recent_error = std::move(message); }

int32_t report(const Status& status) {
  if (!status.ok()) set_recent_error(status.message());
  return status.raw_code();
}

}  // namespace mantissa::compat

extern "C" const char* aclGetRecentErrMsg(void) { return mantissa::compat::recent_error.c_str(); }
