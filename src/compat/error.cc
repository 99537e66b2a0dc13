// The calling thread's most recent failure, for aclGetRecentErrMsg, and the Status -> aclnn code
// mapping used by every C entry point; the fp16 helpers of acl_base.h.
#include <string>
#include <utility>

#include "acl/acl_base.h"
#include "compat/compat_internal.h"
#include "mantissa/dtype.h"

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

extern "C" aclFloat16 aclFloatToFloat16(float value) { return mantissa::float_to_fp16_bits(value); }

extern "C" float aclFloat16ToFloat(aclFloat16 value) { return mantissa::fp16_bits_to_float(value); }
