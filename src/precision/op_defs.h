// The C API backends of the kit's registry (see registry.cc and op_schema.h).
#pragma once

#include "precision/kit.h"

namespace mantissa::precision {

// Adds the C API backends: op-by-name for every operator, aclnn for those CANN defines it for.
void add_compat_backends(std::map<std::string, OpEntry>& ops);

}  // namespace mantissa::precision
