// Internals shared by the C layer's files: the per-thread "recent error" and the mapping from a
// C++ Status to an aclnn status code.
#pragma once

#include <cstdint>
#include <string>

#include "mantissa/status.h"

namespace mantissa::compat {

// Records `message` as the calling thread's recent error (read by aclGetRecentErrMsg).
void set_recent_error(std::string message);
// Returns the status's raw code; records its message when it is not a success.
int32_t report(const Status& status);
// True for the default stream (null) and for streams from aclrtCreateStream not yet destroyed.
// The pointer is looked up, never dereferenced.
bool stream_is_usable(const void* stream);

}  // namespace mantissa::compat
